"""What forests and boosting share: binning the training data once per fit
(or reusing the bins on a warm start), per-tree random streams, leaf ids and
leaf values of many trees on the device, and the progress report of long fits
(:class:`gputree._progress.Progress`).
"""
import numpy as np

from ..data.training import binning_seed, seed_from
from ..data.validation import check_random_state
from ..tree import concatenate_trees


def training_data(estimator, X, sample_weight):
    """(BinnedData of X on the backend, warm). With ``warm_start`` on a
    fitted ensemble X is binned with the first fit's bins; otherwise a new
    seed is drawn and new bins are learned and stored on the estimator."""
    if estimator.warm_start and hasattr(estimator, "_trees"):
        return estimator._bin_new_data(X), True
    estimator._seed = seed_from(check_random_state(estimator.random_state))
    seed = binning_seed(estimator.random_state, estimator._seed)
    inputs = estimator._bin_training_data(X, seed, sample_weight)
    estimator._store_inputs(inputs)
    return inputs.data, False


def tree_rng(seed, index, stream=0):
    """RandomState of tree (or round) ``index`` in random ``stream``: depends
    only on (seed, stream, index), so warm-started fits draw what one long fit
    would draw."""
    return np.random.RandomState([seed, stream, index])


class LazyTreeRng:
    """:func:`tree_rng` ``(seed, index, stream)``, seeded on first use: a
    RandomState's seeding from a key takes 0.1-0.3 ms, more than a level of
    a small tree, and a boosting round that draws nothing (no subsample, no
    feature subsets) never needs it. Draws are the RandomState's own."""

    __slots__ = ("_key", "_rng")

    def __init__(self, seed, index, stream=0):
        self._key, self._rng = (seed, index, stream), None

    def __getattr__(self, name):
        if self._rng is None:
            self._rng = tree_rng(*self._key)
        return getattr(self._rng, name)


def device_leaves(backend, X_binned, trees):
    """Leaf of every row in every tree, as ids into the trees' concatenated
    node arrays: int32 (n_samples, n_trees) on the backend (one launch)."""
    feature, sets, left, roots = concatenate_trees(trees)
    return backend.predict_leaves(X_binned, backend.asarray(feature), sets.map(backend.asarray),
                                  backend.asarray(left), backend.asarray(roots))


def add_tree_values(backend, X_binned, trees, columns, out):
    """Add every tree's leaf values to ``out`` (n_samples, W) on the backend,
    in place and in tree order: tree t adds its (n_nodes, V) values
    ``t.value.reshape(n_nodes, -1)`` to columns ``columns[t] .. + V`` (host
    ints). One launch on the CPU; no (n_samples, n_trees) leaf array."""
    if not trees:
        return
    feature, sets, left, roots = concatenate_trees(trees)
    values = np.concatenate([t.value.reshape(t.node_count, -1) for t in trees])
    backend.add_leaf_values(X_binned, backend.asarray(feature), sets.map(backend.asarray),
                            backend.asarray(left), backend.asarray(roots),
                            backend.asarray(values), np.asarray(columns, dtype=np.int32), out)


def stacked_values(backend, trees):
    """The trees' leaf values concatenated, float64 (total_nodes, n_outputs,
    n_classes) on the backend; index it with :func:`device_leaves`."""
    return backend.asarray(np.concatenate([t.value for t in trees]))
