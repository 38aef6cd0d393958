"""numba's on-disk kernel cache for the backends' kernels, made safe across
source files, so that a second process starts training without recompiling.

numba invalidates a cached function only when its own source file changes,
but the split-scan and summary kernels also compile code from ``scan.py``,
``formulas.py``, ``devmath.py`` and ``base.py`` (and the CUDA kernels from
whatever sets their compile options). :func:`cover_backend_sources` puts cache
locators in front of numba's own, for the functions of one kernel file only,
whose source stamp covers every Python file of this package: editing any of
them recompiles the kernels. The same works for ``numba.njit`` (numba's
``numba.core.caching``) and ``numba.cuda.jit`` (numba-cuda's
``numba.cuda.core.caching``), whose locator classes have different names.
"""
import functools
import glob
import os
import types

_HERE = os.path.dirname(os.path.abspath(__file__))


def backend_sources():
    """Paths of every Python file of the backends package, sorted."""
    return sorted(glob.glob(os.path.join(_HERE, "**", "*.py"), recursive=True))


def cover_backend_sources(impl_class, locator_bases, kernel_file):
    """Install locators (subclasses of ``locator_bases``, in front of
    ``impl_class._locator_classes``) that serve the functions defined in
    ``kernel_file`` with a stamp over :func:`backend_sources`, in the order
    of ``locator_bases``. Returns True."""
    kernel_file = os.path.abspath(kernel_file)

    def stamp(self):
        return tuple((os.stat(path).st_mtime, os.stat(path).st_size)
                     for path in backend_sources())

    def matches(cls, py_func, py_file):
        if os.path.abspath(py_file) != kernel_file:
            return None
        return super(cls, cls).from_function(py_func, py_file)

    for position, base in enumerate(locator_bases):
        locator = type(f"Gputree{base.__name__.lstrip('_')}", (base,),
                       {"get_source_stamp": stamp, "from_function": classmethod(matches)})
        impl_class._locator_classes.insert(position, locator)
    return True


def cache_numba_cpu_kernels(kernel_file):
    """Cover ``numba.njit(cache=True)`` kernels of ``kernel_file``; False
    (compile in every process) where numba's caching classes differ (numba
    before 0.62 names its locators with a leading underscore, as numba-cuda
    0.30 does)."""
    try:
        from numba.core import caching
        # numba's own order: NUMBA_CACHE_DIR when set, beside the file, per user
        bases = tuple(_public_or_private(caching, name) for name in (
            "UserProvidedCacheLocator", "InTreeCacheLocator", "UserWideCacheLocator"))
        return cover_backend_sources(caching.CacheImpl, bases, kernel_file)
    except (ImportError, AttributeError):
        return False


def _public_or_private(module, name):
    """``module.name``, or ``module._name`` where the module has only that."""
    found = getattr(module, name, None)
    return found if found is not None else getattr(module, "_" + name)


def cache_numba_cuda_kernels(kernel_file):
    """Cover ``numba.cuda.jit(cache=...)`` kernels of ``kernel_file``; False
    where numba-cuda's caching classes differ or numba's CUDA simulator is
    on (it compiles nothing)."""
    from numba import config
    if config.ENABLE_CUDASIM:
        return False
    try:
        from numba.cuda.core import caching
        bases = tuple(_public_or_private(caching, name)
                      for name in ("InTreeCacheLocator", "UserWideCacheLocator"))
        return cover_backend_sources(caching.CacheImpl, bases, kernel_file)
    except (ImportError, AttributeError):
        return False


def renamed_copy(function, name, names=None):
    """A copy of ``function`` named ``name``, reading ``names`` (dict) as
    globals: numba's disk cache tells functions apart by their qualified
    names (and source lines), never by the values their globals hold, so
    each specialisation of one function (a kernel per criterion, per
    elementary function) is a copy under its own name, which a later
    process finds in the cache."""
    scope = dict(function.__globals__, **names) if names else function.__globals__
    copy = types.FunctionType(function.__code__, scope, name)
    copy.__qualname__ = name
    return copy


def kernel_factory(factory):
    """Decorator: ``factory`` (hashable arguments) cached per arguments, its
    kernels (a dispatcher or threaded kernel) marked with the call that made
    them, ``"module:factory(args)"``, so that another process can make the
    same kernel (the background compile, ``prewarm``; ``compile_manifest``
    calls only factories marked ``makes_kernels``)."""
    @functools.lru_cache(maxsize=None)
    @functools.wraps(factory)
    def made(*args):
        product = factory(*args)
        function = getattr(product, "function", None) or product.py_func
        function._gputree_recipe = f"{factory.__module__}:{factory.__name__}{args!r}"
        return product
    made.makes_kernels = True
    return made
