"""Dask workers on the CUDA backend: each worker of a LocalCluster fits its
rows on the device ``GPUTREE_TEST_DEVICE`` (default ``cuda-sim``; on a GPU
machine ``GPUTREE_TEST_DEVICE=cuda python -m pytest tests/test_dask_devices.py``,
where X's partitions are also given as cupy arrays: GPU workers with
device-resident partitions), and the model is the one-machine CPU model bit
for bit (every array of every tree, the bins, the training scores, the
predictions). Here tests/test_simulated_device.py runs this file in a
process with numba's CUDA simulator on (its workers inherit it); in any
other process the device is unavailable and the module skips."""
import numpy as np
import pytest

from simulated.device import DEVICE, skip_module_without_device

pytest.importorskip("dask")
pytest.importorskip("distributed")
skip_module_without_device()

import dask.array as da  # noqa: E402

import gputree  # noqa: E402
import gputree.dask as gd  # noqa: E402
from dask_models import assert_same_model, cluster_client, noisy_rows  # noqa: E402


@pytest.fixture(scope="module")
def client():
    """Two worker processes, which inherit NUMBA_ENABLE_CUDASIM from this one."""
    with cluster_client() as client:
        yield client


def _partitions(X, device_arrays):
    """X as a dask array of uneven partitions, of cupy arrays when asked."""
    X_d = da.from_array(X, chunks=((100, 60, 80), X.shape[1]))
    if device_arrays:
        cupy = pytest.importorskip("cupy")
        X_d = X_d.map_blocks(cupy.asarray)
    return X_d


CASES = {
    "boosting": (gd.DaskGradientBoostingClassifier, gputree.GradientBoostingClassifier,
                 dict(n_estimators=3, max_depth=3, early_stopping=False), lambda t: t > 0.4),
    "forest": (gd.DaskRandomForestRegressor, gputree.RandomForestRegressor,
               dict(n_estimators=3, max_depth=3, random_state=1), lambda t: t),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("device_arrays", [False, True] if DEVICE == "cuda" else [False])
def test_workers_on_the_device_grow_the_cpu_model(client, case, device_arrays):
    dask_class, local_class, params, target = CASES[case]
    X, t = noisy_rows(240, 4)
    y = target(t)
    client.run(_clear_launches)
    model = dask_class(**params, device=DEVICE, client=client)
    model.fit(_partitions(X, device_arrays), da.from_array(y, chunks=((100, 60, 80),)))
    local = local_class(**params, device="cpu").fit(X, y)
    assert_same_model(model, local)
    # every worker built its histograms on the device
    assert all(n > 0 for n in client.run(_histogram_launches).values())
    got = np.asarray(model.predict(_partitions(X, False)).compute())
    assert got.tobytes() == local.predict(X).tobytes()


def _clear_launches():
    from gputree.backends import get_backend
    get_backend(DEVICE).launches.clear()


def _histogram_launches():
    """On a worker: the device's histogram launches since the last clear."""
    from gputree.backends import get_backend
    return get_backend(DEVICE).launches["build_histograms"]
