"""CPU kernels run in parts on gputree's threads (:mod:`gputree._threads`):
each compiled once, as serial code without reference counting that
releases the GIL, for small and large jobs alike.

A kernel takes two last arguments, ``part`` and ``n_parts``, and does
part ``part`` of its loop's iterations (``part_bounds``);
:meth:`ThreadedKernel.run` runs one part for a small job and one per
thread for a large one. The parts write disjoint cells: the result depends
on neither the number of parts nor the thread count.
"""
import functools

from ..._threads import kernel_jit, parts_for, run_parts


class ThreadedKernel:
    """A kernel compiled with ``_threads.kernel_jit(cache=cache)`` on first
    use (its cached compilations named by signature: ``_compile_cache``; a
    kernel is compiled for several dtypes and memory orders)."""

    def __init__(self, function, cache, claimed=False):
        self.function, self.cache, self.claimed = function, cache, claimed

    @functools.cached_property
    def compiled(self):
        return kernel_jit(cache=self.cache)(self.function)

    def run(self, work, *args):
        """The kernel on ``args`` in parts (``_threads.parts_for(work)``,
        ``work`` about the job's nanoseconds on one thread); part 0's
        result."""
        return run_parts(self.compiled, parts_for(work), *args, claimed=self.claimed)


def threaded(function=None, *, cache=True, claimed=False):
    """Decorator: ``function`` (a kernel whose last two arguments are
    ``part, n_parts``) as a :class:`ThreadedKernel`; ``claimed``: its parts
    claim its work as they come (``_threads.run_parts``)."""
    if function is None:
        return functools.partial(threaded, cache=cache, claimed=claimed)
    return ThreadedKernel(function, cache, claimed)
