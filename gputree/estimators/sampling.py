"""A boosting round's random draws: its row subsample (``subsample``) and
the feature subset its trees grow on (``colsample_bytree``), drawn from
the round's generator by global row and feature index, so that the
one-machine loop (:mod:`.boosting`) and each Dask worker holding a part
of the rows (:mod:`gputree.dask.worker_rows`) draw alike. Imports no
estimator (a worker needs no scikit-learn)."""
from dataclasses import replace

import numpy as np

from ..growth.grower import grow


def subsample_rows(rng, n_samples, subsample):
    """int (k,): the rows of a round's ``subsample`` (round(subsample * n),
    at least 1), drawn without replacement from ``rng``; by global row index,
    so a part of the rows takes its own from the same draw."""
    return rng.choice(n_samples, max(1, int(round(subsample * n_samples))), replace=False)


def grow_on_columns(backend, data, stats, growth, rng, pool, held_row_bytes, colsample_bytree):
    """grow (:func:`gputree.growth.grower.grow`) on a ``colsample_bytree``
    subset of the features drawn from ``rng``; the tree refers to original
    feature indices."""
    n_features = data.X_binned.shape[1]
    k = max(1, int(round(colsample_bytree * n_features)))
    if k >= n_features:
        return grow(backend, data, stats, growth, rng, pool, held_row_bytes)
    columns = np.sort(rng.choice(n_features, k, replace=False))
    if growth.constraints is not None:
        growth = replace(growth, constraints=growth.constraints.restrict(columns))
    # the subset's binned X is held beside the full one
    tree, positions = grow(backend, data.take_columns(backend, columns), stats, growth, rng,
                           pool, held_row_bytes + n_features)
    internal = tree.feature >= 0
    tree.feature[internal] = columns[tree.feature[internal]]
    return tree, positions
