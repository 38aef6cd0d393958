"""What a fit costs the CUDA backend, counted by the backend itself:
host<->device copies per level and per tree do not grow with the number of
nodes, and the pre-fit memory estimate bounds the bytes that the fit's device
arrays hold at once.

The device is ``GPUTREE_TEST_DEVICE`` (default ``cuda-sim``), as in
tests/test_device_parity.py; tests/test_simulated_device.py runs this file
with numba's CUDA simulator on, and on a GPU machine
``GPUTREE_TEST_DEVICE=cuda python -m pytest tests/test_device_budgets.py``
checks the real device (there the memory peak is cupy's pool).
"""
import gc
import os

import numpy as np
import pytest

from gputree import (DecisionTreeClassifier, DecisionTreeRegressor, GradientBoostingClassifier,
                     GradientBoostingRegressor, RandomForestClassifier, RandomForestRegressor)
from gputree.backends import get_backend
from gputree.data.binning import BinMapper
from gputree.criteria import SQUARED_ERROR, regression_statistics
from gputree.data.binned import BinnedData
from gputree.growth.params import GrowthParams
from gputree.growth.levelwise import grow_tree

from simulated.datasets import classification, regression

DEVICE = os.environ.get("GPUTREE_TEST_DEVICE", "cuda-sim")

try:
    get_backend(DEVICE)
except Exception as exc:  # noqa: BLE001 - skip with the reason
    pytest.skip(f"device {DEVICE!r} is not available in this process: {exc}",
                allow_module_level=True)

#: copies made by grow_tree once per tree: uploads of the tree's constants,
#: of the last level's splits (for the last partition) and of the nodes'
#: totals; downloads of the root's totals and of the nodes' summaries
TREE_UPLOADS, TREE_DOWNLOADS = 3, 2
#: and once per level, whatever its number of nodes
LEVEL_UPLOADS, LEVEL_DOWNLOADS = 1, 1
#: counted kernel launches per level: partition, histograms, subtraction,
#: split scan, children's summaries
LEVEL_LAUNCHES = 5
#: ensembles, per tree: boosting uploads the leaf values that update the
#: raw scores, a forest the tree's bootstrap counts
ROUND_UPLOADS, BAG_UPLOADS = 1, 1


def device():
    return get_backend(DEVICE)


def binned(backend, X):
    mapper = BinMapper(16, np.zeros(X.shape[1], bool)).fit(X, np.ones(len(X)))
    X_binned = backend.map_to_bins(backend.upload(X), backend.upload(mapper.bin_thresholds_),
                                   backend.upload(np.zeros(X.shape[1], np.uint8)),
                                   mapper.missing_bin_)
    return BinnedData(X_binned, mapper.n_bins_, mapper.n_bins_non_missing_,
                      np.zeros(X.shape[1], np.uint8), mapper.bin_thresholds_)


def grow_counted(max_depth, **growth):
    """(tree, uploads, downloads, launches) of one grow_tree on a regression
    that splits every node down to max_depth."""
    backend = device()
    rng = np.random.RandomState(0)
    X = rng.uniform(size=(600, 3))
    y = X[:, 0] + 0.1 * X[:, 1] + 0.01 * rng.normal(size=600)
    data = binned(backend, X)
    stats = regression_statistics(y[:, None], np.ones(600), SQUARED_ERROR)
    stats.stats = backend.upload(stats.stats)
    before, launched = backend.transfers.copies(), sum(backend.launches.values())
    tree, _ = grow_tree(backend, data, stats, GrowthParams(max_depth=max_depth, **growth),
                        np.random.RandomState(0))
    after = backend.transfers.copies()
    launches = sum(backend.launches.values()) - launched
    return tree, after[0] - before[0], after[1] - before[1], launches


def levels(tree):
    """Levels that hold nodes (each scanned at most once)."""
    return int(tree.depth.max()) + 1


@pytest.mark.parametrize("growth", [{}, {"max_features": 2}, {"max_leaf_nodes": 40}])
def test_copies_per_tree_and_level_do_not_grow_with_nodes(growth):
    shallow, shallow_up, shallow_down, shallow_launches = grow_counted(1, **growth)
    deep, deep_up, deep_down, deep_launches = grow_counted(6, **growth)
    assert deep.node_count > 10 * shallow.node_count
    for tree, up, down in ((shallow, shallow_up, shallow_down), (deep, deep_up, deep_down)):
        assert up <= TREE_UPLOADS + LEVEL_UPLOADS * levels(tree)
        assert down <= TREE_DOWNLOADS + LEVEL_DOWNLOADS * levels(tree)
    # five more levels, over ten times the nodes: at most five more of each
    assert deep_up - shallow_up <= LEVEL_UPLOADS * (levels(deep) - levels(shallow))
    assert deep_down - shallow_down <= LEVEL_DOWNLOADS * (levels(deep) - levels(shallow))
    assert deep_launches - shallow_launches <= LEVEL_LAUNCHES * (levels(deep) - levels(shallow))


def ensemble_copies(make, n_trees, X, y):
    backend = device()
    backend.transfers.clear()
    model = make(n_trees).fit(X, y)
    return model, backend.transfers.copies()


@pytest.mark.parametrize("kind", ["boosting", "forest"])
def test_copies_per_tree_of_an_ensemble(kind):
    """Each added tree costs its grower's budget plus the ensemble's own
    per-tree copies, whatever its number of nodes."""
    X, y = classification(n_samples=200, seed=5)
    if kind == "boosting":
        extra = ROUND_UPLOADS
        make = lambda n: GradientBoostingClassifier(  # noqa: E731
            n_estimators=n, max_depth=4, min_samples_leaf=2, max_bins=16, early_stopping=False,
            device=DEVICE)
    else:
        extra = BAG_UPLOADS
        make = lambda n: RandomForestClassifier(  # noqa: E731
            n_estimators=n, max_depth=4, max_bins=16, random_state=0, device=DEVICE)
    few, (few_up, few_down) = ensemble_copies(make, 2, X, y)
    many, (many_up, many_down) = ensemble_copies(make, 5, X, y)
    added = many._trees[len(few._trees):]
    assert sum(t.node_count for t in added) > 3 * 7
    budget_levels = sum(levels(t) for t in added)
    assert many_up - few_up <= (TREE_UPLOADS + extra) * len(added) + LEVEL_UPLOADS * budget_levels
    assert many_down - few_down <= TREE_DOWNLOADS * len(added) + LEVEL_DOWNLOADS * budget_levels


def fits():
    """Estimator factories and data of several shapes (rows, features,
    bins, depth, channels)."""
    Xc, yc = classification(n_samples=300, seed=1, n_classes=3)
    Xr, yr = regression(n_samples=240, seed=2)
    wide = np.random.RandomState(3).normal(size=(150, 12))
    y_wide = wide[:, 0] - wide[:, 5] + 0.1 * np.random.RandomState(4).normal(size=150)
    tall = np.random.RandomState(5).normal(size=(20000, 6))
    y_tall = tall[:, 1] + 0.1 * np.random.RandomState(6).normal(size=20000)
    return [
        # rows dominate: binning's float X and the per-row buffers
        ("tree-tall", DecisionTreeRegressor(max_depth=2, max_bins=16), tall, y_tall),
        ("forest-tall", RandomForestRegressor(n_estimators=2, max_depth=2, max_bins=16,
                                              random_state=0), tall, y_tall),
        ("tree-gini", DecisionTreeClassifier(max_depth=5, max_bins=32), Xc, yc),
        # 255 bins on a GPU; 16 in the simulator, whose kernel launches poll
        # 64 Python threads: 64 bins there took 26 s alone, 300 s beside other tests
        ("tree-wide", DecisionTreeRegressor(max_depth=3, max_bins=255 if DEVICE == "cuda" else 16),
         wide, y_wide),
        ("forest-oob", RandomForestClassifier(n_estimators=3, max_depth=4, max_bins=16,
                                              oob_score=True, random_state=0), Xc, yc),
        ("forest-regression", RandomForestRegressor(n_estimators=2, max_depth=6, max_bins=64,
                                                    random_state=0), Xr, yr),
        ("boosting-multiclass", GradientBoostingClassifier(
            n_estimators=3, max_depth=3, max_bins=16, early_stopping=True,
            validation_fraction=0.2, n_iter_no_change=5), Xc, yc),
        ("boosting-colsample", GradientBoostingRegressor(
            n_estimators=3, max_depth=4, max_bins=16, colsample_bytree=0.5,
            early_stopping=False), wide, y_wide),
    ]


class PeakBytes:
    """Most device bytes held at once during a ``with`` block: the bytes of
    the backend's tracked arrays (uploads, zeros, empty) on the simulated
    device; cupy's pool (emptied first) on a GPU."""

    def __init__(self, backend):
        self.backend = backend

    def __enter__(self):
        gc.collect()
        if self.backend.runtime == "cupy":
            self.backend.xp.get_default_memory_pool().free_all_blocks()
        self.before = self.backend.memory.live
        self.backend.memory.reset_peak()
        return self

    def __exit__(self, *exc):
        if self.backend.runtime == "cupy":
            self.bytes = self.backend.xp.get_default_memory_pool().total_bytes()
        else:
            self.bytes = self.backend.memory.peak - self.before


@pytest.mark.parametrize("index", range(8))
def test_memory_estimate_bounds_what_a_fit_holds(index):
    """The smallest estimate the fit checked covers the most bytes its
    device buffers held at once."""
    name, model, X, y = fits()[index]
    backend = device()
    estimates = []
    original = backend.check_fit_memory

    def check(*args, **kwargs):
        original(*args, **kwargs)
        estimates.append(backend.last_fit_estimate)

    backend.check_fit_memory = check
    try:
        with PeakBytes(backend) as peak:
            model.set_params(device=DEVICE).fit(X, y)
    finally:
        del backend.check_fit_memory
    assert estimates, name
    assert peak.bytes > 0, name
    assert peak.bytes <= min(estimates), (name, peak.bytes, min(estimates))
