"""Split criteria: the per-row statistics each criterion histograms, and the
scalar formulas (node weight, impurity, gain, leaf value) computed from
integer channel sums.

Statistics are fixed-point int64 (DESIGN.md §4): every channel has a
power-of-two scale chosen from the data so that the sum over all rows cannot
overflow, which makes every histogram sum independent of summation order.

The scalar formulas are written once, in the subset of Python that both
``numba.njit`` and ``numba.cuda.jit(device=True)`` compile, and turned into
device- or host-code by :func:`make_criterion_functions` so that every backend
computes gains with the very same arithmetic.

Channel layouts (``layout`` int64 array, see ``LAYOUT_*``):

* classification (gini, entropy, gain_ratio): per output ``o``, ``n_classes``
  channels ``w * [y_o == k]``; the node weight is the sum of output 0's.
* squared_error: ``[w, (w*y_o, w*y_o**2) for o]``.
* poisson: ``[w, (w*y_o, w*y_o*log(y_o)) for o]``.
* newton (boosting): ``[(g_o, h_o) for o, n]``.

A count channel (1 where a row has positive weight) is appended when the
weights are not all one; otherwise the weight channel counts rows exactly.
"""
import math
from types import SimpleNamespace

import numba
import numpy as np

from ._dtypes import FLOAT_DTYPE, STAT_DTYPE

GINI, ENTROPY, GAIN_RATIO, SQUARED_ERROR, POISSON, NEWTON = range(6)
CLASSIFICATION_CRITERIA = {"gini": GINI, "entropy": ENTROPY,
                           "log_loss": ENTROPY, "gain_ratio": GAIN_RATIO}
REGRESSION_CRITERIA = {"squared_error": SQUARED_ERROR, "poisson": POISSON}

# positions inside the int64 ``layout`` array
(LAYOUT_CRITERION, LAYOUT_N_OUTPUTS, LAYOUT_PER_OUTPUT, LAYOUT_VALUE_OFFSET,
 LAYOUT_WEIGHT_CHANNEL, LAYOUT_COUNT_CHANNEL, LAYOUT_N_CHANNELS) = range(7)
LAYOUT_SIZE = 7
# positions inside the float64 ``params`` array
(PARAM_MIN_SAMPLES_LEAF, PARAM_MIN_WEIGHT_LEAF, PARAM_REG_LAMBDA) = range(3)
PARAMS_SIZE = 3

# largest absolute channel total allowed after scaling (leaves 2 bits headroom)
_FIXED_POINT_LIMIT = 2.0 ** 61


class Statistics:
    """Per-row fixed-point statistics of one fit.

    Attributes
    ----------
    stats : int64 (n_samples, n_channels), C order
    inv_scale : float64 (n_channels,), multiply an integer sum by it to get
        the real sum (exact: a power of two)
    layout : int64 (LAYOUT_SIZE,)
    n_classes : int, channels per output for classification, else 1
    """

    def __init__(self, stats, inv_scale, layout, n_classes):
        self.stats = stats
        self.inv_scale = inv_scale
        self.layout = layout
        self.n_classes = n_classes

    @property
    def n_outputs(self):
        return int(self.layout[LAYOUT_N_OUTPUTS])


def fixed_point_scale(values):
    """Power-of-two scale (host float) for float columns (n_samples, k) that
    share it: the largest with ``n_samples * max|value| * scale <= 2**61``,
    so no sum of scaled rows can overflow. A bound from the maximum (exact on
    every device) rather than from a float sum (whose rounding depends on the
    summation order) gives every device the very same scale."""
    if values.size == 0:
        return 1.0
    largest = max(float(values.max()), -float(values.min()))
    bound = float(values.shape[0]) * largest
    return 1.0 if bound == 0.0 else math.ldexp(1.0, math.floor(math.log2(_FIXED_POINT_LIMIT / bound)))


def to_fixed_point(values, weights_are_counts=False, xp=np, out=None):
    """Scale float columns (n_samples, k) to int64 fixed point.

    All columns in one group share one scale (:func:`fixed_point_scale`) so
    that their sums stay comparable; returns (int64 values, inverse scale
    float64 (k,)). ``xp`` is the array module of ``values`` (numpy, or cupy on
    a GPU); the inverse scale is always a host array. ``out``: int64
    (n_samples, k) to write the values into (columns of a statistics array),
    else a new array.
    """
    values = xp.asarray(values, dtype=FLOAT_DTYPE)
    if out is None:
        out = xp.empty(values.shape, dtype=STAT_DTYPE)
    if weights_are_counts:
        xp.copyto(out, values, casting="unsafe")
        return out, np.ones(values.shape[1], FLOAT_DTYPE)
    scale = fixed_point_scale(values)
    _scale_into(values, scale, out, xp)
    return out, np.full(values.shape[1], 1.0 / scale, dtype=FLOAT_DTYPE)


def _scale_into(values, scale, out, xp=np):
    """out (int64) = rint(values * scale), with one float temporary."""
    scaled = values * scale
    xp.rint(scaled, out=scaled)
    xp.copyto(out, scaled, casting="unsafe")


def _needs_count_channel(sample_weight):
    return not np.all(sample_weight == 1.0)


def _integer_weights(sample_weight):
    return bool(np.all(sample_weight == np.round(sample_weight)))


def _statistics_array(n_samples, n_values, sample_weight, xp=np, count=None):
    """The statistics array, allocated once and filled in place by the
    builders: int64 (n_samples, n_values [+ 1]) zeros, plus, last, the count
    channel (1 where a row's weight is positive) when the weights are not
    all one (``count`` True/False forces it). Returns (stats, inverse scales
    float64 (n_channels,), ones until set, count channel or -1)."""
    if count is None:
        count = _needs_count_channel(sample_weight)
    stats = xp.zeros((n_samples, n_values + int(count)), dtype=STAT_DTYPE)
    if count:
        stats[:, n_values] = sample_weight > 0
    return stats, np.ones(stats.shape[1], FLOAT_DTYPE), n_values if count else -1


def _layout(fields, count_channel, n_channels):
    return np.array(fields + [count_channel, n_channels], dtype=np.int64)


def _one_hot_fixed_point(y_encoded, n_classes, sample_weight):
    """to_fixed_point of the one-hot weights (n_samples, n_outputs *
    n_classes), as (float64 (n_samples,) each row's integral value in its
    class channels, the channels' inverse scale). Integer weights are their
    own fixed point; for others the one-hot columns' scale is the weights'
    own (:func:`fixed_point_scale` looks at the largest value only), so no
    one-hot copy is made."""
    sample_weight = np.asarray(sample_weight, dtype=FLOAT_DTYPE)
    if _integer_weights(sample_weight):
        return sample_weight, 1.0
    scale = fixed_point_scale(sample_weight[:, None])
    return np.rint(sample_weight * scale), 1.0 / scale


def classification_statistics(y_encoded, n_classes, sample_weight, criterion):
    """y_encoded: int (n_samples, n_outputs) class indices; returns Statistics.

    The fixed-point weights are written into each row's class channels in
    place, one channel at a time (no (n_samples, n_channels) temporaries)."""
    n_samples, n_outputs = y_encoded.shape
    n_values = n_outputs * n_classes
    stats, inv, count_channel = _statistics_array(n_samples, n_values, sample_weight)
    fixed, inv[:n_values] = _one_hot_fixed_point(y_encoded, n_classes, sample_weight)
    for o in range(n_outputs):
        for k in range(n_classes):
            np.copyto(stats[:, o * n_classes + k], fixed, casting="unsafe",
                      where=y_encoded[:, o] == k)
    layout = _layout([criterion, n_outputs, n_classes, 0, -1], count_channel, stats.shape[1])
    return Statistics(stats, inv, layout, n_classes)


def regression_statistics(y, sample_weight, criterion):
    """y: float (n_samples, n_outputs); returns Statistics."""
    n_samples, n_outputs = y.shape
    w = sample_weight[:, None]
    stats, inv, count_channel = _statistics_array(n_samples, 1 + 2 * n_outputs, sample_weight)
    _, inv[0:1] = to_fixed_point(w, _integer_weights(sample_weight), out=stats[:, 0:1])
    for o in range(n_outputs):
        y_o = y[:, o]
        c = 1 + 2 * o
        _, inv[c:c + 1] = to_fixed_point((w[:, 0] * y_o)[:, None], out=stats[:, c:c + 1])
        if criterion == POISSON:
            second = np.where(y_o > 0, y_o * np.log(np.where(y_o > 0, y_o, 1.0)), 0.0)
        else:
            second = y_o * y_o
        _, inv[c + 1:c + 2] = to_fixed_point((w[:, 0] * second)[:, None],
                                             out=stats[:, c + 1:c + 2])
    layout = _layout([criterion, n_outputs, 2, 1, 0], count_channel, stats.shape[1])
    return Statistics(stats, inv, layout, 1)


@numba.njit(parallel=True, cache=True)
def _fill_newton_statistics(gradients, hessians, scales, sample_weight, out):
    """The host's one pass for newton_statistics: out int64 (n, 2K + 1) OUT,
    per output o ``rint(g * scales[2o])``, ``rint(h * scales[2o + 1])``, then
    the count channel (1 where the weight is positive). gradients, hessians
    float64 (n, K), scales float64 (2K,), sample_weight float64 (n,) IN.
    Rounding as numpy's rint, so the device's column-wise path agrees."""
    n_outputs = gradients.shape[1]
    for i in numba.prange(gradients.shape[0]):
        for o in range(n_outputs):
            out[i, 2 * o] = np.int64(np.rint(gradients[i, o] * scales[2 * o]))
            out[i, 2 * o + 1] = np.int64(np.rint(hessians[i, o] * scales[2 * o + 1]))
        out[i, 2 * n_outputs] = 1 if sample_weight[i] > 0 else 0


def newton_statistics(gradients, hessians, sample_weight, xp=np):
    """gradients, hessians: float (n_samples, n_outputs); returns Statistics.

    Boosting always carries an explicit count channel (hessians are not counts).
    With ``xp`` the backend's array module the statistics are built where the
    gradients live (on the GPU for the CUDA backend), each column scaled and
    rounded straight into one int64 array; on the host in one numba pass.
    """
    n_samples, n_outputs = gradients.shape
    n_values = 2 * n_outputs
    scales = np.array([fixed_point_scale(column) for o in range(n_outputs)
                       for column in (gradients[:, o], hessians[:, o])], dtype=FLOAT_DTYPE)
    if xp is np:
        stats = np.empty((n_samples, n_values + 1), dtype=STAT_DTYPE)
        _fill_newton_statistics(gradients, hessians, scales, sample_weight, stats)
    else:
        stats, _, _ = _statistics_array(n_samples, n_values, sample_weight, xp, count=True)
        for o in range(n_outputs):
            for c, column in ((2 * o, gradients[:, o]), (2 * o + 1, hessians[:, o])):
                _scale_into(column[:, None], scales[c], stats[:, c:c + 1], xp)
    inv = np.concatenate([1.0 / scales, [1.0]])
    layout = _layout([NEWTON, n_outputs, 2, 0, 1], n_values, n_values + 1)
    return Statistics(stats, inv, layout, 1)


def make_criterion_functions(jit, inline=None):
    """Compile the scalar criterion formulas with ``jit`` (``numba.njit`` or
    ``numba.cuda.jit(device=True)``); returns a namespace of functions.

    Every function takes ``S`` int64 (n_channels,) channel sums of one node
    (or child), ``layout`` int64 (LAYOUT_SIZE,), ``inv`` float64 (n_channels,).
    ``inline`` (default ``jit``) compiles the small helpers called once per
    split candidate; on the CPU it inlines them (numba's array-argument calls
    are costly in the hot loop).
    """
    inline = inline or jit

    @inline
    def node_weight(S, layout, inv):
        crit = layout[LAYOUT_CRITERION]
        if crit == NEWTON:
            # the smallest hessian sum over outputs (min_child_weight)
            best = math.inf
            for o in range(layout[LAYOUT_N_OUTPUTS]):
                h = S[2 * o + 1] * inv[2 * o + 1]
                if h < best:
                    best = h
            return best
        if layout[LAYOUT_WEIGHT_CHANNEL] >= 0:
            c = layout[LAYOUT_WEIGHT_CHANNEL]
            return S[c] * inv[c]
        total = 0
        for k in range(layout[LAYOUT_PER_OUTPUT]):
            total += S[k]
        return total * inv[0]

    @inline
    def node_count(S, layout, inv):
        c = layout[LAYOUT_COUNT_CHANNEL]
        if c >= 0:
            return S[c] * 1.0
        return node_weight(S, layout, inv)

    @inline
    def class_impurity(S, layout, inv, o):
        per = layout[LAYOUT_PER_OUTPUT]
        total = 0
        for k in range(per):
            total += S[o * per + k]
        if total <= 0:
            return 0.0
        result = 1.0 if layout[LAYOUT_CRITERION] == GINI else 0.0
        for k in range(per):
            p = S[o * per + k] / total
            if layout[LAYOUT_CRITERION] == GINI:
                result -= p * p
            elif p > 0.0:
                result -= p * math.log2(p)
        return result

    @inline
    def impurity(S, layout, inv):
        crit = layout[LAYOUT_CRITERION]
        n_out = layout[LAYOUT_N_OUTPUTS]
        if crit == NEWTON:
            return 0.0
        result = 0.0
        if crit <= GAIN_RATIO:
            for o in range(n_out):
                result += class_impurity(S, layout, inv, o)
            return result / n_out
        w = node_weight(S, layout, inv)
        if w <= 0.0:
            return 0.0
        off = layout[LAYOUT_VALUE_OFFSET]
        for o in range(n_out):
            sy = S[off + 2 * o] * inv[off + 2 * o]
            s2 = S[off + 2 * o + 1] * inv[off + 2 * o + 1]
            mean = sy / w
            if crit == SQUARED_ERROR:
                result += s2 / w - mean * mean
            elif sy <= 0.0:
                result += math.inf
            else:
                result += (s2 - sy * math.log(mean)) / w
        return result / n_out

    @inline
    def newton_score(S, layout, inv, reg_lambda):
        """sum over outputs of G**2 / (H + lambda)."""
        score = 0.0
        for o in range(layout[LAYOUT_N_OUTPUTS]):
            g = S[2 * o] * inv[2 * o]
            h = S[2 * o + 1] * inv[2 * o + 1]
            score += g * g / (h + reg_lambda)
        return score

    @inline
    def poisson_child_ok(S, layout, inv):
        off = layout[LAYOUT_VALUE_OFFSET]
        for o in range(layout[LAYOUT_N_OUTPUTS]):
            if S[off + 2 * o] <= 0:
                return False
        return True

    @inline
    def parent_score(T, layout, inv, params):
        """The parent's term of split_gain, computed once per (node, feature):
        its impurity, or for newton sum over outputs of G**2 / (H + lambda)."""
        if layout[LAYOUT_CRITERION] == NEWTON:
            return newton_score(T, layout, inv, params[PARAM_REG_LAMBDA])
        return impurity(T, layout, inv)

    @inline
    def split_gain(L, R, parent, layout, inv, params):
        """Gain of splitting a node whose parent_score is ``parent`` into L and
        R (int64 sums); -inf when the split breaks min_samples_leaf /
        min_weight_leaf (min_child_weight)."""
        if node_count(L, layout, inv) < params[PARAM_MIN_SAMPLES_LEAF]:
            return -math.inf
        if node_count(R, layout, inv) < params[PARAM_MIN_SAMPLES_LEAF]:
            return -math.inf
        wl = node_weight(L, layout, inv)
        wr = node_weight(R, layout, inv)
        if wl < params[PARAM_MIN_WEIGHT_LEAF] or wr < params[PARAM_MIN_WEIGHT_LEAF]:
            return -math.inf
        if wl <= 0.0 or wr <= 0.0:
            return -math.inf
        crit = layout[LAYOUT_CRITERION]
        if crit == NEWTON:
            lam = params[PARAM_REG_LAMBDA]
            return 0.5 * (newton_score(L, layout, inv, lam) + newton_score(R, layout, inv, lam)
                          - parent)
        if crit == POISSON:
            if not (poisson_child_ok(L, layout, inv) and poisson_child_ok(R, layout, inv)):
                return -math.inf
        w = wl + wr
        gain = (parent - (wl / w) * impurity(L, layout, inv)
                - (wr / w) * impurity(R, layout, inv))
        if crit == GAIN_RATIO:
            pl = wl / w
            pr = wr / w
            split_info = -(pl * math.log2(pl) + pr * math.log2(pr))
            gain = gain / split_info
        return gain

    @jit
    def sort_key(S, T, layout, inv, params, majority):
        """Value that orders categories for the optimal-subset scan."""
        crit = layout[LAYOUT_CRITERION]
        if crit == NEWTON:
            return -(S[0] * inv[0]) / (S[1] * inv[1] + params[PARAM_REG_LAMBDA])
        if crit <= GAIN_RATIO:
            total = 0
            for k in range(layout[LAYOUT_PER_OUTPUT]):
                total += S[k]
            return S[majority] / total if total > 0 else 0.0
        off = layout[LAYOUT_VALUE_OFFSET]
        w = node_weight(S, layout, inv)
        return S[off] * inv[off] / w if w > 0.0 else 0.0

    @jit
    def node_value(S, layout, inv, params, o, k):
        """Leaf value of output o (class k for classifiers)."""
        crit = layout[LAYOUT_CRITERION]
        if crit == NEWTON:
            g = S[2 * o] * inv[2 * o]
            h = S[2 * o + 1] * inv[2 * o + 1]
            return -g / (h + params[PARAM_REG_LAMBDA])
        if crit <= GAIN_RATIO:
            per = layout[LAYOUT_PER_OUTPUT]
            total = 0
            for j in range(per):
                total += S[o * per + j]
            return S[o * per + k] / total if total > 0 else 0.0
        off = layout[LAYOUT_VALUE_OFFSET]
        w = node_weight(S, layout, inv)
        return S[off + 2 * o] * inv[off + 2 * o] / w if w > 0.0 else 0.0

    return SimpleNamespace(node_weight=node_weight, node_count=node_count,
                           impurity=impurity, parent_score=parent_score, split_gain=split_gain,
                           sort_key=sort_key, node_value=node_value)
