"""What a new process pays before gputree trains at full speed: numba's
compiles on the first fit after installing, loading the compiled kernels
from numba's on-disk cache in every later process, and ``import gputree``;
side by side with LightGBM where the same thing is timed for it.

Every measured run is a fresh Python process (this file run with
``--child``), as a script, a command-line job or a cross-validation worker
meets gputree; the caches are new folders (``NUMBA_CACHE_DIR``) made here.
The children write Python's bytecode (``__pycache__``, as Python does by
default) also where ``PYTHONDONTWRITEBYTECODE`` is set (as on the
development VM): a user's gputree has its ``.pyc`` files after its first
run (or from ``pip install``), and a later process that compiled gputree's
modules from source again would count Python's compiler in its first fit
(the CPU backend's import in a fit: 0.087 s from source, 0.032 s from
``.pyc`` on the 2-core VM).

    python benchmarks/first_fit.py                 # every part below
    python benchmarks/first_fit.py first --estimators gbdt_c tree_c
    python benchmarks/first_fit.py import gridsearch gbdt_1m

Parts:

* ``first``: for each estimator (300,000 x 20 rows unless ``--rows``), with
  an empty cache: process 1 fits the large data twice, then 2,000 rows
  twice (the first fit after installing; the small fit after a large one);
  process 2 fits 2,000 rows twice with a cache that holds what process 1
  compiled; processes 3 and 4 (large, then small) with a warm cache (first
  fit against the same fit repeated in that process), then both again to
  see that the cache's file count stays the same. A second empty cache
  whose first process fits only the large data measures a small fit in a
  process whose cache holds only what a large fit compiled. Each fit
  reports the seconds and the number of gputree functions that numba
  compiled during it (0 when everything came from the cache).
* ``import``: ``import gputree`` and ``from gputree import
  GradientBoostingClassifier`` in a fresh process (median of 5), with
  ``import sklearn.base`` and ``from lightgbm import LGBMClassifier``.
* ``gridsearch``: scikit-learn's GridSearchCV (4 candidates x 3 folds,
  ``n_jobs=2``: worker processes) of 20-tree boosting on 50,000 x 20 rows,
  gputree against LightGBM, each in a fresh process with a warm cache
  (median of 3).
* ``gbdt_1m``: 100 boosted trees of depth 8 on 1,000,000 x 28 rows in a
  fresh process with a warm cache (compare.py's gbdt settings), first and
  second fit, gputree against LightGBM (``--repeat N``: N alternated pairs
  of processes, ratios of the medians and of each pair).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SMALL_ROWS = 2_000
#: the estimators of ``first``: class name and settings (device: the default)
ESTIMATORS = {
    "tree_c": ("DecisionTreeClassifier", dict(max_depth=10)),
    "tree_r": ("DecisionTreeRegressor", dict(max_depth=10)),
    "forest_c": ("RandomForestClassifier", dict(n_estimators=20, max_depth=10, random_state=0)),
    "forest_r": ("RandomForestRegressor", dict(n_estimators=20, max_depth=10, random_state=0)),
    "gbdt_c": ("GradientBoostingClassifier", dict(n_estimators=20)),
    "gbdt_r": ("GradientBoostingRegressor", dict(n_estimators=20)),
    "gbdt_c_lossguide": ("GradientBoostingClassifier", dict(n_estimators=20,
                                                            grow_policy="lossguide",
                                                            max_depth=None)),
}
GRID = {"max_depth": [4, 6], "learning_rate": [0.1, 0.3]}
GRID_ROWS = 50_000


def data(n_rows, n_features, regression):
    """(X float32 (n_rows, n_features), y): make_classification (binary,
    int) or make_regression (float64), random_state 0."""
    import numpy as np
    from sklearn.datasets import make_classification, make_regression
    if regression:
        X, y = make_regression(n_samples=n_rows, n_features=n_features, n_informative=10,
                               noise=10.0, random_state=0)
    else:
        X, y = make_classification(n_samples=n_rows, n_features=n_features,
                                   n_informative=10, n_redundant=4, random_state=0)
    return X.astype(np.float32), y


# ---------------------------------------------------------------- children


class CompileCounter:
    """Counts numba's compiles of gputree functions (outermost ones, and all
    of them) and the seconds the outermost ones took; a compile event fires
    only when numba's disk cache does not hold the function."""

    def __init__(self):
        from numba.core import event
        self.outer = self.all = 0
        self.seconds = 0.0
        self.depth, self.started = 0, 0.0
        counter = self

        class Listener(event.Listener):
            def on_start(self, ev):
                if counter.ours(ev):
                    counter.all += 1
                    counter.depth += 1
                    if counter.depth == 1:
                        counter.outer += 1
                        counter.started = time.perf_counter()

            def on_end(self, ev):
                if counter.ours(ev):
                    counter.depth -= 1
                    if counter.depth == 0:
                        counter.seconds += time.perf_counter() - counter.started

        event.register("numba:compile", Listener())

    @staticmethod
    def ours(ev):
        function = getattr(ev.data.get("dispatcher"), "py_func", None)
        return getattr(function, "__module__", "").startswith("gputree")

    def snapshot(self):
        return self.outer, self.all, self.seconds


def child_fits(spec):
    """Fits of one estimator in this process: spec["fits"] is a list of row
    counts; returns a list of {rows, seconds, compiles, compile_s}."""
    name, settings = ESTIMATORS[spec["estimator"]]
    start = time.perf_counter()
    import gputree
    estimator = getattr(gputree, name)      # loads its modules (import gputree alone does not)
    import_s = time.perf_counter() - start
    counter = CompileCounter()
    settings = dict(settings, **spec.get("settings", {}))
    X, y = data(max(spec["fits"]), spec["features"], name.endswith("Regressor"))
    results = []
    for rows in spec["fits"]:
        before = counter.snapshot()
        start = time.perf_counter()
        estimator(**settings).fit(X[:rows], y[:rows])
        seconds = time.perf_counter() - start
        after = counter.snapshot()
        results.append(dict(rows=rows, seconds=seconds, compiles=after[0] - before[0],
                            functions=after[1] - before[1], compile_s=after[2] - before[2]))
    return dict(import_s=import_s, fits=results)


def child_import(spec):
    start = time.perf_counter()
    exec(spec["statement"], {})
    return dict(seconds=time.perf_counter() - start)


def child_gridsearch(spec):
    from sklearn.model_selection import GridSearchCV
    X, y = data(GRID_ROWS, 20, False)
    if spec["library"] == "gputree":
        from gputree import GradientBoostingClassifier
        estimator = GradientBoostingClassifier(n_estimators=20, random_state=0)
    else:
        from lightgbm import LGBMClassifier
        estimator = LGBMClassifier(n_estimators=20, random_state=0, verbose=-1)
    start = time.perf_counter()
    GridSearchCV(estimator, GRID, cv=3, n_jobs=2).fit(X, y)
    return dict(seconds=time.perf_counter() - start)


def child_gbdt_1m(spec):
    from benchmarks.compare import GPUTREE_GBDT, LIGHTGBM_GBDT
    runner = GPUTREE_GBDT if spec["library"] == "gputree" else LIGHTGBM_GBDT
    X, y = data(spec["rows"], 28, False)
    import importlib
    module, _, cls = runner.estimator.rpartition(".")
    estimator = getattr(importlib.import_module(module), cls)
    seconds = []
    for _ in range(2):
        start = time.perf_counter()
        estimator(**runner.params).fit(X, y)
        seconds.append(time.perf_counter() - start)
    return dict(seconds=seconds)


CHILDREN = {"fits": child_fits, "import": child_import, "gridsearch": child_gridsearch,
            "gbdt_1m": child_gbdt_1m}


# ---------------------------------------------------------------- parent


def run_child(kind, spec, cache):
    """Run one child process with NUMBA_CACHE_DIR=cache, writing Python's
    bytecode; its JSON result."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    payload = json.dumps(dict(spec, kind=kind))
    result = subprocess.run([sys.executable, __file__, "--child", payload], env=env,
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"child {payload} failed:\n{result.stderr}")
    notices = [line for line in result.stderr.splitlines() if "compil" in line]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    out["notices"] = notices
    return out


def cache_files(cache):
    return sum(len(files) for _, _, files in os.walk(cache))


def fmt_fit(fit):
    compiled = (f"{fit['compiles']} compiled ({fit['functions']} functions, "
                f"{fit['compile_s']:.1f} s)" if fit["compiles"] else "nothing compiled")
    return f"{fit['seconds']:6.2f} s  [{compiled}]"


def part_first(args, workdir):
    print(f"\n## first fits: {args.rows:,} x {args.features} rows (large), "
          f"{SMALL_ROWS:,} rows (small); each line a fresh process")
    large, small = args.rows, SMALL_ROWS
    for key in args.estimators:
        name, settings = ESTIMATORS[key]
        settings = dict(settings, **json.loads(args.settings))
        described = ", ".join(f"{k}={v!r}" for k, v in settings.items())
        print(f"\n### {name}({described})")
        cache = Path(tempfile.mkdtemp(dir=workdir))
        spec = dict(estimator=key, features=args.features, settings=settings)
        plan = [("empty cache: large, large, small, small", [large, large, small, small]),
                ("warm cache: small, small", [small, small]),
                ("warm cache: large, large", [large, large]),
                ("warm cache: small, small", [small, small]),
                ("warm cache: large, large, small, small", [large, large, small, small]),
                ("warm cache: large, large, small, small", [large, large, small, small])]
        for title, fits in plan:
            out = run_child("fits", dict(spec, fits=fits), cache)
            print(f"  {title}  (import {out['import_s']:.2f} s; cache files after: "
                  f"{cache_files(cache)})")
            for fit in out["fits"]:
                print(f"    {fit['rows']:>9,} rows {fmt_fit(fit)}")
            for line in out["notices"]:
                print(f"    notice: {line}")
        shutil.rmtree(cache)
        cache = Path(tempfile.mkdtemp(dir=workdir))
        for title, fits in [("second empty cache: large, large", [large, large]),
                            ("its cache holds the large fits' kernels: small, small",
                             [small, small])]:
            out = run_child("fits", dict(spec, fits=fits), cache)
            print(f"  {title}  (cache files after: {cache_files(cache)})")
            for fit in out["fits"]:
                print(f"    {fit['rows']:>9,} rows {fmt_fit(fit)}")
        shutil.rmtree(cache)


def part_import(args, workdir):
    print("\n## imports, fresh process each (median of 5)")
    cache = Path(tempfile.mkdtemp(dir=workdir))
    for statement in ("import gputree", "from gputree import GradientBoostingClassifier",
                      "import numba", "import sklearn.base",
                      "from lightgbm import LGBMClassifier"):
        try:
            times = [run_child("import", dict(statement=statement), cache)["seconds"]
                     for _ in range(5)]
        except RuntimeError as exc:
            print(f"  {statement:50s} failed: {str(exc).splitlines()[-1]}")
            continue
        print(f"  {statement:50s} {statistics.median(times):.3f} s  "
              f"({', '.join(f'{t:.2f}' for t in times)})")


def warm_cache(workdir, spec_fits):
    """A cache folder that holds what ``spec_fits`` (estimator key, row
    counts, features) compiled."""
    cache = Path(tempfile.mkdtemp(dir=workdir))
    for key, fits, features in spec_fits:
        run_child("fits", dict(estimator=key, fits=fits, features=features), cache)
    return cache


def part_gridsearch(args, workdir):
    print(f"\n## GridSearchCV: {len(GRID['max_depth']) * len(GRID['learning_rate'])} "
          f"candidates x 3 folds, n_jobs=2, {GRID_ROWS:,} x 20 rows, 20 trees; "
          "fresh process, warm cache (median of 3)")
    cache = warm_cache(workdir, [("gbdt_c", [GRID_ROWS], 20)])
    median = {}
    for library in ("gputree", "lightgbm"):
        times = [run_child("gridsearch", dict(library=library), cache)["seconds"]
                 for _ in range(3)]
        median[library] = statistics.median(times)
        print(f"  {library:10s} {median[library]:6.2f} s  ({', '.join(f'{t:.2f}' for t in times)})")
    print(f"  gputree / LightGBM: {median['gputree'] / median['lightgbm']:.2f}x")


def part_gbdt_1m(args, workdir):
    rows = 1_000_000
    print(f"\n## 100 boosted trees of depth 8, {rows:,} x 28 rows (compare.py's gbdt), "
          f"fresh process, warm cache; first and second fit ({args.repeat} alternated "
          "pairs of processes; medians)")
    cache = warm_cache(workdir, [("gbdt_c", [SMALL_ROWS, 300_000], 28)])
    got = {"gputree": [], "lightgbm": []}
    for _ in range(args.repeat):
        for library in got:
            got[library].append(run_child("gbdt_1m", dict(library=library, rows=rows),
                                          cache)["seconds"])
    for library, runs in got.items():
        print(f"  {library:10s} first {', '.join(f'{r[0]:.2f}' for r in runs)} s; "
              f"second {', '.join(f'{r[1]:.2f}' for r in runs)} s")
    for i, which in enumerate(("first", "second")):
        ratios = [g[i] / lg[i] for g, lg in zip(got["gputree"], got["lightgbm"])]
        median = (statistics.median(g[i] for g in got["gputree"])
                  / statistics.median(lg[i] for lg in got["lightgbm"]))
        print(f"  {which} fit, gputree / LightGBM: {median:.2f}x of the medians "
              f"(each pair: {', '.join(f'{r:.2f}' for r in ratios)})")


PARTS = {"first": part_first, "import": part_import, "gridsearch": part_gridsearch,
         "gbdt_1m": part_gbdt_1m}


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        # every child imports this checkout's gputree (not an installed copy
        # elsewhere, whose kernels another cache folder holds)
        sys.path.insert(0, str(ROOT))
        spec = json.loads(sys.argv[2])
        print(json.dumps(CHILDREN[spec["kind"]](spec)))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("parts", nargs="*", help=f"some of {', '.join(PARTS)} (default: all)")
    parser.add_argument("--estimators", nargs="+", default=list(ESTIMATORS),
                        choices=list(ESTIMATORS))
    parser.add_argument("--rows", type=int, default=300_000)
    parser.add_argument("--features", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=1,
                        help="gbdt_1m: alternated pairs of fresh processes (medians)")
    parser.add_argument("--settings", default="{}",
                        help='JSON settings added to every estimator of "first", '
                             'e.g. \'{"max_bins": 1023}\'')
    args = parser.parse_args()
    args.parts = args.parts or list(PARTS)
    unknown = set(args.parts) - set(PARTS)
    if unknown:
        parser.error(f"unknown parts {sorted(unknown)}; choose from {', '.join(PARTS)}")
    import numba
    import numpy
    print(f"# {sys.executable}: Python {sys.version.split()[0]}, numpy {numpy.__version__}, "
          f"numba {numba.__version__}, {os.cpu_count()} CPUs, load {os.getloadavg()}")
    workdir = tempfile.mkdtemp(prefix="gputree-first-fit-")
    try:
        for part in args.parts:
            PARTS[part](args, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"\n# load at the end {os.getloadavg()}")


if __name__ == "__main__":
    main()
