"""What the compilers produce for gputree's device code, checked without a GPU.

Split gains, leaf values, gradients and probabilities must round the same on
the GPU as on the CPU. Two things would break that and are invisible to the
simulator: NVVM/nvcc contracting ``a * b + c`` into one ``fma`` (one rounding
instead of two), and libdevice's exp/log (other polynomials than the host's;
they are inlined into the PTX and use ``fma`` themselves). So the numba.cuda
kernels are compiled to PTX for sm_90 here, with the toolkit's libNVVM and no
driver, and must hold no ``fma`` instruction; two control compilations show
the check sees contraction and libdevice when they are there. The CUDA C
kernels are compiled to PTX with the options cupy gets, likewise.

Needs numba-cuda, NVRTC (the nvidia-cuda-nvrtc wheel) and libNVVM (the CUDA
toolkit). Outside CI a missing piece skips with the reason; in CI (``CI``
set) it fails, so the check cannot silently stop running.
"""
import os
import re
import subprocess
import types

import pytest

FMA = re.compile(r"\bfma\.rn\.f(32|64)\b|\bfma\.")


def _unavailable(reason):
    if os.environ.get("CI"):
        pytest.fail(f"the PTX check must run in CI: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def ptx_compiler():
    """compile(pyfunc, argtypes, device) -> PTX text for compute capability 9.0."""
    from numba import config
    if config.ENABLE_CUDASIM:
        pytest.skip("numba's CUDA simulator is on in this process (it compiles nothing)")
    try:
        from gputree.backends.cuda.toolchain import prepare
        prepare()
        from numba import cuda
        import numba.cuda.dispatcher as dispatcher
    except Exception as exc:  # noqa: BLE001
        _unavailable(f"numba's CUDA target is not usable here: {exc}")
    fake = types.SimpleNamespace(compute_capability=(9, 0))
    original = dispatcher.get_current_device
    dispatcher.get_current_device = lambda: fake  # device functions compile for sm_90

    def compile_ptx(pyfunc, argtypes, device=False):
        return cuda.compile_ptx(pyfunc, argtypes, device=device, cc=(9, 0))[0]

    try:
        compile_ptx(lambda x: x + 1.0, "float64(float64)", device=True)
    except Exception as exc:  # noqa: BLE001
        dispatcher.get_current_device = original
        _unavailable(f"libNVVM/NVRTC could not compile PTX here: {exc}")
    yield compile_ptx
    dispatcher.get_current_device = original


def _arrays():
    from numba import types as nt
    return types.SimpleNamespace(
        i64=lambda nd: nt.Array(nt.int64, nd, "C"), f64=lambda nd: nt.Array(nt.float64, nd, "C"),
        i32=lambda nd: nt.Array(nt.int32, nd, "C"), u8=lambda nd: nt.Array(nt.uint8, nd, "C"),
        u32=lambda nd: nt.Array(nt.uint32, nd, "C"), int64=nt.int64, float64=nt.float64)


def _signatures():
    a = _arrays()
    task = (a.i64(4), a.i32(1), a.u8(1), a.u8(2), a.i32(2), a.int64, a.i64(1), a.f64(1),
            a.f64(1))
    outputs = (a.f64(2), a.u8(2), a.u32(3), a.i64(3), a.f64(2), a.u32(3))
    scan = task + (a.int64, a.i64(1), a.i64(2), a.f64(2), a.i32(2), a.i64(3), a.f64(3)) + outputs
    summaries = (a.i64(2), a.i64(1), a.f64(1), a.f64(1), a.f64(3), a.f64(1))
    devmath = (a.int64, a.f64(1), a.f64(1))
    soft = (a.i64(4), a.i32(2), a.int64, a.i32(1), a.int64, a.i64(1), a.u8(2))
    random = (a.i64(4), a.f64(2), a.i32(1), a.int64, a.u8(1), a.i64(1), a.u8(2), a.i32(2))
    ranking = (a.i64(1), a.f64(1), a.i32(1), a.f64(1), a.f64(1), a.f64(1), a.f64(1), a.float64,
               a.int64, a.int64, a.int64, a.i64(1), a.i64(1), a.f64(2), a.f64(1), a.f64(1),
               a.f64(1))
    return {"_find_splits": scan, "_find_splits_by_block": task + outputs,
            "_node_summaries": summaries, "_devmath_kernel": devmath,
            "_soft_feature_limit": soft, "_random_split_bins": random, "_query_terms": ranking}


@pytest.mark.parametrize("kernel", sorted(_signatures()))
def test_numba_cuda_kernels_have_no_fma(ptx_compiler, kernel):
    from gputree.backends.cuda import numba_kernels
    ptx = ptx_compiler(getattr(numba_kernels, kernel).py_func, _signatures()[kernel])
    assert ".entry" in ptx and len(ptx) > 1000
    assert not FMA.search(ptx), f"{kernel}: fused multiply-add in the PTX"
    assert "__nv_" not in ptx, f"{kernel}: a libdevice call is left in the PTX"


def _function_in_module(source, name, module):
    """Define ``name`` from ``source`` as if it lived in ``module``."""
    namespace = {"__name__": module, "math": __import__("math")}
    exec(compile(source, f"<{module}>", "exec"), namespace)  # noqa: S102 - test-made code
    return namespace[name]


def test_check_sees_contraction_outside_gputree(ptx_compiler):
    """Control: a * b + c compiled for another module keeps NVVM's default
    contraction (the hook touches gputree's code only, and the regex sees it)."""
    f = _function_in_module("def madd(a, b, c):\n    return a * b + c\n", "madd", "probe_user")
    assert FMA.search(ptx_compiler(f, "float64(float64, float64, float64)", device=True))


def test_check_sees_libdevice_inside_gputree(ptx_compiler):
    """Control: math.exp in gputree's own code brings libdevice's fma-based
    exp into the PTX even with contraction off, so the check would catch a
    transcendental that slipped into device math."""
    f = _function_in_module("def e(x):\n    return math.exp(x)\n", "e", "gputree.probe")
    assert FMA.search(ptx_compiler(f, "float64(float64)", device=True))


def test_same_expression_in_gputree_has_no_fma(ptx_compiler):
    f = _function_in_module("def madd(a, b, c):\n    return a * b + c\n", "madd", "gputree.probe")
    ptx = ptx_compiler(f, "float64(float64, float64, float64)", device=True)
    assert "mul.rn.f64" in ptx or "mul.f64" in ptx
    assert not FMA.search(ptx)


def test_cuda_c_kernels_compile_without_contraction(tmp_path):
    """The CUDA C module, compiled with the options cupy gets (NVRTC_OPTIONS),
    holds no fma; and those options switch contraction off."""
    from test_nvcc_compile import find_nvcc

    from gputree.backends.cuda.c_kernels import NVRTC_OPTIONS, kernel_source
    assert "--fmad=false" in NVRTC_OPTIONS
    nvcc = find_nvcc()
    if nvcc is None:
        _unavailable("nvcc not found: the CUDA C kernels' PTX was not checked")
    source = tmp_path / "kernels.cu"
    source.write_text(kernel_source())
    out = tmp_path / "kernels.ptx"
    done = subprocess.run([nvcc, "-ptx", "-arch=sm_90", *NVRTC_OPTIONS, str(source), "-o", str(out)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert ".entry" in out.read_text() and not FMA.search(out.read_text())
