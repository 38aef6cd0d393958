"""The CPU backend's flavours of ``numba.njit``: without reference counting
for kernels and helpers that only index arrays, inlined in numba's IR or by
LLVM, and the unsigned index cast the hot loops use."""
import functools

import numpy as np
from numba import njit

from ..._threads import part_bounds_jit
from ..splitset import make_splitset
from .link_only import link_only_pipeline

_LINK_ONLY = link_only_pipeline()


def _without_reference_counting():
    """``njit`` for functions that only index and slice arrays they are given.

    numba reference-counts every array view and every array passed to an
    inlined helper with atomic increments and decrements; in the split scan
    that cost 20 times the arithmetic (123 -> 9 ns per newton candidate in a
    micro-benchmark), and more when two threads share the criterion arrays'
    counters. numba's ``_nrt=False`` compiles without the runtime (no
    allocation possible, views are plain structs). Plain ``njit`` where a
    numba version does not know the option (read from numba's option table:
    nothing is compiled to find out).
    """
    from numba.core.options import DefaultOptions
    if not hasattr(DefaultOptions, "_nrt"):
        return njit
    return functools.partial(njit, _nrt=False)


#: the helpers below are only called by kernels: numba builds them no
#: wrappers for calls from Python or C (nor emits those wrappers' code)
plain_jit = functools.partial(_without_reference_counting(), no_cpython_wrapper=True,
                               no_cfunc_wrapper=True)


#: forceinline helpers are compiled to IR only (.link_only): each caller
#: inlines and optimises them, their own machine code would never run
_force_inline = functools.partial(plain_jit, forceinline=True,
                                  **({"pipeline_class": _LINK_ONLY} if _LINK_ONLY else {}))

#: a kernel's helper inlined by LLVM, not in numba's IR: numba compiles it
#: once per signature, where its IR inliner copies and retypes the helper's
#: body at every call site (the histogram pass's helpers: 7.7 of the 8.3 s
#: of its compile). Its constant arguments (flags) fold after LLVM inlines
#: it, so each call site keeps only its own branch's code.
llvm_inline = _force_inline


def inline_helper(function):
    """The split scan's per-candidate helpers are inlined: calls cost more
    than the arithmetic they do, and inlined, the compiler sees the
    criterion constant (one scan per criterion) and drops the other
    criteria's code. Small helpers (under _IR_INLINE_BYTES of bytecode) are
    inlined in numba's IR, so they are not compiled on their own; larger
    ones by LLVM (``forceinline``): numba compiles each once, where IR
    inlining copied every formula into every call site and took minutes
    to compile. devmath's exp/log family is called, not inlined: those
    functions are large and only a few criteria call them (not gini nor
    newton)."""
    if function.__module__.endswith(".devmath"):
        return plain_jit(function)
    if len(function.__code__.co_code) < _IR_INLINE_BYTES:
        return njit(inline="always")(function)
    return _force_inline(function)


ir_inline = njit(inline="always")


#: helpers smaller than this (bytes of CPython bytecode) are inlined in numba's IR
_IR_INLINE_BYTES = 160


# Indices are cast to unsigned in the hot loops: numba wraps negative signed
# indices around (a compare and a select per index), which cost 10% of a
# histogram pass and a third of a prediction.
U64 = np.uint64


#: (first, stop) of part ``part`` of ``n_parts`` of range(n), uint64, in kernels
part_bounds = part_bounds_jit


#: the split rule of partitioning and prediction (their LeftSets)
goes_left_words = make_splitset(ir_inline).goes_left_words
