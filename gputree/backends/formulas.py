"""Criterion formulas as device math: node weight, impurity, split gain, leaf
value and category sort key, computed from one node's integer channel sums.

Written once, in the subset of Python that both ``numba.njit`` and
``numba.cuda.jit(device=True)`` compile; :func:`make_criterion_functions`
turns them into host or device code, so every backend evaluates a gain with
the same operations in the same order. Only + - * / and comparisons are
used, plus the elementary functions of :mod:`gputree.backends.devmath`
(themselves built from + - * /), so results round identically on every
device once contraction into fused multiply-adds is off.

The layout constants say where a criterion's channels sit in a statistics
row (the host builds those rows in :mod:`gputree.criteria`):

* classification (gini, entropy, gain_ratio): per output ``o``, ``n_classes``
  channels ``w * [y_o == k]``; the node weight is the sum of output 0's.
* squared_error: ``[w, (w*y_o, w*y_o**2) for o]``.
* poisson: ``[w, (w*y_o, w*y_o*log(y_o)) for o]``.
* newton (boosting): ``[(g_o, h_o) for o, n]``.
"""
import math
from types import SimpleNamespace

from .devmath import make_devmath

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
    dm = make_devmath(inline)
    log, log2 = dm.log, dm.log2

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
                result -= p * log2(p)
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
                result += (s2 - sy * log(mean)) / w
        return result / n_out

    @inline
    def newton_score(S, layout, inv, reg_lambda):
        """sum over outputs of G**2 / (H + lambda)."""
        score = 0.0
        for o in range(layout[LAYOUT_N_OUTPUTS]):
            g = S[2 * o] * inv[2 * o]
            h = S[2 * o + 1] * inv[2 * o + 1]
            if h + reg_lambda > 0.0:    # else no curvature: no score (no 0/0)
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
            split_info = -(pl * log2(pl) + pr * log2(pr))
            gain = gain / split_info
        return gain

    @jit
    def sort_key(S, T, layout, inv, params, majority):
        """Value that orders categories for the optimal-subset scan."""
        crit = layout[LAYOUT_CRITERION]
        if crit == NEWTON:
            h = S[1] * inv[1] + params[PARAM_REG_LAMBDA]
            return -(S[0] * inv[0]) / h if h > 0.0 else 0.0
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
            h = S[2 * o + 1] * inv[2 * o + 1] + params[PARAM_REG_LAMBDA]
            return -g / h if h > 0.0 else 0.0
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
