"""Split criteria on the host: the per-row statistics each criterion
histograms, built once per fit whatever the device.

Statistics are fixed-point int64 (DESIGN.md §4): every channel has a
power-of-two scale chosen from the data so that the sum over all rows cannot
overflow, which makes every histogram sum independent of summation order.

The formulas that read the sums (gain, impurity, leaf value) are device math
and live beside the backends that compile them, in
:mod:`gputree.backends.formulas`; the criterion ids and layout constants are
re-exported here. Channel layouts (``layout`` int64 array, see ``LAYOUT_*``):

* classification (gini, entropy, gain_ratio): per output ``o``, ``n_classes``
  channels ``w * [y_o == k]``; the node weight is the sum of output 0's.
* squared_error: ``[w, (w*y_o, w*y_o**2) for o]``.
* poisson: ``[w, (w*y_o, w*y_o*log(y_o)) for o]``.
* newton (boosting): ``[(g_o, h_o) for o, n]``.

A count channel (1 where a row has positive weight) is appended when the
weights are not all one; otherwise the weight channel counts rows exactly.
"""
import math

import numba
import numpy as np

from ._dtypes import FLOAT_DTYPE, STAT_DTYPE
from .backends import devmath
from .backends.formulas import (  # noqa: F401 - re-exported for callers
    CLASSIFICATION_CRITERIA, ENTROPY, GAIN_RATIO, GINI, LAYOUT_COUNT_CHANNEL, LAYOUT_CRITERION,
    LAYOUT_N_CHANNELS, LAYOUT_N_OUTPUTS, LAYOUT_PER_OUTPUT, LAYOUT_SIZE, LAYOUT_VALUE_OFFSET,
    LAYOUT_WEIGHT_CHANNEL, NEWTON, PARAM_MIN_SAMPLES_LEAF, PARAM_MIN_WEIGHT_LEAF,
    PARAM_REG_LAMBDA, PARAMS_SIZE, POISSON, REGRESSION_CRITERIA, SQUARED_ERROR)

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
            second = np.where(y_o > 0, y_o * devmath.apply("log", np.where(y_o > 0, y_o, 1.0)), 0.0)
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
