"""Host passes behind order-free sums of float64 rows: the largest magnitude
of each column and a fixed-point total, each one parallel numba pass over
chunks of rows whose partial results combine exactly (max, int64 sums), so
the result depends on neither the chunking nor the thread count.

The largest magnitude is an integer maximum over the values' bit patterns
with the sign bit cleared: for floats that are not NaN that order is the
order of their magnitudes, and every NaN pattern lies above infinity's, so
a column holding a NaN gives a NaN (as numpy's max does), with no branch in
the loop (it vectorizes).
"""
import numba
import numpy as np

#: rows per task of a pass
_CHUNK = 16384
#: every bit of a float64 but its sign
_MAGNITUDE_BITS = np.int64(0x7FFF_FFFF_FFFF_FFFF)


@numba.njit(parallel=True, cache=True)
def _largest_bits(bits):
    """int64 (K,): per column of ``bits`` int64 (n, K) (float64 bit
    patterns) IN the largest pattern with the sign bit cleared."""
    n_rows, n_columns = bits.shape
    n_chunks = (n_rows + _CHUNK - 1) // _CHUNK
    partial = np.zeros((n_chunks, n_columns), dtype=np.int64)
    for chunk in numba.prange(n_chunks):
        for c in range(n_columns):
            largest = np.int64(0)
            for i in range(chunk * _CHUNK, min((chunk + 1) * _CHUNK, n_rows)):
                largest = max(largest, bits[i, c] & _MAGNITUDE_BITS)
            partial[chunk, c] = largest
    out = np.zeros(n_columns, dtype=np.int64)
    for chunk in range(n_chunks):
        for c in range(n_columns):
            out[c] = max(out[c], partial[chunk, c])
    return out


def largest_magnitudes(values):
    """float64 (K,): the largest |value| of each column of ``values`` float64
    (n, K) (0 for no rows; NaN where a column holds a NaN)."""
    bits = np.ascontiguousarray(values, dtype=np.float64).view(np.int64)
    return _largest_bits(bits).view(np.float64)


@numba.njit(parallel=True, cache=True)
def fixed_point_total(values, first, second):
    """The int64 sum of ``rint((v * first) * second)`` over ``values``
    float64 (n,) IN (first and second: the two exact factors of a fixed-point
    scale that keeps every partial sum in range): per chunk, then the chunks
    in order (exact in any order)."""
    n_chunks = (values.shape[0] + _CHUNK - 1) // _CHUNK
    partial = np.zeros(n_chunks, dtype=np.int64)
    for chunk in numba.prange(n_chunks):
        total = np.int64(0)
        for i in range(chunk * _CHUNK, min((chunk + 1) * _CHUNK, values.shape[0])):
            total += np.int64(np.rint((values[i] * first) * second))
        partial[chunk] = total
    total = np.int64(0)
    for chunk in range(n_chunks):
        total += partial[chunk]
    return total
