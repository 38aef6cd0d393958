"""Compile CUDA C with g++ against ``emu.hpp`` and launch kernels through ctypes.

Owns :class:`EmulatedModule` (the ``cupy.RawModule`` look-alike),
:class:`EmulatedKernel` (the ``cupy.RawKernel`` call convention) and the
source handling they need: textual ``#include "..."`` expansion, the rewrite of
``extern __shared__`` arrays to the block's dynamic shared buffer, generated
``extern "C"`` launchers, and an on-disk cache of compiled shared libraries
keyed by a hash of everything that went into them.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

HEADER = Path(__file__).with_name("emu.hpp")
CXX_FLAGS = ("-std=c++20", "-O1", "-shared", "-fPIC", "-pthread", "-w")
_MAX_PARAMS = 64

_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"[^\n]*$', re.M)
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_KERNEL = re.compile(r'extern\s+"C"\s+__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?void\s+(\w+)\s*\(')
_EXTERN_SHARED = re.compile(r"extern\s+__shared__\s+(?:__align__\s*\(\s*\d+\s*\)\s*)?([\w\s]+?)\s*(\w+)\s*\[\s*\]\s*;")


class EmulatorUnavailableError(RuntimeError):
    """Raised when no C++20 compiler is available to build emulated kernels."""


def expand_includes(code: str, include_dirs=(), _seen=None) -> str:
    """Return ``code`` with every ``#include "name"`` found in ``include_dirs``
    replaced by that file's (recursively expanded) text, each file once.

    Quoted includes that are not found are left for the compiler to report.
    """
    seen = set() if _seen is None else _seen

    def replace(match):
        for directory in include_dirs:
            path = (Path(directory) / match.group(1)).resolve()
            if path.is_file():
                if path in seen:
                    return ""
                seen.add(path)
                return expand_includes(path.read_text(), include_dirs, seen)
        return match.group(0)

    return _INCLUDE.sub(replace, code)


def kernel_names(code: str) -> list[str]:
    """Names of the ``extern "C" __global__`` kernels defined in ``code``."""
    return _KERNEL.findall(_COMMENT.sub(" ", code))


def _rewrite_extern_shared(code: str) -> str:
    """``extern __shared__ T name[];`` -> a pointer to the block's dynamic buffer."""
    return _EXTERN_SHARED.sub(r"\1* \2 = static_cast<\1*>(::emu::dynamic_shared());", code)


def _launchers(names) -> str:
    """One ``extern "C"`` launcher and one signature query per kernel."""
    return "".join(
        f'\nextern "C" int emu_launch_{n}(const unsigned int* g, const unsigned int* b, '
        f"unsigned long long s, int w, void** a) {{ return ::emu::launch_kernel(&{n}, g, b, s, w, a); }}"
        f'\nextern "C" int emu_signature_{n}(int* out, int cap) {{ return ::emu::signature(&{n}, out, cap); }}\n'
        for n in names
    )


def find_compiler() -> str:
    """Path of the C++20 compiler ($CXX, else g++); raises EmulatorUnavailableError."""
    name = os.environ.get("CXX", "g++")
    path = shutil.which(name)
    if path is None:
        raise EmulatorUnavailableError(
            f"The simulated CUDA device (device='cuda-sim') compiles gputree's CUDA C kernels "
            f"with a C++20 compiler at run time, and {name!r} was not found on PATH. Install "
            f"g++ >= 10 (e.g. `apt-get install g++`) or point $CXX at one, or use device='cpu'."
        )
    return path


def cache_dir() -> Path:
    """Folder of compiled libraries: $GPUTREE_EMULATOR_CACHE, else a per-user temp folder."""
    default = Path(tempfile.gettempdir()) / f"gputree-emulator-{os.getuid()}"
    path = Path(os.environ.get("GPUTREE_EMULATOR_CACHE", default))
    path.mkdir(parents=True, exist_ok=True)
    return path


def _compile(source: str) -> Path:
    """Compile ``source`` (emu.hpp force-included) to a cached shared library."""
    compiler = find_compiler()
    header = HEADER.read_text()
    key = hashlib.sha256("\0".join((compiler, *CXX_FLAGS, header, source)).encode()).hexdigest()[:24]
    target = cache_dir() / f"kernels-{key}.so"
    if target.exists():
        return target
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        src = Path(tmp) / "kernels.cpp"
        src.write_text(source)
        out = Path(tmp) / target.name
        cmd = [compiler, *CXX_FLAGS, "-include", str(HEADER), str(src), "-o", str(out)]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"emulator compile failed ({' '.join(cmd)}):\n{done.stderr}")
        os.replace(out, target)  # atomic: concurrent test workers may race here
    return target


def _dim3(value) -> tuple[int, int, int]:
    """A grid or block given as int or tuple of up to 3 ints, padded with 1."""
    dims = (value,) if np.isscalar(value) else tuple(value)
    if not 1 <= len(dims) <= 3:
        raise ValueError(f"grid/block must have 1 to 3 dimensions, got {value!r}")
    return tuple(int(d) for d in dims) + (1,) * (3 - len(dims))


class EmulatedKernel:
    """One kernel of an :class:`EmulatedModule`; call as ``kernel(grid, block, args, shared_mem=0)``.

    ``args`` follows cupy's RawKernel convention: numpy arrays are passed as
    pointers to their data, numpy scalars (np.int32, np.float64, ...) by
    value. Unlike cupy, every argument is checked against the kernel's C
    parameter types (count, pointer or value, dtype kind and width), so a
    mismatch that would silently corrupt a real launch raises TypeError.
    """

    def __init__(self, library, name: str, n_workers: int):
        self.name = name
        self._launch = getattr(library, f"emu_launch_{name}")
        self._launch.restype = ctypes.c_int
        self._launch.argtypes = [ctypes.POINTER(ctypes.c_uint)] * 2 + [
            ctypes.c_ulonglong, ctypes.c_int, ctypes.POINTER(ctypes.c_void_p)]
        self._n_workers = n_workers
        self.signature = self._read_signature(getattr(library, f"emu_signature_{name}"))

    @staticmethod
    def _read_signature(query) -> list[tuple[bool, str, int]]:
        """(is_pointer, dtype kind or 'V', byte width) per C parameter."""
        out = (ctypes.c_int * (3 * _MAX_PARAMS))()
        n = query(out, _MAX_PARAMS)
        if n > _MAX_PARAMS:
            raise TypeError(f"kernels with more than {_MAX_PARAMS} parameters are not supported")
        return [(bool(out[3 * i]), chr(out[3 * i + 1]), out[3 * i + 2]) for i in range(n)]

    def _pack(self, index: int, arg, holders: list) -> int:
        """Address of a buffer holding parameter ``index``'s value."""
        is_pointer, kind, size = self.signature[index]
        where = f"{self.name} argument {index}"
        if isinstance(arg, np.ndarray) and is_pointer:
            if kind != "V" and (arg.dtype.kind, arg.dtype.itemsize) != (kind, size):
                raise TypeError(f"{where}: array of {arg.dtype} for a pointer to {kind}{size}")
            holder = ctypes.c_void_p(arg.ctypes.data)
        elif isinstance(arg, np.generic) and not is_pointer:
            if (arg.dtype.kind, arg.dtype.itemsize) != (kind, size):
                raise TypeError(f"{where}: {arg.dtype} scalar for a {kind}{size} parameter")
            holder = ctypes.create_string_buffer(arg.tobytes(), size)
        else:
            wanted = "a numpy array" if is_pointer else f"a numpy scalar ({kind}{size}; not a Python number)"
            raise TypeError(f"{where}: expected {wanted}, got {type(arg).__name__}")
        holders.append(holder)
        return ctypes.addressof(holder)

    def __call__(self, grid, block, args, shared_mem: int = 0):
        args = tuple(args)
        if len(args) != len(self.signature):
            raise TypeError(f"{self.name} takes {len(self.signature)} arguments, got {len(args)}")
        holders: list = []
        argv = (ctypes.c_void_p * max(len(args), 1))(*(self._pack(i, a, holders) for i, a in enumerate(args)))
        g, b = ((ctypes.c_uint * 3)(*_dim3(d)) for d in (grid, block))
        if self._launch(g, b, int(shared_mem), self._n_workers, argv) != 0:
            raise ValueError(f"{self.name}: invalid launch configuration grid={grid} block={block}")


class EmulatedModule:
    """CPU stand-in for ``cupy.RawModule``: compiles CUDA C with g++ and runs it.

    Parameters
    ----------
    code : str | os.PathLike | sequence of os.PathLike
        CUDA C text (``str``), or one or more ``.cu`` files (concatenated).
    options : sequence of str
        nvcc/NVRTC-style options; only ``-I<dir>`` is used, for include expansion
        (quoted includes in the files' own folders are found too).
    n_workers : int, optional
        OS threads that run blocks concurrently (default: up to 4 CPUs).
    """

    def __init__(self, code, options=(), n_workers: int | None = None):
        include_dirs = [opt[2:] for opt in options if opt.startswith("-I")]
        if isinstance(code, str):
            text = code
        else:
            paths = [Path(code)] if isinstance(code, os.PathLike) else [Path(p) for p in code]
            include_dirs += [str(p.parent) for p in paths]
            text = "\n".join(p.read_text() for p in paths)
        source = _rewrite_extern_shared(expand_includes(text, include_dirs))
        names = kernel_names(source)
        self._library = ctypes.CDLL(str(_compile(source + _launchers(names))))
        self._n_workers = n_workers or min(os.cpu_count() or 1, 4)
        self._kernels = dict.fromkeys(names)

    def get_function(self, name: str) -> EmulatedKernel:
        """The kernel ``name`` (an ``extern "C" __global__`` function of the code)."""
        if name not in self._kernels:
            raise AttributeError(f"no extern \"C\" __global__ kernel named {name!r}; have {sorted(self._kernels)}")
        if self._kernels[name] is None:
            self._kernels[name] = EmulatedKernel(self._library, name, self._n_workers)
        return self._kernels[name]
