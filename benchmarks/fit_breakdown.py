"""Where a CPU fit's time goes: every kernel gputree runs on its threads
(``gputree._threads.run_parts``: the histogram pass, the subtraction, the
split scan, the partition, the ranking pass, ...), its calls, parts and
seconds, and what is left: the host's per-level work (plans, uploads,
downloads, node bookkeeping) and the kernels called without threads.

    python benchmarks/fit_breakdown.py --data /work/data/lambdarank
    python benchmarks/fit_breakdown.py --rows 90000            # synthetic queries
    python benchmarks/fit_breakdown.py --data DIR --serial     # each kernel in one part
    python benchmarks/fit_breakdown.py --data DIR --lossguide  # best first, 31 leaves

The fit is the ``rank`` scenario's first ranker of ``benchmarks/compare.py``
(GradientBoostingRanker, depth 6, 100 trees; ``--lossguide``: its lossguide
ranker, 31 leaves, depth unbounded), after a warm-up fit (numba's
compiles are not timed); the median of ``--repeat`` fits is reported, each
kernel's seconds from that same fit. A diagnosis, not a comparison with the
peers: ``compare.py`` times those, in a fresh process.
"""
import argparse
import collections
import os
import sys
import time
from pathlib import Path

# the gputree of this checkout, whatever else is installed
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _kernel_name(kernel):
    function = getattr(kernel, "py_func", kernel)
    return getattr(function, "__name__", repr(kernel))


class KernelClock:
    """Wraps ``run_parts`` where the threaded kernels call it: seconds,
    calls and parts per kernel name; ``serial`` runs every kernel in one
    part (the work of a call on one thread, no thread handed any)."""

    def __init__(self, serial=False):
        from gputree.backends.cpu import threaded
        self.module, self.original = threaded, threaded.run_parts
        self.serial = serial
        self.seconds = collections.Counter()
        self.calls = collections.Counter()
        self.parts = collections.Counter()
        threaded.run_parts = self._run

    def _run(self, kernel, n_parts, *args, **options):
        n_parts = 1 if self.serial else n_parts
        start = time.perf_counter()
        try:
            return self.original(kernel, n_parts, *args, **options)
        finally:
            name = _kernel_name(kernel)
            self.seconds[name] += time.perf_counter() - start
            self.calls[name] += 1
            self.parts[name] += n_parts

    def reset(self):
        for counter in (self.seconds, self.calls, self.parts):
            counter.clear()

    def snapshot(self):
        return {name: (self.seconds[name], self.calls[name], self.parts[name])
                for name in self.seconds}


def _ranking_data(args):
    from benchmarks.datasets import letor_files, synthetic_ranking
    return letor_files(args.data) if args.data else synthetic_ranking(args.rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", help="a folder of LETOR-style files (compare.py rank --data)")
    parser.add_argument("--rows", type=int, default=90_000, help="synthetic query rows")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--serial", action="store_true", help="every kernel in one part")
    parser.add_argument("--lossguide", action="store_true",
                        help="the rank scenario's lossguide ranker (31 leaves, depth unbounded)")
    args = parser.parse_args(argv)

    import gputree
    from benchmarks.compare import RANK_SETTINGS
    data = _ranking_data(args)
    shape = (dict(grow_policy="lossguide", max_depth=None) if args.lossguide
             else dict(max_depth=6))
    model = gputree.GradientBoostingRanker(**dict(
        RANK_SETTINGS, **shape, reg_lambda=1.0, max_bins=255,
        lambdarank_truncation_level=30, early_stopping=False, device="cpu"))
    clock = KernelClock(args.serial)
    model.fit(data.X_train, data.y_train, group=data.group_train)     # compiles
    fits = []
    for _ in range(args.repeat):
        clock.reset()
        start = time.perf_counter()
        model.fit(data.X_train, data.y_train, group=data.group_train)
        fits.append((time.perf_counter() - start, clock.snapshot()))
    fits.sort(key=lambda fit: fit[0])
    wall, kernels = fits[len(fits) // 2]
    in_kernels = sum(seconds for seconds, _, _ in kernels.values())
    print(f"data: {data.name}: {data.X_train.shape[0]:,} rows x {data.X_train.shape[1]} "
          f"features; {'one part per kernel call' if args.serial else 'parts as gputree runs'}")
    print(f"fits (s): {', '.join(f'{w:.3f}' for w, _ in fits)}; median {wall:.3f} s "
          f"(load average {', '.join(f'{x:.2f}' for x in os.getloadavg())})")
    print(f"{'kernel':<28} {'seconds':>8} {'share':>6} {'calls':>6} {'ms/call':>8} "
          f"{'parts/call':>10}")
    for name, (seconds, calls, parts) in sorted(kernels.items(), key=lambda kv: -kv[1][0]):
        print(f"{name:<28} {seconds:8.3f} {seconds / wall:6.1%} {calls:6d} "
              f"{seconds / calls * 1e3:8.3f} {parts / calls:10.2f}")
    rest = wall - in_kernels
    print(f"{'(host work, other kernels)':<28} {rest:8.3f} {rest / wall:6.1%}")


if __name__ == "__main__":
    main()
