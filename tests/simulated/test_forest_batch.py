"""A forest's trees grown together on the simulated device
(gputree.growth.forest_batch: the same level of every tree of a batch in one
launch) are the CPU forest's trees bit for bit, whatever the batch size:
bootstrap counts and random draws come from the same host streams."""
import contextlib

import numpy as np
import pytest

from gputree import (ExtraTreesClassifier, RandomForestClassifier,
                     RandomForestRegressor)
from gputree.backends import get_backend
from gputree.backends.cuda import c_kernels
from gputree.estimators import bagging

from .datasets import classification, regression
from .test_parity import assert_same_tree

N_TREES = 4
pytestmark = pytest.mark.filterwarnings("ignore:Some inputs do not have OOB scores")


@contextlib.contextmanager
def forest_batch(size):
    """The simulated device's forest_batch option set to ``size``."""
    backend = get_backend("cuda-sim")
    saved, backend.forest_batch = backend.forest_batch, size
    backend.launches.clear()
    try:
        yield backend
    finally:
        backend.forest_batch = saved


CASES = {
    "classifier": (RandomForestClassifier, classification,
                   dict(max_features="sqrt", oob_score=True)),
    # weights: trees of other fixed-point scales grow in groups of their own,
    # whose OOB sums must still be added in the trees' order
    "weighted": (RandomForestClassifier, classification,
                 dict(max_features="sqrt", oob_score=True, weighted=True, random_state=3)),
    "regressor": (RandomForestRegressor, regression, dict(max_features=0.6, oob_score=True)),
    "no-bootstrap": (RandomForestClassifier, classification,
                     dict(bootstrap=False, max_features=2)),
    "extra-trees": (ExtraTreesClassifier, classification, dict(max_features=3)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_batched_forest_is_the_cpu_forest(case, monkeypatch):
    estimator, data, extra = CASES[case]
    X, y = data(n_samples=140, seed=5)
    extra = dict(extra)
    weight = (np.random.RandomState(1).uniform(0.2, 3.0, size=len(y))
              if extra.pop("weighted", False) else None)
    params = dict(n_estimators=N_TREES, max_depth=4, max_bins=16,
                  random_state=extra.pop("random_state", 2), **extra)
    cpu = estimator(device="cpu", **params).fit(X, y, sample_weight=weight)
    assert any(t.is_categorical.any() for t in cpu._trees)   # a categorical split
    assert any(t.missing_left[t.feature >= 0].any() for t in cpu._trees)
    builds, added = {}, []
    add = bagging.OutOfBag.add
    monkeypatch.setattr(bagging.OutOfBag, "add",
                        lambda self, values, *a: added.append(values) or add(self, values, *a))
    for size in (1, 2, N_TREES):
        added.clear()
        with forest_batch(size) as backend:
            sim = estimator(device="cuda-sim", **params).fit(X, y, sample_weight=weight)
            builds[size] = backend.launches["build_histograms"]
        assert len(sim._trees) == N_TREES
        # OOB sums in the trees' order, whatever the groups
        assert len(added) == (N_TREES if "oob_score" in params else 0)
        assert all(np.array_equal(v, t.value) for v, t in zip(added, sim._trees))
        for a, b in zip(cpu._trees, sim._trees):
            assert_same_tree(a, b)
        assert np.array_equal(cpu.predict(X), sim.predict(X))
        for name in ("oob_score_", "oob_decision_function_", "oob_prediction_"):
            if hasattr(cpu, name):
                assert np.array_equal(getattr(cpu, name), getattr(sim, name)), name
    # one launch per wide level: fewer launches for larger batches (trees of
    # other fixed-point scales grow in groups of their own)
    assert builds[N_TREES] <= builds[2] < builds[1]
    if weight is None and case != "regressor":
        assert builds[N_TREES] < builds[2]
    if weight is not None:      # the trees' scales differ: more than one group
        assert builds[N_TREES] > max(t.depth.max() for t in cpu._trees)


def test_batched_levels_read_the_followed_row_partition(monkeypatch):
    """The by-node histogram kernel of a batch gets each (tree, node)'s rows
    from the followed row partition, never by sorting the positions."""
    sorted_levels = []
    original = c_kernels.segments_from_positions
    monkeypatch.setattr(c_kernels, "segments_from_positions",
                        lambda *a: sorted_levels.append(a) or original(*a))
    X, y = classification(n_samples=100, seed=1)
    params = dict(n_estimators=3, max_depth=3, max_bins=16, random_state=0)
    cpu = RandomForestClassifier(device="cpu", **params).fit(X, y)
    kernels = get_backend("cuda-sim").kernels
    saved, kernels.histogram_kernel = kernels.histogram_kernel, "node"
    try:
        with forest_batch(3) as backend:
            sim = RandomForestClassifier(device="cuda-sim", **params).fit(X, y)
            assert backend.launches["build_histograms"] == params["max_depth"]
    finally:
        kernels.histogram_kernel = saved
    assert not sorted_levels
    for a, b in zip(cpu._trees, sim._trees):
        assert_same_tree(a, b)


def test_warm_start_batches_only_the_new_trees():
    X, y = classification(n_samples=100, seed=2)
    params = dict(max_depth=3, max_bins=16, random_state=4, warm_start=True)
    cpu = RandomForestClassifier(device="cpu", n_estimators=5, **params).fit(X, y)
    with forest_batch(2):
        sim = RandomForestClassifier(device="cuda-sim", n_estimators=2, **params).fit(X, y)
        sim.set_params(n_estimators=5).fit(X, y)
    for a, b in zip(cpu._trees, sim._trees):
        assert_same_tree(a, b)


def test_auto_batch_size_follows_the_free_device_memory():
    from gputree.backends.cuda.backend import forest_batch_bytes
    backend = get_backend("cuda-sim")
    shape = (5000, 8, 3, 64, 32, 20)
    saved = backend.forest_batch, backend.simulated_free_bytes
    try:
        backend.forest_batch = "auto"
        for k in (1, 3, 7):
            backend.simulated_free_bytes = forest_batch_bytes(k, *shape)
            assert backend.forest_batch_size(10, *shape) == k
        assert backend.forest_batch_size(4, *shape) == 4      # never more than the trees
        backend.forest_batch = 5
        assert backend.forest_batch_size(10, *shape) == 5
        assert backend.forest_batch_size(3, *shape) == 3
    finally:
        backend.forest_batch, backend.simulated_free_bytes = saved


def test_a_batch_the_memory_cannot_hold_is_split_into_the_same_trees(monkeypatch):
    """forest_batch 4 on a device whose memory holds two trees together: the
    batch's memory check fails, its halves grow (two launches a level)."""
    X, y = classification(n_samples=120, seed=3)
    params = dict(n_estimators=4, max_depth=3, max_bins=16, random_state=1, oob_score=True)
    cpu = RandomForestClassifier(device="cpu", **params).fit(X, y)
    backend = get_backend("cuda-sim")
    checked, original = [], backend.check_fit_memory

    def check(*args, n_trees=1):
        checked.append(n_trees)
        if n_trees > 2:
            raise MemoryError("this test's device holds two trees")
        original(*args, n_trees=n_trees)

    monkeypatch.setattr(backend, "check_fit_memory", check)
    with forest_batch(4):
        sim = RandomForestClassifier(device="cuda-sim", **params).fit(X, y)
        builds = backend.launches["build_histograms"]
    assert checked == [4, 2, 2]
    assert builds == 2 * max(t.depth.max() for t in cpu._trees)
    for a, b in zip(cpu._trees, sim._trees):
        assert_same_tree(a, b)
    assert np.array_equal(cpu.oob_decision_function_, sim.oob_decision_function_)
