"""Driver-to-worker calls of a Dask boosting fit, per tree.

A LocalCluster of 2 worker processes (1 thread each) fits
DaskGradientBoostingClassifier (depth 8, lr 0.1, 255 bins) on --rows x 28
synthetic rows (X and y made on the driver, 4 partitions, as
``compare.py dask``). Every actor call the driver makes is counted and
timed on the driver (:meth:`WorkerRowsBackend.call`), by method; the fit's
wall seconds and the CPU seconds of the driver and of the workers are
reported, so that runs on a loaded machine can be compared by CPU time and
per-call time as well as by wall time. ``--profile DIR`` records the
workers with py-spy (when installed) during the fit.

    python benchmarks/dask_calls.py --rows 150000 --trees 20
"""
import argparse
import collections
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

# this checkout's gputree, in the driver and in the worker processes
ROOT = str(Path(__file__).resolve().parents[1])
sys.path.insert(0, ROOT)
os.environ["PYTHONPATH"] = os.pathsep.join([ROOT] + [p for p in [os.environ.get("PYTHONPATH")]
                                                      if p])


def cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def record_workers(client, folder):
    """py-spy recording every worker process (collapsed stacks, a file a
    worker, every thread: the actor thread's kernels and waits for peers,
    the event loop's comms), until SIGINT."""
    Path(folder).mkdir(parents=True, exist_ok=True)
    spies = []
    for pid in client.run(os.getpid).values():
        spies.append(subprocess.Popen(
            ["py-spy", "record", "--pid", str(pid), "--rate", "100", "--threads",
             "--format", "raw", "--output", str(Path(folder) / f"worker-{pid}.txt")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    time.sleep(2.0)
    return spies


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=150_000)
    parser.add_argument("--trees", type=int, default=20)
    parser.add_argument("--profile", metavar="DIR", help="record the workers with py-spy "
                        "during the fit (DIR/worker-<pid>.txt: collapsed stacks)")
    args = parser.parse_args()
    import numpy as np
    import gputree
    print(f"gputree from {Path(gputree.__file__).parent}")
    import dask.array as da
    from distributed import Client, LocalCluster
    from gputree.dask import DaskGradientBoostingClassifier
    from gputree.dask.worker_boosting import WorkerRowsBackend

    rng = np.random.default_rng(0)
    X = rng.normal(size=(args.rows, 28)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] * X[:, 2] + 0.5 * rng.normal(size=args.rows) > 0).astype(np.int64)
    calls = collections.defaultdict(list)
    real = WorkerRowsBackend.call

    def timed(self, method, *a, **k):
        start = time.perf_counter()
        try:
            return real(self, method, *a, **k)
        finally:
            calls[method].append(time.perf_counter() - start)

    WorkerRowsBackend.call = timed
    settings = dict(max_depth=8, learning_rate=0.1, reg_lambda=1.0, min_samples_leaf=1,
                    max_bins=255, random_state=0, device="cpu")
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        chunks = (-(-args.rows // 4), 28)
        dX, dy = da.from_array(X, chunks=chunks), da.from_array(y, chunks=chunks[0])
        DaskGradientBoostingClassifier(n_estimators=2, **settings).fit(dX[:20000], dy[:20000])
        calls.clear()
        workers_before = sum(client.run(cpu_seconds).values())
        spies = record_workers(client, args.profile) if args.profile else []
        driver_before, start = cpu_seconds(), time.perf_counter()
        model = DaskGradientBoostingClassifier(n_estimators=args.trees, **settings).fit(dX, dy)
        wall = time.perf_counter() - start
        driver = cpu_seconds() - driver_before
        workers = sum(client.run(cpu_seconds).values()) - workers_before
        for spy in spies:
            spy.send_signal(signal.SIGINT)
            spy.wait()
    with open("/proc/loadavg") as stream:
        load = stream.read().split()[:3]
    n = len(model._trees)
    print(f"{args.rows} rows x 28, {n} trees: fit {wall:.2f} s wall, driver CPU {driver:.2f} s, "
          f"workers CPU {workers:.2f} s (both workers), load {' '.join(load)}")
    total = 0.0
    for method, times in sorted(calls.items(), key=lambda kv: -sum(kv[1])):
        total += sum(times)
        print(f"  {method:14s} {len(times) / n:6.2f} calls/tree  {1e3 * np.mean(times):7.2f} ms "
              f"mean  {1e3 * np.median(times):7.2f} ms median  {sum(times):6.2f} s in all")
    print(f"  all calls     {sum(map(len, calls.values())) / n:6.2f} calls/tree  "
          f"{1e3 * total / n:7.1f} ms/tree")


if __name__ == "__main__":
    main()
