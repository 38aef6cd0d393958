"""Training from a folder of Parquet files with ``gputree.Dataset``: the
peak memory of a boosting fit against the same fit on X in memory, the time
to build the Dataset against LightGBM's Dataset construction from the same
rows in memory, a parameter search that bins once, and the model's equality
with the in-memory fit.

Every measurement runs in a fresh Python process (this file with
``--child``), with numba's on-disk cache warmed by a first small fit.

    python benchmarks/dataset_memory.py --rows 2000000          # all parts
    python benchmarks/dataset_memory.py --rows 1000000 --parts build search equal

Parts:

* ``memory``: peak RSS (``ru_maxrss``) raised by a 20-round boosting fit
  (depth 6, no early stopping) on ``--rows`` x 28 float32 rows read from
  the Parquet folder: (a) read into a float32 array with pyarrow, then
  ``fit(X, y)``; (b) ``fit(Dataset(folder, label="y"))``, with the raise
  after building the Dataset alone. The raise is measured from the RSS
  just before the data is touched (MiB).
* ``build``: seconds to build ``Dataset(folder, label="y")`` (median of
  3) against ``lightgbm.Dataset(X, label=y).construct()`` on the same rows
  as a float32 array in memory, and ``Dataset(X, label=y)`` in memory.
* ``search``: 4 candidates (depth 4, 6 x learning rate 0.1, 0.2) of 20-round
  boosting: on one Dataset (bins learned once), against 4 in-memory fits.
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
PARAMS = dict(n_estimators=20, max_depth=6, early_stopping=False, random_state=0)


def make_folder(folder, n_rows, n_files=8, seed=0):
    """Parquet files of float32 features f0..f27 and a float32 target y."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    rng = np.random.RandomState(seed)
    per_file = -(-n_rows // n_files)
    for i in range(n_files):
        n = min(per_file, n_rows - i * per_file)
        X = rng.normal(size=(n, N_FEATURES)).astype(np.float32)
        X[rng.rand(n) < 0.05, 3] = np.nan
        y = (np.nan_to_num(X[:, 3]) + X[:, 0] * X[:, 1] + np.sin(X[:, 2])
             + 0.3 * rng.normal(size=n)).astype(np.float32)
        columns = {f"f{j}": X[:, j] for j in range(N_FEATURES)}
        columns["y"] = y
        pq.write_table(pa.table(columns), os.path.join(folder, f"part-{i:03d}.parquet"),
                       row_group_size=131_072)


def read_folder(folder):
    """(X float32 (n, 28), y) of the folder, in memory."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    files = sorted(os.path.join(folder, name) for name in os.listdir(folder))
    table = pa.concat_tables([pq.read_table(f) for f in files])
    X = np.empty((table.num_rows, N_FEATURES), dtype=np.float32)
    for j in range(N_FEATURES):
        X[:, j] = table.column(f"f{j}").to_numpy()
    return X, table.column("y").to_numpy()


def rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024


def peak_mb():
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def warm_up():
    import gputree
    rng = np.random.RandomState(0)
    X = rng.normal(size=(2000, N_FEATURES)).astype(np.float32)
    gputree.GradientBoostingRegressor(n_estimators=2).fit(X, X[:, 0])
    gputree.GradientBoostingRegressor(n_estimators=2).fit(gputree.Dataset(X, label=X[:, 0]))


def child(part, folder):
    import gputree
    warm_up()
    out = {}
    if part in ("memory_in_memory", "memory_dataset"):
        before = rss_mb()
        start = time.perf_counter()
        if part == "memory_in_memory":
            X, y = read_folder(folder)
            model = gputree.GradientBoostingRegressor(**PARAMS).fit(X, y)
        else:
            dataset = gputree.Dataset(folder, label="y", random_state=0)
            out["build_raise_mb"] = peak_mb() - before
            out["codes_mb"] = dataset.codes.nbytes / 2 ** 20
            model = gputree.GradientBoostingRegressor(**PARAMS).fit(dataset)
        out |= {"rss_before_mb": before, "peak_mb": peak_mb(), "raise_mb": peak_mb() - before,
               "seconds": time.perf_counter() - start, "n_iter": model.n_iter_}
    elif part == "build":
        import lightgbm
        X, y = read_folder(folder)
        times = {"gputree_parquet": [], "gputree_memory": [], "lightgbm_memory": []}
        for _ in range(3):
            t = time.perf_counter()
            gputree.Dataset(folder, label="y", random_state=0)
            times["gputree_parquet"].append(time.perf_counter() - t)
            t = time.perf_counter()
            gputree.Dataset(X, label=y)
            times["gputree_memory"].append(time.perf_counter() - t)
            t = time.perf_counter()
            lightgbm.Dataset(X, label=y, params={"verbose": -1, "max_bin": 255}).construct()
            times["lightgbm_memory"].append(time.perf_counter() - t)
        out = {k: float(np.median(v)) for k, v in times.items()}
    elif part == "search":
        X, y = read_folder(folder)
        grid = [dict(PARAMS, max_depth=d, learning_rate=r) for d in (4, 6) for r in (0.1, 0.2)]
        t = time.perf_counter()
        dataset = gputree.Dataset(folder, label="y", random_state=0)
        build = time.perf_counter() - t
        for params in grid:
            gputree.GradientBoostingRegressor(**params).fit(dataset)
        on_dataset = time.perf_counter() - t
        t = time.perf_counter()
        for params in grid:
            gputree.GradientBoostingRegressor(**params).fit(X, y)
        out = {"dataset_build": build, "dataset_total": on_dataset,
               "in_memory_total": time.perf_counter() - t}
    elif part == "equal":
        X, y = read_folder(folder)
        dataset = gputree.Dataset(folder, label="y", random_state=0)
        a = gputree.GradientBoostingRegressor(**PARAMS).fit(dataset)
        b = gputree.GradientBoostingRegressor(**PARAMS).fit(X, y)
        out = {"predictions_equal": bool(np.array_equal(a.predict(X), b.predict(X)))}
    print(json.dumps(out))


def run_child(part, folder):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [root] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    result = subprocess.run([sys.executable, __file__, "--child", part, folder],
                            capture_output=True, text=True, env=env)
    if result.returncode:
        raise RuntimeError(f"{part} failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--parts", nargs="+", default=["memory", "build", "search", "equal"])
    parser.add_argument("--child", nargs=2)
    args = parser.parse_args()
    if args.child:
        return child(*args.child)
    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        make_folder(folder, args.rows)
        print(f"{args.rows} x {N_FEATURES} float32 rows in 8 Parquet files "
              f"({args.rows * N_FEATURES * 4 / 1e6:.0f} MB as float32), written in "
              f"{time.perf_counter() - start:.1f} s; loadavg {open('/proc/loadavg').read()[:14]}")
        for part in args.parts:
            if part == "memory":
                for kind in ("memory_in_memory", "memory_dataset"):
                    print(kind, run_child(kind, folder), flush=True)
            else:
                print(part, run_child(part, folder), flush=True)
        print(f"loadavg {open('/proc/loadavg').read()[:14]}")


if __name__ == "__main__":
    main()
