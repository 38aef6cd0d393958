"""scikit-learn's ``max_features`` soft limit (random forests' feature
subsets) over histograms that the workers hold in feature slices
(:mod:`gputree.dask.sliced_histograms`).

The rule is :mod:`gputree.backends.node_features`' (``soft_limit_row``): a
node's features come in a drawn order, the first ``max_features`` allowed,
and the next ones too up to and including the first that is not constant
in the node. Whether a feature is constant in a node reads that feature's
histogram only, so each worker decides it for its own features
(:func:`constant_features`, the same integer tests as the kernels'); the
workers exchange those node-by-feature flags and each applies the walk
(:func:`soft_limit`) to the whole ``allowed`` mask: every worker allows the
same features, the ones one machine allows.
"""
import numpy as np

from ..backends.formulas import LAYOUT_COUNT_CHANNEL, LAYOUT_PER_OUTPUT, LAYOUT_WEIGHT_CHANNEL


def constant_features(hist, n_bins_non_missing, missing_bin, layout):
    """bool (n_rows, F): whether each feature of each histogram row is
    constant (node_features' ``is_constant``: no non-missing bin holds
    rows, or one does and the missing bin holds none). hist int64 (n_rows,
    F, n_bins, C); n_bins_non_missing int (F,); layout int64."""
    channel = int(layout[LAYOUT_COUNT_CHANNEL])
    if channel < 0:
        channel = int(layout[LAYOUT_WEIGHT_CHANNEL])
    if channel >= 0:
        holds = hist[..., channel] > 0
    else:          # the class channels of output 0: none is negative
        holds = (hist[..., :int(layout[LAYOUT_PER_OUTPUT])] > 0).any(axis=-1)
    bins = np.arange(hist.shape[2])
    present = holds & (bins[None, None, :] < np.asarray(n_bins_non_missing)[None, :, None])
    count = 2 * present.sum(axis=2) + holds[:, :, missing_bin]
    return count <= 2


def soft_limit(order, max_features, constant, allowed):
    """Allow, in place, the features the soft limit adds (node_features'
    ``soft_limit_row``): order int32 (n_rows, F) each row's features in
    their drawn order (order[row, 0] < 0: not a candidate), constant bool
    (n_rows, F) by feature, allowed uint8 (n_rows, F)."""
    rows = np.flatnonzero(order[:, 0] >= 0)
    if rows.size == 0 or max_features >= order.shape[1]:
        return
    ordered = order[rows]
    walked = np.take_along_axis(constant[rows], ordered, axis=1)
    varied = ~walked
    # the walk stops at the first feature that is not constant (the last when all are)
    stop = np.where(varied.any(axis=1), np.argmax(varied, axis=1), order.shape[1] - 1)
    steps = np.arange(order.shape[1])
    added = (steps[None, :] >= max_features) & (steps[None, :] <= stop[:, None])
    hit_rows, hit_steps = np.nonzero(added)
    allowed[rows[hit_rows], ordered[hit_rows, hit_steps]] = 1
