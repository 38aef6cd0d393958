"""Training from a folder of Parquet files with ``gputree.Dataset``: the
peak memory of a boosting fit against the same fit on X in memory, the time
to build the Dataset against LightGBM's Dataset construction from the same
rows in memory, a parameter search that bins once, and the model's equality
with the in-memory fit.

The folder (8 files, ``--rows`` x 28 float32 features and a float32 target
y: 0/1 classes, or continuous with ``--task regression``) is written a few
hundred thousand rows at a time, into a temporary folder deleted at the end
(or ``--folder``, kept and reused). Every measurement runs in a fresh Python
process (this file with ``--child``), after a small fit has compiled (or
loaded from numba's cache) the kernels.

    python benchmarks/dataset_memory.py --rows 8000000 --parts memory_dataset build
    python benchmarks/dataset_memory.py --rows 1000000 --parts build search equal

Parts (the estimator: GradientBoostingClassifier, or Regressor with
``--task regression``, ``--trees`` rounds of depth ``--depth``, no early
stopping unless ``--early-stopping``, random_state=0):

* ``memory`` (= ``memory_in_memory`` and ``memory_dataset``): the peak RSS
  (VmHWM, reset through /proc/self/clear_refs just before the data is
  touched, pyarrow's libraries loaded by then) above the RSS at that moment,
  in MiB: (a) the folder read into a
  float32 array record batch by record batch, then ``fit(X, y)``; (b)
  ``fit(Dataset(folder, label="y"))``, with the raise while building the
  Dataset alone and the RSS it holds once built. The peak does not depend on
  the number of rounds (every round reuses the first round's arrays).
* ``build``: seconds to build ``Dataset(folder, label="y")`` (median of
  ``--repeats``) against ``lightgbm.Dataset(X, label=y).construct()`` on the
  same rows as a float32 array in memory, and ``Dataset(X, label=y)``.
* ``search``: 4 candidates (depth 4, 6 x learning rate 0.1, 0.2): on one
  Dataset (bins learned once), against 4 in-memory fits.
* ``equal``: the Dataset model's predictions equal the in-memory model's
  bit for bit.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

N_FEATURES = 28
#: rows generated and written at a time (the generator stays small)
WRITE_ROWS = 262_144


def make_folder(folder, n_rows, task, n_files=8, seed=0):
    """Parquet files of float32 features f0..f27 and a target y (float32:
    0/1 classes for ``task`` "classification", else continuous), written
    ``WRITE_ROWS`` rows at a time."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    rng = np.random.default_rng(seed)
    per_file = -(-n_rows // n_files)
    for i in range(n_files):
        n_file = min(per_file, n_rows - i * per_file)
        with pq.ParquetWriter(os.path.join(folder, f"part-{i:03d}.parquet"),
                              _schema(pa)) as writer:
            for start in range(0, n_file, WRITE_ROWS):
                writer.write_table(_rows(pa, rng, min(WRITE_ROWS, n_file - start), task),
                                   row_group_size=131_072)


def _schema(pa):
    return pa.schema([(f"f{j}", pa.float32()) for j in range(N_FEATURES)]
                     + [("y", pa.float32())])


def _rows(pa, rng, n, task):
    X = rng.standard_normal(size=(n, N_FEATURES), dtype=np.float32)
    X[rng.random(n) < 0.05, 3] = np.nan
    y = (np.nan_to_num(X[:, 3]) + X[:, 0] * X[:, 1] + np.sin(X[:, 2])
         + 0.3 * rng.standard_normal(size=n, dtype=np.float32))
    if task == "classification":
        y = y > 0
    columns = {f"f{j}": X[:, j] for j in range(N_FEATURES)}
    columns["y"] = y.astype(np.float32)
    return pa.table(columns, schema=_schema(pa))


def read_folder(folder):
    """(X float32 (n, 28), y float32 (n,)) of the folder, in memory, filled
    record batch by record batch (no second copy of the table)."""
    import pyarrow.parquet as pq
    files = sorted(os.path.join(folder, name) for name in os.listdir(folder))
    n_rows = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
    X = np.empty((n_rows, N_FEATURES), dtype=np.float32)
    y = np.empty(n_rows, dtype=np.float32)
    start = 0
    for f in files:
        for batch in pq.ParquetFile(f).iter_batches(batch_size=65_536):
            stop = start + batch.num_rows
            for j in range(N_FEATURES):
                X[start:stop, j] = batch.column(f"f{j}").to_numpy()
            y[start:stop] = batch.column("y").to_numpy()
            start = stop
    return X, y


def mib(n_bytes):
    return n_bytes / 2 ** 20


def estimator(config, **changes):
    """The configured boosting estimator (``config``: the command line's)."""
    import gputree
    name = ("GradientBoostingClassifier" if config["task"] == "classification"
            else "GradientBoostingRegressor")
    params = dict(n_estimators=config["trees"], max_depth=config["depth"],
                  early_stopping=config["early_stopping"], random_state=0)
    return getattr(gputree, name)(**(params | changes))


def warm_up(config):
    """Compile (or load from numba's cache) the kernels of both fits."""
    import gputree
    rng = np.random.RandomState(0)
    X = rng.normal(size=(20_000, N_FEATURES)).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.float32)
    estimator(config, n_estimators=2).fit(X, y)
    estimator(config, n_estimators=2).fit(gputree.Dataset(X, label=y))


def load_parquet_reader(folder):
    """Read one row group of the folder's first file: pyarrow's libraries
    (some 80 MiB of code pages, a fixed cost of reading Parquet at all) are
    loaded before the RSS is measured, in both memory parts."""
    import pyarrow.parquet as pq
    pq.ParquetFile(os.path.join(folder, sorted(os.listdir(folder))[0])).read_row_group(0)


def memory(part, folder, config):
    """Peak RSS raised by building and fitting, from the RSS just before the
    data is touched (VmHWM reset there through /proc/self/clear_refs), with
    the kernels compiled and pyarrow loaded beforehand."""
    import gc

    import gputree
    from benchmarks.common import current_rss_bytes, peak_rss_bytes, reset_peak_rss
    warm_up(config)
    load_parquet_reader(folder)
    gc.collect()
    before = current_rss_bytes()
    out = {"peak_reset": reset_peak_rss(), "rss_before_mib": mib(before)}
    start = time.perf_counter()
    if part == "memory_in_memory":
        X, y = read_folder(folder)
        out["read_raise_mib"] = mib(peak_rss_bytes() - before)
        model = estimator(config).fit(X, y)
    else:
        dataset = gputree.Dataset(folder, label="y", random_state=0)
        out["build_seconds"] = time.perf_counter() - start
        out["build_raise_mib"] = mib(peak_rss_bytes() - before)
        out["codes_mib"] = mib(dataset.codes.nbytes)
        out["held_after_build_mib"] = mib(current_rss_bytes() - before)
        model = estimator(config).fit(dataset)
    return out | {"raise_mib": mib(peak_rss_bytes() - before),
                  "seconds": time.perf_counter() - start, "n_iter": model.n_iter_}


def build(folder, repeats):
    """Median seconds of building the bins: gputree from the folder and from
    X in memory, LightGBM from X in memory (read chunk-wise beforehand)."""
    import gputree
    import lightgbm
    X, y = read_folder(folder)
    times = {"gputree_parquet": [], "gputree_memory": [], "lightgbm_memory": []}
    for _ in range(repeats):
        t = time.perf_counter()
        gputree.Dataset(folder, label="y", random_state=0)
        times["gputree_parquet"].append(time.perf_counter() - t)
        t = time.perf_counter()
        gputree.Dataset(X, label=y, random_state=0)
        times["gputree_memory"].append(time.perf_counter() - t)
        t = time.perf_counter()
        lightgbm.Dataset(X, label=y, params={"verbose": -1, "max_bin": 255}).construct()
        times["lightgbm_memory"].append(time.perf_counter() - t)
    out = {k: float(np.median(v)) for k, v in times.items()}
    out["parquet_over_lightgbm"] = out["gputree_parquet"] / out["lightgbm_memory"]
    return out


def child(part, folder, config):
    import gputree
    if part.startswith("memory"):
        return memory(part, folder, config)
    if part == "build":
        return build(folder, config["repeats"])
    warm_up(config)
    X, y = read_folder(folder)
    if part == "search":
        grid = [dict(max_depth=d, learning_rate=r) for d in (4, 6) for r in (0.1, 0.2)]
        t = time.perf_counter()
        dataset = gputree.Dataset(folder, label="y", random_state=0)
        build_seconds = time.perf_counter() - t
        for params in grid:
            estimator(config, **params).fit(dataset)
        on_dataset = time.perf_counter() - t
        t = time.perf_counter()
        for params in grid:
            estimator(config, **params).fit(X, y)
        return {"dataset_build": build_seconds, "dataset_total": on_dataset,
                "in_memory_total": time.perf_counter() - t}
    if part == "equal":
        dataset = gputree.Dataset(folder, label="y", random_state=0)
        a = estimator(config).fit(dataset)
        b = estimator(config).fit(X, y)
        return {"predictions_equal": bool(np.array_equal(a.predict(X), b.predict(X)))}
    raise ValueError(f"unknown part {part!r}")


def run_child(part, folder, config):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [root] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    result = subprocess.run([sys.executable, __file__, "--child", part, folder,
                             json.dumps(config)], capture_output=True, text=True, env=env)
    if result.returncode:
        raise RuntimeError(f"{part} failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def loadavg():
    with open("/proc/loadavg") as f:
        return f.read()[:14]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--parts", nargs="+", default=["memory", "build", "search", "equal"])
    parser.add_argument("--task", choices=["classification", "regression"],
                        default="classification")
    parser.add_argument("--trees", type=int, default=10)
    parser.add_argument("--depth", type=int, default=8)
    parser.add_argument("--early-stopping", action="store_true",
                        help="early_stopping='auto' (a 10%% validation split) instead of False")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--folder", help="a folder to keep the files in (written when it is "
                        "missing or empty; else its files are used)")
    parser.add_argument("--child", nargs=3)
    args = parser.parse_args()
    if args.child:
        part, folder, config = args.child
        print(json.dumps(child(part, folder, json.loads(config))))
        return
    config = {"task": args.task, "trees": args.trees, "depth": args.depth,
              "early_stopping": "auto" if args.early_stopping else False,
              "repeats": args.repeats}
    with tempfile.TemporaryDirectory(dir="/tmp") as scratch:
        folder = args.folder or scratch
        os.makedirs(folder, exist_ok=True)
        if not os.listdir(folder):
            start = time.perf_counter()
            make_folder(folder, args.rows, args.task)
            print(f"{args.rows} x {N_FEATURES} float32 rows in 8 Parquet files "
                  f"({args.rows * N_FEATURES * 4 / 1e6:.0f} MB as float32), written in "
                  f"{time.perf_counter() - start:.1f} s", flush=True)
        print(f"config {config}; loadavg {loadavg()}", flush=True)
        for part in args.parts:
            kinds = ["memory_in_memory", "memory_dataset"] if part == "memory" else [part]
            for kind in kinds:
                print(kind, run_child(kind, folder, config), f"loadavg {loadavg()}", flush=True)


if __name__ == "__main__":
    main()
