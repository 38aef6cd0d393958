"""The notice that gputree's kernels are being compiled: the first fit after
installing or upgrading gputree or numba (or the first one that needs a
kernel not compiled before: a new criterion, 16-bit bins) waits for
numba's compiler, which a user should hear about rather than wonder why.

:func:`announcing` wraps an estimator's fit and predict methods: while the
outermost such call runs, numba's compile events for functions defined in
gputree are timed (numba fires them only when its disk cache does not hold
the function: a call served by the cache compiles nothing and says
nothing). Once the call's compiles have lasted :data:`NOTICE_AFTER_S`
seconds, one warning-level log record (shown without any logging set up)
says that gputree is compiling; when the call returns, a second says how
many kernels it compiled and in how many seconds. Compiles from other
libraries are not watched, and nothing is changed for them.
"""
import functools
import logging
import threading
import time

#: compiles that last longer than this in one call (seconds) are announced
NOTICE_AFTER_S = 1.5
STARTED = ("gputree: compiling its CPU kernels (numba) for this machine, once; later fits "
           "and processes load them from numba's on-disk cache.")
FINISHED = "gputree: compiled {count} CPU kernel(s) in {seconds:.1f} s."

_log = logging.getLogger("gputree")
#: the listener (once per process) and the episode of the outermost call
_state = {"listener": None, "episode": None, "depth": 0}
_lock = threading.Lock()


class _Episode:
    """The compiles of one outermost estimator call: their count and
    seconds, whether STARTED was logged, and the timer that logs it."""

    def __init__(self):
        self.count, self.seconds, self.announced = 0, 0.0, False
        self.timer = None

    def announce(self):
        with _lock:
            if self.announced:
                return
            self.announced = True
        _log.warning(STARTED)

    def finish(self):
        if self.timer is not None:
            self.timer.cancel()
        if self.announced:
            _log.warning(FINISHED.format(count=self.count, seconds=self.seconds))


def _is_gputree(event):
    function = getattr(event.data.get("dispatcher"), "py_func", None)
    return getattr(function, "__module__", "").startswith("gputree")


def _listener_class():
    from numba.core import event

    class CompileNotice(event.Listener):
        """Times the outermost compile of a gputree function (numba holds its
        compiler lock meanwhile: one at a time) within an episode."""

        def __init__(self):
            self.depth = 0
            self.started = 0.0

        def on_start(self, ev):
            episode = _state["episode"]
            if episode is None or not _is_gputree(ev):
                return
            self.depth += 1
            if self.depth == 1:
                self.started = time.perf_counter()
                if not episode.announced:
                    left = max(0.0, NOTICE_AFTER_S - episode.seconds)
                    episode.timer = threading.Timer(left, episode.announce)
                    episode.timer.daemon = True
                    episode.timer.start()

        def on_end(self, ev):
            episode = _state["episode"]
            if episode is None or not _is_gputree(ev) or self.depth == 0:
                return
            self.depth -= 1
            if self.depth == 0:
                episode.count += 1
                episode.seconds += time.perf_counter() - self.started
                if episode.timer is not None:
                    episode.timer.cancel()
                    episode.timer = None
                if episode.seconds >= NOTICE_AFTER_S:
                    episode.announce()

    return CompileNotice


def watch_compilation():
    """Install the listener (once per process). Returns it, or None where
    numba's event API differs (then nothing is announced)."""
    if _state["listener"] is None:
        try:
            from numba.core import event
            listener = _listener_class()()
            event.register("numba:compile", listener)
        except (ImportError, AttributeError, TypeError):
            return None
        _state["listener"] = listener
    return _state["listener"]


def _compile_in_background(method, args, kwargs):
    """For a fit, compile in the background where the cache is cold
    (:mod:`.prewarm`)."""
    if method.__name__ == "fit" and args:
        from . import prewarm
        prewarm.start_for(args[0], args[1:], kwargs)


def announcing(method):
    """Decorator: the compiles during ``method`` (the outermost such call
    of the process; nested ones belong to it) are announced as the module
    says."""
    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        with _lock:
            outermost = _state["depth"] == 0
            _state["depth"] += 1
            if outermost:
                _state["episode"] = _Episode()
        if outermost:
            watch_compilation()
            _compile_in_background(method, args, kwargs)
        try:
            return method(*args, **kwargs)
        finally:
            with _lock:
                _state["depth"] -= 1
                episode = _state["episode"] if outermost else None
                if outermost:
                    _state["episode"] = None
            if episode is not None:
                episode.finish()

    wrapper._announces_compiles = True
    return wrapper


def announce_methods(cls, names):
    """Wrap the methods named ``names`` that ``cls`` defines itself with
    :func:`announcing` (called from ``__init_subclass__``)."""
    for name in names:
        method = cls.__dict__.get(name)
        if callable(method) and not getattr(method, "_announces_compiles", False):
            setattr(cls, name, announcing(method))
