"""gputree's one cache class (gputree/_compile_cache.py): set per dispatcher,
so numba's own ``Cache`` classes are the same objects after importing
gputree and fitting, and a user's own cached numba function keeps numba's
class; every cached gputree kernel of a fit has it; two processes on one
cache compile a kernel once (one waits for the other's lock and loads what
it saved); without ``fcntl`` (Windows) nothing is locked and the cache still
serves a later process; the recording hook sees the kernels a call asks for.

Each process case runs fresh Python processes on a probe module of one tiny
kernel in a temporary folder (its own ``NUMBA_CACHE_DIR``)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gputree import _compile_cache

ROOT = Path(__file__).resolve().parents[1]

_PROBE = '''
from gputree._compile_cache import cached_kernel

@cached_kernel()
def triple(x):
    return 3 * x + 1
'''

#: a process that calls the probe kernel and says what numba compiled
_CALL = '''
import json, sys
from numba.core import event
from gputree import _compile_cache
if "--no-fcntl" in sys.argv:
    _compile_cache.fcntl = None          # as on Windows
compiled = []
class Count(event.Listener):
    def on_start(self, ev):
        compiled.append(ev.data["dispatcher"].py_func.__qualname__)
    def on_end(self, ev):
        pass
event.register("numba:compile", Count())
import probe
if "--hold" in sys.argv:                 # hold the kernel's compile lock, then compile
    cache = probe.triple._cache
    from numba.core import types
    key = cache._index_key((types.int64,), probe.triple.targetctx.codegen())
    path = _compile_cache.lock_path(cache, key)
    _compile_cache._hold(path, _compile_cache.try_lock(path, 0.0))
    print("held", flush=True)
    sys.stdin.readline()
print(json.dumps(dict(value=int(probe.triple(4)), compiled=compiled)), flush=True)
'''


def _probe_env(tmp_path):
    (tmp_path / "code").mkdir(exist_ok=True)
    (tmp_path / "code" / "probe.py").write_text(_PROBE)
    return dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"),
                PYTHONPATH=os.pathsep.join([str(tmp_path / "code"), str(ROOT)]))


def _call(tmp_path, *flags, **popen):
    return subprocess.Popen([sys.executable, "-c", _CALL, *flags], env=_probe_env(tmp_path),
                            text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **popen)


def _result(process, timeout=300):
    out, err = process.communicate(timeout=timeout)
    assert process.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def _lock_files(tmp_path):
    return [name for _, _, names in os.walk(tmp_path / "cache") for name in names
            if name.endswith(".lock")]


@pytest.mark.skipif(not _compile_cache.shares_compiles(), reason="no fcntl locks here")
def test_a_second_process_waits_for_the_compile_and_loads_it(tmp_path):
    holder = _call(tmp_path, "--hold", stdin=subprocess.PIPE)
    try:
        assert holder.stdout.readline().strip() == "held"
        waiter = _call(tmp_path)
        # the waiter misses the cache and waits on the lock (without it, it
        # would compile the kernel itself now)
        with pytest.raises(subprocess.TimeoutExpired):
            waiter.wait(3)
        holder.stdin.write("go\n")
        holder.stdin.flush()
        held = _result(holder)
    finally:
        holder.kill()
    waited = _result(waiter)
    assert held == {"value": 13, "compiled": ["triple"]}
    assert waited == {"value": 13, "compiled": []}
    assert _lock_files(tmp_path)          # the kernel's and the index's


def test_without_fcntl_nothing_is_locked_and_the_cache_serves(tmp_path):
    first = _result(_call(tmp_path, "--no-fcntl"))
    again = _result(_call(tmp_path, "--no-fcntl"))
    assert first == {"value": 13, "compiled": ["triple"]}
    assert again == {"value": 13, "compiled": []}
    assert _lock_files(tmp_path) == []


_FIT = '''
import gc, json
import numba
from numba.core import caching
classes = [caching.Cache, caching.FunctionCache]
before = [dict(vars(cls)) for cls in classes]
import numpy as np
import gputree
from gputree import _compile_cache
rng = np.random.RandomState(0)
X = rng.normal(size=(3000, 6))
y = (X[:, 0] > 0).astype(int)
for estimator in (gputree.DecisionTreeClassifier(max_depth=4),
                  gputree.RandomForestRegressor(n_estimators=2, max_depth=4, random_state=0),
                  gputree.GradientBoostingClassifier(n_estimators=2, max_depth=3)):
    estimator.fit(X, y).predict(X)

@numba.njit(cache=True)
def users_own(x):
    return x + 1

kernels = [obj for obj in gc.get_objects() if isinstance(obj, numba.core.dispatcher.Dispatcher)
           and obj.py_func.__module__.startswith("gputree")
           and isinstance(obj._cache, caching.Cache)]
print(json.dumps(dict(
    unchanged=[dict(vars(cls)) == seen for cls, seen in zip(classes, before)],
    users_class=type(users_own._cache).__name__,
    kernels=len(kernels),
    used=sum(1 for k in kernels if k.overloads),
    others=sorted({type(k._cache).__name__ for k in kernels
                   if not isinstance(k._cache, _compile_cache._GputreeCache)}))))
'''


def test_numbas_cache_classes_are_untouched_and_every_kernel_has_gputrees(tmp_path):
    """In a fresh process (the suite's own cache): numba's Cache classes
    hold the same attributes after importing gputree and fitting a tree, a
    forest and boosting; a user's ``njit(cache=True)`` keeps numba's
    FunctionCache; every cached gputree kernel has gputree's class."""
    script = tmp_path / "users_script.py"      # numba caches functions of files only
    script.write_text(_FIT)
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=900)
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout.strip().splitlines()[-1])
    assert found["unchanged"] == [True, True]
    assert found["users_class"] == "FunctionCache"
    assert found["used"] > 5 and found["others"] == []


def test_the_recording_hook_sees_the_kernels_a_call_asks_for(tmp_path, monkeypatch):
    import numba
    namespace = {"__name__": "gputree.probe_recorded"}
    exec("def probe(x):\n    return x - 2\n", namespace)
    plain = numba.njit(namespace["probe"])       # no disk cache: never asked
    kernel = _compile_cache.gputree_cache(numba.njit(cache=True)(_cached_probe(tmp_path)))
    seen = []
    with _compile_cache.watching_loads(lambda function, sig: seen.append(
            (function.__name__, tuple(sig)))):
        assert kernel(2) == 7 and plain(2) == 0
    assert kernel(2.5) == 8.5                    # outside the block: not seen
    assert seen == [("recorded_probe", (numba.types.int64,))]


def _cached_probe(tmp_path):
    """A function from a file (numba caches only those) in ``tmp_path``."""
    import importlib.util
    path = tmp_path / "recorded_probe.py"
    path.write_text("def recorded_probe(x):\n    return 3 * x + 1\n")
    spec = importlib.util.spec_from_file_location("recorded_probe", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.recorded_probe
