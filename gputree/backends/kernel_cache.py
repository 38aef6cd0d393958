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
import glob
import os

_HERE = os.path.dirname(os.path.abspath(__file__))


def backend_sources():
    """Paths of every Python file of the backends package, sorted."""
    return sorted(glob.glob(os.path.join(_HERE, "**", "*.py"), recursive=True))


def cover_backend_sources(impl_class, locator_bases, kernel_file):
    """Install locators (subclasses of ``locator_bases``, in front of
    ``impl_class._locator_classes``) that serve the functions defined in
    ``kernel_file`` with a stamp over :func:`backend_sources`. Returns True."""
    kernel_file = os.path.abspath(kernel_file)

    def stamp(self):
        return tuple((os.stat(path).st_mtime, os.stat(path).st_size)
                     for path in backend_sources())

    def matches(cls, py_func, py_file):
        if os.path.abspath(py_file) != kernel_file:
            return None
        return super(cls, cls).from_function(py_func, py_file)

    for base in locator_bases:
        locator = type(f"Gputree{base.__name__.lstrip('_')}", (base,),
                       {"get_source_stamp": stamp, "from_function": classmethod(matches)})
        impl_class._locator_classes.insert(0, locator)
    return True


def cache_numba_cpu_kernels(kernel_file):
    """Cover ``numba.njit(cache=True)`` kernels of ``kernel_file``; False
    (compile in every process) where numba's caching classes differ."""
    try:
        from numba.core import caching
        bases = (caching.InTreeCacheLocator, caching.UserWideCacheLocator)
        return cover_backend_sources(caching.CacheImpl, bases, kernel_file)
    except (ImportError, AttributeError):
        return False


def cache_numba_cuda_kernels(kernel_file):
    """Cover ``numba.cuda.jit(cache=...)`` kernels of ``kernel_file``; False
    where numba-cuda's caching classes differ or numba's CUDA simulator is
    on (it compiles nothing)."""
    from numba import config
    if config.ENABLE_CUDASIM:
        return False
    try:
        from numba.cuda.core import caching
        bases = (caching._InTreeCacheLocator, caching._UserWideCacheLocator)
        return cover_backend_sources(caching.CacheImpl, bases, kernel_file)
    except (ImportError, AttributeError):
        return False
