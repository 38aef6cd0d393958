"""Fixed point: the order-free arithmetic behind "the same answer
everywhere". Float values are scaled by a power of two chosen from their
largest magnitude alone (exact, the same on every device) and rounded to
int64, so that any sum of them is exact in any order: per-row statistics
(:func:`to_fixed_point`, one scale per group of columns, the bound
:func:`fixed_point_exponent`) and order-free sums and means of float arrays
on any device (:func:`order_free_sum`, :func:`grouped_order_free_sum`,
:func:`weighted_mean`), and per-group fixed-point sums on scales fixed
before summing (:func:`grouped_fixed_point_sums`), which shards add up.

Two scale rules live here, both from the largest magnitude and the row
count: the statistics' (:func:`fixed_point_exponent`, from the binary
exponents of the two) and the order-free sums' (:func:`summable_scale`,
from the binary exponent of their product, one bit finer at most). They are
kept apart because merging them would change the rounding, and so the
models, of fits made before.

The host passes (largest magnitude, fixed-point total) are numba kernels
run in parts (:mod:`gputree._threads`) whose partial results combine
exactly (max, int64 sums), so the result depends on neither the parts nor
the thread count.
The largest magnitude is an integer maximum over the values' bit patterns
with the sign bit cleared: for floats that are not NaN that order is the
order of their magnitudes, and every NaN pattern lies above infinity's, so a
column holding a NaN gives a NaN (as numpy's max does), with no branch in
the loop (it vectorizes).
"""
import math
import warnings

import numpy as np

from ._arrays import to_host
from ._dtypes import FLOAT_DTYPE, STAT_DTYPE
from ._threads import kernel_jit, part_bounds_jit, parts_for, run_parts

#: every bit of a float64 but its sign
_MAGNITUDE_BITS = np.int64(0x7FFF_FFFF_FFFF_FFFF)


@kernel_jit()
def _largest_bits(bits, partial, part, n_parts):
    """partial int64 (n_parts, K) OUT, row ``part``: per column of ``bits``
    int64 (n, K) (float64 bit patterns) IN the largest pattern with the sign
    bit cleared among part ``part`` of its rows."""
    n_rows, n_columns = bits.shape
    first, stop = part_bounds_jit(n_rows, part, n_parts)
    for c in range(n_columns):
        largest = np.int64(0)
        for i in range(first, stop):
            largest = max(largest, bits[i, c] & _MAGNITUDE_BITS)
        partial[part, c] = largest


def largest_magnitudes(values):
    """float64 (K,): the largest |value| of each column of ``values`` float64
    (n, K) (0 for no rows; NaN where a column holds a NaN)."""
    bits = np.ascontiguousarray(values, dtype=np.float64).view(np.int64)
    n_parts = parts_for(bits.size)
    partial = np.zeros((n_parts, bits.shape[1]), dtype=np.int64)
    run_parts(_largest_bits, n_parts, bits, partial)
    return partial.max(axis=0).view(np.float64)


@kernel_jit()
def _fixed_point_part(values, first_factor, second_factor, partial, part, n_parts):
    """partial int64 (n_parts,) OUT, entry ``part``: the int64 sum of
    ``rint((v * first_factor) * second_factor)`` over part ``part`` of
    ``values`` float64 (n,) IN."""
    first, stop = part_bounds_jit(values.shape[0], part, n_parts)
    total = np.int64(0)
    for i in range(first, stop):
        total += np.int64(np.rint((values[i] * first_factor) * second_factor))
    partial[part] = total


def fixed_point_total(values, first, second):
    """The int64 sum of ``rint((v * first) * second)`` over ``values``
    float64 (n,) (first and second: the two exact factors of a fixed-point
    scale that keeps every partial sum in range): per part, then the parts
    (exact in any order)."""
    n_parts = parts_for(values.shape[0])
    partial = np.zeros(n_parts, dtype=np.int64)
    run_parts(_fixed_point_part, n_parts, values, first, second, partial)
    return int(partial.sum())


# largest absolute channel total allowed after scaling is 2**61 (2 bits of
# headroom); the largest scale exponent keeps 2**-k representable
FIXED_POINT_BITS = 61


_MAX_EXPONENT = 1074


def fixed_point_exponent(values):
    """The power of two ``k`` (host int) that scales float columns (n_samples,
    k) sharing it to fixed point: the largest with ``n_samples * max|value| *
    2**k <= 2**61``, so no sum of scaled rows can overflow. Found from the
    binary exponent of the largest magnitude alone (``math.frexp``, exact),
    so the data's scale is taken out exactly: the same columns times any
    power of two (within float64's normal range) get the very same integers.
    A bound from the maximum (exact on every device) rather than from a float
    sum (whose rounding depends on the summation order) gives every device the
    very same scale. ``k`` is at most 1074, so ``2**-k`` stays representable."""
    if values.size == 0:
        return 0
    return exponent_of(max_abs(values), values.shape[0])


def max_abs(values):
    """max |value| of an array (host float; NaN when it holds one)."""
    return max(float(values.max()), -float(values.min()))


def exponent_of(largest, n_rows):
    """fixed_point_exponent of columns of ``n_rows`` rows whose largest
    magnitude is ``largest`` (host float)."""
    if largest == 0.0:
        return 0
    _, exponent = math.frexp(largest)           # largest < 2**exponent
    n_bits = max(int(n_rows) - 1, 0).bit_length()   # n <= 2**n_bits
    return min(FIXED_POINT_BITS - exponent - n_bits, _MAX_EXPONENT)


def fixed_point_scale(values):
    """``2.0**fixed_point_exponent(values)`` as a host float (inf beyond
    float64's range: use the exponent with ``ldexp`` there)."""
    k = fixed_point_exponent(values)
    return math.inf if k > 1023 else math.ldexp(1.0, k)


def to_fixed_point(values, weights_are_counts=False, xp=np, out=None, name=None,
                   scale_from=None):
    """Scale float columns (n_samples, k) to int64 fixed point.

    All columns in one group share one scale (:func:`fixed_point_exponent`) so
    that their sums stay comparable; returns (int64 values, inverse scale
    float64 (k,), a power of two). ``xp`` is the array module of ``values``
    (numpy, or cupy on a GPU); the inverse scale is always a host array.
    ``out``: int64 (n_samples, k) to write the values into (columns of a
    statistics array), else a new array. ``weights_are_counts``: the values
    are small integers used as they are (scale 1). ``name``: the values are
    weights so named, and rows whose nonzero weight rounds to zero are
    reported (:func:`warn_rows_lost`); other values just round.
    ``scale_from``: (largest magnitude, rows) of the whole the values are
    a part of (a worker's rows), whose scale they take, else their own.
    """
    values = xp.asarray(values, dtype=FLOAT_DTYPE)
    if out is None:
        out = xp.empty(values.shape, dtype=STAT_DTYPE)
    if weights_are_counts:
        xp.copyto(out, values, casting="unsafe")
        return out, np.ones(values.shape[1], FLOAT_DTYPE)
    k = fixed_point_exponent(values) if scale_from is None else exponent_of(*scale_from)
    scale_into(values, k, out, xp)
    if name is not None:
        warn_rows_lost(values, out, name, xp)
    return out, np.full(values.shape[1], math.ldexp(1.0, -k), dtype=FLOAT_DTYPE)


def scale_into(values, exponent, out, xp=np):
    """out (int64) = rint(values * 2**exponent), with one float temporary
    (``ldexp``: exact for normal results, whatever the exponent)."""
    scaled = xp.ldexp(values, exponent)
    xp.rint(scaled, out=scaled)
    xp.copyto(out, scaled, casting="unsafe")


class PrecisionWarning(UserWarning):
    """Rows whose nonzero statistic rounds to zero in int64 fixed point:
    their column's dynamic range is wider than 2**61."""


def warn_rows_lost(values, fixed, name, xp=np):
    """Warn, naming the column and the rows, when nonzero ``values`` (float
    (n, k)) became zero in ``fixed`` (int64 (n, k)): never a silent loss."""
    lost = (values != 0) & (fixed == 0)
    if not bool(lost.any()):
        return
    rows = np.flatnonzero(to_host(lost.any(axis=1)))
    warnings.warn(
        f"{name}: {rows.size} row(s) {rows[:5].tolist()}{' ...' if rows.size > 5 else ''} "
        "round to zero in int64 fixed point (their magnitude is below 2**-61 of the "
        f"column's largest times n_samples), so they count as zero in this {name}. "
        "Narrow the range (e.g. clip tiny weights to 0 or rescale the outliers).",
        PrecisionWarning, stacklevel=4)


def to_summable(xp, values, largest=None, size=None):
    """(int64 rint(values * 2**shift), shift) with the largest power-of-two
    scale that keeps any sum of the values below 2**61 in magnitude; values
    finite and not all zero (``largest``: their largest magnitude, when the
    caller has it; with ``size``, of the ``size`` values these are a part
    of). Sums of the result are exact in any order."""
    if largest is None:
        largest = float(xp.max(xp.abs(values)))
    shift, first, second = summable_scale(largest, values.size if size is None else size)
    return xp.rint((values * first) * second).astype(np.int64), shift


def summable_scale(largest, size):
    """(shift, first, second): the power of two that keeps the fixed-point sum
    of ``size`` values of magnitude at most ``largest`` below 2**61, and the
    two factors whose product is 2**shift (two exact steps: 2**shift alone
    may overflow)."""
    shift = 61 - math.frexp(largest * size)[1]
    half = shift // 2
    return shift, math.ldexp(1.0, half), math.ldexp(1.0, shift - half)


def order_free_sum(xp, values):
    """Sum of float64 ``values`` as a host float that does not depend on the
    summation order (so not on the device, its reduction tree or the thread
    count): the values in fixed point (:func:`to_summable`), summed as int64
    (exact in any order), scaled back."""
    if values.size == 0:
        return 0.0
    host = xp is np and values.ndim == 1 and values.dtype == np.float64
    largest = (float(largest_magnitudes(values[:, None])[0]) if host
               else float(xp.max(xp.abs(values))))
    if largest == 0.0 or not math.isfinite(largest):
        return float(xp.sum(values))  # 0, or inf/nan whatever the order
    total, shift = summable_total(xp, values, largest, values.size)
    return math.ldexp(float(total), -shift)


class BlockOrderFreeSum:
    """:func:`order_free_sum` (host) of float64 values (n,) given a block at
    a time, every block twice: :meth:`see` each (their largest magnitude),
    then :meth:`add` each (their fixed-point total); :meth:`value` is
    order_free_sum of all of them, bit for bit, never holding them whole."""

    def __init__(self, size):
        self.size, self.largest, self.total, self.plain = size, 0.0, 0, None

    def see(self, values):
        if values.size:
            part = float(largest_magnitudes(values[:, None])[0])
            self.largest = (math.nan if math.isnan(part) or math.isnan(self.largest)
                            else max(self.largest, part))

    def add(self, values):
        if not values.size:
            return
        if self.largest == 0.0 or not math.isfinite(self.largest):
            # zeros, or inf/nan: the plain sum, the same in any order (the
            # first block's starts it: a sum of -0.0s stays -0.0)
            part = float(np.sum(values))
            self.plain = part if self.plain is None else self.plain + part
        else:
            part, self.shift = summable_total(np, values, self.largest, self.size)
            self.total += part

    def value(self):
        if self.size == 0:
            return 0.0
        if self.largest == 0.0 or not math.isfinite(self.largest):
            return self.plain
        return math.ldexp(float(self.total), -self.shift)


def summable_total(xp, values, largest, size):
    """(int sum of ``values`` float64 (n,) in fixed point, shift): the part
    of :func:`order_free_sum` that a part of ``size`` values whose largest
    magnitude is ``largest`` (finite, nonzero) contributes; the parts' ints
    add up exactly to the whole's, whose sum is ``ldexp(total, -shift)``."""
    shift, first, second = summable_scale(largest, size)
    if xp is np and values.ndim == 1 and values.dtype == np.float64:
        return int(fixed_point_total(values, first, second)), shift
    return int(xp.rint((values * first) * second).astype(np.int64).sum()), shift


def grouped_order_free_sum(xp, values, groups, n_groups):
    """float64 (n_groups,) sums of ``values`` (n,) within each group (int
    (n,) in [0, n_groups)), in fixed point as :func:`order_free_sum`: the
    same on every device."""
    largest = float(xp.max(xp.abs(values))) if values.size else 0.0
    if largest == 0.0:
        return xp.zeros(n_groups, dtype=FLOAT_DTYPE)
    total, shift = grouped_summable_sums(xp, values, groups, n_groups, largest, values.size)
    return total.astype(FLOAT_DTYPE) * math.ldexp(1.0, -shift)


def grouped_summable_sums(xp, values, groups, n_groups, largest, size):
    """(int64 (n_groups,) fixed-point sums of ``values`` float64 (n,) per
    group, shift): the part of :func:`grouped_order_free_sum` that a part of
    ``size`` values of largest magnitude ``largest`` (finite, nonzero)
    contributes; the parts' sums add up exactly to the whole's, whose sums
    are ``total * 2**-shift``."""
    fixed, shift = to_summable(xp, values, largest, size)
    return grouped_int_sums(xp, fixed, groups, n_groups), shift


#: bits of the chunks whose float64 bincounts :func:`grouped_int_sums` adds
_CHUNK_BITS = 21
_CHUNK_MASK = (1 << _CHUNK_BITS) - 1
#: the most rows whose chunk sums stay exact: n 2**21 <= 2**53
MAX_GROUPED_ROWS = 1 << (53 - _CHUNK_BITS)


def grouped_int_sums(xp, fixed, groups, n_groups):
    """int64 (n_groups, ...) sums of int64 ``fixed`` (n, ...) within each
    group (int (n,) in [0, n_groups)), exact in any order, so the same on
    every device: each value split into three 21-bit chunks (the top one
    signed), each chunk summed per group by a float64 weighted bincount
    (every partial sum an integer of magnitude below n 2**21 <= 2**53, so no
    addition rounds, in whatever order a device adds: a GPU's atomics too),
    then recombined in int64 (the steps stay within the total minus the
    low chunks' sum, at most n 2**21: no overflow for totals below 2**62,
    as every fixed-point total here is)."""
    if fixed.shape[0] > MAX_GROUPED_ROWS:
        raise ValueError(f"{fixed.shape[0]} rows: exact grouped sums take at most "
                         f"{MAX_GROUPED_ROWS}; fit on fewer rows per machine (e.g. with Dask).")
    if fixed.ndim > 1:
        return xp.stack([grouped_int_sums(xp, fixed[:, c], groups, n_groups)
                         for c in range(fixed.shape[1])], axis=1)
    total = xp.zeros(n_groups, dtype=np.int64)
    for shift in (2 * _CHUNK_BITS, _CHUNK_BITS, 0):
        chunk = fixed >> shift if shift == 2 * _CHUNK_BITS else (fixed >> shift) & _CHUNK_MASK
        sums = xp.bincount(groups, weights=chunk.astype(FLOAT_DTYPE), minlength=n_groups)
        total = (total << _CHUNK_BITS) + sums.astype(np.int64)
    return total


def positive_weight_scale(xp, weights):
    """(largest positive weight as a host float, 0.0 for none; number of
    positive weights) of float64 ``weights`` (n,): the fixed-point scale of
    weighted sums that leave out the other rows (:func:`summable_scale` of
    the two; a weighted quantile's, :mod:`gputree.quantiles`), from a
    maximum and a count, so exact on every device and combinable across
    shards (max of the largest, sum of the counts)."""
    kept = weights > 0
    n_kept = int(kept.sum())
    return (float(weights[kept].max()) if n_kept else 0.0), n_kept


def grouped_fixed_point_sums(xp, columns, groups, n_groups, largest, size):
    """int64 (n_groups, k): per group the fixed-point sums of the columns of
    float64 ``columns`` (n, k), column c on the scale of
    ``summable_scale(largest[c], size)`` (bounds known before summing: every
    |value| of the column at most ``largest[c]``, at most ``size`` values
    nonzero over all the rows summed, these and other shards'), so the sums
    stay below 2**61, are exact in any order and add up across shards."""
    fixed = xp.empty(columns.shape, dtype=np.int64)
    for c in range(columns.shape[1]):
        _, first, second = summable_scale(largest[c], size)
        fixed[:, c] = xp.rint((columns[:, c] * first) * second)
    return grouped_int_sums(xp, fixed, groups, n_groups)


def weighted_mean(xp, values, w):
    """sum(values * w) / sum(w) as a host float (w None: all ones), the same
    on every device (:func:`order_free_sum`)."""
    if w is None:
        return order_free_sum(xp, values) / values.shape[0]
    return order_free_sum(xp, values * w) / order_free_sum(xp, w)
