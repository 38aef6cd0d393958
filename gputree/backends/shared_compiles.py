"""Processes that share one numba cache compile each of gputree's kernels
once between them: whoever compiles a kernel (one signature) holds a lock
file for it, and another process that misses it in the cache waits for the
lock and then loads what the holder saved, rather than compiling it too.

Used by the test suite's workers (one cache, many processes), scikit-learn's
and Dask's worker processes and the background compile of a first fit
(:mod:`gputree.backends.prewarm`). The locks are ``fcntl.flock`` locks on
files beside the kernel's cache index (``<index>.<key hash>.lock``, made
once per kernel and signature): the system releases them when their holder
exits or dies, so a crashed holder never blocks anyone, and a waiter gives
up after :data:`WAIT_S` seconds (a holder that hangs) and compiles itself.

numba writes each data file and index through a temporary file and
``os.replace`` (a reader never sees half a file), but updates an index by
read, modify, write: two processes saving two signatures of one kernel at
once could drop one of them from the index. Saves of gputree's kernels
therefore hold a second lock per index (``<index>.lock``) around that.

Installed by :func:`cooperate` (methods of numba's ``Cache`` wrapped, for
functions of gputree's modules only); nothing changes where ``fcntl`` is
missing (Windows) or numba's caching classes differ. A cache hit takes no
lock and makes no file.
"""
import contextlib
import hashlib
import os
import time

#: the longest a process waits for another's compile of one kernel (seconds)
WAIT_S = 60.0
#: how often a waiter looks at the lock (seconds)
POLL_S = 0.01

#: lock path -> open file of the compile locks this process holds; whether
#: this process only compiles what nobody else is compiling (the background
#: compile: it skips a kernel another process holds, never waits)
_state = {"held": {}, "never_wait": False, "installed": False}


class Busy(Exception):
    """Raised in a process that never waits, when another holds the kernel."""


def _ours(cache):
    module = getattr(getattr(cache, "_py_func", None), "__module__", "") or ""
    return module.startswith("gputree")


def lock_path(cache, key):
    """The compile lock file of the kernel of ``cache`` (numba's Cache) and
    index key ``key``."""
    digest = hashlib.sha256(repr(key).encode()).hexdigest()[:16]
    index = cache._cache_file._index_path
    return f"{os.path.splitext(index)[0]}.{digest}.lock"


def try_lock(path, wait_s):
    """An open file of ``path`` holding its exclusive lock, taken within
    ``wait_s`` seconds (0: only if free now); None if not taken."""
    import fcntl
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
    import fcntl
    try:
        fcntl.flock(handle, fcntl.LOCK_UN)
    finally:
        handle.close()


def release_all():
    """Release every compile lock this process holds (after a failed compile)."""
    held = _state["held"]
    while held:
        release(held.popitem()[1])


@contextlib.contextmanager
def _index_locked(cache):
    handle = try_lock(cache._cache_file._index_path + ".lock", WAIT_S)
    try:
        yield
    finally:
        if handle is not None:
            release(handle)


def _wrap_load(original):
    def load_overload(self, sig, target_context):
        data = original(self, sig, target_context)
        if data is not None or not _ours(self) or not self._enabled:
            return data
        path = lock_path(self, self._index_key(sig, target_context.codegen()))
        if path in _state["held"]:
            return None
        handle = try_lock(path, 0.0 if _state["never_wait"] else WAIT_S)
        if handle is None:
            if _state["never_wait"]:
                raise Busy(path)
            return None                  # a holder that hangs: compile here
        data = original(self, sig, target_context)   # saved while we waited?
        if data is not None:
            release(handle)
            return data
        _state["held"][path] = handle    # compiling here: released on save
        return None
    return load_overload


def _wrap_save(original):
    def save_overload(self, sig, data):
        if not _ours(self):
            return original(self, sig, data)
        try:
            with _index_locked(self):
                original(self, sig, data)
        finally:
            handle = _state["held"].pop(lock_path(self, self._index_key(sig, data.codegen)),
                                        None)
            if handle is not None:
                release(handle)
    return save_overload


def _listener():
    """Releases the locks of a compile that raised (it saves nothing)."""
    from numba.core import event

    class ReleaseOnFailure(event.Listener):
        def on_start(self, ev):
            pass

        def on_end(self, ev):
            # numba's Event.is_failed reads the other way round (0.68)
            if getattr(ev, "_exc_details", None) is not None:
                release_all()

    return ReleaseOnFailure()


def cooperate():
    """Install the locks (once per process). Returns True where they work."""
    if _state["installed"]:
        return True
    try:
        import fcntl                     # POSIX only
        from numba.core import caching, event
        if not hasattr(fcntl, "flock"):
            return False
        cache = caching.Cache
        load, save = cache.load_overload, cache.save_overload
    except (ImportError, AttributeError):
        return False
    cache.load_overload = _wrap_load(load)
    cache.save_overload = _wrap_save(save)
    event.register("numba:compile", _listener())
    _state["installed"] = True
    return True
