"""What LLVM makes of the CPU's boosting split scan, checked in its code.

The CPU scan computes each candidate's gain in loops the compiler
vectorizes (scan.py's block scan); its gains must round as the CUDA
kernels' and the reference's do, so LLVM must not contract ``a * b + c``
into a fused multiply-add (numba asks for no contraction without
fast-math; this checks that the code holds none, as
tests/test_exact_device_code.py checks the PTX). A control compilation
with fast-math shows the check sees contraction where the CPU has it.
"""
import re

import numpy as np
import pytest

FMA_ASM = re.compile(r"\bv?f(n)?m(add|sub)\w*\b")
FMA_IR = re.compile(r"@llvm\.(fma|fmuladd)\.|\bcontract\b")


def _fresh_machine_code(function, signature):
    """(assembly, LLVM IR) of ``function`` compiled now for ``signature``
    as the CPU kernels are (no reference counting, numpy's error model),
    without the disk cache (numba shows no code for a cached compile)."""
    from numba import njit
    from numba.core.options import DefaultOptions
    options = {"_nrt": False} if hasattr(DefaultOptions, "_nrt") else {}
    fresh = njit(nogil=True, error_model="numpy", **options)(function)
    fresh.compile(signature)
    return fresh.inspect_asm(signature), fresh.inspect_llvm(signature)


def test_fast_math_control_shows_fused_multiply_add():
    from numba import njit

    def axpy(a, b, c):
        return a * b + c

    contracted = njit(fastmath=True)(axpy)
    contracted.compile("float64(float64, float64, float64)")
    asm = contracted.inspect_asm(contracted.signatures[0])
    if not FMA_ASM.search(asm):
        pytest.skip("this CPU (or LLVM's target) has no fused multiply-add: nothing to see")
    plain = njit(axpy)
    plain.compile("float64(float64, float64, float64)")
    assert not FMA_ASM.search(plain.inspect_asm(plain.signatures[0]))


def test_cpu_boosting_scan_has_no_fused_multiply_add():
    """The newton-only split finder (the block scan of LETOR's and every
    one-output boosting fit), compiled for the signature a scan uses."""
    from gputree.backends import get_backend
    from gputree.backends.cpu import split_scan
    from gputree.criteria import newton_statistics
    from gputree.growth.params import GrowthParams
    rng = np.random.RandomState(0)
    hist = rng.randint(1, 9, (2, 4, 16, 3)).astype(np.int64)
    stats = newton_statistics(rng.normal(size=(8, 1)), np.full((8, 1), 0.25), np.ones(8))
    params = GrowthParams(min_samples_leaf=1).criterion_params()
    get_backend("cpu").scan_splits(hist, np.full(4, 15, np.int32), np.zeros(4, np.uint8),
                                   np.ones((2, 4), np.uint8), 15, stats.layout, np.ones(3),
                                   params)
    kernel = split_scan.finder_of(stats.layout, params, False)
    signature = kernel.compiled.signatures[0]
    asm, ir = _fresh_machine_code(kernel.function, signature)
    assert re.search(r"divpd|divsd", asm), "not the scan's code"
    assert not FMA_ASM.search(asm)
    assert not FMA_IR.search(ir)
