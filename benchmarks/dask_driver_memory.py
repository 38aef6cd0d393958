"""Driver memory of a Dask boosting or forest fit on data generated on the
workers.

A LocalCluster of 2 worker processes (1 thread each) builds X (--rows x 28
float32) and y with ``dask.array.random``, so no row passes through the
driver before the fit; the driver process's peak RSS (VmHWM, reset before the
fit) is reported above its RSS at the start of the fit, for gputree's
DaskGradientBoostingClassifier (``--estimator forest``: its
DaskRandomForestClassifier; ``--oob``: with oob_score, whose row-sized
attributes come to the driver at the end) and, with --libraries, XGBoost's
and LightGBM's Dask estimators, with the fit's seconds.

    python benchmarks/dask_driver_memory.py --rows 4000000 --trees 10
    python benchmarks/dask_driver_memory.py --rows 2000000 --trees 5 --estimator forest
"""
import argparse
import sys
import time
from pathlib import Path

if __package__ in (None, ""):      # run as a script: import this folder as a package
    sys.path.append(str(Path(__file__).resolve().parents[1]))
    __package__ = "benchmarks"

from .common import current_rss_bytes, peak_rss_bytes, reset_peak_rss  # noqa: E402

N_FEATURES = 28


def data(n_rows, chunks):
    """(X float32 (n, 28), y int (n,)) as dask arrays made on the workers."""
    import dask.array as da
    state = da.random.RandomState(0)
    X = state.normal(size=(n_rows, N_FEATURES), chunks=(chunks, N_FEATURES)).astype("float32")
    noise = state.normal(size=n_rows, chunks=chunks)
    y = ((X[:, 0] + X[:, 1] * X[:, 2] + 0.5 * noise) > 0).astype("int64")
    return X, y


def estimators(trees, which, estimator="boosting", oob=False):
    if estimator == "forest":
        from gputree.dask import DaskRandomForestClassifier
        yield "gputree forest", lambda: DaskRandomForestClassifier(
            n_estimators=trees, max_depth=8, oob_score=oob, random_state=0, device="cpu")
        return
    settings = dict(n_estimators=trees, max_depth=8, learning_rate=0.1, random_state=0)
    if "gputree" in which:
        from gputree.dask import DaskGradientBoostingClassifier
        yield "gputree", lambda: DaskGradientBoostingClassifier(
            **settings, reg_lambda=1.0, min_samples_leaf=1, max_bins=255, device="cpu")
    if "xgboost" in which:
        from xgboost.dask import DaskXGBClassifier
        yield "xgboost", lambda: DaskXGBClassifier(**settings, tree_method="hist", max_bin=256)
    if "lightgbm" in which:
        from lightgbm import DaskLGBMClassifier
        yield "lightgbm", lambda: DaskLGBMClassifier(**settings, num_leaves=255, max_bin=255,
                                                     verbose=-1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=4_000_000)
    parser.add_argument("--trees", type=int, default=10)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--libraries", nargs="+", default=["gputree"],
                        choices=["gputree", "xgboost", "lightgbm"])
    parser.add_argument("--estimator", choices=["boosting", "forest"], default="boosting")
    parser.add_argument("--oob", action="store_true", help="a forest's oob_score")
    args = parser.parse_args()
    from distributed import Client, LocalCluster
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster):
        import dask
        # one graph for both: y's keys include X's (two persists would submit
        # X's tasks twice, which the scheduler warns may deadlock)
        X, y = dask.persist(*data(args.rows, -(-args.rows // args.partitions)))
        for name, make in estimators(args.trees, args.libraries, args.estimator, args.oob):
            make().set_params(n_estimators=1).fit(X[:2000], y[:2000])   # compile, warm up
            start = current_rss_bytes()
            reset_peak_rss()
            began = time.perf_counter()
            make().fit(X, y)
            seconds = time.perf_counter() - began
            print(f"{name}: {args.rows} rows x {N_FEATURES}, {args.trees} trees: fit "
                  f"{seconds:.1f} s; driver RSS at start {start / 2**20:.0f} MB, peak "
                  f"{(peak_rss_bytes() - start) / 2**20:+.0f} MB above it", flush=True)


if __name__ == "__main__":
    main()
