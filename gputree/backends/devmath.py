"""Elementary functions (exp, log, log2, log1p) built from + - * / and the
exact frexp/ldexp, so that they round identically on every device.

libm (the CPU), numpy's SIMD loops and libdevice (the GPU) each evaluate
``exp`` and ``log`` with their own polynomials and differ in the last bits;
a split gain, a gradient or a probability computed with them would differ
between devices. These versions use only IEEE 754 operations that every
device rounds the same way, in a fixed order: frexp and ldexp (exact, bar
ldexp's one correctly rounded step into the subnormal range), a range
reduction with fdlibm's split ``ln 2``, and fixed-degree polynomials. Accuracy is a few
units in the last place (tests compare with ``math``); identity across
devices holds once fused multiply-add contraction is off (the CUDA backend
compiles with ``-fma=0`` and the tests check the PTX).

:func:`make_devmath` compiles them with a backend's ``jit`` (``numba.njit``
or ``numba.cuda.jit(device=True)``); the host module-level versions
(:data:`host`) serve numpy code paths through :func:`apply`.
"""
import decimal
import functools
import math
from types import SimpleNamespace

import numba
import numpy as np

from .._threads import kernel_jit, part_bounds_jit, parts_for, run_parts
from .kernel_cache import renamed_copy

LN2_HI = 6.93147180369123816490e-01   # ln 2 rounded to 32 bits: k * LN2_HI is exact
LN2_LO = 1.90821492927058770002e-10   # ln 2 - LN2_HI
INV_LN2 = 1.44269504088896338700e+00
EXP_OVERFLOW = 709.782712893383973096    # exp(x) = inf above
EXP_UNDERFLOW = -745.13321910194110842   # exp(x) = 0 below
_SQRT_HALF = 0.7071067811865476
_SQRT2 = 1.4142135623730951
#: adding and subtracting 1.5 * 2**52 rounds a float of magnitude < 2**51 to an integer
_ROUND = 6755399441055744.0
#: 2**j for j = _POW2_MIN .. -_POW2_MIN - 1: exp scales by two of them (both normal)
_POW2_MIN = -540
_POW2 = np.array([math.ldexp(1.0, j) for j in range(_POW2_MIN, -_POW2_MIN)])
#: log(m) near table points c_j = 1 + j / 256, j = _LOG_TABLE_FIRST .. (covering
#: [sqrt(1/2), sqrt(2))): log(c_j) from exact decimal arithmetic rounded once to
#: float64 (the same table wherever it is built), and 1 / c_j
_LOG_TABLE_SCALE = 256.0
_LOG_TABLE_FIRST = -76
_LOG_TABLE_C = [1 + decimal.Decimal(j) / 256 for j in range(_LOG_TABLE_FIRST, 108)]
with decimal.localcontext(decimal.Context(prec=50)):
    _LOG_TABLE = np.array([float(c.ln()) for c in _LOG_TABLE_C])
    _LOG_TABLE_INV = np.array([float(1 / c) for c in _LOG_TABLE_C])
#: log1p(f) = f - f**2 (1/2 - f/3 + f**2/4 - ... - f**7/9), |f| < 2**-8 (highest first)
_LOG1P_COEFFICIENTS = tuple((-1.0) ** d / (d + 2) for d in range(7, -1, -1))
#: Taylor series of exp(r) for |r| <= ln(2)/2, degree 13 (highest first)
_EXP_COEFFICIENTS = tuple(1.0 / math.factorial(d) for d in range(13, -1, -1))


def make_devmath(jit):
    """Compile exp, log, log2 and log1p (float64 -> float64) with ``jit``;
    returns a namespace of the four functions."""

    @jit
    def frexp_sqrt2(x):
        """(m, k) with x = m * 2**k and m in [sqrt(1/2), sqrt(2)), for finite
        x > 0 (frexp is exact on every device)."""
        m, k = math.frexp(x)      # m in [1/2, 1)
        if m < _SQRT_HALF:
            m = m * 2.0
            k -= 1
        return m, k

    @jit
    def horner(coefficients, z):
        """coefficients[0] z**(n-1) + ... + coefficients[n-1], by Horner's rule."""
        p = coefficients[0]
        for i in range(1, len(coefficients)):
            p = p * z + coefficients[i]
        return p

    @jit
    def log_reduced(m):
        """log(m) for m in [sqrt(1/2), sqrt(2)), without a division: the
        nearest table point c = 1 + j/256 (m - c is exact), log(c) from the
        table, and a polynomial for log1p(f), f = (m - c) / c, |f| < 2**-8."""
        jf = ((m - 1.0) * _LOG_TABLE_SCALE + _ROUND) - _ROUND   # nearest integer, exactly
        j = int(jf) - _LOG_TABLE_FIRST
        f = (m - (1.0 + jf / _LOG_TABLE_SCALE)) * _LOG_TABLE_INV[j]
        return _LOG_TABLE[j] + (f - f * (f * horner(_LOG1P_COEFFICIENTS, f)))

    @jit
    def log_base(x, base2):
        """log2(x) when base2 else the natural log: -inf at 0, nan below 0 or
        at nan, inf at inf (log2 is exact for powers of two)."""
        if x != x or x < 0.0:
            return math.nan
        if x == 0.0:
            return -math.inf
        if x == math.inf:
            return math.inf
        m, k = frexp_sqrt2(x)
        if base2:
            return k + log_reduced(m) * INV_LN2
        return k * LN2_HI + (k * LN2_LO + log_reduced(m))

    @jit
    def log(x):
        """Natural logarithm."""
        return log_base(x, False)

    @jit
    def log2(x):
        """Base-2 logarithm."""
        return log_base(x, True)

    @jit
    def exp(x):
        """e**x; 0 below EXP_UNDERFLOW, inf above EXP_OVERFLOW, nan at nan."""
        xc = x if x > EXP_UNDERFLOW else EXP_UNDERFLOW   # also maps nan to a valid index
        xc = xc if xc < EXP_OVERFLOW else EXP_OVERFLOW
        kf = (xc * INV_LN2 + _ROUND) - _ROUND   # nearest integer, ties to even, exactly
        r = (xc - kf * LN2_HI) - kf * LN2_LO
        p = horner(_EXP_COEFFICIENTS, r)
        k = int(kf)
        a = k >> 1                              # 2**k = 2**a * 2**(k - a), both normal
        result = (p * _POW2[a - _POW2_MIN]) * _POW2[k - a - _POW2_MIN]
        if x != x:
            return x
        if x > EXP_OVERFLOW:
            return math.inf
        if x < EXP_UNDERFLOW:
            return 0.0
        return result

    @jit
    def log1p(x):
        """log(1 + x), accurate for small x: log(u) * x / (u - 1), u = 1 + x
        (the error of forming u cancels)."""
        u = 1.0 + x
        if u == 1.0:
            return x
        if u == math.inf:
            return math.inf
        return log(u) * (x / (u - 1.0))

    @jit
    def log1p_unit(x):
        """log1p(x) for x in [0, 1], bit for bit: 1 + x lies in [1, 2], where
        the exponent search is one comparison (branch-free, vectorisable)."""
        u = 1.0 + x
        high = u >= _SQRT2
        m = u * 0.5 if high else u
        k = 1.0 if high else 0.0
        log_u = k * LN2_HI + (k * LN2_LO + log_reduced(m))
        return log_u * (x / (u - 1.0)) if u != 1.0 else x

    @jit
    def apply_one(code, x):
        """f(x) for f = (exp, log, log2, log1p)[code] (see CODES)."""
        if code == 0:
            return exp(x)
        if code == 1:
            return log(x)
        if code == 2:
            return log2(x)
        return log1p(x)

    return SimpleNamespace(exp=exp, log=log, log2=log2, log1p=log1p, log1p_unit=log1p_unit,
                           apply_one=apply_one)


#: host-compiled scalar functions (numba.njit), for host code and tests
host = make_devmath(numba.njit(inline="always"))
#: the same functions run by CPython (IEEE double, never contracted: the same
#: bits as compiled, tests/test_devmath.py checks), for arrays too small to be
#: worth compiling a kernel in a process (a boosting fit's initial scores)
python = make_devmath(lambda function: function)
#: arrays of at most this many values are computed by :data:`python`
PYTHON_MAX_SIZE = 16


#: codes of the functions for :func:`apply` and the kernels' ``apply_one``
CODES = {"exp": 0, "log": 1, "log2": 2, "log1p": 3}


#: the host function of a copy of _apply_part (set in each copy's globals)
_function = None


def _apply_part(x, out, part, n_parts):
    """out[i] = _function(x[i]) over part ``part`` of the rows; x IN, out
    OUT float64 (n,). Compiled per function by :func:`_host_kernel`."""
    first, stop = part_bounds_jit(x.shape[0], part, n_parts)
    for i in range(first, stop):
        out[i] = _function(x[i])


@functools.lru_cache(maxsize=None)
def _host_kernel(name):
    """_apply_part of ``host.<name>``, compiled on first use (a copy named
    ``_apply_<name>``: cached on disk per function)."""
    copy = renamed_copy(_apply_part, f"_apply_{name}", {"_function": getattr(host, name)})
    return kernel_jit()(copy)


#: the device half of :func:`apply` (codes, device array -> device array),
#: lent by the CUDA backend when it loads (:func:`register_device_apply`)
_device_apply = []


def register_device_apply(function):
    """Let :func:`apply` compute device arrays with ``function(code,
    values)`` (the CUDA backend's kernel; any device array :func:`apply`
    sees comes from a backend that has loaded)."""
    _device_apply[:] = [function]


def apply(name, values):
    """``name`` ("exp", "log", "log2", "log1p") of an array, elementwise,
    with the device-identical functions: numpy arrays on the host, device
    arrays (cupy) by the CUDA backend's kernel. Returns float64, same shape
    and array module as ``values``."""
    if not isinstance(values, (np.ndarray, float, int, list, tuple)):
        if not _device_apply:
            raise TypeError(f"devmath.apply got a {type(values).__name__}, a device array, "
                            "but no CUDA backend has loaded to compute it.")
        return _device_apply[0](CODES[name], values)
    values = np.ascontiguousarray(values, dtype=np.float64)
    if values.size <= PYTHON_MAX_SIZE:
        function = getattr(python, name)
        return np.array([function(float(v)) for v in values.reshape(-1)],
                        dtype=np.float64).reshape(values.shape)
    out = np.empty_like(values)
    run_parts(_host_kernel(name), parts_for(4 * values.size), values.reshape(-1),
              out.reshape(-1))
    return out
