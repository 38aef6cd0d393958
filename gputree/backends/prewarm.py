"""Background compile of a first fit: while a fit that finds numba's cache
cold compiles its kernels in the order it meets them, one helper process
(this module run with ``python -m``) compiles the same fit's kernels from
the last one backwards into the same cache, so that the two meet in the
middle and each kernel is compiled once (:mod:`.shared_compiles`: the fit
waits for a kernel the helper is compiling and loads it from the cache; the
helper skips one the fit is compiling). On two cores the compiles of a first
fit take about half as long.

What a fit compiles comes from :data:`MANIFEST_FILE`, recorded from real
fits (:func:`record`; ``python -m gputree.estimators.compile_profiles`` writes it):
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
die with it) or hangs (:data:`.shared_compiles.WAIT_S`).
"""
import atexit
import importlib
import json
import os
import signal
import subprocess
import sys

from . import shared_compiles

ENV = "GPUTREE_BACKGROUND_COMPILE"
_MODULE = "gputree.backends.prewarm"
MANIFEST_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "prewarm_manifest.json")
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


def manifest():
    """{profile name: {"estimator", "params", "kernels": [[address, signature]]}}."""
    try:
        with open(MANIFEST_FILE) as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return {}


# ------------------------------------------------------------- addresses


def address_of(py_func):
    """Where a kernel's Python function is found again in another process:
    the factory call that made it (``kernel_cache.kernel_factory``) or its
    module and name."""
    recipe = getattr(py_func, "_gputree_recipe", None)
    return recipe or f"{py_func.__module__}:{py_func.__qualname__}"


def resolve(address):
    """The numba dispatcher at ``address`` (a threaded kernel's compiled one)."""
    module, expression = address.split(":", 1)
    found = eval(expression, dict(vars(importlib.import_module(module))))
    return getattr(found, "compiled", found)


def parse_signature(text):
    """numba argument types from their repr (``repr(tuple_of_types)``)."""
    from numba.core import types
    return eval(text, dict(vars(types)))


# ------------------------------------------------------------- profiles


def profile_of(estimator, args, kwargs):
    """The manifest's profile that ``estimator.fit(*args, **kwargs)`` matches, or None."""
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
            if name.endswith("Classifier") and np.unique(y).size != 2:
                return None
            return profile if np.isfinite(X).all() else None
    return None


def _cold(kernels):
    """Whether the cache lacks one of the last kernels of a profile (its
    prediction's: the helper compiles those first)."""
    for address, signature in kernels[-2:]:
        dispatcher = resolve(address)
        cache = dispatcher._cache
        key = cache._index_key(parse_signature(signature), dispatcher.targetctx.codegen())
        if key not in cache._cache_file._load_index():
            return True
    return False


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
        if profile is None or not shared_compiles.cooperate():
            return None
        if not _cold(manifest()[profile]["kernels"]):
            return None
    except Exception:                    # never fail a fit for its helper
        return None
    helper = subprocess.Popen([sys.executable, "-m", _MODULE, profile, str(os.getpid())],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, env=_helper_environment(),
                              cwd=os.getcwd())
    _state["helper"] = helper
    atexit.register(_stop, helper)
    return helper


def _helper_environment():
    """This process's environment, with the folder holding this gputree
    first on PYTHONPATH (the helper imports the same copy)."""
    package_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    paths = [package_parent] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return dict(os.environ, PYTHONPATH=os.pathsep.join(paths))


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
    """Compile ``profile``'s kernels, last first, skipping any another process
    holds; stop when ``parent_pid`` is gone. Returns the addresses compiled
    or loaded."""
    shared_compiles._state["never_wait"] = True
    shared_compiles.cooperate()
    done = []
    for address, signature in reversed(manifest()[profile]["kernels"]):
        if parent_pid is not None and os.getppid() != parent_pid:
            break
        try:
            resolve(address).compile(parse_signature(signature))
            done.append(address)
        except shared_compiles.Busy:
            pass
        except _Stop:
            break
        except Exception:            # the fit compiles what the helper could not
            pass
        finally:
            shared_compiles.release_all()
    return done


# ------------------------------------------------------------- recording


def record(fit):
    """Run ``fit()`` and return the kernels it used ([address, signature] in
    first-use order; the cache may be warm or cold)."""
    from numba.core import caching
    used = []
    original = caching.Cache.load_overload

    def load_overload(self, sig, target_context):
        function = getattr(self, "_py_func", None)
        if getattr(function, "__module__", "").startswith("gputree"):
            entry = [address_of(function), repr(tuple(sig))]
            if entry not in used:
                used.append(entry)
        return original(self, sig, target_context)

    caching.Cache.load_overload = load_overload
    try:
        fit()
    finally:
        caching.Cache.load_overload = original
    return used


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
