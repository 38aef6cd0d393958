"""Running a CPU kernel over independent tasks: serially for small jobs, on
numba's threads for large ones, the parallel version compiled only when a
job first needs it.

numba compiles a ``prange`` loop into four nested code libraries (the loop
body as a gufunc, two wrappers of it, the kernel), and LLVM optimises and
emits the body's code again in each: for the split scan that cost 3 of the
first fit's 14 s of compilation, where a small fit gains nothing from
threads. So a kernel is written serially, ``kernel(first, stop, *args)``
over tasks ``first .. stop-1``; :func:`run_tasks` calls it directly, or,
for a job of at least :data:`PARALLEL_WORK`, calls its parallel driver: a
``prange`` over one contiguous range of tasks per thread (numba's static
schedule), compiled (and cached) per kernel on first use.

Tasks must write disjoint cells: then the result depends on neither the cut
nor the thread count.
"""
import functools
import types

import numba
from numba import njit, prange

from .kernel_cache import cache_numba_cpu_kernels

_CACHE = cache_numba_cpu_kernels(__file__)

#: jobs of less work than this (the callers' unit: about a nanosecond of
#: one thread's time, so about 2 ms) run serially: they gain less from
#: threads than a parallel kernel costs to compile (first fit) or wake
PARALLEL_WORK = 1 << 21

#: the kernel a driver copy calls: set in each copy's globals by _driver
_kernel = None


def _ranges_in_parallel(n_tasks, n_ranges, *args):
    """_kernel over tasks 0 .. n_tasks-1, cut into n_ranges contiguous
    ranges run in parallel."""
    for r in prange(n_ranges):
        _kernel(r * n_tasks // n_ranges, (r + 1) * n_tasks // n_ranges, *args)


@functools.lru_cache(maxsize=None)
def _driver(kernel):
    """The parallel driver of ``kernel`` (a numba dispatcher), named after it
    (numba's disk cache tells functions apart by their qualified names)."""
    name = f"_ranges_in_parallel_{kernel.py_func.__name__}"
    copy = types.FunctionType(_ranges_in_parallel.__code__,
                              dict(_ranges_in_parallel.__globals__, _kernel=kernel), name)
    copy.__qualname__ = name
    return njit(parallel=True, cache=_CACHE)(copy)


def run_tasks(kernel, n_tasks, work_per_task, *args):
    """``kernel(first, stop, *args)`` over tasks 0 .. n_tasks-1: in one call
    when the job's work (``n_tasks * work_per_task``) is under
    PARALLEL_WORK or numba has one thread (n_jobs=1), else one range per
    thread of ``numba.get_num_threads()``."""
    n_threads = min(numba.get_num_threads(), n_tasks)
    if n_threads <= 1 or n_tasks * work_per_task < PARALLEL_WORK:
        kernel(0, n_tasks, *args)
    else:
        _driver(kernel)(n_tasks, n_threads, *args)
