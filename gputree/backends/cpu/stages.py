"""CPU kernels compiled in stages: serially for small jobs, in parallel only
once a process has shown it runs large ones.

numba compiles a ``prange`` loop into four nested code libraries (the loop
body as a gufunc, two wrappers of it, the kernel) that LLVM optimises and
emits one after the other: a parallel kernel takes 2 to 4 times as long to
compile as the same loop run serially (the split scan: 5 s against 3.3),
and a small fit gains nothing from threads. :func:`staged` compiles a
kernel two ways, each on first use: a serial copy (``prange`` is ``range``
there) and the parallel kernel; :meth:`StagedKernel.run` picks, in stages:

* until a job of at least :data:`LARGE_WORK` comes (a small fit never
  brings one), every job runs on the serial copy: nothing parallel is
  compiled;
* from then on, in that process, jobs of at least :data:`PARALLEL_WORK` run
  on the parallel kernel (also with one thread: numba compiles a parallel
  loop's body knowing that its arrays do not alias, faster code than the
  serial copy's), smaller ones on the serial copy.

The kernels' parallel loops write disjoint cells: the result depends on
neither the stage nor the thread count.
"""
import functools
import types

from numba import njit

from ..kernel_cache import keyed_data_files

#: work (the callers' unit: about a nanosecond of one thread's time) of a
#: job that makes parallel kernels worth compiling (about 2 ms) ...
LARGE_WORK = 1 << 21
#: ... and then of a job worth running on them (about 16 us)
PARALLEL_WORK = 1 << 14
#: whether this process has run a job of LARGE_WORK
_stage = {"large": False}


def renamed_copy(function, name, names=None):
    """A copy of ``function`` named ``name`` (numba's disk cache tells
    functions apart by their qualified names), reading ``names`` (dict) as
    globals."""
    scope = dict(function.__globals__, **names) if names else function.__globals__
    copy = types.FunctionType(function.__code__, scope, name)
    copy.__qualname__ = name
    return copy


def use_parallel_kernels():
    """Enter the second stage now, as a large job would: for benchmarks,
    which compile the kernels a large fit uses before timing it."""
    _stage["large"] = True


class StagedKernel:
    """A kernel's serial copy and parallel version, each compiled with
    ``njit(cache=cache, **options)`` on first use, their cached compilations
    named by signature (kernel_cache.keyed_data_files: a kernel is compiled
    for several dtypes and memory orders)."""

    def __init__(self, function, cache, options):
        self.function, self.cache, self.options = function, cache, options

    @functools.cached_property
    def serial(self):
        copy = renamed_copy(self.function, f"{self.function.__name__}_serial")
        return keyed_data_files(njit(cache=self.cache, **self.options)(copy))

    @functools.cached_property
    def parallel(self):
        return keyed_data_files(njit(parallel=True, cache=self.cache,
                                     **self.options)(self.function))

    def run(self, work, *args):
        """The kernel's result on ``args``, ``work`` the job's work (see the
        stages above)."""
        _stage["large"] = _stage["large"] or work >= LARGE_WORK
        kernel = self.parallel if _stage["large"] and work >= PARALLEL_WORK else self.serial
        return kernel(*args)


def staged(function=None, *, cache=True, **options):
    """Decorator: ``function`` (a kernel with ``prange`` loops) as a
    :class:`StagedKernel`."""
    if function is None:
        return functools.partial(staged, cache=cache, **options)
    return StagedKernel(function, cache, options)
