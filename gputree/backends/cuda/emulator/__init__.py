"""CPU emulation of CUDA C kernels, behind the same surface as ``cupy.RawModule``.

The simulated device (``device="cuda-sim"``) runs gputree's CUDA backend with
numpy arrays in place of cupy arrays and :class:`EmulatedModule` in place of
``cupy.RawModule``: the same ``kernels/*.cu`` text is compiled by g++ (C++20)
against ``emu.hpp`` and launched through ctypes. It is a debugging aid that
checks what kernels compute, not races or speed, and needs g++ at run time.
"""
from .loader import EmulatedKernel, EmulatedModule, EmulatorUnavailableError, expand_includes

__all__ = ["EmulatedKernel", "EmulatedModule", "EmulatorUnavailableError", "expand_includes"]
