"""Whole fits on the simulated device are the same with every histogram
kernel (kernels/histogram.cu: the row-walking ones and the by-node ones that
read the row partition), and the same as the CPU's: the variants differ in
what they read and where they add, never in the sums."""
import contextlib

import numpy as np
import pytest

from gputree import (DecisionTreeClassifier, GradientBoostingRegressor,
                     RandomForestClassifier)
from gputree.backends import get_backend
from gputree.backends.cuda.c_kernels import HISTOGRAM_KERNELS

from .datasets import classification, regression
from .test_parity import assert_same_tree


@contextlib.contextmanager
def histogram_kernel(name):
    """The simulated device's histogram kernel set to ``name``, with small
    by-node blocks (several per node), for the block of the with."""
    kernels = get_backend("cuda-sim").kernels
    saved = (kernels.histogram_kernel, kernels.node_min_rows, kernels.node_max_blocks)
    kernels.histogram_kernel, kernels.node_min_rows, kernels.node_max_blocks = name, 8, 16
    try:
        yield kernels
    finally:
        kernels.histogram_kernel, kernels.node_min_rows, kernels.node_max_blocks = saved


def trees(model):
    return [model.tree_] if hasattr(model, "tree_") else model._trees


CASES = {
    "tree": (DecisionTreeClassifier, classification,
             dict(max_depth=5, max_bins=16, random_state=0)),
    "forest": (RandomForestClassifier, classification,
               dict(n_estimators=3, max_depth=4, max_bins=16, random_state=0)),
    "boosting": (GradientBoostingRegressor, regression,
                 dict(n_estimators=3, max_depth=4, max_bins=300, random_state=0)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_fits_identical_with_every_histogram_kernel(case):
    estimator, data, params = CASES[case]
    X, y = data(n_samples=240, seed=3)
    cpu = estimator(device="cpu", **params).fit(X, y)
    assert max(t.node_count for t in trees(cpu)) > 7
    for name in HISTOGRAM_KERNELS:
        with histogram_kernel(name):
            sim = estimator(device="cuda-sim", **params).fit(X, y)
        for a, b in zip(trees(cpu), trees(sim)):
            assert_same_tree(a, b)
        assert np.array_equal(cpu.predict(X), sim.predict(X)), name
