"""Running a serial CPU kernel over ranges of independent tasks, on numba's
thread count of Python threads: the cheap-to-compile alternative to a
``prange`` loop.

numba compiles a ``prange`` loop into four nested code libraries (the loop
body as a gufunc, two wrappers of it, the kernel), and LLVM optimises and
emits the body's code again in each: for the split scan that cost 3 of the
first fit's 14 s of compilation. A kernel written as ``kernel(first, stop,
*args)``, a plain loop over tasks ``first .. stop-1`` compiled with
``nogil=True``, compiles once; :func:`run_tasks` cuts the tasks into one
contiguous range per thread (numba's static schedule) and runs the ranges on
short-lived threads, the first in the calling thread. Small jobs run in the
calling thread only: starting a thread costs about 0.1 ms.

Tasks must write disjoint cells: then the result depends on neither the cut
nor the thread count.
"""
from concurrent.futures import ThreadPoolExecutor

import numba

#: work (the caller's unit: inner-loop iterations) a thread must get before
#: another thread is started for it; about 0.3 ms or more of kernel time
MIN_WORK_PER_THREAD = 1 << 16


def task_ranges(n_tasks, n_threads):
    """[(first, stop)] of ``n_threads`` contiguous ranges of even size
    covering 0 .. n_tasks-1 (the earlier ones one task longer)."""
    size, extra = divmod(n_tasks, n_threads)
    bounds = [0]
    for k in range(n_threads):
        bounds.append(bounds[-1] + size + (k < extra))
    return list(zip(bounds[:-1], bounds[1:]))


def run_tasks(kernel, n_tasks, work_per_task, *args):
    """``kernel(first, stop, *args)`` over tasks 0 .. n_tasks-1, on up to
    numba's thread count (``numba.get_num_threads()``, which n_jobs sets) of
    threads, each given at least MIN_WORK_PER_THREAD of work."""
    kernel(0, 0, *args)   # compiles (or loads) here, not in several threads at once
    affordable = (n_tasks * work_per_task) // MIN_WORK_PER_THREAD
    n_threads = max(1, min(numba.get_num_threads(), n_tasks, affordable))
    ranges = task_ranges(n_tasks, n_threads)
    if n_threads == 1:
        kernel(0, n_tasks, *args)
        return
    with ThreadPoolExecutor(n_threads - 1) as pool:
        others = [pool.submit(kernel, first, stop, *args) for first, stop in ranges[1:]]
        kernel(*ranges[0], *args)
        for future in others:
            future.result()
