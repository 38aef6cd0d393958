"""Elementary functions (exp, log, log2, log1p) built from + - * / alone, so
that they round identically on every device.

libm (the CPU), numpy's SIMD loops and libdevice (the GPU) each evaluate
``exp`` and ``log`` with their own polynomials and differ in the last bits;
a split gain, a gradient or a probability computed with them would differ
between devices. These versions use only IEEE 754 operations that every
device rounds the same way, in a fixed order: exact scaling by powers of two
(binary search over the exponent, no bit casts), a range reduction with
fdlibm's split ``ln 2``, and fixed-degree polynomials. Accuracy is a few
units in the last place (tests compare with ``math``); identity across
devices holds once fused multiply-add contraction is off (the CUDA backend
compiles with ``-fma=0`` and the tests check the PTX).

:func:`make_devmath` compiles them with a backend's ``jit`` (``numba.njit``
or ``numba.cuda.jit(device=True)``); the host module-level versions
(:data:`host`) serve numpy code paths through :func:`apply`.
"""
import math
from types import SimpleNamespace

import numba
import numpy as np

LN2_HI = 6.93147180369123816490e-01   # ln 2 rounded to 32 bits: k * LN2_HI is exact
LN2_LO = 1.90821492927058770002e-10   # ln 2 - LN2_HI
INV_LN2 = 1.44269504088896338700e+00
EXP_OVERFLOW = 709.782712893383973096    # exp(x) = inf above
EXP_UNDERFLOW = -745.13321910194110842   # exp(x) = 0 below
_SQRT2 = 1.4142135623730951
#: exponents and powers of two used to normalise: 2**512, 2**256, ..., 2**1
_STEPS = (512, 256, 128, 64, 32, 16, 8, 4, 2, 1)
_N_STEPS = len(_STEPS)
_BIG = tuple(math.ldexp(1.0, s) for s in _STEPS)
_SMALL = tuple(math.ldexp(1.0, -s) for s in _STEPS)
_HALF_SMALL_INV = tuple(math.ldexp(1.0, 1 - s) for s in _STEPS)
#: atanh series: log(m) = 2s + 2s z (1/3 + z/5 + ... + z**11/25), z = s*s, |s| < 0.172
_LOG_COEFFICIENTS = tuple(1.0 / d for d in range(25, 1, -2))
#: Taylor series of exp(r) for |r| <= ln(2)/2, degree 13 (highest first)
_EXP_COEFFICIENTS = tuple(1.0 / math.factorial(d) for d in range(13, -1, -1))


def make_devmath(jit):
    """Compile exp, log, log2 and log1p (float64 -> float64) with ``jit``;
    returns a namespace of the four functions."""

    @jit
    def frexp_sqrt2(x):
        """(m, k) with x = m * 2**k and m in [sqrt(1/2), sqrt(2)), for finite
        x > 0; every multiplication is by a power of two, hence exact."""
        k = 0
        if x < _SMALL[0]:  # subnormal range: one more step than the loop covers
            x = x * _BIG[0]
            k -= _STEPS[0]
        for i in range(_N_STEPS):
            if x >= _BIG[i]:
                x = x * _SMALL[i]
                k += _STEPS[i]
        for i in range(_N_STEPS):
            if x < _HALF_SMALL_INV[i]:  # x < 2**(1 - step): doubling step times stays < 2
                x = x * _BIG[i]
                k -= _STEPS[i]
        # now x in [1, 2)
        if x >= _SQRT2:
            x = x * 0.5
            k += 1
        return x, k

    @jit
    def scale_by_power_of_two(x, k):
        """x * 2**k by power-of-two multiplications: exact while the result is
        normal; the same steps, so the same roundings, on every device."""
        while k > _STEPS[0]:
            x = x * _BIG[0]
            k -= _STEPS[0]
        while k < -_STEPS[0]:
            x = x * _SMALL[0]
            k += _STEPS[0]
        for i in range(_N_STEPS):
            if k >= _STEPS[i]:
                x = x * _BIG[i]
                k -= _STEPS[i]
            elif k <= -_STEPS[i]:
                x = x * _SMALL[i]
                k += _STEPS[i]
        return x

    @jit
    def horner(coefficients, z):
        """coefficients[0] z**(n-1) + ... + coefficients[n-1], by Horner's rule."""
        p = coefficients[0]
        for i in range(1, len(coefficients)):
            p = p * z + coefficients[i]
        return p

    @jit
    def log_reduced(m):
        """log(m) for m in [sqrt(1/2), sqrt(2)): 2 atanh(s), s = (m-1)/(m+1)."""
        s = (m - 1.0) / (m + 1.0)
        z = s * s
        p = horner(_LOG_COEFFICIENTS, z)
        return 2.0 * s + 2.0 * s * (z * p)

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
        if x != x:
            return math.nan
        if x > EXP_OVERFLOW:
            return math.inf
        if x < EXP_UNDERFLOW:
            return 0.0
        t = x * INV_LN2
        k = int(t + 0.5) if t >= 0.0 else -int(0.5 - t)
        r = (x - k * LN2_HI) - k * LN2_LO
        p = horner(_EXP_COEFFICIENTS, r)
        return scale_by_power_of_two(p, k)

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
    def apply_one(code, x):
        """f(x) for f = (exp, log, log2, log1p)[code] (see CODES)."""
        if code == 0:
            return exp(x)
        if code == 1:
            return log(x)
        if code == 2:
            return log2(x)
        return log1p(x)

    return SimpleNamespace(exp=exp, log=log, log2=log2, log1p=log1p, apply_one=apply_one)


#: host-compiled scalar functions (numba.njit), for host code and tests
host = make_devmath(numba.njit(cache=True))


#: codes of the functions for :func:`apply` and the kernels' ``apply_one``
CODES = {"exp": 0, "log": 1, "log2": 2, "log1p": 3}


def _make_host_apply():
    apply_one = host.apply_one

    @numba.njit(parallel=True, cache=True)
    def apply_host(code, x, out):
        """out[i] = f(x[i]), f = CODES[code]; x IN, out OUT float64 (n,)."""
        for i in numba.prange(x.shape[0]):
            out[i] = apply_one(code, x[i])

    return apply_host


_apply_host = _make_host_apply()


def apply(name, values):
    """``name`` ("exp", "log", "log2", "log1p") of an array, elementwise,
    with the device-identical functions: numpy arrays on the host, device
    arrays (cupy) by the CUDA backend's kernel. Returns float64, same shape
    and array module as ``values``."""
    if not isinstance(values, (np.ndarray, float, int, list, tuple)):
        from .cuda import apply_devmath
        return apply_devmath(CODES[name], values)
    values = np.ascontiguousarray(values, dtype=np.float64)
    out = np.empty_like(values)
    _apply_host(CODES[name], values.reshape(-1), out.reshape(-1))
    return out
