"""Boosting losses: for each loss the initial raw score, per-row gradients and
hessians, the loss value, the inverse link (raw score -> prediction, and its
name, ``link``, for exports) and, for the absolute error, quantile and Huber
losses, the refit of leaf values from medians or quantiles (Huber's mean
clipped step from per-leaf fixed-point sums, exact in any order).

Every array operation goes through ``xp`` (numpy, or cupy on a GPU) so that
targets, gradients, hessians and raw scores stay on the device across rounds.

Conventions (``K`` = raw outputs: 1, or the number of classes for softmax):

* ``y``   float64 (n_samples, K): the target in the loss's coding (0/1 for
  the binary log-loss, one-hot for softmax, the value for regression);
* ``raw`` float64 (n_samples, K): raw scores (log-odds, logits, log-mean...);
* ``w``   float64 (n_samples,): sample weights (0 for rows left out);
* gradients ``g = w * dl/draw`` and hessians ``h = w * d2l/draw2`` (the
  diagonal for softmax), so that :data:`gputree.criteria.NEWTON`'s leaf value
  ``-G / (H + lambda)`` is the Newton step ``sum(w * residual) / (H + lambda)``
  (for the log-loss the residual is ``y - p``).
"""
import math

import numpy as np

from .._arrays import to_host
from .._dtypes import FLOAT_DTYPE
from .._threads import kernel_jit, part_bounds_jit, parts_for, run_parts
from ..backends import devmath
from ..fixed_point import (grouped_fixed_point_sums, order_free_sum, positive_weight_scale,
                           summable_scale, weighted_mean)
from ..quantiles import grouped_weighted_quantile

_EPS = np.finfo(FLOAT_DTYPE).eps


def _exp(values):
    return devmath.apply("exp", values)


def _log(values):
    return devmath.apply("log", values)


def _average(xp, values, w):
    """Weighted mean over rows of (n, K) values -> host float64 (K,)."""
    total = order_free_sum(xp, w)
    return np.asarray([order_free_sum(xp, values[:, k] * w) / total
                       for k in range(values.shape[1])])


def _row_sum(xp, values):
    """Sum over the columns of (n, K) values, left to right on every device
    (reductions' own orders differ between numpy and cupy): (n, 1)."""
    total = values[:, 0:1].copy()
    for k in range(1, values.shape[1]):
        total += values[:, k:k + 1]
    return total


def _logsumexp(xp, raw):
    top = raw.max(axis=1, keepdims=True)
    return (top + _log(_row_sum(xp, _exp(raw - top))))[:, 0]


def _softmax(xp, raw):
    e = _exp(raw - raw.max(axis=1, keepdims=True))
    return e / _row_sum(xp, e)


def _sigmoid(xp, raw, e=None):
    """1 / (1 + exp(-raw)) without overflow, from ``e = exp(-|raw|)``:
    exp(min(raw, 0)) / (1 + e)."""
    e = _exp(-xp.abs(raw)) if e is None else e
    p = _exp(xp.minimum(raw, 0.0))
    p /= 1.0 + e
    return p


def _log1p_exp(xp, raw, e=None):
    """log(1 + exp(raw)) without overflow (equals logaddexp(0, raw))."""
    e = _exp(-xp.abs(raw)) if e is None else e
    return xp.maximum(raw, 0.0) + devmath.apply("log1p", e)


_exp_host, _log1p_unit_host = devmath.host.exp, devmath.host.log1p_unit


@kernel_jit()
def _log_loss_part(raw, y, d1, d2, loss, part, n_parts):
    """The binary log-loss's arithmetic on the host in one pass over part
    ``part`` of the rows: raw, y float64 (n, 1) IN; d1 = p - y, d2 = p (1 -
    p) float64 (n, 1) OUT and loss = log(1 + exp(raw)) - y raw float64 (n,)
    OUT, p = sigmoid(raw), with devmath's exp and log1p (of e = exp(-|raw|)
    in (0, 1], the bit-identical log1p_unit), each value rounded as the
    array formulas of the device path round it."""
    first, stop = part_bounds_jit(raw.shape[0], part, n_parts)
    for i in range(first, stop):
        r = raw[i, 0]
        e = _exp_host(-abs(r))
        p = (e if r < 0.0 else 1.0) / (1.0 + e)
        d1[i, 0] = p - y[i, 0]
        d2[i, 0] = (1.0 - p) * p
        loss[i] = (max(r, 0.0) + _log1p_unit_host(e)) - y[i, 0] * r


def _log_loss_terms(raw, y, d1, d2, loss):
    """_log_loss_part over every row, in parts."""
    run_parts(_log_loss_part, parts_for(8 * raw.shape[0]), raw, y, d1, d2, loss)


class Loss:
    """One boosting loss. Subclasses set ``name`` and implement
    ``pointwise``, ``_derivatives`` (dl/draw, d2l/draw2 without weights; or
    ``_derivatives_and_pointwise`` where the two share work), ``init_raw``
    and ``predict``."""

    name = ""
    #: the inverse link's name (Treelite's postprocessor names): "identity",
    #: "sigmoid", "softmax" or "exponential"
    link = "identity"
    #: whether :meth:`refit_leaves` replaces the Newton leaf values (from the
    #: rows' residuals: needs every row of a leaf)
    refits_leaves = False
    n_outputs = 1
    is_classification = False
    #: whether the gradients and pointwise losses of a block of rows are
    #: those rows' of all rows (nothing learned from other rows): boosting
    #: may then make them a block at a time
    rowwise = False
    #: the weighted quantile of :meth:`round_values` over the round's rows
    #: (float q) that the round's gradients depend on (Huber's delta), or None
    round_quantile = None
    #: whether :meth:`init_raw` depends on the targets (a ranking loss's
    #: raw scores start at 0 whatever they are)
    baseline_from_targets = True

    def targets(self, xp, y):
        """Device targets (n, K) from host y (n,) (values or class codes)."""
        return xp.asarray(np.asarray(y, dtype=FLOAT_DTYPE).reshape(-1, 1))

    def rows_targets(self, backend, y):
        """The targets that a fit keeps on ``backend`` for a set of rows (the
        training or the validation rows) and hands to the other methods as
        ``y``: :meth:`targets` on the backend's array module, unless a loss
        needs more of the rows (the queries of a ranking loss)."""
        return self.targets(backend.xp, y)

    def gradients(self, xp, y, raw, w):
        """(g, h) float64 (n, K): weighted first and second derivatives."""
        g, h, _ = self.gradients_and_pointwise(xp, y, raw, w)
        return g, h

    def gradients_and_pointwise(self, xp, y, raw, w, out=None, selected=None):
        """(g, h, pointwise loss (n,)) at ``raw``: one call where a loss
        shares work between them (the log-loss's exponential). ``w`` None
        means all weights are one (no multiplication). ``out``: the result
        of an earlier call its caller no longer needs, which a loss may
        refill (fresh arrays cost their pages: 3 x 56 MB a round at 7M
        rows). ``selected``: for a loss with a :attr:`round_quantile`, that
        quantile where the caller found it over all the round's rows (rows
        spread over workers); None: found from these rows."""
        d1, d2, pointwise = self._derivatives_and_pointwise(xp, y, raw, out)
        if w is None:
            return d1, d2, pointwise
        return d1 * w[:, None], d2 * w[:, None], pointwise

    def _derivatives_and_pointwise(self, xp, y, raw, out=None):
        return (*self._derivatives(xp, y, raw), self.pointwise(xp, y, raw))

    def value(self, xp, y, raw, w):
        """Weighted mean loss (host float)."""
        return weighted_mean(xp, self.pointwise(xp, y, raw), w)

    def score(self, xp, y, raw, w):
        """The score a fit records for rows (higher is better; host float):
        ``-value``."""
        return -self.value(xp, y, raw, w)

    def score_of_pointwise(self, xp, y, pointwise, w):
        """:meth:`score` from the pointwise values that
        :meth:`gradients_and_pointwise` returned with the gradients."""
        return -weighted_mean(xp, pointwise, w)

    def score_of_sums(self, weighted_total, weight_total):
        """:meth:`score_of_pointwise` from the order-free sums (host floats)
        of the pointwise values times their units' weights and of those
        weights (sums in parts: gputree.dask)."""
        return -(weighted_total / weight_total)

    def unit_weights(self, y, w):
        """The weights (n_units,) of the pointwise values' units from the
        row weights ``w`` (n,): the rows' own (one pointwise value a row)."""
        return w

    def init_raw(self, y, w):
        """The initial raw scores float64 (K,) of targets ``y`` (n, K) with
        weights ``w`` (n,): :meth:`raw_from_average` of their weighted mean
        (order-free sums), unless a loss starts from a quantile."""
        return self.raw_from_average(_average(np, y, w))

    def raw_from_average(self, average):
        """The initial raw scores float64 (K,) from the targets' weighted
        mean ``average`` float64 (K,) (sums in parts: gputree.dask)."""
        raise NotImplementedError(f"{type(self).__name__} starts from a quantile, not a mean")

    def refit_leaves(self, xp, tree, positions, y, raw, w):
        """Replace ``tree.value`` of leaves where the Newton step is not the
        loss's minimiser (in place); the default keeps Newton values."""

    def __repr__(self):
        return f"{type(self).__name__}()"


class BinaryLogLoss(Loss):
    """l = log(1 + exp(raw)) - y * raw; p = sigmoid(raw); g = p - y, h = p (1 - p)."""

    name = "log_loss"
    link = "sigmoid"
    is_classification = True
    rowwise = True

    def raw_from_average(self, average):
        p = np.clip(average, _EPS, 1 - _EPS)
        return _log(p / (1 - p))

    def pointwise(self, xp, y, raw):
        """On the host the one-pass kernel of the gradients (the same
        rounding; a fit compiles it anyway, and no exp and log1p kernels)."""
        if xp is np:
            return self._derivatives_and_pointwise(np, y, raw)[2]
        return (_log1p_exp(xp, raw) - y * raw)[:, 0]

    def _derivatives_and_pointwise(self, xp, y, raw, out=None):
        """exp(-|raw|) once for all three; on the host the arithmetic is one
        numba pass that rounds as the array formulas below, into ``out``
        when its arrays have the shapes."""
        if xp is np:
            shapes = (raw.shape, raw.shape, raw.shape[:1])
            if out is None or tuple(a.shape for a in out) != shapes:
                out = np.empty_like(raw), np.empty_like(raw), np.empty(raw.shape[0])
            _log_loss_terms(raw, y, *out)
            return out
        e = _exp(-xp.abs(raw))
        p = _sigmoid(xp, raw, e)
        return p - y, (1.0 - p) * p, (_log1p_exp(xp, raw, e) - y * raw)[:, 0]

    def predict(self, xp, raw):
        """Class probabilities (n, 2)."""
        p = _sigmoid(xp, raw)
        return xp.concatenate([1 - p, p], axis=1)


class MultinomialLoss(Loss):
    """Softmax cross-entropy: l = logsumexp(raw) - sum_k y_k raw_k;
    g_k = p_k - y_k, h_k = p_k (1 - p_k) (the Hessian's diagonal)."""

    name = "log_loss"
    link = "softmax"
    is_classification = True

    def __init__(self, n_classes):
        self.n_outputs = int(n_classes)

    def targets(self, xp, y):
        codes = np.asarray(y, dtype=np.int64)
        one_hot = np.zeros((codes.shape[0], self.n_outputs), dtype=FLOAT_DTYPE)
        one_hot[np.arange(codes.shape[0]), codes] = 1.0
        return xp.asarray(one_hot)

    def raw_from_average(self, average):
        """Symmetric logits of the class priors (they sum to zero)."""
        log_p = _log(np.clip(average, _EPS, 1 - _EPS))
        return log_p - log_p.mean()

    def pointwise(self, xp, y, raw):
        return _logsumexp(xp, raw) - _row_sum(xp, y * raw)[:, 0]

    def _derivatives(self, xp, y, raw):
        p = _softmax(xp, raw)
        return p - y, p * (1 - p)

    def predict(self, xp, raw):
        return _softmax(xp, raw)

    def __repr__(self):
        return f"MultinomialLoss(n_classes={self.n_outputs})"


class SquaredError(Loss):
    """l = (y - raw)**2 / 2; g = raw - y, h = 1."""

    name = "squared_error"
    rowwise = True

    def raw_from_average(self, average):
        return average

    def pointwise(self, xp, y, raw):
        return (0.5 * (y - raw) ** 2)[:, 0]

    def _derivatives(self, xp, y, raw):
        return raw - y, xp.ones_like(raw)

    def predict(self, xp, raw):
        return raw


class LeafQuantileLoss(Loss):
    """A loss that starts from a weighted quantile of the targets and refits
    every leaf from the same quantile of its residuals y - raw:
    ``leaf_quantile`` (q, average: as grouped_weighted_quantile's).
    :meth:`leaf_sums` and :meth:`leaf_values` complete a leaf's value from
    per-leaf int64 sums (Huber's mean step); by default the value is the
    quantile. The three steps are the seams of a refit with the rows spread
    over workers (:mod:`gputree.dask.leaf_refits`)."""

    refits_leaves = True
    leaf_quantile = (0.5, False)
    #: whether the leaf values need :meth:`leaf_sums` beyond the quantiles
    refit_sums = False

    def init_raw(self, y, w):
        y = np.asarray(y, dtype=FLOAT_DTYPE)
        return grouped_weighted_quantile(np, y[:, 0], np.asarray(w, dtype=FLOAT_DTYPE),
                                         np.zeros(y.shape[0], dtype=np.int64), 1,
                                         *self.leaf_quantile)

    def refit_leaves(self, xp, tree, positions, y, raw, w):
        quantiles = grouped_weighted_quantile(xp, (y - raw)[:, 0], w, positions,
                                              tree.node_count, *self.leaf_quantile)
        scale = sums = None
        if self.refit_sums:
            scale = positive_weight_scale(xp, w)
            sums = self.leaf_sums(xp, quantiles, positions, y, raw, w, scale)
        _set_leaves(tree, self.leaf_values(quantiles, sums, scale))

    def leaf_sums(self, xp, quantiles, positions, y, raw, w, scale):
        """int64 (n_nodes, S) per-leaf fixed-point sums of the rows (the
        leaves' ``quantiles`` float64 (n_nodes,), ``positions`` int (n,),
        ``y``, ``raw`` float64 (n, 1), the round's weights ``w`` float64
        (n,)) on scales fixed by ``scale`` (:func:`positive_weight_scale`
        of all the rows' weights), so that sums over shards of the rows add
        up (a loss with :attr:`refit_sums`)."""
        raise NotImplementedError(f"{type(self).__name__}'s leaf values are its quantiles")

    def leaf_values(self, quantiles, sums, scale):
        """The leaves' values float64 (n_nodes,) (NaN where none) from their
        ``quantiles`` and the :meth:`leaf_sums` of all the rows (None
        without :attr:`refit_sums`)."""
        return quantiles


class AbsoluteError(LeafQuantileLoss):
    """l = |y - raw|; g = sign(raw - y), h = 1 to grow the tree, then every
    leaf's value is refit to the weighted median of its residuals (averaged
    where the weight below hits half exactly)."""

    name = "absolute_error"
    rowwise = True
    leaf_quantile = (0.5, True)

    def pointwise(self, xp, y, raw):
        return xp.abs(y - raw)[:, 0]

    def _derivatives(self, xp, y, raw):
        return xp.sign(raw - y), xp.ones_like(raw)

    def predict(self, xp, raw):
        return raw


class PoissonLoss(Loss):
    """Half Poisson deviance with a log link: l = exp(raw) - y raw + y log y - y;
    g = exp(raw) - y, h = exp(raw)."""

    name = "poisson"
    link = "exponential"
    rowwise = True

    def raw_from_average(self, average):
        return _log(np.maximum(average, _EPS))

    def pointwise(self, xp, y, raw):
        y_log_y = xp.where(y > 0, y * _log(xp.where(y > 0, y, 1.0)), 0.0)
        return (_exp(raw) - y * raw + y_log_y - y)[:, 0]

    def _derivatives(self, xp, y, raw):
        mu = _exp(raw)
        return mu - y, mu

    def predict(self, xp, raw):
        return _exp(raw)


class QuantileLoss(LeafQuantileLoss):
    """Pinball loss of quantile ``alpha``: l = alpha (y - raw) for y > raw,
    else (1 - alpha) (raw - y); g = -alpha where y >= raw (as scikit-learn),
    else 1 - alpha; h = 1 to grow the tree, then every leaf is refit to the
    weighted ``alpha``-quantile of its residuals (the loss's minimiser;
    scikit-learn's GradientBoostingRegressor does the same)."""

    name = "quantile"
    rowwise = True

    def __init__(self, alpha=0.9):
        self.alpha = float(alpha)

    @property
    def leaf_quantile(self):
        return self.alpha, False

    def pointwise(self, xp, y, raw):
        d = (y - raw)[:, 0]
        return xp.where(d > 0, self.alpha * d, (self.alpha - 1.0) * d)

    def _derivatives(self, xp, y, raw):
        return xp.where(y >= raw, -self.alpha, 1.0 - self.alpha), xp.ones_like(raw)

    def predict(self, xp, raw):
        return raw

    def __repr__(self):
        return f"QuantileLoss(alpha={self.alpha})"


class HuberLoss(LeafQuantileLoss):
    """Huber loss as scikit-learn's GradientBoostingRegressor (Friedman's
    M-regression): every round ``delta`` is the weighted ``alpha``-quantile of
    |y - raw| (:attr:`round_quantile` of :meth:`round_values`); l = (y -
    raw)**2 / 2 within delta, delta (|y - raw| - delta / 2) beyond; g = raw -
    y clipped to [-delta, delta], h = 1 to grow the tree, then every leaf is
    refit by Friedman's one step from the weighted median residual ``m``
    (the lower median: no average): m + the weighted mean of the clipped
    steps sign(r - m) min(delta, |r - m|).

    The mean is order-free, so the same on every device and over shards of
    the rows: per leaf the sums of w and of w * step in int64 fixed point
    (:meth:`leaf_sums`), on scales fixed before summing from bounds (every
    weight at most the largest positive weight W, every |step| at most
    delta, at most the number of positive weights nonzero), then the exact
    integers' quotient, correctly rounded, scaled back (:meth:`leaf_values`)."""

    name = "huber"
    refit_sums = True

    def __init__(self, alpha=0.9):
        self.alpha = float(alpha)
        self.delta = np.inf

    @property
    def round_quantile(self):
        return self.alpha

    def round_values(self, xp, y, raw):
        """|y - raw| float64 (n,): delta is their weighted alpha-quantile."""
        return xp.abs(y - raw)[:, 0]

    def gradients_and_pointwise(self, xp, y, raw, w, out=None, selected=None):
        """Sets this round's delta from the residuals (``selected``: given),
        then as Loss."""
        if selected is None:
            weights = xp.ones(y.shape[0]) if w is None else w
            selected = grouped_weighted_quantile(
                xp, self.round_values(xp, y, raw), weights,
                xp.zeros(y.shape[0], dtype=np.int64), 1, self.alpha)[0]
        self.delta = float(selected)
        return super().gradients_and_pointwise(xp, y, raw, w, out)

    def pointwise(self, xp, y, raw):
        d = xp.abs(y - raw)[:, 0]
        return xp.where(d <= self.delta, 0.5 * d * d, self.delta * (d - 0.5 * self.delta))

    def _derivatives(self, xp, y, raw):
        return xp.clip(raw - y, -self.delta, self.delta), xp.ones_like(raw)

    def predict(self, xp, raw):
        return raw

    def leaf_sums(self, xp, quantiles, positions, y, raw, w, scale):
        """int64 (n_nodes, 2): per leaf the fixed-point sums of w and of w *
        step (scales: :meth:`_sum_bounds`)."""
        d = (y - raw)[:, 0] - xp.where(xp.isfinite(quantiles), quantiles, 0.0)[positions]
        step = xp.sign(d) * xp.minimum(self.delta, xp.abs(d))
        return grouped_fixed_point_sums(xp, xp.stack([w, w * step], axis=1), positions,
                                        quantiles.shape[0], *self._sum_bounds(scale))

    def leaf_values(self, quantiles, sums, scale):
        """median + sum(w step) / sum(w): the integers' quotient correctly
        rounded (Python's int division), times the scales' ratio (a power of
        two), per leaf with weight (host)."""
        largest, size = self._sum_bounds(scale)
        shift_w, shift_step = (summable_scale(bound, size)[0] for bound in largest)
        mean = np.zeros(sums.shape[0], dtype=FLOAT_DTYPE)
        for node, (total_w, total_step) in enumerate(np.asarray(to_host(sums)).tolist()):
            if total_w > 0:
                mean[node] = math.ldexp(total_step / total_w, shift_w - shift_step)
        return np.asarray(to_host(quantiles), dtype=FLOAT_DTYPE) + mean

    def _sum_bounds(self, scale):
        """(the largest |w| and |w step|, the most nonzero rows) of the
        leaf sums from ``scale`` (largest positive weight, their number):
        w <= W and |step| <= delta, so |w step| <= W delta (rounding is
        monotone)."""
        largest, n_kept = scale
        return (largest, largest * self.delta), n_kept

    def __repr__(self):
        return f"HuberLoss(alpha={self.alpha})"


def _set_leaves(tree, values):
    """tree.value of leaves := values (n_nodes,) where finite (host or device)."""
    values = values if isinstance(values, np.ndarray) else values.get()
    leaves = np.flatnonzero(tree.is_leaf & np.isfinite(values))
    tree.value[leaves, 0, 0] = values[leaves]


REGRESSION_LOSSES = {"squared_error": SquaredError, "absolute_error": AbsoluteError,
                     "poisson": PoissonLoss, "quantile": QuantileLoss, "huber": HuberLoss}
#: regression losses whose constructor takes ``alpha``
ALPHA_LOSSES = ("quantile", "huber")
CLASSIFICATION_LOSSES = ("log_loss",)


def make_loss(name, n_classes=None, alpha=None):
    """The Loss for a loss name; classification needs n_classes (>= 2);
    ``alpha`` is the quantile of the quantile and Huber losses."""
    if name in CLASSIFICATION_LOSSES:
        return BinaryLogLoss() if n_classes == 2 else MultinomialLoss(n_classes)
    if name in ALPHA_LOSSES:
        return REGRESSION_LOSSES[name](alpha)
    return REGRESSION_LOSSES[name]()


