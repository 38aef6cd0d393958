"""Driver-to-worker calls of a Dask boosting fit, per tree.

A LocalCluster of 2 worker processes (1 thread each) fits
DaskGradientBoostingClassifier (depth 8, lr 0.1, 255 bins) on --rows x 28
synthetic rows (X and y made on the driver, 4 partitions, as
``compare.py dask``). Every actor call the driver makes is counted and
timed on the driver (:meth:`WorkerRowsBackend.call`), by method; the fit's
wall seconds and the CPU seconds of the driver and of the workers are
reported, so that runs on a loaded machine can be compared by CPU time and
per-call time as well as by wall time. ``--profile DIR`` records the
workers with py-spy (when installed) during the fit. ``--phases``: the
fit's phases on the driver (:data:`PHASES`, wall seconds each, nested
phases indented under theirs) and the client's calls to the scheduler
(submit, compute, gather, wait, ...: how many, and seconds the driver
spent in them), and each worker's CPU seconds by thread (Linux).

    python benchmarks/dask_calls.py --rows 150000 --trees 20
    python benchmarks/dask_calls.py --rows 150000 --trees 100 --phases
    python benchmarks/dask_calls.py --rows 150000 --trees 100 --phases --fresh
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


#: the fit's phases timed on the driver with --phases: (module, attribute
#: path), in the order a fit runs them
PHASES = [
    ("gputree.dask.estimators", "fit_recovering"),
    ("gputree.dask.estimators", "encoded_partitions"),
    ("gputree.dask.worker_boosting", "WorkerResidentBoosting._fit_dask"),
    ("gputree.dask.targets", "WorkerTargets.__init__"),
    ("gputree.dask.targets", "vector_parts"),
    ("gputree.dask.estimators", "bin_partitions"),
    ("gputree.dask.inputs", "sampled_ranks"),
    ("gputree.dask.inputs", "_gathered_summaries"),
    ("gputree.dask.inputs", "bin_new_partitions"),
    ("gputree.dask.worker_boosting", "WorkerRowsBackend.__init__"),
    ("gputree.dask.worker_boosting", "WorkerResidentBoosting._worker_weights"),
    ("gputree.dask.worker_boosting", "WorkerResidentBoosting._initial_raw"),
    ("gputree.dask.worker_boosting", "WorkerResidentBoosting._make_rows"),
    ("gputree.dask.worker_boosting", "WorkerResidentBoosting._boost"),
    ("gputree.dask.worker_boosting", "WorkerResidentBoosting._call_rounds"),
    ("gputree.dask.worker_boosting", "WorkerResidentBoosting._train_score"),
    ("gputree.dask.estimators", "_DaskEstimator._release_fit"),
]
#: the client's methods counted with --phases (distributed.wait too)
CLIENT_CALLS = ["submit", "compute", "gather", "scatter", "run", "run_on_scheduler",
                "who_has", "scheduler_info"]


class PhaseClock:
    """Wall seconds of the fit's phases (``PHASES``) and of the client's
    calls, on the driver; ``depth`` of each phase: the phases it ran in."""

    def __init__(self):
        self.seconds = collections.defaultdict(float)
        self.counts = collections.Counter()
        self.depth, self.order, self.open = {}, [], []
        self.undo = []

    def wrap(self, owner, name, label, nested=True):
        real = getattr(owner, name)
        clock = self

        def timed(*args, **kwargs):
            if nested:
                clock.depth.setdefault(label, len(clock.open))
                clock.order.append(label) if label not in clock.order else None
                clock.open.append(label)
            start = time.perf_counter()
            try:
                return real(*args, **kwargs)
            finally:
                clock.seconds[label] += time.perf_counter() - start
                clock.counts[label] += 1
                if nested:
                    clock.open.pop()
        setattr(owner, name, timed)
        self.undo.append((owner, name, real))

    def install(self, client_class):
        import importlib
        import distributed
        for module, path in PHASES:
            owner = importlib.import_module(module)
            *outer, name = path.split(".")
            for part in outer:
                owner = getattr(owner, part)
            if hasattr(owner, name):         # another checkout may lack it
                self.wrap(owner, name, path)
        for name in CLIENT_CALLS:
            self.wrap(client_class, name, "client." + name, nested=False)
        self.wrap(distributed, "wait", "distributed.wait", nested=False)

    def uninstall_client(self):
        """Stop counting the client's calls (the fit is over)."""
        for owner, name, real in self.undo:
            if name in CLIENT_CALLS or name == "wait":
                setattr(owner, name, real)

    def reset(self):
        self.seconds.clear()
        self.counts.clear()
        self.depth.clear()
        self.order.clear()

    def report(self, wall):
        print(f"  phases (driver wall seconds; nested phases indented):")
        top = 0.0
        for label in self.order:
            if self.depth[label] == 0:
                top += self.seconds[label]
            print(f"    {'  ' * self.depth[label]}{label:{48 - 2 * self.depth[label]}s} "
                  f"{self.counts[label]:5d}x {self.seconds[label]:7.3f} s")
        print(f"    {'outside fit_recovering':48s}        {wall - top:7.3f} s")
        print("  scheduler calls from the driver:")
        for label in sorted(k for k in self.counts if k not in self.depth):
            print(f"    {label:30s} {self.counts[label]:5d}x {self.seconds[label]:7.3f} s")


def cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def thread_seconds():
    """CPU seconds of this process's threads by name (digits dropped): in a
    worker the actor thread (kernels, the grower), the peer links' thread
    (every message's comm work), the event loop (MainThread)."""
    import glob
    import re
    import threading
    names = {t.native_id: re.sub(r"[-_ ]?\d+", "", t.name) for t in threading.enumerate()}
    tick, seconds = os.sysconf("SC_CLK_TCK"), collections.Counter()
    for folder in glob.glob("/proc/self/task/*"):
        try:
            with open(folder + "/stat") as stream:
                fields = stream.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        name = names.get(int(folder.rsplit("/", 1)[1]), "other")
        seconds[name] += (int(fields[11]) + int(fields[12])) / tick
    return dict(seconds)


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


def training_rows(args):
    """(X float32 (rows, 28), y int labels, rows of the warm-up fit)."""
    import numpy as np
    if args.compare_data:
        from benchmarks.common import WARM_UP_ROWS
        from benchmarks.datasets import synthetic
        data = synthetic(int(round(args.rows / 0.75)))
        return np.asarray(data.X_train), np.asarray(data.y_train), WARM_UP_ROWS
    rng = np.random.default_rng(0)
    X = rng.normal(size=(args.rows, 28)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] * X[:, 2] + 0.5 * rng.normal(size=args.rows) > 0).astype(np.int64)
    return X, y, 20000


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=150_000)
    parser.add_argument("--trees", type=int, default=20)
    parser.add_argument("--compare-data", action="store_true", help="compare.py dask's "
                        "data instead (make_classification: --rows training rows of "
                        "--rows / 0.75, its 2,000-row warm-up fit)")
    parser.add_argument("--fresh", action="store_true",
                        help="time the first fit on fresh worker processes, as compare.py "
                             "dask does (the warm-up runs on a cluster of its own)")
    parser.add_argument("--phases", action="store_true", help="time the fit's phases and "
                        "count the client's calls (see the module docstring)")
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

    X, y, warm_rows = training_rows(args)
    calls = collections.defaultdict(list)
    real = WorkerRowsBackend.call

    def timed(self, method, *a, **k):
        start = time.perf_counter()
        try:
            return real(self, method, *a, **k)
        finally:
            calls[method].append(time.perf_counter() - start)

    WorkerRowsBackend.call = timed
    phases = PhaseClock() if args.phases else None
    if phases:
        phases.install(Client)
    settings = dict(max_depth=8, learning_rate=0.1, reg_lambda=1.0, min_samples_leaf=1,
                    max_bins=255, random_state=0, device="cpu")
    def warm_up():
        """A 2-tree fit on rows of every partition (on the current client):
        every worker warmed up."""
        step = -(-args.rows // warm_rows)
        DaskGradientBoostingClassifier(n_estimators=2, **settings).fit(dX[::step], dy[::step])

    chunks = (-(-args.rows // 4), 28)
    dX, dy = da.from_array(X, chunks=chunks), da.from_array(y, chunks=chunks[0])
    if args.fresh:      # the driver and numba's cache warm, the timed cluster's workers not
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster) as client:
            warm_up()
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        if not args.fresh:
            warm_up()
        calls.clear()
        workers_before = sum(client.run(cpu_seconds).values())
        threads_before = client.run(thread_seconds) if phases else None
        if phases:
            phases.reset()
        spies = record_workers(client, args.profile) if args.profile else []
        driver_before, start = cpu_seconds(), time.perf_counter()
        model = DaskGradientBoostingClassifier(n_estimators=args.trees, **settings).fit(dX, dy)
        wall = time.perf_counter() - start
        if phases:
            phases.uninstall_client()     # the benchmark's own calls below are not the fit's
        driver = cpu_seconds() - driver_before
        workers = sum(client.run(cpu_seconds).values()) - workers_before
        threads = client.run(thread_seconds) if phases else None
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
    if phases:
        phases.report(wall)
        print("  workers' CPU seconds by thread during the fit:")
        for worker, after in threads.items():
            spent = {name: after[name] - threads_before[worker].get(name, 0.0) for name in after}
            print("    " + worker + ": " + ", ".join(f"{name} {value:.2f}" for name, value in
                                                  sorted(spent.items()) if value >= 0.01))


if __name__ == "__main__":
    main()
