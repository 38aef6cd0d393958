"""The one-line notice that gputree's kernels are being compiled: the first
fit after installing or upgrading gputree or numba (or the first one with a
criterion not used before) waits for numba's compiler, which a user should
hear about rather than wonder why.

:func:`watch_compilation` listens to numba's compile events (they fire only
when numba's disk cache does not hold a kernel) for functions defined in
gputree; when one of them, with the functions it compiles in turn, is still
compiling after :data:`NOTICE_AFTER_S` seconds, one warning-level log record
(shown without any logging set up) says so, once per process. Compiles from
other libraries are not watched, and nothing is changed for them.
"""
import logging
import threading

#: a compile that lasts longer than this (seconds) is announced
NOTICE_AFTER_S = 1.5
MESSAGE = ("gputree: compiling its CPU kernels (numba) for this machine, once; this fit "
           "takes longer, later ones reuse the on-disk cache.")

_log = logging.getLogger("gputree")
_state = {"listener": None}


def _is_gputree(event):
    function = getattr(event.data.get("dispatcher"), "py_func", None)
    return getattr(function, "__module__", "").startswith("gputree")


def _listener_class():
    from numba.core import event

    class CompileNotice(event.Listener):
        """Starts a timer when numba starts compiling a gputree function
        (outermost call only) and cancels it when that compile ends; the
        timer logs :data:`MESSAGE` once."""

        def __init__(self):
            self.depth = 0
            self.timer = None
            self.announced = False

        def on_start(self, event):
            if not _is_gputree(event):
                return
            self.depth += 1
            if self.depth == 1 and not self.announced:
                self.timer = threading.Timer(NOTICE_AFTER_S, self.announce)
                self.timer.daemon = True
                self.timer.start()

        def on_end(self, event):
            if not _is_gputree(event):
                return
            self.depth -= 1
            if self.depth == 0 and self.timer is not None:
                self.timer.cancel()
                self.timer = None

        def announce(self):
            if not self.announced:
                self.announced = True
                _log.warning(MESSAGE)

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
