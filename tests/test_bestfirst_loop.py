"""The CPU's best-first steps in compiled calls (gputree/backends/cpu/bestfirst_loop.py)
grow the trees of the same steps taken one call at a time from Python and
of the general step (gputree/growth/bestfirst.py), field for field, on
mostly-constant features (sparse rows: the loop's one-call split and
build), also where the loop hands a step back to Python: before a step
(room in the node arrays, the pool, the partition), for its row split (a
leaf of more rows than one chunk moves) or its histogram build (a child of
more rows than one piece holds), with a team of two threads scanning each
step's slots or the calling thread alone."""
import numpy as np
import pytest

from compiled_steps import assert_same_trees, boosting
from gputree.backends.cpu import bestfirst_loop, bestfirst_step, histograms, split_build
from gputree.backends.cpu.backend import CPUBackend


def _sparse_data(n=3000, seed=3):
    """(X float64 (n, 6), 85% of its values 0, y float64 (n,))."""
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, 6))
    X[rng.rand(n, 6) < 0.85] = 0.0
    y = X[:, 0] + np.abs(X[:, 1]) + (X[:, 2] > 0.5) + rng.normal(0, 0.2, n)
    return X, y


def _left_behind(monkeypatch):
    """The codes the compiled loop returns, listed as it runs."""
    codes = []
    run_team = bestfirst_loop.run_team

    def counted(kernel, *arguments):
        codes.append(run_team(kernel, *arguments))
        return codes[-1]
    monkeypatch.setattr(bestfirst_loop, "run_team", counted)
    return codes


@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("handed_back", ["", "leaf", "piece"])
def test_looped_steps_grow_the_trees_of_steps_one_by_one(monkeypatch, handed_back, n_threads):
    X, y = _sparse_data()
    # (a piece of the histogram pass: 2 _ROWS_PER_BIN rows a bin)
    make = boosting("GradientBoostingRegressor", grow_policy="lossguide", max_depth=None,
                    max_leaf_nodes=40, min_samples_leaf=3, max_bins=15, n_jobs=n_threads)
    if handed_back == "leaf":
        monkeypatch.setattr(split_build, "MOST_LEAF_ROWS", 500)
    elif handed_back == "piece":
        monkeypatch.setattr(histograms, "_ROWS_PER_BIN", 1)
    with monkeypatch.context() as patch:
        codes = _left_behind(patch)
        looped = make().fit(X, y)._trees
    with monkeypatch.context() as patch:
        patch.setattr(bestfirst_loop.LoopedSteps, "advance", bestfirst_step.BestFirstSteps.advance)
        one_by_one = make().fit(X, y)._trees
    with monkeypatch.context() as patch:
        patch.setattr(CPUBackend, "best_first_steps", lambda self, *args: None)
        general = make().fit(X, y)._trees
    assert_same_trees(looped, one_by_one)
    assert_same_trees(looped, general)
    taken = {bestfirst_loop.NOTHING: 0, bestfirst_loop.STEP: 0, bestfirst_loop.SPLIT: 0,
             bestfirst_loop.BUILD: 0}
    for code in codes:
        taken[code] += 1
    assert taken[bestfirst_loop.NOTHING] > 0        # trees the loop finished
    assert taken[bestfirst_loop.STEP] > 0           # the pool grown on the first tree
    expected = {"": (0, 0), "leaf": (1, 0), "piece": (0, 1)}[handed_back]
    assert (taken[bestfirst_loop.SPLIT] > 0, taken[bestfirst_loop.BUILD] > 0) == \
        tuple(bool(e) for e in expected)
