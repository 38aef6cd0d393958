"""Criterion formulas as device math: node weight, impurity, split gain, leaf
value and category sort key, computed from one node's integer channel sums.

Written once, in the subset of Python that both ``numba.njit`` and
``numba.cuda.jit(device=True)`` compile; :func:`make_criterion_functions`
turns them into host or device code, so every backend evaluates a gain with
the same operations in the same order. Only + - * / and comparisons are
used, plus the elementary functions of :mod:`gputree.backends.devmath`
(themselves built from + - * /), so results round identically on every
device once contraction into fused multiply-adds is off.

The formulas dispatch on explicit properties of the criterion that the host
writes into the ``layout`` array (:class:`gputree.criteria.Criterion`, one
entry per criterion, sets them), never on the order of criterion codes:

* ``LAYOUT_KIND``: ``KIND_CLASSIFICATION`` (class-weight channels),
  ``KIND_REGRESSION`` (weight, sum and second-moment channels) or
  ``KIND_NEWTON`` (boosting gradients and hessians);
* ``LAYOUT_IMPURITY``: which ``IMPURITY_*`` measure the kind's impurity is;
* ``LAYOUT_SPLIT_INFO``: 1 when a split's gain is divided by the entropy of
  its partition (C4.5's gain ratio);
* ``LAYOUT_MULTIWAY``: 1 when categorical features split into one child per
  category (ID3 / C4.5, :mod:`gputree.growth.multiway`); set by the grower, not the
  criterion.

Where a criterion's channels sit in a statistics row (the host builds those
rows in :mod:`gputree.criteria`):

* classification (gini, entropy, gain_ratio, misclassification): per output ``o``, ``n_classes``
  channels ``w * [y_o == k]``; the node weight is the sum of output 0's.
* squared_error: ``[w, (w*y_o, w*y_o**2) for o]``.
* poisson: ``[w, (w*y_o, w*y_o*log(y_o)) for o]``.
* newton (boosting): ``[(g_o, h_o) for o, n]``.
"""
import functools
import math
from types import SimpleNamespace

from .devmath import make_devmath

# values of layout[LAYOUT_KIND]
KIND_CLASSIFICATION, KIND_REGRESSION, KIND_NEWTON = 0, 1, 2
# values of layout[LAYOUT_IMPURITY]: classification (gini, entropy, 1 - max p),
# regression (squared error, poisson deviance), newton (none: gains are losses)
(IMPURITY_GINI, IMPURITY_ENTROPY, IMPURITY_ERROR_RATE, IMPURITY_SQUARED_ERROR,
 IMPURITY_POISSON, IMPURITY_NONE) = range(6)

# positions inside the int64 ``layout`` array
(LAYOUT_KIND, LAYOUT_IMPURITY, LAYOUT_SPLIT_INFO, LAYOUT_MULTIWAY, LAYOUT_N_OUTPUTS,
 LAYOUT_PER_OUTPUT, LAYOUT_VALUE_OFFSET, LAYOUT_WEIGHT_CHANNEL, LAYOUT_COUNT_CHANNEL,
 LAYOUT_N_CHANNELS) = range(10)
LAYOUT_SIZE = 10
# positions inside the float64 ``params`` array; the categorical search
# (scan.py): PARAM_CAT_SEARCH 0 is CART's exact search (trees, forests), 1
# LightGBM's (boosting) with its cat_smooth, cat_l2, min_data_per_group,
# max_cat_threshold and max_cat_to_onehot, 2 LightGBM's for features of more
# than 255 categories and CART's for the others
(PARAM_MIN_SAMPLES_LEAF, PARAM_MIN_WEIGHT_LEAF, PARAM_REG_LAMBDA, PARAM_REG_ALPHA,
 PARAM_CONSTRAINTS, PARAM_CAT_SEARCH, PARAM_CAT_SMOOTH, PARAM_CAT_L2, PARAM_MIN_DATA_PER_GROUP,
 PARAM_MAX_CAT_THRESHOLD, PARAM_MAX_CAT_TO_ONEHOT) = range(11)
PARAMS_SIZE = 11
# ``params[PARAM_CONSTRAINTS]`` is 0 (no value constraints) or the offset
# ``off`` of a tail appended to ``params`` (newton, one output; formulas
# specialised to another kind ignore it): the monotonic
# sign of feature f at ``off + f`` (-1, 0, +1), then the value bounds of the
# node in histogram row r at ``off + n_features + 2 r`` (lower, upper); see
# gputree.growth.constraints.

def specialised(decorator, measure, variant=""):
    """``decorator`` (a jit) applied to functions renamed ``<name>_<tag>``,
    the tag naming ``measure`` (and ``variant``). numba names compiled code
    after functions' qualified names (plus a per-process counter), and a
    kernel loaded from the disk cache brings its helpers under the names they
    had when compiled; two specialisations sharing a name could then link
    one's kernel to the other's helper. Distinct names keep them apart."""
    tag = ("any" if measure is None else f"k{int(measure[0])}i{int(measure[1])}") + variant

    def apply(function):
        function.__name__ = f"{function.__name__}_{tag}"
        function.__qualname__ = f"{function.__qualname__}_{tag}"
        return decorator(function)
    return apply


def measure_of(layout):
    """(kind, impurity) of the criterion a layout (int64 (LAYOUT_SIZE,))
    describes: what :func:`make_criterion_functions` specialises to."""
    return int(layout[LAYOUT_KIND]), int(layout[LAYOUT_IMPURITY])


@functools.lru_cache(maxsize=None)
def make_criterion_functions(jit, inline=None, measure=None):
    """Compile the scalar criterion formulas with ``jit`` (``numba.njit`` or
    ``numba.cuda.jit(device=True)``); returns a namespace of functions (the
    same one for the same arguments, so that callers share compiled code).

    Every function takes ``S`` int64 (n_channels,) channel sums of one node
    (or child), ``layout`` int64 (LAYOUT_SIZE,), ``inv`` float64 (n_channels,).
    ``inline`` (default ``jit``) compiles the small helpers called once per
    split candidate; on the CPU it inlines them (numba's array-argument calls
    are costly in the hot loop). ``measure`` (a criterion's ``(kind,
    impurity)``, :func:`measure_of`) specialises the functions to it: a
    constant where they would read ``layout[LAYOUT_KIND]`` and
    ``layout[LAYOUT_IMPURITY]``, so the compiler drops the other criteria's
    code (compiled per criterion, each compile is smaller and the code
    faster); None reads both from ``layout``.
    """
    inline = inline or jit
    dm = make_devmath(inline)
    log, log2 = dm.log, dm.log2
    jit, inline = specialised(jit, measure), specialised(inline, measure)
    fixed_kind, fixed_impurity = (-1, -1) if measure is None else (int(measure[0]),
                                                                 int(measure[1]))
    # what a specialisation rules out, as constants (numba drops the code
    # behind a branch on a constant before compiling it): value constraints
    # come with boosting only, the split-info division (gain ratio) with
    # entropy only
    no_constraints = fixed_kind >= 0 and fixed_kind != KIND_NEWTON
    no_split_info = fixed_impurity >= 0 and fixed_impurity != IMPURITY_ENTROPY

    @inline
    def kind_of(layout):
        return layout[LAYOUT_KIND] if fixed_kind < 0 else fixed_kind

    @inline
    def impurity_of(layout):
        return layout[LAYOUT_IMPURITY] if fixed_impurity < 0 else fixed_impurity

    @inline
    def node_weight(S, layout, inv):
        if kind_of(layout) == KIND_NEWTON:
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
        measure = impurity_of(layout)
        if measure == IMPURITY_ERROR_RATE:
            # 1 - max_k p_k (the classic CART texts' error rate)
            top = 0
            for k in range(per):
                if S[o * per + k] > top:
                    top = S[o * per + k]
            return 1.0 - top / total
        result = 1.0 if measure == IMPURITY_GINI else 0.0
        for k in range(per):
            p = S[o * per + k] / total
            if measure == IMPURITY_GINI:
                result -= p * p
            elif p > 0.0:
                result -= p * log2(p)
        return result

    @inline
    def impurity(S, layout, inv):
        kind = kind_of(layout)
        n_out = layout[LAYOUT_N_OUTPUTS]
        if kind == KIND_NEWTON:
            return 0.0
        result = 0.0
        if kind == KIND_CLASSIFICATION:
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
            if impurity_of(layout) == IMPURITY_SQUARED_ERROR:
                result += s2 / w - mean * mean
            elif sy <= 0.0:
                result += math.inf
            else:
                result += (s2 - sy * log(mean)) / w
        return result / n_out

    # The per-candidate formulas of boosting's gain are single expressions
    # (no early return): the CPU scan evaluates them over a block of
    # candidates in a loop the compiler vectorizes (scan.py); each value is
    # the same whichever branch-free or branching code computes it.

    @inline
    def soft_threshold(g, alpha):
        """sign(g) * max(|g| - alpha, 0): the L1 penalty's shrinkage of G."""
        return g - alpha if g > alpha else (g + alpha if g < -alpha else 0.0)

    @inline
    def newton_term(g_sum, h_sum, inv_g, inv_h, reg_lambda, reg_alpha):
        """T(G)**2 / (H + lambda) of one output's int64 sums, T the soft
        threshold by reg_alpha (XGBoost's L1 term; T(G) = G when reg_alpha is
        0); 0 without curvature (no 0/0)."""
        g = soft_threshold(g_sum * inv_g, reg_alpha)
        h = h_sum * inv_h
        return g * g / (h + reg_lambda) if h + reg_lambda > 0.0 else 0.0

    @inline
    def newton_score(S, layout, inv, reg_lambda, reg_alpha):
        """sum over outputs of newton_term (from +0.0: every term is >= +0.0,
        so one output's score is its term exactly)."""
        score = 0.0
        for o in range(layout[LAYOUT_N_OUTPUTS]):
            score += newton_term(S[2 * o], S[2 * o + 1], inv[2 * o], inv[2 * o + 1],
                                 reg_lambda, reg_alpha)
        return score

    @inline
    def bounded_value_with(S, inv, reg_lambda, reg_alpha, lower, upper):
        """Output 0's Newton value -T(G) / (H + reg_lambda), clipped to [lower, upper]."""
        v = -soft_threshold(S[0] * inv[0], reg_alpha) / (S[1] * inv[1] + reg_lambda)
        if v < lower:
            return lower
        if v > upper:
            return upper
        return v

    @inline
    def bounded_value(S, inv, params, lower, upper):
        """bounded_value_with the params' reg_lambda and reg_alpha."""
        return bounded_value_with(S, inv, params[PARAM_REG_LAMBDA], params[PARAM_REG_ALPHA],
                                  lower, upper)

    @inline
    def value_score_with(S, inv, reg_lambda, reg_alpha, v):
        """-2 x the regularised objective G v + (H + lambda) v**2 / 2 + alpha |v|
        of output 0 at value v (equals newton_score at the unclipped value)."""
        g = S[0] * inv[0]
        h = S[1] * inv[1] + reg_lambda
        magnitude = v if v >= 0.0 else -v
        return -(2.0 * g * v + h * v * v + 2.0 * reg_alpha * magnitude)

    @inline
    def value_score(S, inv, params, v):
        """value_score_with the params' reg_lambda and reg_alpha."""
        return value_score_with(S, inv, params[PARAM_REG_LAMBDA], params[PARAM_REG_ALPHA], v)

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
        if kind_of(layout) == KIND_NEWTON:
            return newton_score(T, layout, inv, params[PARAM_REG_LAMBDA], params[PARAM_REG_ALPHA])
        return impurity(T, layout, inv)

    @inline
    def bounded_parent_score(T, layout, inv, params, row, n_features):
        """parent_score of the node in histogram row ``row``; with value
        constraints, the score of its value clipped to its bounds."""
        if no_constraints:
            return parent_score(T, layout, inv, params)
        off = int(params[PARAM_CONSTRAINTS])
        if off == 0:
            return parent_score(T, layout, inv, params)
        b = off + n_features + 2 * row
        return value_score(T, inv, params, bounded_value(T, inv, params, params[b], params[b + 1]))

    @inline
    def split_gain(L, R, parent, layout, inv, params):
        """Gain of splitting a node whose parent_score is ``parent`` into L and
        R (int64 sums), divided by the split's entropy for gain ratio; -inf
        when the split breaks min_samples_leaf / min_weight_leaf
        (min_child_weight)."""
        gain = impurity_gain(L, R, parent, layout, inv, params)
        if no_split_info:
            return gain
        if layout[LAYOUT_SPLIT_INFO] and gain != -math.inf:
            w = node_weight(L, layout, inv) + node_weight(R, layout, inv)
            pl = node_weight(L, layout, inv) / w
            pr = node_weight(R, layout, inv) / w
            split_info = -(pl * log2(pl) + pr * log2(pr))
            gain = gain / split_info
        return gain

    @inline
    def allowed(count_l, count_r, wl, wr, min_samples, min_weight):
        """Both children keep min_samples_leaf (``min_samples``),
        min_weight_leaf / min_child_weight (``min_weight``) and a positive
        weight."""
        return ((count_l >= min_samples) & (count_r >= min_samples) & (wl >= min_weight)
                & (wr >= min_weight) & (wl > 0.0) & (wr > 0.0))

    @inline
    def children_allowed(count_l, count_r, wl, wr, params):
        """:func:`allowed` with the limits read from params."""
        return allowed(count_l, count_r, wl, wr, params[PARAM_MIN_SAMPLES_LEAF],
                       params[PARAM_MIN_WEIGHT_LEAF])

    @inline
    def newton_gain_scalars(lg, lh, ln, rg, rh, rn, parent, inv_g, inv_h, min_samples,
                            min_weight, reg_lambda, reg_alpha):
        """newton_gain_one with the scales (inv_g, inv_h) and parameters as
        scalars."""
        wl, wr = lh * inv_h, rh * inv_h     # node_weight: the hessian sum
        gain = 0.5 * (newton_term(lg, lh, inv_g, inv_h, reg_lambda, reg_alpha)
                      + newton_term(rg, rh, inv_g, inv_h, reg_lambda, reg_alpha) - parent)
        return (gain if allowed(ln * 1.0, rn * 1.0, wl, wr, min_samples, min_weight)
                else -math.inf)

    @inline
    def newton_gain_one(lg, lh, ln, rg, rh, rn, parent, inv, params):
        """impurity_gain of boosting with one output from the children's
        int64 sums (gradient, hessian, count) as scalars: the same
        operations as impurity_gain on (g, h, n) rows."""
        return newton_gain_scalars(lg, lh, ln, rg, rh, rn, parent, inv[0], inv[1],
                                   params[PARAM_MIN_SAMPLES_LEAF], params[PARAM_MIN_WEIGHT_LEAF],
                                   params[PARAM_REG_LAMBDA], params[PARAM_REG_ALPHA])

    @inline
    def impurity_gain(L, R, parent, layout, inv, params):
        """split_gain without the split-info division (the information gain
        for entropy)."""
        wl = node_weight(L, layout, inv)
        wr = node_weight(R, layout, inv)
        if not children_allowed(node_count(L, layout, inv), node_count(R, layout, inv),
                                wl, wr, params):
            return -math.inf
        if kind_of(layout) == KIND_NEWTON:
            lam, alpha = params[PARAM_REG_LAMBDA], params[PARAM_REG_ALPHA]
            return 0.5 * (newton_score(L, layout, inv, lam, alpha)
                          + newton_score(R, layout, inv, lam, alpha) - parent)
        if impurity_of(layout) == IMPURITY_POISSON:
            if not (poisson_child_ok(L, layout, inv) and poisson_child_ok(R, layout, inv)):
                return -math.inf
        w = wl + wr
        return (parent - (wl / w) * impurity(L, layout, inv)
                - (wr / w) * impurity(R, layout, inv))

    @inline
    def bounded_gain(L, R, parent, layout, inv, params, row, f, n_features):
        """split_gain under value constraints (params' tail, when present):
        both children's values are clipped to the node's bounds, the gain is
        computed at the clipped values, and a split on a feature with
        monotonic sign s is rejected (-inf) when s * (right - left) < 0."""
        gain = split_gain(L, R, parent, layout, inv, params)
        if no_constraints:
            return gain
        off = int(params[PARAM_CONSTRAINTS])
        if off == 0 or gain == -math.inf:
            return gain
        b = off + n_features + 2 * row
        vl = bounded_value(L, inv, params, params[b], params[b + 1])
        vr = bounded_value(R, inv, params, params[b], params[b + 1])
        sign = params[off + f]
        if (sign > 0.0 and vl > vr) or (sign < 0.0 and vl < vr):
            return -math.inf
        return 0.5 * (value_score(L, inv, params, vl) + value_score(R, inv, params, vr) - parent)

    @inline
    def categorical_gain(L, R, parent, layout, inv, params, row, f, n_features):
        """bounded_gain of a many-category subset split (LightGBM's search,
        scan.py): boosting scores the children with reg_lambda +
        PARAM_CAT_L2 (LightGBM's cat_l2; the parent keeps reg_lambda, as in
        LightGBM, so the extra penalty lowers such splits' gains);
        bounded_gain itself for the other criteria."""
        if kind_of(layout) != KIND_NEWTON:
            return bounded_gain(L, R, parent, layout, inv, params, row, f, n_features)
        wl = node_weight(L, layout, inv)
        wr = node_weight(R, layout, inv)
        if not children_allowed(node_count(L, layout, inv), node_count(R, layout, inv),
                                wl, wr, params):
            return -math.inf
        lam = params[PARAM_REG_LAMBDA] + params[PARAM_CAT_L2]
        alpha = params[PARAM_REG_ALPHA]
        off = int(params[PARAM_CONSTRAINTS])
        if off == 0:
            return 0.5 * (newton_score(L, layout, inv, lam, alpha)
                          + newton_score(R, layout, inv, lam, alpha) - parent)
        b = off + n_features + 2 * row
        vl = bounded_value_with(L, inv, lam, alpha, params[b], params[b + 1])
        vr = bounded_value_with(R, inv, lam, alpha, params[b], params[b + 1])
        sign = params[off + f]
        if (sign > 0.0 and vl > vr) or (sign < 0.0 and vl < vr):
            return -math.inf
        return 0.5 * (value_score_with(L, inv, lam, alpha, vl)
                      + value_score_with(R, inv, lam, alpha, vr) - parent)

    @inline
    def smoothed_ratio(S, inv, params):
        """G / (H + cat_smooth) of output 0 (LightGBM's order of categories
        for its subset search)."""
        h = S[1] * inv[1] + params[PARAM_CAT_SMOOTH]
        return (S[0] * inv[0]) / h if h > 0.0 else 0.0

    @jit
    def sort_key(S, T, layout, inv, params, majority):
        """Value that orders categories for the optimal-subset scan."""
        kind = kind_of(layout)
        if kind == KIND_NEWTON:
            h = S[1] * inv[1] + params[PARAM_REG_LAMBDA]
            return -(S[0] * inv[0]) / h if h > 0.0 else 0.0
        if kind == KIND_CLASSIFICATION:
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
        kind = kind_of(layout)
        if kind == KIND_NEWTON:
            g = soft_threshold(S[2 * o] * inv[2 * o], params[PARAM_REG_ALPHA])
            h = S[2 * o + 1] * inv[2 * o + 1] + params[PARAM_REG_LAMBDA]
            return -g / h if h > 0.0 else 0.0
        if kind == KIND_CLASSIFICATION:
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
                           impurity_gain=impurity_gain, newton_gain_one=newton_gain_one,
                           newton_gain_scalars=newton_gain_scalars, newton_term=newton_term,
                           kind_of=kind_of,
                           bounded_parent_score=bounded_parent_score, bounded_gain=bounded_gain,
                           categorical_gain=categorical_gain, smoothed_ratio=smoothed_ratio,
                           sort_key=sort_key, node_value=node_value)
