"""Loading a kernel's machine code from numba's on-disk cache without
numba's compiler set-up, so that a process whose kernels are all cached
starts training at once.

numba's ``Cache.load_overload`` first refreshes the target context: it
imports and installs every typing and lowering registry numba has (its
linear algebra, random generators, typed containers, jitclass, ...) and
third-party extensions, about 0.3 s of a later process's first fit on the
2-core VM, before it reads a file of machine code that needs none of
them. What loaded code does need is numba's runtime (the NRT: allocation
and reference counting), which the refresh initialises first; this module
initialises only that. Anything numba then compiles in the process runs
numba's full set-up itself (its compiler refreshes both contexts before
every compilation), so a cache miss behaves as before.

Applied per dispatcher (:func:`lean_cache_loads`, through
``_threads.kernel_jit`` and :func:`cached_kernel`), to gputree's own
kernels only: other numba functions in the user's process are untouched.
Where numba's caching classes differ from what this module knows, the
dispatcher is left as numba made it.
"""
import contextlib
import functools


def lean_cache_loads(dispatcher):
    """``dispatcher`` (a ``numba.njit`` dispatcher) with its disk cache
    loading without numba's compiler set-up (the module's docstring);
    returned unchanged where it has no such cache or numba's runtime
    cannot be initialised on its own."""
    cache = getattr(dispatcher, "_cache", None)
    lean = _lean_class(type(cache))
    if lean is not None:
        cache.__class__ = lean
    return dispatcher


def cached_kernel(**options):
    """``numba.njit(cache=True, **options)`` whose cache loads lean
    (:func:`lean_cache_loads`): the decorator for a gputree kernel that
    Python calls directly."""
    import numba

    def decorate(function):
        return lean_cache_loads(numba.njit(cache=True, **options)(function))
    return decorate


@functools.lru_cache(maxsize=None)
def _lean_class(cache_class):
    """A subclass of numba's ``Cache`` class ``cache_class`` whose
    ``load_overload`` initialises the runtime and then loads as numba does,
    without refreshing the target context; None where ``cache_class`` is
    not such a class."""
    try:
        from numba.core import caching
        from numba.core.runtime import rtsys
    except ImportError:
        return None
    if not (isinstance(cache_class, type) and issubclass(cache_class, caching.Cache)
            and hasattr(cache_class, "load_overload")):
        return None

    def load_overload(self, sig, target_context):
        rtsys.initialize(target_context)
        with _refresh_skipped(target_context):
            return super(lean, self).load_overload(sig, target_context)

    lean = type(f"Lean{cache_class.__name__}", (cache_class,),
                {"load_overload": load_overload})
    return lean


@contextlib.contextmanager
def _refresh_skipped(target_context):
    """``target_context.refresh`` a no-op within the block: numba's own
    ``load_overload`` (and whatever wraps it) runs unchanged but for the
    refresh. numba loads and compiles under its global compiler lock, so
    no other thread refreshes meanwhile."""
    if "refresh" in vars(target_context):     # already skipped (a nested load)
        yield
        return
    target_context.refresh = _no_refresh
    try:
        yield
    finally:
        del target_context.refresh


def _no_refresh():
    """The refresh of a cache load: nothing (the module's docstring)."""
