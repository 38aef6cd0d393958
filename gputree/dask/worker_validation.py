"""The validation rows of a Dask boosting fit on the workers: the rows of
``eval_set`` (binned with the fit's bins where they live) or the
one-machine ``validation_fraction`` split of the training rows, held by the
:class:`gputree.dask.worker_rows.WorkerRows` actors beside the training
rows; their loss every round is an order-free sum in parts, so early
stopping stops where the one-machine fit stops.

The split is the one-machine :func:`gputree.estimators.boosting.split_rows`:
every worker regenerates its permutation from the seed and keeps the
positions of its own rows; the stratified split's per-class bounds (the
position of each class's first training row) are found by bisection on the
workers' counts of their rows below a position (integers).
"""
import math

import numpy as np

from .inputs import bin_new_partitions, encoded_partitions
from .targets import WorkerTargets


def eval_partitions(estimator, X_val):
    """RowPartitions of the Dask collection X_val binned with the fit's bins
    where they live."""
    partitions = estimator._dask_fit[0]
    val = encoded_partitions(partitions.client, X_val, estimator._encoder, estimator.device)
    bin_new_partitions(val, estimator._bin_mapper, estimator.device)
    return val


def eval_parts(estimator, eval_set):
    """(RowPartitions of binned X_val, WorkerTargets of y_val and weights)
    of a Dask ``eval_set``: ``(X_val, y_val)`` or ``(X_val, y_val,
    sample_weight_val)``, or a list holding one."""
    from ..estimators.boosting import checked_eval_set
    eval_set = checked_eval_set(eval_set)
    val = eval_partitions(estimator, eval_set[0])
    targets = WorkerTargets(val, eval_set[1], eval_set[2] if len(eval_set) == 3 else None,
                            estimator._is_classifier())
    if estimator._is_classifier():
        unknown = ~np.isin(targets.labels, estimator.classes_)
        if np.any(unknown):
            raise ValueError(f"eval_set has labels not seen in y: {targets.labels[unknown][:5]}.")
    return val, targets


def eval_class_counts(estimator, targets):
    """int64 (n_classes,): rows of each training class among the eval rows."""
    counts = np.zeros(len(estimator.classes_), dtype=np.int64)
    counts[np.searchsorted(estimator.classes_, targets.labels)] += targets.counts
    return counts


def hold_out(backend, seed, stream, fraction, counts, n_rows):
    """Move the one-machine validation split's rows to the validation rows
    of the actors (``counts``: int64 rows of each class for a stratified
    split, else None); returns the number of training rows left and each
    partition's (``n_rows``: rows, or the units of a ranking loss)."""
    backend.call("split_positions", seed, stream, n_rows,
                 None if counts is None else len(counts))
    if counts is None:
        bounds = np.asarray([int(math.ceil(fraction * n_rows))])
        n_held = int(bounds[0])
    else:
        wanted = np.floor(fraction * counts)
        bounds = _bisect(backend, wanted, n_rows)
        n_held = int(wanted.sum())
    if n_held == 0 or n_held == n_rows:
        raise ValueError(f"validation_fraction={fraction} leaves an empty training or "
                         f"validation set for {n_rows} samples; change it or pass eval_set.")
    return n_rows - n_held, backend.per_partition(backend.call("hold_out", bounds))


def _bisect(backend, wanted, n_rows):
    """Per class the smallest position x whose rows below x number at
    least ``wanted`` (float64 (C,)): the rows below it are the class's
    validation rows."""
    low = np.zeros(wanted.size, dtype=np.int64)
    high = np.full(wanted.size, n_rows, dtype=np.int64)
    while np.any(low < high):
        active = low < high
        middle = (low + high) // 2
        below = np.sum(backend.call("count_before", middle), axis=0)
        enough = below >= wanted
        high = np.where(active & enough, middle, high)
        low = np.where(active & ~enough, middle + 1, low)
    return low


def validation_score(gather, order_free_total, n_units, loss):
    """The one-machine validation score (loss.score: minus the weighted
    mean loss, a ranking loss's mean NDCG) from the actors' parts
    (``gather(method, *args)``: every actor's answer, in order) over
    ``n_units`` pointwise values (rows, or queries)."""
    largest = np.max(gather("validation_parts"), axis=0)
    parts = gather("validation_parts", largest, n_units)
    return loss.score_of_sums(order_free_total([p[0] for p in parts]),
                              order_free_total([p[1] for p in parts]))
