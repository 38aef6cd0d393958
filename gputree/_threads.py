"""gputree's CPU threads: the pool that runs a kernel's parts side by side,
and ``n_jobs``, how many of them an estimator's fit and predict calls use.

Kernels are compiled once, as serial code that releases the GIL (numba's
``nogil``); a job large enough to share (:func:`parts_for`) runs as one
part per thread, part 0 on the calling thread and the others on a pool of
Python threads (:func:`run_parts`). Small and large jobs run the same
compiled code: no second, parallel compilation (numba's ``parallel=True``
compiles a loop into a gufunc, two wrappers and the kernel, 2 to 4 times
as long as the loop alone), and nothing compiled when a process's first
large job comes.

The parts only split loops whose iterations write disjoint cells (and
histogram sums are integers), so neither the number of parts nor
``n_jobs`` changes a result. The thread count is numba's
(``numba.set_num_threads``, per calling thread), which ``n_jobs`` sets for
the call: as in joblib, None leaves the current setting; a positive int
asks for that many threads (at most numba's ``NUMBA_NUM_THREADS``); -1 all
of them, -2 all but one, and so on.
"""
import functools
import numbers
import os
import queue
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import numba
import numpy as np
from numba.np.ufunc import parallel as _parallel

from ._compile_cache import gputree_cache

#: estimator methods that run kernels: they honour n_jobs
THREADED_METHODS = ("fit", "predict", "predict_proba", "predict_log_proba",
                    "decision_function", "apply", "decision_path", "staged_predict",
                    "staged_predict_proba", "staged_decision_function",
                    "cost_complexity_pruning_path")


def resolve_n_jobs(n_jobs):
    """Threads for ``n_jobs`` (int), or None to leave numba's setting."""
    if n_jobs is None:
        return None
    if not isinstance(n_jobs, numbers.Integral) or isinstance(n_jobs, bool) or n_jobs == 0:
        raise ValueError(f"n_jobs must be None or a non-zero int (-1: all cores); got {n_jobs!r}.")
    most = numba.config.NUMBA_NUM_THREADS
    return min(int(n_jobs), most) if n_jobs > 0 else max(1, most + 1 + int(n_jobs))


#: work (the kernels' unit: about a nanosecond of one thread's time) of a
#: job worth handing to other threads (waking a pool thread and the
#: kernel's call from it take some 20-50 us)
PARALLEL_WORK = 1 << 16

#: the pool: (process id, executor); a forked child makes its own
_pool = [None, None]


def thread_count():
    """numba's thread count for the calling thread
    (``numba.get_num_threads()``, without its check that the threading
    layer is started, two locks per call, once it is: some 10 us, paid by
    every small kernel call of a best-first tree's steps)."""
    if getattr(_parallel, "_is_initialized", False) and hasattr(_parallel, "_get_num_threads"):
        threads = _parallel._get_num_threads()
        if threads > 0:
            return threads
    return numba.get_num_threads()


def parts_for(work):
    """The parts a job of ``work`` runs in: one per thread (numba's count
    for the calling thread), or one below :data:`PARALLEL_WORK`; work 0 (a
    caller's "one part": kernels that work in place, such as a leaf's row
    split, must run as one) always one."""
    if work <= 0 or work < PARALLEL_WORK:
        return 1
    return thread_count()


class _Job:
    """One part handed to a pool thread: ``function(*args)``, its result or
    exception; ``claim`` (a lock) taken by whoever comes first, the pool
    thread that runs it or :meth:`cancel`; ``done`` (a lock held until the
    part has run)."""

    __slots__ = ("function", "args", "claim", "done", "value", "error")

    def __init__(self, function, args):
        self.function, self.args = function, args
        self.claim, self.done = threading.Lock(), threading.Lock()
        self.done.acquire()
        self.value = self.error = None

    def cancel(self):
        """Whether no pool thread had started the part: it never will."""
        return self.claim.acquire(False)

    def result(self):
        """The part's result, once it has run (its exception raised here)."""
        self.done.acquire()
        if self.error is not None:
            raise self.error
        return self.value

    def run(self):
        """Run the part on this thread, unless it was cancelled."""
        if not self.claim.acquire(False):
            return
        try:
            self.value = self.function(*self.args)
        except BaseException as error:       # raised on the caller, by result()
            self.error = error
        finally:
            self.done.release()


class _Pool:
    """``n_workers`` daemon threads taking parts (:class:`_Job`) from one
    queue: a part handed over and awaited with a queue put and two locks,
    some 6 us, where concurrent.futures' executor took some 18 us (a
    Future's condition, its waiters' list and the executor's idle count,
    in Python): a LETOR depth-6 fit hands some 950 parts."""

    def __init__(self, n_workers):
        self.n_workers = n_workers
        self._jobs = queue.SimpleQueue()
        for i in range(n_workers):
            threading.Thread(target=self._work, name=f"gputree_{i}", daemon=True).start()

    def _work(self):
        while True:
            self._jobs.get().run()

    def submit(self, function, *args):
        """``function(*args)`` on a pool thread: its :class:`_Job`."""
        job = _Job(function, args)
        self._jobs.put(job)
        return job


def _executor():
    pid = os.getpid()
    if _pool[0] != pid:
        _pool[:] = [pid, _Pool(max(1, numba.config.NUMBA_NUM_THREADS - 1))]
    return _pool[1]


def run_parts(kernel, n_parts, *args, claimed=False):
    """``kernel(*args, part, n_parts)`` for part 0 .. n_parts-1, at the same
    time: part 0 on the calling thread, the others on the pool (``kernel``
    releases the GIL). Returns when every part is done (an exception of
    any part is raised then); returns part 0's result. ``claimed``: the
    parts claim the kernel's work as they come (any part may do all of it,
    the split scan's slots): a part no pool thread has started by the time
    part 0 is done is cancelled, not waited for (a pool thread woken late,
    on a machine whose cores are busy, would have found nothing left)."""
    if n_parts <= 1:
        return kernel(*args, 0, 1)
    pool = _executor()
    others = [pool.submit(kernel, *args, part, n_parts) for part in range(1, n_parts)]
    try:
        return kernel(*args, 0, n_parts)
    finally:
        for future in others:
            if not (claimed and future.cancel()):
                future.result()


def part_bounds(n, part, n_parts):
    """(first, stop): part ``part`` of ``n_parts`` contiguous, near-equal
    shares of range(n) (kernels: :data:`part_bounds_jit`)."""
    return n * part // n_parts, n * (part + 1) // n_parts


def _unsigned_part_bounds(n, part, n_parts):
    """part_bounds as uint64: a loop over them indexes arrays without
    numba's wraparound of negative indices (a compare and a select per
    index, which also keep LLVM from vectorizing the loop: the log-loss
    pass ran 5 times slower), as numba types a ``prange`` index."""
    return np.uint64(n * part // n_parts), np.uint64(n * (part + 1) // n_parts)


def kernel_jit(**options):
    """``numba.njit`` for a kernel that :func:`run_parts` runs: cached on
    disk, releasing the GIL, with numpy's error model (a division by zero
    gives inf or nan, no check and exception per division: what numba
    compiles a ``prange`` loop's body with; the log-loss pass ran 14 times
    slower with the checks) and without numba's reference counting where
    numba knows the option (numba counts references to every array view and
    every array an inlined helper receives with atomic operations: a move
    of rows ran 20 times slower with them). Such a kernel allocates
    nothing: its caller passes every array, scratch included. Its disk
    cache is gputree's (_compile_cache: loads without numba's compiler
    set-up, one compile per kernel between processes)."""
    from numba.core.options import DefaultOptions
    if hasattr(DefaultOptions, "_nrt"):
        options.setdefault("_nrt", False)
    options.setdefault("cache", True)
    options.setdefault("error_model", "numpy")
    jit = numba.njit(nogil=True, **options)
    return lambda function: gputree_cache(jit(function))


#: :func:`part_bounds` for kernels, as uint64 (inlined where it is called)
part_bounds_jit = numba.njit(inline="always")(_unsigned_part_bounds)


@contextmanager
def numba_threads(n_jobs):
    """Run the block with numba's thread count for ``n_jobs``, then restore it."""
    threads = resolve_n_jobs(n_jobs)
    if threads is None:
        yield
        return
    before = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        yield
    finally:
        numba.set_num_threads(before)


def _threaded_steps(steps, n_jobs):
    """A generator's steps, each run under ``n_jobs`` threads."""
    while True:
        with numba_threads(n_jobs):
            try:
                item = next(steps)
            except StopIteration:
                return
        yield item


def honours_n_jobs(method):
    """Decorator: run ``method`` (and, for staged predictions, every step of
    the generator it returns) under the estimator's ``n_jobs``."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        n_jobs = getattr(self, "n_jobs", None)
        with numba_threads(n_jobs):
            result = method(self, *args, **kwargs)
        if isinstance(result, Iterator) and n_jobs is not None:
            return _threaded_steps(result, n_jobs)
        return result
    wrapper._honours_n_jobs = True
    return wrapper


def wrap_threaded_methods(cls):
    """Wrap the kernel-running methods ``cls`` defines itself with
    :func:`honours_n_jobs` (called from ``__init_subclass__``)."""
    for name in THREADED_METHODS:
        method = cls.__dict__.get(name)
        if callable(method) and not getattr(method, "_honours_n_jobs", False):
            setattr(cls, name, honours_n_jobs(method))
