"""numba's on-disk cache as gputree's kernels use it: one Cache class,
set per dispatcher (:func:`gputree_cache`, through ``_threads.kernel_jit``
and :func:`cached_kernel`), that numba's own ``Cache`` classes never see:
other numba functions in a user's process are untouched.

**Lean loads.** numba's ``Cache.load_overload`` first refreshes the target
context: it imports and installs every typing and lowering registry numba
has (its linear algebra, random generators, typed containers, jitclass,
...) and third-party extensions, about 0.3 s of a later process's first
fit on the 2-core VM, before it reads a file of machine code that needs
none of them. What loaded code does need is numba's runtime (the NRT:
allocation and reference counting), which the refresh initialises first;
this class initialises only that. Anything numba then compiles runs
numba's full set-up itself (its compiler refreshes both contexts before
every compilation), so a cache miss behaves as before.

**One compile per kernel between processes** that share a cache (the test
suite's workers, scikit-learn's and Dask's worker processes, the
background compile of a first fit, ``backends.prewarm``): whoever compiles
a kernel (one signature) holds a lock file for it, and another process that
misses it in the cache waits for the lock and then loads what the holder
saved, rather than compiling it too. The locks are ``fcntl.flock`` locks on
files beside the kernel's cache index (``<index>.<key hash>.lock``, made
once per kernel and signature): the system releases them when their holder
exits or dies, so a crashed holder never blocks anyone, and a waiter gives
up after :data:`WAIT_S` seconds (a holder that hangs) and compiles itself.
numba writes each data file and index through a temporary file and
``os.replace`` (a reader never sees half a file), but updates an index by
read, modify, write: two processes saving two signatures of one kernel at
once could drop one of them from the index, so a save holds a second lock
per index (``<index>.lock``) around that. A cache hit takes no lock and
makes no file. Without ``fcntl`` (Windows) there are no locks; loads are
lean all the same.

**Data files named by key.** numba names a kernel's compilations
``<base>.1.nbc``, ``.2`` ... by the first number its index does not list
yet: two processes compiling two signatures of one kernel at once (the
test suite's workers, one with 8- and one with 16-bit bins) could both
take number 1, and the index then send one signature to the other's
machine code ("can't unbox array" on the call). This class's saves name a
new compilation's file by a hash of the source stamp and the index key
instead (the same name in every process: the cache's file count stays the
same over runs).

**Recording.** :func:`watching_loads` hands every kernel a call asks the
cache for to a callback (``backends.prewarm.record``: the kernels of a
fit, for the manifest of the background compile).

Where numba's caching classes differ from what this module knows, a
dispatcher is left as numba made it.
"""
import contextlib
import functools
import hashlib
import os
import time

try:
    import fcntl
except ImportError:                      # Windows: no locks
    fcntl = None

#: the longest a process waits for another's compile of one kernel (seconds)
WAIT_S = 60.0
#: how often a waiter looks at the lock (seconds)
POLL_S = 0.01

#: "held": lock path -> open file of the compile locks this process holds;
#: "never_wait": whether this process only compiles what nobody else is
#: compiling (the background compile: it skips a kernel another process
#: holds, never waits); "on_load": the callback of :func:`watching_loads`;
#: "listener": whether the listener that releases a failed compile's locks
#: is registered
_state = {"held": {}, "never_wait": False, "on_load": None, "listener": False}


class Busy(Exception):
    """Raised in a process that never waits, when another holds the kernel."""


def shares_compiles():
    """Whether processes here compile each kernel once between them (the
    system has ``fcntl`` locks)."""
    return fcntl is not None and hasattr(fcntl, "flock")


# ------------------------------------------------------------- the class


def gputree_cache(dispatcher):
    """``dispatcher`` (a ``numba.njit`` dispatcher) with its disk cache of
    this module's class (the module's docstring); returned unchanged where
    it has no disk cache or numba's caching classes differ."""
    cache = getattr(dispatcher, "_cache", None)
    ours = _cache_class(type(cache))
    if ours is not None:
        cache.__class__ = ours
    return dispatcher


def cached_kernel(**options):
    """``numba.njit(cache=True, **options)`` with :func:`gputree_cache`:
    the decorator for a gputree kernel that Python calls directly."""
    import numba

    def decorate(function):
        return gputree_cache(numba.njit(cache=True, **options)(function))
    return decorate


@functools.lru_cache(maxsize=None)
def _cache_class(cache_class):
    """The subclass of numba's ``Cache`` class ``cache_class`` with this
    module's loads and saves; None where ``cache_class`` is not such a
    class (or numba's runtime cannot be initialised on its own)."""
    try:
        from numba.core import caching
        from numba.core.runtime import rtsys
    except ImportError:
        return None
    needed = ("load_overload", "save_overload", "_index_key")
    if not (isinstance(cache_class, type) and issubclass(cache_class, caching.Cache)
            and all(hasattr(cache_class, name) for name in needed)):
        return None
    if issubclass(cache_class, _GputreeCache):
        return cache_class
    index_file = getattr(caching, "IndexDataCacheFile", None)     # numba's naming by number
    keyed_file = _keyed_file_class(index_file) if isinstance(index_file, type) else None

    class GputreeCache(_GputreeCache, cache_class):
        def _load_lean(self, sig, target_context):
            rtsys.initialize(target_context)
            with _refresh_skipped(target_context):
                return cache_class.load_overload(self, sig, target_context)

        def _save(self, sig, data):
            if keyed_file is not None and type(self._cache_file) is index_file:
                self._cache_file.__class__ = keyed_file
            return cache_class.save_overload(self, sig, data)

    GputreeCache.__name__ = GputreeCache.__qualname__ = f"Gputree{cache_class.__name__}"
    return GputreeCache


@functools.lru_cache(maxsize=None)
def _keyed_file_class(base):
    """The subclass of numba's ``IndexDataCacheFile`` ``base`` whose
    ``save`` names a new entry's data file from its key (the module's
    docstring), never from the numbers already taken."""

    def save(self, key, data):
        overloads = self._load_index()
        name = overloads.get(key)
        if name is None:
            digest = hashlib.sha256(repr((self._source_stamp, key)).encode()).hexdigest()
            name = overloads[key] = self._data_name(int(digest[:12], 16))
            self._save_index(overloads)
        self._save_data(name, data)

    return type("KeyedIndexDataCacheFile", (base,), {"save": save})


class _GputreeCache:
    """The loads and saves of :func:`_cache_class`'s classes (a mixin in
    front of numba's class, which supplies ``_load_lean`` and ``_save``)."""

    def load_overload(self, sig, target_context):
        on_load = _state["on_load"]
        if on_load is not None:
            on_load(self._py_func, sig)
        data = self._load_lean(sig, target_context)
        if data is not None or not self._enabled or not shares_compiles():
            return data
        path = lock_path(self, self._index_key(sig, target_context.codegen()))
        if path in _state["held"]:
            return None
        handle = try_lock(path, 0.0 if _state["never_wait"] else WAIT_S)
        if handle is None:
            if _state["never_wait"]:
                raise Busy(path)
            return None                  # a holder that hangs: compile here
        data = self._load_lean(sig, target_context)     # saved while we waited?
        if data is not None:
            release(handle)
            return data
        _hold(path, handle)              # compiling here: released on save
        return None

    def save_overload(self, sig, data):
        if not shares_compiles():
            return self._save(sig, data)
        try:
            with _index_locked(self):
                self._save(sig, data)
        finally:
            handle = _state["held"].pop(lock_path(self, self._index_key(sig, data.codegen)),
                                        None)
            if handle is not None:
                release(handle)


@contextlib.contextmanager
def _refresh_skipped(target_context):
    """``target_context.refresh`` a no-op within the block: numba's own
    ``load_overload`` runs unchanged but for the refresh. numba loads and
    compiles under its global compiler lock, so no other thread refreshes
    meanwhile."""
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


# ------------------------------------------------------------- recording


@contextlib.contextmanager
def watching_loads(callback):
    """Within the block, ``callback(py_func, sig)`` for every kernel (its
    Python function and numba argument types) that a call asks the cache
    for, before the cache looks: a kernel compiled or loaded in the block."""
    before = _state["on_load"]
    _state["on_load"] = callback
    try:
        yield
    finally:
        _state["on_load"] = before


# ------------------------------------------------------------- the locks


def never_wait():
    """From now on this process compiles only kernels nobody else is
    compiling: a load that finds one held raises :class:`Busy` (the
    background compile)."""
    _state["never_wait"] = True


def lock_path(cache, key):
    """The compile lock file of the kernel of ``cache`` (numba's Cache) and
    index key ``key``."""
    digest = hashlib.sha256(repr(key).encode()).hexdigest()[:16]
    index = cache._cache_file._index_path
    return f"{os.path.splitext(index)[0]}.{digest}.lock"


def try_lock(path, wait_s):
    """An open file of ``path`` holding its exclusive lock, taken within
    ``wait_s`` seconds (0: only if free now); None if not taken."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    handle = open(path, "a+b")
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return handle
        except BlockingIOError:
            if time.monotonic() >= deadline:
                handle.close()
                return None
            time.sleep(POLL_S)


def release(handle):
    """Release and close a lock from :func:`try_lock`."""
    try:
        fcntl.flock(handle, fcntl.LOCK_UN)
    finally:
        handle.close()


def release_all():
    """Release every compile lock this process holds (after a failed compile)."""
    held = _state["held"]
    while held:
        release(held.popitem()[1])


def _hold(path, handle):
    """Keep the compile lock ``handle`` of ``path`` until the kernel's save
    (or :func:`release_all` after a compile that raised)."""
    if not _state["listener"]:
        from numba.core import event
        event.register("numba:compile", _release_on_failure_class()())
        _state["listener"] = True
    _state["held"][path] = handle


@contextlib.contextmanager
def _index_locked(cache):
    handle = try_lock(cache._cache_file._index_path + ".lock", WAIT_S)
    try:
        yield
    finally:
        if handle is not None:
            release(handle)


def _release_on_failure_class():
    from numba.core import event

    class ReleaseOnFailure(event.Listener):
        """Releases the locks of a compile that raised (it saves nothing)."""

        def on_start(self, ev):
            pass

        def on_end(self, ev):
            # numba's Event.is_failed reads the other way round (0.68)
            if getattr(ev, "_exc_details", None) is not None:
                release_all()

    return ReleaseOnFailure
