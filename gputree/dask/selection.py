"""Exact weighted quantiles per group of rows spread over workers: the value
:func:`gputree.quantiles.grouped_weighted_quantile` gives on the rows
together, found by bisection over the float64 order with only group-sized
integer sums moving (the building block of leaf refits to quantiles).

Every float64 maps to an int64 key of the same order (:func:`order_keys`).
The quantile of a group is the smallest value whose fixed-point weight of
rows at or below it reaches ``q`` times the group's total (the one-machine
rule, with the one-machine fixed-point weights: the scale from the largest
positive weight and the number of positive weights over all the rows). So
the bisection runs over keys (:func:`distributed_quantile`, on the driver
or on every worker at once; :func:`held_scale` and :func:`held_quantile`
apart where the scale serves more): each step asks every shard for its per-group
integer weight at or below a pivot key (:func:`weight_at_or_below`), sums
them (exact in any order) and keeps the half holding the answer; 64 steps
end on an attained value.
"""
import numpy as np

from ..fixed_point import positive_weight_scale, summable_scale

_LOW_BITS = np.int64(0x7FFFFFFFFFFFFFFF)


def order_keys(values):
    """int64 keys of float64 ``values`` (n,) in the same order (-0.0 just
    below 0.0; no NaNs)."""
    bits = np.ascontiguousarray(values, dtype=np.float64).view(np.int64)
    return bits ^ ((bits >> 63) & _LOW_BITS)


def key_values(keys):
    """float64 values of int64 ``keys`` (the inverse of :func:`order_keys`)."""
    keys = np.asarray(keys, dtype=np.int64)
    return (keys ^ ((keys >> 63) & _LOW_BITS)).view(np.float64)


def shard_summary(weights):
    """(largest positive weight, number of positive weights) of a shard's
    float64 weights (n,)."""
    return positive_weight_scale(np, weights)


def fixed_weights(weights, largest, n_kept):
    """int64 fixed-point weights (n,) of a shard (0 where not positive), on
    the scale of all the shards' positive weights (``largest``, ``n_kept``:
    their largest and their count), as one machine scales them."""
    _, first, second = summable_scale(largest, n_kept)
    fixed = np.rint((weights * first) * second).astype(np.int64)
    return np.where(weights > 0, fixed, 0)


def weight_at_or_below(keys, fixed, groups, n_groups, pivots):
    """int64 (n_groups,): a shard's fixed-point weight of the rows whose key
    is at most their group's pivot (int64 (n_groups,))."""
    chosen = keys <= pivots[groups]
    out = np.zeros(n_groups, dtype=np.int64)
    np.add.at(out, groups[chosen], fixed[chosen])
    return out


def grouped_quantile(ask, totals, q, average=False):
    """float64 (n_groups,) weighted ``q``-quantiles (NaN where a group's
    total is 0), with ``average`` as :func:`grouped_weighted_quantile`'s
    (the mean of the value that reaches q times the total and the first
    that passes it): ``ask(pivots)`` returns the shards' summed
    :func:`weight_at_or_below` for int64 pivots (n_groups,); ``totals``:
    int64 (n_groups,) every group's fixed-point weight."""
    totals = np.asarray(totals, dtype=np.int64)
    if q == 0.5:
        lower = _bisect(ask, lambda within: ~(2 * within < totals), totals.shape)
        upper = _bisect(ask, lambda within: 2 * within > totals, totals.shape) if average \
            else lower
    else:
        lower = _bisect(ask, lambda within: ~(within < q * totals), totals.shape)
        upper = _bisect(ask, lambda within: within > q * totals, totals.shape) if average \
            else lower
    return np.where(totals > 0, 0.5 * (key_values(lower) + key_values(upper)), np.nan)


def _bisect(ask, reached, shape):
    """int64 keys (shape): per group the smallest key whose weight at or
    below it is ``reached`` (a test of int64 weights, monotone in the key)."""
    lo = np.full(shape, np.iinfo(np.int64).min, dtype=np.int64)
    hi = np.full(shape, np.iinfo(np.int64).max, dtype=np.int64)
    while np.any(lo < hi):
        mid = (lo >> 1) + (hi >> 1) + (lo & hi & 1)        # floor((lo + hi) / 2), no overflow
        done = reached(np.asarray(ask(mid), dtype=np.int64))
        hi = np.where(done, mid, hi)
        lo = np.where(done, lo, mid + 1)
    return lo


def held_scale(gather, source):
    """(largest positive weight, number of positive weights) over every
    shard's held values: ``quantile_rows(source)`` on every shard (it holds
    them and returns its :func:`shard_summary`); the scale of the
    one-machine fixed-point weights."""
    summaries = gather("quantile_rows", source)
    return max(s[0] for s in summaries), sum(s[1] for s in summaries)


def held_quantile(gather, scale, n_groups, q, average):
    """float64 (n_groups,): per group the weighted ``q`` quantile (the
    median averaged at an exact half where ``average``) of the values the
    shards hold (:func:`held_scale`, whose answer is ``scale``), exactly as
    one machine."""
    largest, n_kept = scale
    if n_kept == 0:
        return np.full(n_groups, np.nan)
    totals = np.sum(gather("quantile_scale", largest, n_kept, n_groups), axis=0)
    return grouped_quantile(lambda pivots: np.sum(gather("quantile_ask", pivots), axis=0),
                            totals, q, average=average)


def distributed_quantile(gather, source, n_groups, q, average):
    """:func:`held_quantile` of the values ``source`` names. ``gather(method,
    *args)`` calls ``method`` of every shard
    (:class:`gputree.dask.worker_rows.WorkerRows`) and returns their answers
    in shard order."""
    return held_quantile(gather, held_scale(gather, source), n_groups, q, average)
