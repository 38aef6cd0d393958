"""The background compile of a first fit and the compile locks of processes
sharing one cache: a helper's cache serves a later process that compiles
nothing; a fit never hangs on a helper that was killed or hangs; the
recorded kernels of each profile are exactly those its fit uses (so the
helper compiles nothing a fit does not use)."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gputree import _compile_cache
from gputree.backends import prewarm
from gputree.estimators import compile_profiles

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(not _compile_cache.shares_compiles(),
                                reason="no fcntl locks here: nothing to share")


def _python(code, cache, timeout=900, **env):
    environment = dict(os.environ, NUMBA_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT), **env)
    return subprocess.Popen([sys.executable, "-c", code], env=environment, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _result(process, timeout=900):
    out, err = process.communicate(timeout=timeout)
    assert process.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


_HOLD = """
import sys, time
from gputree import _compile_cache
handle = _compile_cache.try_lock(sys.argv[1], 0.0)
print("held" if handle else "busy", flush=True)
time.sleep(600)
"""


def _holder(path):
    process = subprocess.Popen([sys.executable, "-c", _HOLD, str(path)], text=True,
                               stdout=subprocess.PIPE, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert process.stdout.readline().strip() == "held"
    return process


def test_a_waiter_takes_the_lock_when_its_holder_dies(tmp_path):
    path = tmp_path / "kernel.lock"
    holder = _holder(path)
    try:
        assert _compile_cache.try_lock(str(path), 0.0) is None
        os.kill(holder.pid, signal.SIGKILL)
        start = time.monotonic()
        handle = _compile_cache.try_lock(str(path), 30.0)
        assert handle is not None and time.monotonic() - start < 10
        _compile_cache.release(handle)
    finally:
        holder.kill()
        holder.wait()


def test_a_waiter_gives_up_on_a_holder_that_hangs(tmp_path):
    path = tmp_path / "kernel.lock"
    holder = _holder(path)
    try:
        start = time.monotonic()
        assert _compile_cache.try_lock(str(path), 0.5) is None
        assert 0.5 <= time.monotonic() - start < 5
    finally:
        holder.kill()
        holder.wait()


_FIT = """
import json, os, signal, threading, time
import numpy as np
from numba.core import event
import gputree
from gputree.backends import prewarm
from gputree.estimators.compile_profiles import profile_data

compiled = []
class Count(event.Listener):
    def on_start(self, ev):
        function = getattr(ev.data.get("dispatcher"), "py_func", None)
        if getattr(function, "__module__", "").startswith("gputree"):
            compiled.append(function.__qualname__)
    def on_end(self, ev):
        pass
event.register("numba:compile", Count())
prewarm.BUSY_LOAD = float("inf")      # a helper even on a loaded machine
X, y = profile_data(False, rows=210_000)
kill = os.environ.get("KILL_HELPER") == "1"
def killer():
    while prewarm._state["helper"] is None:
        time.sleep(0.05)
    time.sleep(1.5)
    os.kill(prewarm._state["helper"].pid, signal.SIGKILL)
if kill:
    threading.Thread(target=killer, daemon=True).start()
estimator = gputree.GradientBoostingClassifier(n_estimators=3, random_state=0).fit(X, y)
helper = prewarm._state["helper"]
if helper is not None and not kill:
    helper.wait(600)
print(json.dumps(dict(compiled=compiled, helper=helper.pid if helper else None,
                      helper_rc=helper.poll() if helper else None,
                      predicted=int(estimator.predict(X[:1000]).sum()))))
"""


def test_the_helpers_cache_serves_a_later_process_that_compiles_nothing(tmp_path):
    first = _result(_python(_FIT, tmp_path))
    kernels = prewarm.manifest()["gbdt_c"]["kernels"]
    assert first["helper"] is not None and first["helper_rc"] == 0
    # the helper compiled some of the kernels the fit uses, the fit the others
    named = {address.split(":")[1] for address, _ in kernels if "(" not in address}
    assert first["compiled"] and named - set(first["compiled"])
    again = _result(_python(_FIT, tmp_path))
    assert again["compiled"] == [] and again["helper"] is None     # warm: no helper
    assert again["predicted"] == first["predicted"]
    alone = _result(_python(_FIT, tmp_path / "alone", **{prewarm.ENV: "0"}))
    assert alone["helper"] is None and alone["predicted"] == first["predicted"]


def test_a_killed_helper_does_not_hang_the_fit(tmp_path):
    start = time.monotonic()
    out = _result(_python(_FIT, tmp_path, KILL_HELPER="1"), timeout=600)
    assert out["helper_rc"] == -signal.SIGKILL
    assert time.monotonic() - start < _compile_cache.WAIT_S + 300
    again = _result(_python(_FIT, tmp_path))
    assert again["predicted"] == out["predicted"]


def test_each_profile_uses_exactly_its_recorded_kernels(tmp_path):
    """A fresh process per profile on one cache (the first ones compile, the
    later ones load much of it): the kernels each fit uses, in order."""
    recorded = prewarm.manifest()
    assert set(recorded) == set(compile_profiles.PROFILES)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path), PYTHONPATH=str(ROOT),
               **{prewarm.ENV: "0"})
    for profile in compile_profiles.PROFILES:
        result = subprocess.run([sys.executable, "-m", "gputree.estimators.compile_profiles", "--record",
                                 profile], env=env, capture_output=True, text=True, timeout=900)
        assert result.returncode == 0, result.stderr
        entry = json.loads(result.stdout.strip().splitlines()[-1])
        for key in ("estimator", "params", "kernels"):
            assert entry[key] == recorded[profile][key], (profile, key)
        # seconds: one per kernel, measured on an empty cache (a kernel compiles)
        seconds = recorded[profile]["seconds"]
        assert len(seconds) == len(entry["kernels"]) and min(seconds) > 0, profile


def _brute_force_best(seconds):
    """The shortest simulated time over every order of the helper (small n)."""
    import itertools
    return min(prewarm.simulate(seconds, list(order))
               for order in itertools.permutations(range(len(seconds))))


@pytest.mark.parametrize("seconds", [[1.0, 1.0, 4.0, 1.0, 1.0], [0.2, 1.5, 0.5, 4.0, 0.3, 0.6],
                                     [1.0] * 6, [3.0, 0.5, 0.5, 0.5, 0.5]])
def test_the_helpers_order_is_never_worse_than_last_to_first(seconds):
    backwards = list(range(len(seconds)))[::-1]
    order = prewarm.helper_order(seconds)
    assert sorted(order) == list(range(len(seconds)))
    best = prewarm.simulate(seconds, order)
    assert best <= prewarm.simulate(seconds, backwards)
    # two workers can do no better than half the work, nor than the fit's own lag
    assert best >= max(seconds) and best >= (sum(seconds) + prewarm.HELPER_LAG_S) / 2 - 1e-9
    # and for these, as short as the best of every order of the helper
    assert best == pytest.approx(_brute_force_best(seconds))


def test_a_long_kernel_in_the_middle_goes_to_the_helper_first():
    """Last to first, the helper would start the long kernel when the fit is
    about to need it, and the fit would wait for all of it."""
    seconds = [1.0, 1.0, 4.0, 1.0, 1.0]
    backwards = [4, 3, 2, 1, 0]
    assert prewarm.helper_order(seconds)[0] == 2
    assert prewarm.simulate(seconds, prewarm.helper_order(seconds)) < \
        prewarm.simulate(seconds, backwards)


def test_simulate_without_a_helper_task_is_the_fits_own_sum():
    """A helper that starts after the fit is done compiles nothing."""
    seconds = [0.5, 2.0, 1.0]
    assert prewarm.simulate(seconds, [2, 1, 0], lag=10.0) == pytest.approx(sum(seconds))
