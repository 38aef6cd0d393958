"""Weighted quantiles and medians within groups of rows (a tree's leaves, a
node's rows), vectorised with ``xp`` (numpy or cupy) and exact on every
device: the weights are summed in fixed point (:mod:`gputree.fixed_point`),
so every comparison with a share of a group's weight picks the same rows."""
import numpy as np

from ._dtypes import FLOAT_DTYPE
from .fixed_point import to_summable


def grouped_weighted_median(xp, values, weights, groups, n_groups):
    """Weighted median of ``values`` within each group (float64 (n_groups,),
    NaN for groups without positive weight). Rows with zero weight are
    ignored; where the cumulative weight hits exactly half, the two middle
    values are averaged (the ordinary median for unit weights)."""
    return grouped_weighted_quantile(xp, values, weights, groups, n_groups, 0.5, average=True)


def grouped_weighted_quantile(xp, values, weights, groups, n_groups, q, average=False):
    """Weighted ``q``-quantile of ``values`` within each group (float64
    (n_groups,), NaN for groups without positive weight; rows with zero
    weight are ignored): the smallest value whose cumulative weight reaches
    ``q`` times the group's weight (the inverted CDF, scikit-learn's
    ``_weighted_percentile``); with ``average``, where the cumulative weight
    hits that exactly, the mean of that value and the next.

    Vectorised: sort by (group, value), then count per group how many rows lie
    below ``q`` times the group's weight. Weights are summed in fixed point (a
    power-of-two scale from their largest, :func:`to_summable`), so the
    median's comparisons are exact and every device picks the same rows;
    other quantiles compare with ``q`` times the integer total (one IEEE
    product, rounded alike everywhere).
    """
    keep = weights > 0
    values, weights, groups = values[keep], weights[keep], groups[keep].astype(np.int64)
    m = values.shape[0]
    if m == 0:
        return xp.full(n_groups, xp.nan)
    rank = xp.empty(m, dtype=np.int64)
    rank[xp.argsort(values)] = xp.arange(m, dtype=np.int64)
    order = xp.argsort(groups * m + rank)          # unique keys: any sort is stable
    values, weights, groups = values[order], weights[order], groups[order]
    count = xp.bincount(groups, minlength=n_groups)
    first = xp.cumsum(count) - count
    # cumulative weights in fixed point: exact, so the same on every device
    cumulative = xp.cumsum(to_summable(xp, weights)[0])
    before = xp.where(first > 0, cumulative[xp.maximum(first - 1, 0)], 0)
    total = xp.where(count > 0, cumulative[xp.maximum(first + count - 1, 0)], 0) - before
    within = cumulative - before[groups]            # the weight up to each row
    if q == 0.5:
        below, reached = 2 * within < total[groups], 2 * within <= total[groups]
    else:
        threshold = q * total[groups]
        below, reached = within < threshold, within <= threshold
    lower = first + _count_per_group(xp, groups, below, n_groups)
    upper = first + _count_per_group(xp, groups, reached, n_groups) if average else lower
    last = xp.maximum(first + count - 1, 0)
    middle = values[xp.minimum(lower, last)] + values[xp.minimum(upper, last)]
    return xp.where(count > 0, 0.5 * middle, xp.nan)


def _count_per_group(xp, groups, flags, n_groups):
    """Rows with ``flags`` set in each group, int64 (n_groups,) (sums of 0/1
    are exact in float64)."""
    return xp.bincount(groups, weights=flags.astype(FLOAT_DTYPE),
                       minlength=n_groups).astype(np.int64)
