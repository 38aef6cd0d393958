"""gputree's own exp, log, log2 and log1p (gputree/backends/devmath.py).

Accuracy: within a few units in the last place of numpy's (libm-quality)
results over the whole float64 range, with IEEE special values. Exactness of
the construction: the same Python run as plain Python floats (IEEE double,
never contracted) and compiled by numba give the same bits, which is what
lets the numba.cuda compilation (contraction off, checked in
test_exact_device_code.py) give them too.
"""
import math

import numpy as np
import pytest

from gputree.backends import devmath

PYTHON = devmath.make_devmath(lambda f: f)   # the same source, run by CPython
FUNCTIONS = {"exp": np.exp, "log": np.log, "log2": np.log2, "log1p": np.log1p}


def _samples(name, n=20_000, seed=0):
    rng = np.random.default_rng(seed)
    if name == "exp":
        return np.concatenate([rng.uniform(-708, 709, n), rng.normal(0, 2, n),
                               rng.uniform(-1e-8, 1e-8, 100)])
    if name == "log1p":
        return np.concatenate([rng.uniform(-0.999, 50, n), 10.0 ** rng.uniform(-300, 0, n),
                               -(10.0 ** rng.uniform(-300, -1, 1000))])
    return np.concatenate([np.exp(rng.uniform(-708, 709, n)), rng.uniform(0.5, 2.0, n),
                           10.0 ** rng.uniform(-320, -308, 100)])   # subnormals


def _ulps(got, want):
    finite = np.isfinite(want) & (want != 0)
    return np.abs(got[finite] - want[finite]) / np.spacing(np.abs(want[finite]))


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_within_three_ulps_of_numpy(name):
    x = _samples(name)
    got, want = devmath.apply(name, x), FUNCTIONS[name](x)
    assert _ulps(got, want).max() <= 3
    assert np.array_equal(got == 0, want == 0)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_compiled_and_plain_python_agree_bit_for_bit(name):
    x = _samples(name, n=2000, seed=1)
    compiled = devmath.apply(name, x)
    plain = np.array([getattr(PYTHON, name)(float(v)) for v in x])
    assert np.array_equal(compiled.view(np.int64), plain.view(np.int64))


def test_special_values():
    assert np.array_equal(devmath.apply("exp", np.array([0.0, -np.inf, np.inf, 710.0, -746.0])),
                          [1.0, 0.0, np.inf, np.inf, 0.0])
    assert math.isnan(devmath.apply("exp", np.array([np.nan]))[0])
    logs = devmath.apply("log", np.array([0.0, 1.0, np.inf, -1.0, np.nan]))
    assert logs[0] == -np.inf and logs[1] == 0.0 and logs[2] == np.inf
    assert np.isnan(logs[3:]).all()
    assert devmath.apply("log1p", np.array([-1.0]))[0] == -np.inf
    assert devmath.apply("log1p", np.array([1e-300]))[0] == 1e-300


def test_log2_of_powers_of_two_is_exact():
    k = np.arange(-1074, 1024)
    assert np.array_equal(devmath.apply("log2", np.ldexp(1.0, k)), k.astype(float))


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_small_arrays_by_python_equal_the_compiled_kernel(name):
    special = np.array([0.0, 1.0, -1.0, 0.5, 2.0, 1e-300, -1e-300, 5e-324, 700.0, 710.0,
                        -746.0, np.inf, -np.inf, np.nan, 3.0])
    x = np.concatenate([special, _samples(name, n=1, seed=2)[:1]])
    assert x.size <= devmath.PYTHON_MAX_SIZE
    small = devmath.apply(name, x)
    compiled = devmath.apply(name, np.repeat(x, devmath.PYTHON_MAX_SIZE))
    assert np.array_equal(small.view(np.int64),
                          compiled[::devmath.PYTHON_MAX_SIZE].view(np.int64))
