"""Background compile of a first fit: while a fit that finds numba's cache
cold compiles its kernels in the order it meets them, one helper process
(this module's :func:`main` in a new Python process) compiles the same
fit's kernels into the same cache: first the one whose early start
shortens the whole most (the split scan, 40% of a profile's compile
seconds, which the fit would otherwise wait for; :func:`helper_order` from
the recorded seconds), then from the last one backwards, so that the two
meet in the middle and each kernel is compiled once (the compile locks of
:mod:`gputree._compile_cache`: the fit waits for a kernel the helper is
compiling and loads it from the cache; the helper stops where it meets the
fit). On two cores the compiles of a first fit take a little over half as
long.

What a fit compiles comes from the manifest (:mod:`.compile_manifest`),
recorded from real fits (:func:`record`; ``python -m
gputree.estimators.compile_profiles`` writes it):
per profile (an estimator class with its recorded parameters, on a dense
float array without missing values and without sample weights, large
enough to run in parts) the kernels it uses, each as an address (a module's
kernel, or the factory call that makes it) and numba signature, in the
order the fit first calls them. A fit that matches no profile starts no
helper; ``tests/test_prewarm.py`` checks that each profile's fit uses
exactly its kernels, so the helper never compiles what the fit does not use.

Off with ``GPUTREE_BACKGROUND_COMPILE=0``. Nothing starts when the cache
holds the profile's kernels, nor on one core or a machine whose load
average says its cores are busy (measured on 2 busy cores, the helper made
a first fit slower). The helper exits when it is done, when the
process that started it exits (it is stopped then) or dies (it looks
between kernels), and a fit never waits on a helper that died (the locks
die with it) or hangs (:data:`gputree._compile_cache.WAIT_S`). A
malformed manifest starts no helper and says so in a warning.
"""
import atexit
import os
import signal
import subprocess
import sys
import warnings

from .. import _compile_cache
from .compile_manifest import (ManifestError, about, address_of, manifest, parse_signature,
                               resolve)

ENV = "GPUTREE_BACKGROUND_COMPILE"
#: the helper's command: this gputree (the folder holding it, first on
#: sys.path: ``python -m`` would put the working directory first, and a
#: checkout of gputree there would be another copy, with another cache)
_HELPER = ("import sys; sys.path.insert(0, sys.argv[1]); "
           "from gputree.backends.prewarm import main; main(sys.argv[2:])")
#: parameters that change no compiled kernel (checked by the recording's fits)
FREE_PARAMETERS = ("n_estimators", "max_depth", "random_state", "learning_rate", "n_jobs",
                   "verbose")
#: a profile's data: at least this many values (its fits run in parts)
LARGE_VALUES = 1 << 22
#: no helper when the 1-minute load average is at least this many times
#: the CPU count: its compiles would take a core the fit itself needs
BUSY_LOAD = 1.0
#: the helper started by this process (one at a time)
_state = {"helper": None}


def enabled():
    return os.environ.get(ENV, "1").strip().lower() not in ("0", "false", "no", "off")


# ------------------------------------------------------------- profiles


def profile_of(estimator, args, kwargs):
    """The manifest's profile that ``estimator.fit(*args, **kwargs)`` matches
    by its estimator, parameters and data's shape and dtype, or None (the
    checks that read every value: :func:`_data_matches`)."""
    if len(args) != 2 or set(kwargs) - {"sample_weight"} or kwargs.get("sample_weight") is not None:
        return None
    import numpy as np
    X, y = args
    if not (isinstance(X, np.ndarray) and isinstance(y, np.ndarray)) or X.ndim != 2:
        return None
    if X.dtype not in (np.float32, np.float64) or X.size < LARGE_VALUES:
        return None
    name = type(estimator).__name__
    params = {key: value for key, value in estimator.get_params(deep=False).items()
              if key not in FREE_PARAMETERS}
    for profile, entry in manifest().items():
        if entry["estimator"] == name and entry["params"] == params:
            return profile
    return None


def _data_matches(estimator, X, y):
    """The checks of :func:`profile_of` that read every value (two classes
    for a classifier, no missing value): made only for a cold cache."""
    import numpy as np
    if type(estimator).__name__.endswith("Classifier") and np.unique(y).size != 2:
        return False
    return bool(np.isfinite(X).all())


def _cached(dispatcher, signature):
    """Whether numba's cache index holds ``dispatcher``'s kernel for ``signature``."""
    cache = dispatcher._cache
    key = cache._index_key(signature, dispatcher.targetctx.codegen())
    return key in cache._cache_file._load_index()


def _cold(kernels):
    """Whether the cache lacks one of the last kernels of a profile (its
    prediction's: the helper compiles those first)."""
    return not all(_cached(resolve(address), parse_signature(signature))
                   for address, signature in kernels[-2:])


def _spare_core():
    """Whether a second core is there and not busy (1-minute load average)."""
    cpus = os.cpu_count() or 1
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        load = 0.0
    return cpus >= 2 and load < BUSY_LOAD * cpus


def start_for(estimator, args, kwargs):
    """Start the helper for this fit when it matches a profile and the cache
    is cold. Returns the helper's Popen or None."""
    if not enabled() or _state["helper"] is not None or not _spare_core():
        return None
    try:
        profile = profile_of(estimator, args, kwargs)
        if profile is None or not _compile_cache.shares_compiles():
            return None
        with about(profile):
            cold = _cold(manifest()[profile]["kernels"])
        if not cold or not _data_matches(estimator, *args):
            return None
    except ManifestError as error:       # a broken install: say so, fit without a helper
        warnings.warn(f"gputree: no background compile: {error}", RuntimeWarning, stacklevel=4)
        return None
    except Exception:                    # never fail a fit for its helper
        return None
    package_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    helper = subprocess.Popen([sys.executable, "-c", _HELPER, package_parent, profile,
                               str(os.getpid())],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    _state["helper"] = helper
    atexit.register(_stop, helper)
    return helper


def _stop(helper):
    if helper.poll() is None:
        helper.terminate()
        try:
            helper.wait(5)
        except subprocess.TimeoutExpired:
            helper.kill()
            helper.wait()


# ------------------------------------------------------------- the helper


def compile_profile(profile, parent_pid=None):
    """Compile ``profile``'s kernels in :func:`helper_order`; stop when
    ``parent_pid`` is gone, or when the helper, going backwards, meets a
    kernel the cache holds or another process is compiling (the fit, which
    compiles first to last, has done the ones before it: resolving them
    would import their modules, seconds of a core the fit's trees use).
    Returns the addresses compiled."""
    _compile_cache.never_wait()
    entry = manifest()[profile]
    kernels = entry["kernels"]
    done = []
    order = helper_order(entry.get("seconds") or [1.0] * len(kernels))
    for position, i in enumerate(order):
        if parent_pid is not None and os.getppid() != parent_pid:
            break
        address, signature = kernels[i]
        try:
            dispatcher, sig = resolve(address), parse_signature(signature)
            if not _cached(dispatcher, sig):
                dispatcher.compile(sig)
                done.append(address)
                continue
        except _compile_cache.Busy:
            pass
        except _Stop:
            break
        except Exception:            # the fit compiles what the helper could not
            continue
        finally:
            _compile_cache.release_all()
        if position > 0:             # met the fit going backwards
            break
    return done


#: seconds from the fit's start until the helper compiles (its start and
#: imports) while the fit compiles its binning, which no profile lists
HELPER_LAG_S = 0.5


def simulate(seconds, order, lag=HELPER_LAG_S):
    """Seconds until a fit that compiles kernels 0, 1, ... (``seconds[i]``
    each; waiting for one the helper is compiling, skipping one it has
    done) and a helper that starts ``lag`` later and compiles ``order``
    (skipping what the fit holds or has done) have every kernel compiled."""
    owner, finish = {}, {}
    fit_t, helper_t, queue = 0.0, lag, list(order)
    for i, cost in enumerate(seconds):
        # the helper takes its next kernels while it is ahead of the fit
        while queue and helper_t <= fit_t:
            j = queue.pop(0)
            if j not in owner:
                owner[j], helper_t = "helper", helper_t + seconds[j]
                finish[j] = helper_t
        if owner.get(i) == "helper":
            fit_t = max(fit_t, finish[i])
            continue
        owner[i], fit_t = "fit", fit_t + cost
    return fit_t


def helper_order(seconds):
    """The helper's order (indexes into a profile's kernels, which the fit
    compiles first to last) with the shortest :func:`simulate` time of
    these: last to first, or one kernel first and then the others last to
    first (a long kernel in the middle, which the fit would otherwise wait
    for)."""
    backwards = list(range(len(seconds)))[::-1]
    candidates = [backwards] + [[j] + [i for i in backwards if i != j] for j in backwards]
    return min(candidates, key=lambda order: simulate(seconds, order))


# ------------------------------------------------------------- recording


def record(fit):
    """Run ``fit()`` and return (the kernels it used: [address, signature]
    in first-use order; the compile seconds of each: the compiling thread's
    CPU seconds, nested compiles included, 0.0 for one loaded from a warm
    cache)."""
    import time
    from numba.core import event
    used, seconds, started = [], {}, []

    def on_load(function, sig):
        entry = [address_of(function), repr(tuple(sig))]
        if entry not in used:
            used.append(entry)

    class Timer(event.Listener):
        def on_start(self, ev):
            started.append(time.thread_time())

        def on_end(self, ev):
            spent = time.thread_time() - started.pop()
            function = getattr(ev.data.get("dispatcher"), "py_func", None)
            if not started and function is not None:
                key = address_of(function)
                seconds[key] = seconds.get(key, 0.0) + spent

    timer = Timer()
    event.register("numba:compile", timer)
    try:
        with _compile_cache.watching_loads(on_load):
            fit()
    finally:
        event.unregister("numba:compile", timer)
    return used, [round(seconds.get(address, 0.0), 2) for address, _ in used]


class _Stop(Exception):
    """The helper was asked to stop (SIGTERM): an Exception, so that numba
    removes the temporary file of a save it interrupts."""


def _on_term(*_):
    raise _Stop()


def main(argv):
    signal.signal(signal.SIGTERM, _on_term)
    compile_profile(argv[0], int(argv[1]) if len(argv) > 1 else None)


if __name__ == "__main__":
    main(sys.argv[1:])
