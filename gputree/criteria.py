"""Split criteria on the host: the per-row statistics each criterion
histograms, built once per fit whatever the device.

Statistics are fixed-point int64 (:mod:`gputree.fixed_point`): every channel has a
power-of-two scale chosen from the data so that the sum over all rows cannot
overflow, which makes every histogram sum independent of summation order.

The formulas that read the sums (gain, impurity, leaf value) are device math
and live beside the backends that compile them, in
:mod:`gputree.backends.formulas`; the criterion ids and layout constants are
re-exported here. Each criterion has one explicit entry, a :class:`Criterion`
record (name, kind, impurity measure, channels, statistics builder), and the
formulas dispatch on the properties it writes into the ``layout`` int64 array
(see ``LAYOUT_*``), never on the order of codes. Channel layouts:

* classification (gini, entropy, gain_ratio, misclassification): per output ``o``, ``n_classes``
  channels ``w * [y_o == k]``; the node weight is the sum of output 0's.
* squared_error: ``[w, (w*y_o, w*y_o**2) for o]``.
* poisson: ``[w, (w*y_o, w*y_o*log(y_o)) for o]``.
* newton (boosting): ``[(g_o, h_o) for o, n]``.

A count channel (1 where a row has positive weight) is appended when the
weights are not all one; otherwise the weight channel counts rows exactly.
"""
import math
from dataclasses import dataclass
from typing import Callable

import numba
import numpy as np

from ._dtypes import FLOAT_DTYPE, STAT_DTYPE
from ._threads import kernel_jit, part_bounds_jit, parts_for, run_parts
from .backends import devmath
from .data.validation import check_target_range
from .fixed_point import (FIXED_POINT_BITS, exponent_of, fixed_point_exponent, largest_magnitudes, max_abs,
                          scale_into, to_fixed_point, warn_rows_lost)
from .backends.formulas import (  # noqa: F401 - re-exported for callers
    IMPURITY_ENTROPY, IMPURITY_ERROR_RATE, IMPURITY_GINI, IMPURITY_NONE, IMPURITY_POISSON,
    IMPURITY_SQUARED_ERROR, KIND_CLASSIFICATION, KIND_NEWTON, KIND_REGRESSION,
    LAYOUT_COUNT_CHANNEL, LAYOUT_IMPURITY, LAYOUT_KIND, LAYOUT_N_CHANNELS, LAYOUT_N_OUTPUTS,
    LAYOUT_PER_OUTPUT, LAYOUT_SIZE, LAYOUT_SPLIT_INFO, LAYOUT_VALUE_OFFSET,
    LAYOUT_WEIGHT_CHANNEL, LAYOUT_MULTIWAY, PARAM_CONSTRAINTS, PARAM_MIN_SAMPLES_LEAF,
    PARAM_MIN_WEIGHT_LEAF, PARAM_REG_ALPHA, PARAM_REG_LAMBDA, PARAMS_SIZE)


class Statistics:
    """Per-row fixed-point statistics of one fit.

    Attributes
    ----------
    stats : int64 (n_samples, n_channels), C order; or without the last
        channel, a count of ones (every weight one), where the backend's
        histograms count rows themselves (``Backend.implicit_count_channel``)
    inv_scale : float64 (n_channels,), multiply an integer sum by it to get
        the real sum (exact: a power of two)
    layout : int64 (LAYOUT_SIZE,)
    n_classes : int, channels per output for classification, else 1
    totals : int64 (1, n_channels) host array, the column sums of ``stats``
        when the pass that built them also summed them, else None
    ones_last : bool, the last channel is 1 in every row (a count channel
        with every weight positive), known without a pass over the rows
    """

    def __init__(self, stats, inv_scale, layout, n_classes, totals=None, ones_last=False):
        self.stats = stats
        self.inv_scale = inv_scale
        self.layout = layout
        self.n_classes = n_classes
        self.totals = totals
        self.ones_last = ones_last

    @property
    def n_outputs(self):
        return int(self.layout[LAYOUT_N_OUTPUTS])

    @property
    def n_channels(self):
        """Channels of the histograms (``stats``' columns, and an implicit
        count channel)."""
        return int(self.layout[LAYOUT_N_CHANNELS])


def _needs_count_channel(sample_weight):
    return not np.all(sample_weight == 1.0)


def _integer_weights(sample_weight):
    """True when the weights are integers whose sum fits the fixed-point
    bound as they are (bootstrap counts): they are then their own fixed
    point, scale 1. Larger integers (1e18) are scaled like any weights."""
    fits = sample_weight.shape[0] * float(sample_weight.max(initial=0.0)) <= 2.0 ** FIXED_POINT_BITS
    return fits and bool(np.all(sample_weight == np.round(sample_weight)))


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


def _layout(criterion, fields, count_channel, n_channels):
    """int64 (LAYOUT_SIZE,): the criterion's properties (multiway off), then ``fields``
    (n_outputs, per_output, value_offset, weight_channel) and the channels."""
    return np.array([criterion.kind, criterion.impurity, int(criterion.split_info), 0]
                    + fields + [count_channel, n_channels], dtype=np.int64)


@dataclass
class RowScales:
    """What fixes the fixed-point scales of a fit's classification or
    regression statistics, found over every row: a part of the rows (a Dask
    worker's) built with the whole's scales holds the very integers the
    whole's statistics hold for those rows.

    count : bool, a count channel (some weight is not one)
    integer : bool, every weight is a whole number (of a part); and their
        sum fits the fixed-point bound, the weights then being their own
        fixed point (of the whole, :func:`combined_scales`)
    largest : float64 (k,), the largest magnitude of each fixed-point
        column: the weights, then (regression) ``w * y_o`` and ``w * s_o``
        of each output o
    n_rows : int
    """

    count: bool
    integer: bool
    largest: np.ndarray
    n_rows: int


def statistics_scales(y, sample_weight, criterion):
    """RowScales of these rows alone (y as the builder takes it,
    sample_weight float64 (n,)); combine the parts' with
    :func:`combined_scales`."""
    w = np.asarray(sample_weight, dtype=FLOAT_DTYPE)
    columns = [w] + (list(_regression_columns(y, w, criterion))
                     if criterion.kind == KIND_REGRESSION else [])
    largest = np.array([max_abs(c) if c.size else 0.0 for c in columns], dtype=FLOAT_DTYPE)
    return RowScales(_needs_count_channel(w), bool(np.all(w == np.round(w))), largest,
                     w.shape[0])


def combined_scales(parts):
    """The RowScales of the rows of every part (:func:`statistics_scales`
    each): integer weights are their own fixed point where their sum fits
    the bound, as :func:`_integer_weights` decides for the whole."""
    largest = np.max([part.largest for part in parts], axis=0)
    n_rows = sum(part.n_rows for part in parts)
    integer = (all(part.integer for part in parts)
               and n_rows * float(largest[0]) <= 2.0 ** FIXED_POINT_BITS)
    return RowScales(any(part.count for part in parts), integer, largest, n_rows)


def _one_hot_fixed_point(y_encoded, n_classes, sample_weight, scales=None):
    """to_fixed_point of the one-hot weights (n_samples, n_outputs *
    n_classes), as (float64 (n_samples,) each row's integral value in its
    class channels, the channels' inverse scale). Integer weights are their
    own fixed point; for others the one-hot columns' scale is the weights'
    own (:func:`fixed_point_scale` looks at the largest value only), so no
    one-hot copy is made; ``scales``: the whole's (RowScales) where these
    rows are a part of it."""
    sample_weight = np.asarray(sample_weight, dtype=FLOAT_DTYPE)
    integer = _integer_weights(sample_weight) if scales is None else scales.integer
    if integer:
        return sample_weight, 1.0
    k = (fixed_point_exponent(sample_weight[:, None]) if scales is None
         else exponent_of(scales.largest[0], scales.n_rows))
    fixed = np.rint(np.ldexp(sample_weight, k))
    warn_rows_lost(sample_weight[:, None], fixed[:, None], "sample_weight")
    return fixed, math.ldexp(1.0, -k)


def classification_statistics(y_encoded, n_classes, sample_weight, criterion, scales=None):
    """y_encoded: int (n_samples, n_outputs) class indices; ``criterion`` a
    classification :class:`Criterion`; ``scales``: RowScales of the whole
    these rows are a part of (None: these rows are the whole); returns
    Statistics.

    The fixed-point weights are written into each row's class channels in
    place, one channel at a time (no (n_samples, n_channels) temporaries)."""
    n_samples, n_outputs = y_encoded.shape
    n_values = n_outputs * n_classes
    stats, inv, count_channel = _statistics_array(
        n_samples, n_values, sample_weight, count=None if scales is None else scales.count)
    fixed, inv[:n_values] = _one_hot_fixed_point(y_encoded, n_classes, sample_weight, scales)
    for o in range(n_outputs):
        for k in range(n_classes):
            np.copyto(stats[:, o * n_classes + k], fixed, casting="unsafe",
                      where=y_encoded[:, o] == k)
    layout = _layout(criterion, [n_outputs, n_classes, 0, -1], count_channel, stats.shape[1])
    return Statistics(stats, inv, layout, n_classes)


def _regression_columns(y, w, criterion):
    """The float64 (n,) columns ``w * y_o`` and ``w * s_o`` of each output
    o (s_o: y_o**2, or y_o log y_o for Poisson), one at a time."""
    for o in range(y.shape[1]):
        y_o = y[:, o]
        yield w * y_o
        if criterion.impurity == IMPURITY_POISSON:
            yield w * np.where(y_o > 0, y_o * devmath.apply("log", np.where(y_o > 0, y_o, 1.0)),
                               0.0)
        else:
            yield w * (y_o * y_o)


def regression_statistics(y, sample_weight, criterion, scales=None):
    """y: float (n_samples, n_outputs); ``criterion`` a regression
    :class:`Criterion`; ``scales`` as :func:`classification_statistics`;
    returns Statistics.

    Raises a ValueError naming y and the fix when its channels cannot be
    formed in float64 (``check_target_range``)."""
    check_target_range(y, sample_weight)
    n_samples, n_outputs = y.shape
    w = sample_weight[:, None]
    stats, inv, count_channel = _statistics_array(
        n_samples, 1 + 2 * n_outputs, sample_weight,
        count=None if scales is None else scales.count)

    def scale_from(c):
        return None if scales is None else (float(scales.largest[c]), scales.n_rows)

    integer = _integer_weights(sample_weight) if scales is None else scales.integer
    _, inv[0:1] = to_fixed_point(w, integer, out=stats[:, 0:1], name="sample_weight",
                                 scale_from=None if integer else scale_from(0))
    for c, column in enumerate(_regression_columns(y, w[:, 0], criterion), start=1):
        _, inv[c:c + 1] = to_fixed_point(column[:, None], out=stats[:, c:c + 1],
                                         scale_from=scale_from(c))
    layout = _layout(criterion, [n_outputs, 2, 1, 0], count_channel, stats.shape[1])
    return Statistics(stats, inv, layout, 1)


@numba.njit(inline="always")
def _scaled(x, exponent, scale):
    """``ldexp(x, exponent)``: a multiplication by ``scale`` = 2**exponent
    where that is a normal float64 (the same correctly rounded result, 5x
    faster than the libm call), else ldexp."""
    if scale != 0.0:
        return x * scale
    return math.ldexp(x, exponent)


@kernel_jit()
def _newton_statistics_part(gradients, hessians, exponents, scales, sample_weight, out,
                            partial, part, n_parts):
    """The host's pass for newton_statistics over part ``part`` of the rows:
    out int64 (n, 2K + 1) OUT, per output o ``rint(ldexp(g,
    exponents[2o]))``, ``rint(ldexp(h, exponents[2o + 1]))``, then the count
    channel (1 where the weight is positive); partial int64 (n_parts, 2K +
    1) OUT, row ``part``: the part's column sums (out (n, 2K): no count
    channel). gradients, hessians
    float64 (n, K), exponents int64 (2K,), scales float64 (2K,) (2**exponent
    where that is a normal float, else 0), sample_weight float64 (n,) IN.
    Rounding as numpy's rint, so the device's column-wise path agrees."""
    n_samples, n_outputs = gradients.shape
    counted = out.shape[1] > 2 * n_outputs
    first, stop = part_bounds_jit(n_samples, part, n_parts)
    for i in range(first, stop):
        for o in range(n_outputs):
            c = 2 * o
            out[i, c] = np.int64(np.rint(_scaled(gradients[i, o], exponents[c], scales[c])))
            out[i, c + 1] = np.int64(np.rint(_scaled(hessians[i, o], exponents[c + 1],
                                                     scales[c + 1])))
        if counted:
            out[i, 2 * n_outputs] = 1 if sample_weight[i] > 0 else 0
    for c in range(out.shape[1]):
        total = 0
        for i in range(first, stop):
            total += out[i, c]
        partial[part, c] = total


def _fill_newton_statistics(gradients, hessians, exponents, sample_weight, out):
    """The host's one pass for newton_statistics into ``out`` int64 (n, 2K +
    1) (see _newton_statistics_part), in parts; returns out's column sums,
    int64 (1, 2K + 1) (per part, then the parts: exact in any order)."""
    normal = (exponents >= -1022) & (exponents <= 1023)
    scales = np.where(normal, np.ldexp(1.0, np.where(normal, exponents, 0)), 0.0)
    n_parts = parts_for(out.size)
    partial = np.zeros((n_parts, out.shape[1]), dtype=out.dtype)
    run_parts(_newton_statistics_part, n_parts, gradients, hessians, exponents, scales,
              sample_weight, out, partial)
    return partial.sum(axis=0, keepdims=True)


def newton_statistics(gradients, hessians, sample_weight, xp=np, out=None, scale_from=None,
                      count=True):
    """gradients, hessians: float (n_samples, n_outputs); returns Statistics.

    Boosting always carries an explicit count channel (hessians are not counts).
    With ``xp`` the backend's array module the statistics are built where the
    gradients live (on the GPU for the CUDA backend), each column scaled and
    rounded straight into one int64 array; on the host in one numba pass,
    into ``out`` (an earlier result's ``stats`` its holder no longer needs)
    when it has the shape: fresh memory costs its pages (168 MB a round at
    7M rows). Raises a ValueError naming y when the gain's G**2 could
    overflow. ``scale_from``: (largest float64 (2 n_outputs,), n_rows) of
    all the rows whose statistics are summed together, when these rows are
    a part of them (a worker's rows; :func:`newton_largest` of every part,
    their maximum): every part then gets the scale of the whole.
    ``count=False`` (host only; every weight positive): ``stats`` holds no
    count channel (:class:`Statistics`), its totals count every row.
    """
    n_samples, n_outputs = gradients.shape
    n_values = 2 * n_outputs
    largest, n_rows = (scale_from if scale_from is not None
                       else (newton_largest(gradients, hessians, xp), n_samples))
    for o in range(n_outputs):
        _check_gradient_range(n_rows * largest[2 * o])
    exponents = np.array([exponent_of(value, n_rows) for value in largest], dtype=np.int64)
    totals = None
    if xp is np:
        shape = (n_samples, n_values + int(count))
        stats = out if out is not None and out.shape == shape else np.empty(shape, STAT_DTYPE)
        totals = _fill_newton_statistics(gradients, hessians, exponents, sample_weight, stats)
        if not count:
            totals = np.concatenate([totals, [[n_samples]]], axis=1)
    else:
        stats, _, _ = _statistics_array(n_samples, n_values, sample_weight, xp, count=True)
        for o in range(n_outputs):
            for c, column in ((2 * o, gradients[:, o]), (2 * o + 1, hessians[:, o])):
                scale_into(column[:, None], int(exponents[c]), stats[:, c:c + 1], xp)
    inv = np.concatenate([np.ldexp(1.0, -exponents), [1.0]])
    layout = _layout(NEWTON, [n_outputs, 2, 0, 1], n_values, n_values + 1)
    # the count channel holds 0s and 1s: all 1 exactly when they sum to n
    ones_last = totals is not None and int(totals[0, -1]) == n_rows
    return Statistics(stats, inv, layout, 1, totals, ones_last)


#: rows per block of :func:`newton_statistics_in_blocks`
NEWTON_BLOCK_ROWS = 1 << 18


def newton_statistics_in_blocks(block_gradients, n_samples, n_outputs, out=None,
                                block_rows=NEWTON_BLOCK_ROWS, count=True):
    """newton_statistics (host) of gradients made a block of rows at a time,
    never whole: ``block_gradients(start, stop, first)`` returns (g, h float64
    (stop - start, n_outputs), sample_weight (stop - start,)) of those rows;
    it is called twice per block (``first`` True, then False), since the
    scale needs the largest |g| and |h| of every row first. The same
    Statistics as newton_statistics of the whole arrays, bit for bit (the
    same scale; int64 sums are exact in any order); ``out`` and ``count``
    as there."""
    bounds = [(start, min(n_samples, start + block_rows))
              for start in range(0, n_samples, block_rows)]
    largest = None
    for start, stop in bounds:
        g, h, _ = block_gradients(start, stop, True)
        part = newton_largest(g, h)
        largest = part if largest is None else np.maximum(largest, part)
    shape = (n_samples, 2 * n_outputs + int(count))
    stats = out if out is not None and out.shape == shape else np.empty(shape, STAT_DTYPE)
    totals = 0
    for start, stop in bounds:
        g, h, w = block_gradients(start, stop, False)
        part = newton_statistics(g, h, w, out=stats[start:stop],
                                 scale_from=(largest, n_samples), count=count)
        totals = totals + part.totals
    return Statistics(stats, part.inv_scale, part.layout, 1, totals,
                      int(totals[0, -1]) == n_samples)


def newton_largest(gradients, hessians, xp=np):
    """float64 (2 n_outputs,): the largest |g| and |h| of each output,
    interleaved (g_0, h_0, g_1, ...), from which newton_statistics scales."""
    if xp is np:
        return np.stack([largest_magnitudes(gradients), largest_magnitudes(hessians)],
                        axis=1).ravel()
    return np.array([max_abs(column) for o in range(gradients.shape[1])
                     for column in (gradients[:, o], hessians[:, o])], dtype=np.float64)


def _check_gradient_range(bound):
    """The split gain squares a node's gradient sum G (at most ``bound`` = n
    * max|g|, a host float): a ValueError naming y and the fix when that
    square could overflow (or a gradient is NaN)."""
    if not bound < 2.0 ** 511:
        raise ValueError(
            f"y or sample_weight is too large for boosting: gradient sums reach {bound:.3g}, "
            "whose square overflows float64. Multiply y (squared error) or sample_weight by "
            f"a power of two such as 2**{-math.frexp(bound)[1] + 1 if math.isfinite(bound) else -600}"
            " (the trees are the same; predictions scale with y).")


@dataclass(frozen=True)
class Criterion:
    """One criterion's entry: everything that differs between criteria.

    name : str, the estimators' ``criterion`` value
    kind : KIND_CLASSIFICATION, KIND_REGRESSION or KIND_NEWTON (which
        channels the statistics hold and which formulas read them)
    impurity : IMPURITY_* measure of a node (IMPURITY_NONE for newton)
    split_info : bool, the gain is divided by the entropy of the split's
        partition (C4.5's gain ratio)
    channels : str, the statistics channels per output (documentation)
    statistics : the builder of its Statistics (classification_statistics,
        regression_statistics or newton_statistics)
    """

    name: str
    kind: int
    impurity: int
    split_info: bool
    channels: str
    statistics: Callable


_CLASS_CHANNELS = "w * [y_o == k] for each class k"
GINI = Criterion("gini", KIND_CLASSIFICATION, IMPURITY_GINI, False, _CLASS_CHANNELS,
                 classification_statistics)
ENTROPY = Criterion("entropy", KIND_CLASSIFICATION, IMPURITY_ENTROPY, False, _CLASS_CHANNELS,
                    classification_statistics)
GAIN_RATIO = Criterion("gain_ratio", KIND_CLASSIFICATION, IMPURITY_ENTROPY, True,
                       _CLASS_CHANNELS, classification_statistics)
MISCLASSIFICATION = Criterion("misclassification", KIND_CLASSIFICATION, IMPURITY_ERROR_RATE,
                              False, _CLASS_CHANNELS, classification_statistics)
SQUARED_ERROR = Criterion("squared_error", KIND_REGRESSION, IMPURITY_SQUARED_ERROR, False,
                          "w, then w*y_o, w*y_o**2", regression_statistics)
POISSON = Criterion("poisson", KIND_REGRESSION, IMPURITY_POISSON, False,
                    "w, then w*y_o, w*y_o*log(y_o)", regression_statistics)
NEWTON = Criterion("newton", KIND_NEWTON, IMPURITY_NONE, False, "g_o, h_o, then a count",
                   newton_statistics)

#: the estimators' ``criterion`` values ("log_loss" is scikit-learn's name for entropy)
CLASSIFICATION_CRITERIA = {"gini": GINI, "entropy": ENTROPY, "log_loss": ENTROPY,
                           "gain_ratio": GAIN_RATIO, "misclassification": MISCLASSIFICATION}
REGRESSION_CRITERIA = {"squared_error": SQUARED_ERROR, "poisson": POISSON}
