"""No compile tax per process: what the first fit after installing compiles
is found in numba's on-disk cache by every later process, which compiles
nothing, and the cache stops growing; the notice of a first fit says that
gputree compiles and how long it took, and a process served by the cache
says nothing.

Each run is a fresh process (as a script, a command-line job or a
cross-validation worker meets gputree) on one temporary
``NUMBA_CACHE_DIR``; it fits every estimator family (trees, forests,
boosting; classification and regression) on small data and on data large
enough to run in parts, with 8- and 16-bit bins, predicts, and counts numba's
compile events for gputree functions per family (numba fires them only
when its cache does not hold the function)."""
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_FITS = """
import json, sys
import numpy as np
from numba.core import base, event
from gputree import _threads
from gputree.backends import compile_notice
from gputree.backends.cpu import binned_cache
import gputree

compile_notice.NOTICE_AFTER_S = 0.0      # any compile is announced
_threads.PARALLEL_WORK = 1 << 14         # the large data run in parts
binned_cache._COLUMN_COPY_VALUES = 1 << 16   # and move rows from column copies
compiled = {}
family = [None]

class Count(event.Listener):
    def on_start(self, ev):
        function = getattr(ev.data.get("dispatcher"), "py_func", None)
        if getattr(function, "__module__", "").startswith("gputree"):
            compiled[family[0]] = compiled.get(family[0], 0) + 1
    def on_end(self, ev):
        pass

event.register("numba:compile", Count())
setups = [0]                             # numba's compiler set-up (context refreshes)
_refresh = base.BaseContext.refresh
def counted_refresh(self):
    setups[0] += 1
    return _refresh(self)
base.BaseContext.refresh = counted_refresh
rng = np.random.RandomState(0)
X = rng.normal(size=(12000, 8))
X[:, 2] = rng.randint(0, 2000, X.shape[0])     # many distinct values: 16-bit bins
X[rng.rand(*X.shape) < 0.05] = np.nan
y = (np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1]) > 0.2).astype(int)
y_float = np.nan_to_num(X[:, 0]) * 2 + rng.normal(size=X.shape[0])
families = {
    "trees": [gputree.DecisionTreeClassifier(max_depth=6), gputree.DecisionTreeRegressor(max_depth=6)],
    "forests": [gputree.RandomForestClassifier(n_estimators=3, max_depth=5, random_state=0),
                gputree.RandomForestRegressor(n_estimators=3, max_depth=5, random_state=0)],
    "boosting": [gputree.GradientBoostingClassifier(n_estimators=3, max_depth=4),
                 gputree.GradientBoostingRegressor(n_estimators=3, max_depth=4)],
}
for name, estimators in families.items():
    family[0] = name
    compiled[name] = 0
    for estimator in estimators:
        target = y if "Classifier" in type(estimator).__name__ else y_float
        for rows in (300, X.shape[0]):
            for max_bins in (255, 1023):
                estimator.set_params(max_bins=max_bins, device="cpu")
                estimator.fit(X[:rows], target[:rows]).predict(X[:rows])
    if name == "boosting":   # SHAP: a parallel kernel (numba's threads) loads from the cache
        estimator.predict(X[:50], pred_contrib=True)
print(json.dumps(dict(compiled, setups=setups[0])))
"""


def _run(cache):
    """(compiles per family, the notice's lines, files in the cache) of one
    fresh process on ``cache``."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT))
    result = subprocess.run([sys.executable, "-c", _FITS], env=env, capture_output=True,
                            text=True, timeout=900)
    assert result.returncode == 0, result.stderr
    notices = [line for line in result.stderr.splitlines() if line.startswith("gputree: ")]
    files = sum(len(names) for _, _, names in os.walk(cache))
    return json.loads(result.stdout.strip().splitlines()[-1]), notices, files


def test_a_later_process_compiles_nothing_and_the_cache_stops_growing(tmp_path):
    first, notices, files = _run(tmp_path)
    assert all(first[family] > 0 for family in ("trees", "forests", "boosting")), first
    assert first["setups"] > 0
    assert files > 0
    # the first fit that compiles says so, then how long it took
    assert notices[0].startswith("gputree: compiling its CPU kernels")
    assert any(line.startswith("gputree: compiled ") and line.endswith(" s.")
               for line in notices)
    for _ in range(2):
        again, notices, files_again = _run(tmp_path)
        # nothing compiled, and numba's compiler set-up (its registries,
        # ~0.3 s) never ran: cached kernels load without it
        assert again == {"trees": 0, "forests": 0, "boosting": 0, "setups": 0}
        assert notices == []
        assert files_again == files


def _compiling_call(delay, monkeypatch):
    """An announced call (as an estimator's fit) that compiles one new
    function of a gputree module, with the notice's delay ``delay``."""
    import numba
    from gputree.backends import compile_notice
    monkeypatch.setattr(compile_notice, "NOTICE_AFTER_S", delay)
    namespace = {"__name__": "gputree.probe"}
    exec("def probe(x):\n    return x * 2 + 1\n", namespace)
    compiled = numba.njit(namespace["probe"])
    return compile_notice.announcing(lambda: compiled(3))()


def test_a_compile_is_announced_with_its_duration(caplog, monkeypatch):
    with caplog.at_level("WARNING", logger="gputree"):
        assert _compiling_call(0.0, monkeypatch) == 7
    lines = [record.getMessage() for record in caplog.records]
    assert len(lines) == 2 and lines[0].startswith("gputree: compiling its CPU kernels")
    assert lines[1].startswith("gputree: compiled 1 CPU kernel(s) in ") and lines[1].endswith(" s.")


def test_a_compile_shorter_than_the_delay_is_not_announced(caplog, monkeypatch):
    with caplog.at_level("WARNING", logger="gputree"):
        assert _compiling_call(600.0, monkeypatch) == 7
    assert caplog.records == []
