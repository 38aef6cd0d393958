"""Every estimator grows bit-identical models on the CPU and on a CUDA device.

The device is ``GPUTREE_TEST_DEVICE`` (default ``cuda-sim``). On a machine
with an NVIDIA GPU, one command checks the real device::

    GPUTREE_TEST_DEVICE=cuda python -m pytest tests/test_device_parity.py

Here, tests/test_simulated_device.py runs this file in a process with numba's
CUDA simulator on; in any other process the simulated device is unavailable
and the module skips. Nothing here is specific to the simulator.

Compared for exact equality (no tolerance): every TreeArrays field of every
tree, predict, predict_proba, decision_function, apply, staged predictions,
oob_score_ and feature_importances_; on data with NaNs, pandas categoricals
and sample weights, for every criterion and loss. On a real GPU a second size
has more rows than the binning subsample (200,000) and device (cupy) inputs
are predicted too.
"""
import dataclasses
import os

import numpy as np
import pytest

import gputree
from gputree.backends import get_backend

from simulated.datasets import mixed_frame

DEVICE = os.environ.get("GPUTREE_TEST_DEVICE", "cuda-sim")
#: rows of the data sets: small ones everywhere, one past the binning subsample on a GPU
SIZES = (300, 250_000) if DEVICE == "cuda" else (300,)
#: the simulator runs every numba.cuda thread in Python: fewer bins keep it quick
SIMULATOR_PARAMS = {} if DEVICE == "cuda" else {"max_bins": 24}

try:
    get_backend(DEVICE)
except Exception as exc:  # noqa: BLE001 - skip with the reason
    pytest.skip(f"device {DEVICE!r} is not available in this process: {exc}",
                allow_module_level=True)


def _data(n, seed, task):
    X, signal = mixed_frame(n, seed)
    weight = np.random.RandomState(seed + 100).uniform(0.2, 3.0, size=n)
    if task == "regression":
        return X, signal, weight
    if task == "numeric-regression":       # absolute_error: numerical features only
        return X.select_dtypes("number"), signal, weight
    if task == "poisson":
        return X, np.exp(signal / 3.0), weight
    n_classes = 2 if task == "binary" else 3
    edges = np.quantile(signal, np.linspace(0, 1, n_classes + 1)[1:-1])
    return X, np.searchsorted(edges, signal), weight


def _trees(model):
    return [model.tree_] if hasattr(model, "tree_") else list(model._trees)


def assert_same_trees(cpu, dev):
    trees_cpu, trees_dev = _trees(cpu), _trees(dev)
    assert len(trees_cpu) == len(trees_dev)
    assert any(t.node_count > 1 for t in trees_cpu), "the model did not split: a weak test"
    for i, (a, b) in enumerate(zip(trees_cpu, trees_dev)):
        for field in dataclasses.fields(a):
            left, right = getattr(a, field.name), getattr(b, field.name)
            assert left.dtype == right.dtype, (i, field.name)
            assert np.array_equal(left, right, equal_nan=True), (i, field.name)


def _same(a, b, what):
    if isinstance(a, list):
        for x, y in zip(a, b):
            _same(x, y, what)
        return
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape, what
    assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), what


OUTPUTS = ("predict", "predict_proba", "decision_function", "apply")
STAGED = ("staged_predict", "staged_predict_proba", "staged_decision_function")
ATTRIBUTES = ("feature_importances_", "oob_score_", "oob_decision_function_",
              "oob_prediction_", "n_iter_", "train_score_", "validation_score_")


def assert_same_outputs(cpu, dev, X):
    for name in OUTPUTS:
        if hasattr(cpu, name):
            _same(getattr(cpu, name)(X), getattr(dev, name)(X), name)
    for name in STAGED:
        if hasattr(cpu, name):
            for k, (a, b) in enumerate(zip(getattr(cpu, name)(X), getattr(dev, name)(X))):
                _same(a, b, f"{name}[{k}]")
    for name in ATTRIBUTES:
        if hasattr(cpu, name):
            _same(getattr(cpu, name), getattr(dev, name), name)
    if DEVICE == "cuda":
        _assert_device_inputs_agree(cpu, dev, X)


def _assert_device_inputs_agree(cpu, dev, X):
    """Predictions of device (cupy) rows equal the CPU's of host rows."""
    import cupy
    numeric = X.select_dtypes("number")
    if numeric.shape[1] != X.shape[1]:
        return  # categorical columns have no device form
    device_X = cupy.asarray(numeric.to_numpy())
    for name in ("predict", "predict_proba"):
        if hasattr(cpu, name):
            _same(getattr(cpu, name)(X), cupy.asnumpy(getattr(dev, name)(device_X)), name)


CASES = {
    "tree-gini": (gputree.DecisionTreeClassifier, "multiclass",
                  dict(criterion="gini", max_depth=6, max_features=3)),
    "tree-entropy": (gputree.DecisionTreeClassifier, "binary",
                     dict(criterion="entropy", max_depth=6)),
    "tree-gain-ratio": (gputree.DecisionTreeClassifier, "multiclass",
                        dict(criterion="gain_ratio", max_depth=5)),
    "tree-multiway-c45": (gputree.DecisionTreeClassifier, "multiclass",
                          dict(criterion="gain_ratio", multiway=True, max_depth=4)),
    "tree-squared-error": (gputree.DecisionTreeRegressor, "regression",
                           dict(criterion="squared_error", max_depth=6)),
    "tree-absolute-error": (gputree.DecisionTreeRegressor, "numeric-regression",
                            dict(criterion="absolute_error", max_depth=5, min_samples_leaf=2)),
    "tree-poisson": (gputree.DecisionTreeRegressor, "poisson",
                     dict(criterion="poisson", max_depth=5, min_samples_leaf=3)),
    "tree-best-first": (gputree.DecisionTreeClassifier, "multiclass",
                        dict(max_leaf_nodes=12, max_features=3)),
    "forest-classifier": (gputree.RandomForestClassifier, "multiclass",
                          dict(n_estimators=6, max_depth=6, oob_score=True,
                               max_features="sqrt")),
    "forest-entropy-no-bootstrap": (gputree.RandomForestClassifier, "binary",
                                    dict(n_estimators=4, max_depth=5, criterion="entropy",
                                         bootstrap=False, max_features=2)),
    "forest-regressor": (gputree.RandomForestRegressor, "regression",
                         dict(n_estimators=5, max_depth=6, oob_score=True, max_samples=0.7)),
    "forest-absolute-error": (gputree.RandomForestRegressor, "numeric-regression",
                              dict(criterion="absolute_error", n_estimators=3, max_depth=4,
                                   oob_score=True, max_features=0.7)),
    "boosting-binary": (gputree.GradientBoostingClassifier, "binary",
                        dict(n_estimators=6, max_depth=4, subsample=0.8,
                             colsample_bytree=0.8, early_stopping=False)),
    "boosting-lossguide": (gputree.GradientBoostingClassifier, "binary",
                           dict(n_estimators=4, grow_policy="lossguide", max_leaf_nodes=9,
                                max_depth=None, subsample=0.8, early_stopping=False)),
    "boosting-multiclass": (gputree.GradientBoostingClassifier, "multiclass",
                            dict(n_estimators=5, max_depth=3, early_stopping=False)),
    "boosting-early-stopping": (gputree.GradientBoostingClassifier, "binary",
                                dict(n_estimators=30, max_depth=3, early_stopping=True,
                                     validation_fraction=0.2, n_iter_no_change=3)),
    "boosting-squared-error": (gputree.GradientBoostingRegressor, "regression",
                               dict(n_estimators=6, max_depth=4, early_stopping=False)),
    "boosting-absolute-error": (gputree.GradientBoostingRegressor, "regression",
                                dict(loss="absolute_error", n_estimators=5, max_depth=3,
                                     early_stopping=False)),
    "boosting-huber": (gputree.GradientBoostingRegressor, "regression",
                       dict(loss="huber", alpha=0.8, n_estimators=5, max_depth=3,
                            subsample=0.8, early_stopping=False)),
    "boosting-poisson": (gputree.GradientBoostingRegressor, "poisson",
                         dict(loss="poisson", n_estimators=5, max_depth=3,
                              early_stopping=False)),
}


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("case", sorted(CASES))
def test_cpu_and_device_models_are_identical(case, n):
    estimator, task, params = CASES[case]
    X, y, weight = _data(n, seed=len(case), task=task)
    fitted = []
    for device in ("cpu", DEVICE):
        model = estimator(device=device, random_state=3, **params, **SIMULATOR_PARAMS)
        fitted.append(model.fit(X, y, sample_weight=weight))
    cpu, dev = fitted
    assert_same_trees(cpu, dev)
    assert_same_outputs(cpu, dev, X)


#: 16-bit bin codes: more than 255 bins, on more distinct values than 256, so
#: that splits past bin 255 (the split sets' range and extra-bin words) occur
# boosting too on a GPU; the simulator (a lock per device call, 64 threads)
# ran the 300-bin cases for minutes under load: one shallow tree there
WIDE_CASES = ("tree-gini", "boosting-binary") if DEVICE == "cuda" else ("tree-gini",)
WIDE_DEPTH = {} if DEVICE == "cuda" else {"max_depth": 3}


def _wide_data(n, seed, task):
    """_data's columns, the classes decided by thresholds near the top of the
    numerical columns (above bin 255 of 300), so that shallow trees split
    there."""
    X, _, weight = _data(n, seed, task)
    top_a = X["a"] > np.nanquantile(X["a"], 0.9)
    top_b = X["b"] > np.nanquantile(X["b"], 0.88)
    y = np.where(top_a, 1, 0) if task == "binary" else np.where(top_a, 2, np.where(top_b, 1, 0))
    return X, y, weight


@pytest.mark.parametrize("case", WIDE_CASES)
def test_cpu_and_device_models_are_identical_with_16_bit_bins(case):
    estimator, task, params = CASES[case]
    X, y, weight = _wide_data(400, seed=len(case), task=task)
    fitted = [estimator(device=device, random_state=3,
                        **{**params, **WIDE_DEPTH, "max_bins": 300})
              .fit(X, y, sample_weight=weight) for device in ("cpu", DEVICE)]
    cpu, dev = fitted
    assert cpu._bin_mapper.n_bins_non_missing_.max() > 256
    assert any((t.bitset[:, 8:] > 0).any() for t in _trees(cpu)), "no split past bin 255"
    assert_same_trees(cpu, dev)
    assert_same_outputs(cpu, dev, X)


#: rankers: queries of 1 to 20 rows, one weight per query
RANKER_CASES = {
    "ranker-lambdarank": dict(n_estimators=5, max_depth=4, subsample=0.8,
                              colsample_bytree=0.8, early_stopping=False),
    "ranker-pairwise-early-stopping": dict(loss="rank:pairwise", n_estimators=30, max_depth=3,
                                           early_stopping=True, validation_fraction=0.2,
                                           n_iter_no_change=3, lambdarank_norm=False,
                                           lambdarank_truncation_level=5),
}


def _ranking_data(n, seed):
    X, signal = mixed_frame(n, seed)
    rng = np.random.RandomState(seed + 200)
    sizes = rng.randint(1, 21, n)
    sizes = sizes[:np.searchsorted(np.cumsum(sizes), n) + 1]
    sizes[-1] -= sizes.sum() - n
    y = np.digitize(signal, np.quantile(signal, [0.5, 0.75, 0.9]))
    return X, y, sizes, rng.uniform(0.2, 3.0, size=len(sizes))


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("case", sorted(RANKER_CASES))
def test_cpu_and_device_rankers_are_identical(case, n):
    X, y, sizes, weight = _ranking_data(n, seed=len(case))
    fitted = [gputree.GradientBoostingRanker(device=device, random_state=3, **RANKER_CASES[case],
                                             **SIMULATOR_PARAMS)
              .fit(X, y, group=sizes, sample_weight=weight) for device in ("cpu", DEVICE)]
    cpu, dev = fitted
    assert dev._backend.launches["query_terms"] >= dev.n_iter_   # the device's pass ran
    assert_same_trees(cpu, dev)
    assert_same_outputs(cpu, dev, X)
    assert cpu.score(X, y, group=sizes) == dev.score(X, y, group=sizes)
