"""How gputree's ``numba.cuda`` code is compiled: the CUDA toolchain check,
a compatibility shim for numpy releases that numba-cuda predates, and exact
float arithmetic (no fused multiply-add) for every gputree kernel.

* **Exact arithmetic.** NVVM contracts ``a * b + c`` into one ``fma`` by
  default (``-fma=1``), which rounds once where the CPU rounds twice, so split
  gains and leaf values would differ in the last bits between devices.
  numba-cuda has no public switch; :func:`prepare` wraps its NVVM entry point
  (``cudadrv.nvvm.compile_ir``) once, for the whole process, so that every
  compilation whose IR holds gputree's functions (numba's mangled names carry
  the module path ``gputree``) gets ``-fma=0``. Other libraries' kernels are
  left alone. The tests compile the kernels to PTX and assert that no
  ``fma`` instruction and no libdevice (``__nv_``) call is left.
* **numpy 2.5 and numba-cuda 0.30.** numba-cuda 0.30.4 registers an overload
  of ``np.row_stack`` while it initialises its numpy support; numpy 2.5
  removed that alias, so the CUDA target fails to start. :func:`prepare`
  lends numpy the alias (``np.vstack``) only while that registration is
  imported, then removes it again, so user code sees numpy as it is.
* **A clear error** naming the versions and the fix when the CUDA toolchain
  cannot be used (:class:`CudaToolchainError`, from :func:`prepare`), so ``device="cuda"`` never fails
  with an internal AttributeError and ``device="auto"`` falls back to the CPU.
"""
import functools

import numpy as np

#: substring of numba's mangled names of every function defined in gputree
_GPUTREE_MARK = "gputree"


class CudaToolchainError(RuntimeError):
    """The numba CUDA target cannot be used with the installed versions."""


def _versions():
    """'numpy X, numba Y, numba-cuda Z' for error messages."""
    import numba
    try:
        from importlib.metadata import version
        numba_cuda = version("numba-cuda")
    except Exception:  # noqa: BLE001 - not installed, or no metadata
        numba_cuda = "not installed"
    return f"numpy {np.__version__}, numba {numba.__version__}, numba-cuda {numba_cuda}"


def _import_numpy_support():
    """Import numba.cuda's numpy registrations (where ``np.row_stack`` is
    overloaded), lending numpy the alias while they import if it lacks it."""
    lent = not hasattr(np, "row_stack")
    if lent:
        np.row_stack = np.vstack
    try:
        from numba.cuda.np import arrayobj  # noqa: F401 - registers overloads
    except ImportError:  # numba's built-in CUDA target keeps them elsewhere
        pass
    finally:
        if lent:
            del np.row_stack


def _mentions_gputree(llvmir):
    """True when the IR (a str or a list of str) defines gputree functions."""
    modules = [llvmir] if isinstance(llvmir, (str, bytes)) else llvmir
    return any(_GPUTREE_MARK in (m.decode() if isinstance(m, bytes) else m) for m in modules)


def _install_exact_arithmetic():
    """Wrap NVVM's compile entry so gputree's IR compiles with -fma=0."""
    from numba.cuda.cudadrv import nvvm
    original = nvvm.compile_ir
    if getattr(original, "_gputree_exact", False):
        return

    def compile_ir(llvmir, **options):
        if _mentions_gputree(llvmir):
            options.pop("fastmath", None)
            options["fma"] = False
        return original(llvmir, **options)

    compile_ir._gputree_exact = True
    nvvm.compile_ir = compile_ir


@functools.lru_cache(maxsize=None)
def prepare():
    """Make numba.cuda usable and exact for gputree (once per process).
    Raises CudaToolchainError with the versions and the fix if it cannot."""
    from numba import config
    if config.ENABLE_CUDASIM:
        return  # the simulator compiles nothing; host arithmetic throughout
    try:
        _import_numpy_support()
        _install_exact_arithmetic()
    except Exception as exc:  # noqa: BLE001 - report any failure the same way
        raise CudaToolchainError(
            f"gputree could not set up numba's CUDA target ({type(exc).__name__}: {exc}) with "
            f"{_versions()}. Install the tested set with pip install 'gputree[cuda]' "
            "(CUDA 12) or 'gputree[cuda13]' (CUDA 13), or use device='cpu'.") from exc


