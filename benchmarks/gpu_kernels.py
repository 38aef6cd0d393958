"""The CUDA backend's primitives, one at a time, on the level shapes of a real
fit: every histogram kernel variant (kernels/histogram.cu), the row
partition, the position update and both split scan kernels (a thread per
(node, feature) and a thread block per boosting task, at --scan-threads
threads a block), timed with CUDA events (median of --repeat launches after
two warm-ups), with the bytes each moves per second against the device's
copy bandwidth, and the histogram and scan variants that "auto" picks. One
table.

    python benchmarks/gpu_kernels.py [--rows 1000000 7040000] [--levels 0 4 7]
                                     [--scan-threads 64 128 256]

Level shapes come from a real fit: a depth-8 tree of the synthetic task
(benchmarks/common.py, 28 features) grown on the CPU from --shape-rows rows;
level L's nodes keep that tree's share of the rows at depth L, scaled to
--rows, and the smaller child of each pair is built (the root is built). The
rows of each node are drawn at random, bins at random (--bins), and the
statistics are boosting's (gradient, hessian, count: int64 fixed point,
``--stats newton``) or a classifier's small integer counts (``--stats counts``,
where "node32" keeps every channel in 32 bits).

Bytes per primitive (a model, counted once per launch): histograms read each
built row's bins and statistics (and its id and position by node; every
row's position when walking all rows, once per feature group); the partition
reads and writes the level's row ids, positions and scan (~32 bytes a row);
the position update reads every position and the split rows' bins; the scan
reads the histograms. Needs an NVIDIA GPU and cupy; it refuses without one.

``--forest N [N ...]`` adds a second table: a RandomForestClassifier of N
trees of depth --forest-depth on the first --rows rows of the synthetic task
fitted whole with each --forest-batch (trees grown together: 1 is one tree at
a time, "auto" the backend's choice from free memory, "all" every tree in one
batch; gputree.growth.forest_batch), seconds by the host clock after a small
warm-up fit, the histogram launches, and whether its trees are batch 1's.
"""
import argparse
import math
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

if __package__ in (None, ""):      # run as a script: import this folder as a package
    sys.path.append(str(Path(__file__).resolve().parents[1]))
    __package__ = "benchmarks"

#: the synthetic task's features and the real-fit tree's depth
N_FEATURES = 28
SHAPE_DEPTH = 8
HISTOGRAM_VARIANTS = ("global", "shared", "node", "node32")


@dataclass
class LevelShape:
    """One level of a fit: rows per level node (int64 (n_level,)) and which
    nodes are built (bool (n_level,)); level_start is the level's first id."""
    level: int
    sizes: np.ndarray
    built: np.ndarray

    @property
    def level_start(self):
        return 2 ** self.level - 1 if self.level else 0

    @property
    def rows_built(self):
        return int(self.sizes[self.built].sum())


def tree_level_fractions(tree, level):
    """Share of the root's rows in each node of depth ``level`` (float64,
    breadth-first order: siblings are consecutive pairs) of TreeArrays."""
    nodes = np.flatnonzero(tree.depth == level)
    return tree.n_node_samples[nodes] / tree.n_node_samples[0]


def scaled_sizes(fractions, n_rows):
    """int64 sizes in proportion to ``fractions`` that sum to
    round(n_rows * sum(fractions)) (largest remainders get the spare rows)."""
    exact = np.asarray(fractions, dtype=np.float64) * n_rows
    sizes = np.floor(exact).astype(np.int64)
    spare = int(round(exact.sum())) - int(sizes.sum())
    sizes[np.argsort(sizes - exact, kind="stable")[:spare]] += 1
    return sizes


def smaller_siblings(sizes, level):
    """bool (n_level,): the node of each sibling pair that the grower builds
    (the one with fewer rows, the left one on a tie); the root alone at
    level 0."""
    built = np.zeros(sizes.size, dtype=bool)
    if level == 0:
        built[:] = True
        return built
    left, right = sizes[0::2], sizes[1::2]
    built[0::2] = left <= right
    built[1::2] = left > right
    return built


def level_shape(tree, level, n_rows):
    """The LevelShape of ``tree``'s level scaled to ``n_rows`` rows."""
    sizes = scaled_sizes(tree_level_fractions(tree, level), n_rows)
    if level and sizes.size % 2:
        raise ValueError(f"level {level} of the shape tree has an odd number of nodes")
    return LevelShape(level, sizes, smaller_siblings(sizes, level))


def shape_tree(n_rows, seed=0):
    """A depth-8 tree of the synthetic task grown on the CPU (TreeArrays)."""
    from gputree import DecisionTreeClassifier
    from .common import classification_data
    X, y = classification_data(n_rows)
    model = DecisionTreeClassifier(max_depth=SHAPE_DEPTH, max_bins=255, device="cpu",
                                   random_state=seed).fit(X, y)
    return model.tree_


def level_arrays(shape, n_rows, n_features, n_bins, stats_kind, seed=0):
    """Host arrays of one level: X_binned (n_rows, n_features) F-order bins,
    stats int64 (n_rows, C), positions int32 (every row of a level node at
    it, at random; the rest finished, -1), node_to_build int32 (n_level,),
    n_build, and the statistics' layout/inverse scale for the split scan."""
    from gputree.criteria import GINI, classification_statistics, newton_statistics
    rng = np.random.default_rng(seed)
    dtype = np.uint8 if n_bins <= 256 else np.uint16
    X = np.asfortranarray(rng.integers(0, n_bins, (n_rows, n_features), dtype=dtype))
    nodes = np.repeat(np.arange(shape.sizes.size, dtype=np.int32) + shape.level_start,
                      shape.sizes)
    positions = rng.permutation(np.concatenate(
        [nodes, np.full(n_rows - nodes.size, -1, np.int32)])).astype(np.int32)
    if stats_kind == "newton":
        g = rng.normal(size=(n_rows, 1))
        stats = newton_statistics(g, np.full((n_rows, 1), 0.25), np.ones(n_rows))
    else:
        stats = classification_statistics(rng.integers(0, 2, (n_rows, 1)), 2, np.ones(n_rows),
                                          GINI)
    node_to_build = np.full(shape.sizes.size, -1, np.int32)
    node_to_build[shape.built] = np.arange(int(shape.built.sum()), dtype=np.int32)
    return X, stats, positions, node_to_build, int(shape.built.sum())


def histogram_bytes(variant, shape, n_rows, n_features, code_bytes, n_channels, groups=1):
    """Bytes a histogram launch reads (the model in the module docstring)."""
    per_row = n_features * code_bytes + n_channels * 8
    if variant.startswith("node"):
        return shape.rows_built * (per_row + 8)
    return 4 * n_rows * groups + shape.rows_built * per_row


def partition_bytes(shape):
    """Bytes the row partition of a level moves (~32 per row of the level)."""
    return 32 * int(shape.sizes.sum())


def update_bytes(shape, n_rows, code_bytes):
    """Bytes the position update moves: every position read, split rows'
    bins read and positions written."""
    return 4 * n_rows + int(shape.sizes.sum()) * (code_bytes + 4)


def scan_bytes(n_nodes, n_features, n_bins, n_channels):
    """Bytes of the histograms the split scan reads."""
    return n_nodes * n_features * n_bins * n_channels * 8


# ------------------------------------------------------------------ on the GPU

def time_ms(xp, launch, repeat, before=None):
    """Median milliseconds of ``launch()`` over ``repeat`` runs after two
    warm-ups (``before()`` runs untimed first): between two CUDA events on
    a GPU (xp cupy), by the host clock on the simulated device (numpy; no
    warm-ups: its times only show that the table comes out)."""
    times = []
    warm_ups = 0 if xp is np else 2
    for i in range(repeat + warm_ups):
        if before is not None:
            before()
        if xp is np:
            start = time.perf_counter()
            launch()
            elapsed = 1e3 * (time.perf_counter() - start)
        else:
            start, end = xp.cuda.Event(), xp.cuda.Event()
            start.record()
            launch()
            end.record()
            end.synchronize()
            elapsed = xp.cuda.get_elapsed_time(start, end)
        if i >= warm_ups:
            times.append(elapsed)
    return statistics.median(times)


def copy_bandwidth_gbs(xp, nbytes=2**30):
    """GB/s of a device-to-device copy of ``nbytes`` (bytes read + written)."""
    a = xp.ones(nbytes // 8, dtype=np.float64)
    b = xp.empty_like(a)
    ms = time_ms(xp, lambda: b.__setitem__(Ellipsis, a), 10)
    return 2 * a.nbytes / ms / 1e6


def bench_level(backend, shape, n_rows, args, rows_out):
    """Time every primitive on one level; append table rows."""
    xp = backend.xp
    from gputree.backends.cuda.row_partition import segments_from_positions
    from gputree.growth.params import GrowthParams
    kernels = backend.kernels
    X, stats, positions, node_to_build, n_build = level_arrays(
        shape, n_rows, N_FEATURES, args.bins, args.stats)
    n_channels = stats.stats.shape[1]
    code = 1 if args.bins <= 256 else 2
    d = {"stats": xp.asarray(stats.stats), "positions": xp.asarray(positions),
         "node_to_build": xp.asarray(node_to_build)}
    X_d = xp.asarray(X, order="F")
    out = xp.zeros((n_build, N_FEATURES, args.bins, n_channels), np.int64)
    segments = segments_from_positions(xp, d["positions"], shape.level_start, shape.sizes.size)
    base = dict(rows=n_rows, level=shape.level, nodes=f"{n_build}/{shape.sizes.size}",
                rows_built=shape.rows_built)
    saved = kernels.histogram_kernel
    auto = kernels.histogram_variant(True)
    for variant in HISTOGRAM_VARIANTS:
        kernels.histogram_kernel = variant
        launch = (lambda: kernels.build_histograms(
            X_d, d["stats"], d["positions"], shape.level_start, d["node_to_build"], n_build,
            args.bins, out=out, segments=segments))
        ms = time_ms(xp, launch, args.repeat)
        groups = 1
        if variant in ("global", "shared"):
            nodes, features, _ = kernels._histogram_groups(n_build, N_FEATURES, args.bins,
                                                           n_channels, variant)
            groups = math.ceil(N_FEATURES / features) * math.ceil(n_build / nodes)
            detail = f"{groups} group(s)"
        else:
            plan = kernels.plan_by_node(n_rows, N_FEATURES, args.bins, n_channels, n_build,
                                        variant == "node32")
            detail = (f"{plan.grid[0]}x{plan.grid[1]} blocks, {plan.features_per_group} "
                      f"features, {plan.shared_bytes // 1024} KiB, "
                      f"{'int32' if plan.narrow else 'int64'}")
        nbytes = histogram_bytes(variant, shape, n_rows, N_FEATURES, code, n_channels, groups)
        rows_out.append(dict(base, primitive="build_histograms", variant=variant, ms=ms,
                             bytes=nbytes, auto="<- auto" if variant == auto else "",
                             detail=detail))
    kernels.histogram_kernel = saved
    if shape.level:
        rows_out.append(dict(base, primitive="partition_rows", variant="", auto="", detail="",
                             ms=time_partition(backend, shape, d["positions"], args.repeat),
                             bytes=partition_bytes(shape)))
    rows_out.append(dict(base, primitive="update_positions", variant="", auto="", detail="",
                         ms=time_update(backend, X_d, d["positions"], shape, args.repeat),
                         bytes=update_bytes(shape, n_rows, code)))
    hist = xp.zeros((n_build, N_FEATURES, args.bins, n_channels), np.int64)
    kernels.build_histograms(X_d, d["stats"], d["positions"], shape.level_start,
                             d["node_to_build"], n_build, args.bins, out=hist, segments=segments)
    scan_args = (hist, xp.full(N_FEATURES, args.bins - 1, np.int32),
                 xp.zeros(N_FEATURES, np.uint8), xp.ones((n_build, N_FEATURES), np.uint8),
                 args.bins - 1, xp.asarray(stats.layout), xp.asarray(stats.inv_scale),
                 xp.asarray(GrowthParams().criterion_params()))
    bench_scan(backend, scan_args, args, base, rows_out)


def scan_variants(backend, n_bins, scan_threads):
    """(kernel, threads a block or None, is "auto"'s choice) of every scan
    variant: the thread kernel, the block kernel at each of ``scan_threads``
    (None: the backend's choice for ``n_bins`` bins)."""
    from gputree.backends.cuda.numba_kernels import block_scan_threads, scan_kernel_for
    auto = scan_kernel_for("auto", backend.runtime)
    default = block_scan_threads(n_bins)
    variants = [("thread", None, auto == "thread")]
    for threads in scan_threads or [default]:
        variants.append(("block", threads, auto == "block" and threads == default))
    return variants


def bench_scan(backend, scan_args, args, base, rows_out):
    """Time find_best_splits with every scan variant; append table rows."""
    from gputree.backends.cuda.numba_kernels import THREADS_PER_BLOCK
    n_build = scan_args[0].shape[0]
    n_tasks = n_build * N_FEATURES
    n_channels = scan_args[0].shape[3]
    saved = backend.scan_kernel, backend.scan_threads
    for kernel, threads, is_auto in scan_variants(backend, args.bins, args.scan_threads):
        backend.scan_kernel, backend.scan_threads = kernel, threads
        detail = (f"{n_tasks} blocks x {threads} threads" if kernel == "block" else
                  f"{math.ceil(n_tasks / THREADS_PER_BLOCK)} blocks x {THREADS_PER_BLOCK} "
                  "threads")
        rows_out.append(dict(base, primitive="find_best_splits", variant=kernel,
                             auto="<- auto" if is_auto else "", detail=detail,
                             ms=time_ms(backend.xp, lambda: backend.find_best_splits(*scan_args),
                                        args.repeat),
                             bytes=scan_bytes(n_build, N_FEATURES, args.bins, n_channels)))
    backend.scan_kernel, backend.scan_threads = saved


def parent_positions(xp, positions, level_start):
    """The previous level's positions of a level's rows (children 2i, 2i+1
    of parent i, as the grower numbers them)."""
    k = positions - level_start
    parent_start = (level_start - 1) // 2
    return xp.where(positions >= level_start, parent_start + k // 2, positions).astype(np.int32)


def time_partition(backend, shape, positions, repeat):
    """Milliseconds of the stable partition of the parent level's rows into
    this level's nodes (every parent split)."""
    xp = backend.xp
    from gputree.backends.cuda.row_partition import segments_from_positions
    n_parent = shape.sizes.size // 2
    parent_start = (shape.level_start - 1) // 2
    parent = segments_from_positions(xp, parent_positions(xp, positions, shape.level_start),
                                     parent_start, n_parent)
    split_feature = xp.zeros(n_parent, np.int32)
    left_child = (shape.level_start + 2 * xp.arange(n_parent)).astype(np.int32)
    n = positions.shape[0]
    scan, new_order = xp.empty(n, np.int32), xp.empty(n, np.int32)
    begin, end = xp.empty(2 * n_parent, np.int32), xp.empty(2 * n_parent, np.int32)
    return time_ms(xp, lambda: backend.kernels.partition_rows(
        parent, positions, split_feature, left_child, shape.level_start, scan, new_order,
        begin, end), repeat)


def time_update(backend, X, positions, shape, repeat):
    """Milliseconds of moving every row of the level to a child (feature 0,
    half the bins left), on a copy of the positions restored before each run."""
    from gputree._dtypes import BITSET_DTYPE, BITSET_WORDS, WORD_COUNT_DTYPE, WORD_START_DTYPE
    from gputree.tree import LeftSets
    xp = backend.xp
    n_level = shape.sizes.size
    work = positions.copy()
    bitset = xp.zeros((n_level, BITSET_WORDS), BITSET_DTYPE)
    bitset[:, :4] = 0xFFFFFFFF
    sets = LeftSets(bitset, xp.zeros(0, BITSET_DTYPE), xp.zeros(n_level, WORD_START_DTYPE),
                    xp.zeros(n_level, WORD_COUNT_DTYPE))
    left = (shape.level_start + n_level + 2 * xp.arange(n_level)).astype(np.int32)
    feature = xp.zeros(n_level, np.int32)
    return time_ms(xp, lambda: backend.kernels.update_positions(
        X, work, shape.level_start, feature, sets, left), repeat,
        before=lambda: work.__setitem__(Ellipsis, positions))


def print_table(rows, bandwidth):
    """The one table: ms, GB/s and share of the copy bandwidth per row."""
    header = ("rows", "level", "built/nodes", "rows built", "primitive", "variant", "ms",
              "GB/s", "% copy BW", "", "launch")
    print(" | ".join(header))
    print(" | ".join("---" for _ in header))
    for r in rows:
        gbs = r["bytes"] / r["ms"] / 1e6
        print(" | ".join(str(v) for v in (
            f"{r['rows']:,}", r["level"], r["nodes"], f"{r['rows_built']:,}", r["primitive"],
            r["variant"], f"{r['ms']:.3f}", f"{gbs:.0f}", f"{100 * gbs / bandwidth:.0f}",
            r["auto"], r["detail"])))


def bench_forest(backend, n_rows, n_trees, depth, batches):
    """Fit a forest of ``n_trees`` once per batch option of ``batches``
    (ints, "auto", "all"); a row of the forest table per fit."""
    from gputree import RandomForestClassifier
    from .common import classification_data
    X, y = classification_data(n_rows)
    params = dict(n_estimators=n_trees, max_depth=depth, random_state=0, device=backend.name)
    saved, rows, first = backend.forest_batch, [], None
    try:
        RandomForestClassifier(**{**params, "n_estimators": 2}).fit(X[:5000], y[:5000])
        for batch in batches:
            backend.forest_batch = n_trees if batch == "all" else batch
            backend.launches.clear()
            start = time.perf_counter()
            model = RandomForestClassifier(**params).fit(X, y)
            seconds = time.perf_counter() - start
            trees = [(t.feature.tobytes(), t.value.tobytes()) for t in model._trees]
            first = trees if first is None else first
            rows.append({"rows": n_rows, "trees": n_trees, "depth": depth, "batch": batch,
                         "chosen": backend.last_forest_batch,
                         "seconds": seconds, "builds": backend.launches["build_histograms"],
                         "same": trees == first})
    finally:
        backend.forest_batch = saved
    return rows


def print_forest_table(rows):
    """The forest table: one fit per row."""
    header = ("rows", "trees", "depth", "forest_batch", "trees a batch", "fit s", "ms / tree",
              "histogram launches", "trees as batch 1")
    print(" | ".join(header))
    print(" | ".join("---" for _ in header))
    for r in rows:
        print(" | ".join(str(v) for v in (
            f"{r['rows']:,}", r["trees"], r["depth"], r["batch"], r["chosen"],
            f"{r['seconds']:.3f}", f"{1e3 * r['seconds'] / r['trees']:.1f}", r["builds"],
            "yes" if r["same"] else "NO")))


def no_gpu_reason():
    """Why this benchmark cannot run here, or None."""
    from gputree.backends import cuda_available
    if not cuda_available():
        return ("benchmarks/gpu_kernels.py times CUDA kernels with CUDA events: it needs an "
                "NVIDIA GPU and cupy (pip install 'gputree[cuda]'), and none is usable here. "
                "Run it on a GPU machine (benchmarks/gpu_check.sh runs it).")
    return None


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 7_040_000])
    parser.add_argument("--levels", type=int, nargs="+", default=[0, 4, 7])
    parser.add_argument("--bins", type=int, default=256, help="bins per feature (codes)")
    parser.add_argument("--stats", choices=("newton", "counts"), default="newton")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--scan-threads", type=int, nargs="+", default=None,
                        help="threads a block of the block scan, one variant each (powers of "
                             "two up to 256; default: the backend's choice for --bins)")
    parser.add_argument("--shape-rows", type=int, default=200_000,
                        help="rows of the CPU fit whose levels give the shapes")
    parser.add_argument("--device", choices=("cuda", "cuda-sim"), default="cuda",
                        help="cuda-sim: a check of this script on the simulated device "
                             "(NUMBA_ENABLE_CUDASIM=1; its times are the CPU's, not a GPU's)")
    parser.add_argument("--forest", type=int, nargs="*", default=[],
                        help="trees of each forest fit of the forest table (none: no table)")
    parser.add_argument("--forest-depth", type=int, default=10)
    parser.add_argument("--forest-batch", nargs="+", default=["1", "auto", "all"],
                        help="forest_batch options, one fit each: ints, auto, all")
    args = parser.parse_args(argv)
    from gputree.backends.cuda.backend import check_forest_batch
    from gputree.backends.cuda.numba_kernels import check_scan_threads
    try:
        args.forest_batch = [b if b in ("auto", "all") else check_forest_batch(b, "--forest-batch")
                             for b in args.forest_batch]
    except ValueError as exc:
        parser.error(str(exc))
    bad = [level for level in args.levels if not 0 <= level <= SHAPE_DEPTH - 1]
    if bad:
        parser.error(f"--levels must be between 0 and {SHAPE_DEPTH - 1}, got {bad}")
    try:
        for threads in args.scan_threads or []:
            check_scan_threads(threads, "--scan-threads")
    except ValueError as exc:
        parser.error(str(exc))
    return args


def main(argv=None):
    args = parse_args(argv)
    reason = no_gpu_reason() if args.device == "cuda" else None
    if reason:
        print(reason, file=sys.stderr)
        return 2
    from gputree.backends import get_backend
    backend = get_backend(args.device)
    xp = backend.xp
    if xp is np:
        device = "simulated device (CPU times, not a GPU's)"
        bandwidth = copy_bandwidth_gbs(np, 2**24)
    else:
        device = xp.cuda.runtime.getDeviceProperties(0)["name"].decode()
        bandwidth = copy_bandwidth_gbs(xp)
    print(f"# {device}; device-to-device copy {bandwidth:.0f} GB/s (read + write); "
          f"{args.bins} bins, {args.stats} statistics, median of {args.repeat}")
    tree = shape_tree(args.shape_rows)
    rows = []
    for n_rows in args.rows:
        for level in args.levels:
            bench_level(backend, level_shape(tree, level, n_rows), n_rows, args, rows)
            if xp is not np:
                xp.get_default_memory_pool().free_all_blocks()
    print_table(rows, bandwidth)
    forest = []
    for n_trees in args.forest:
        forest += bench_forest(backend, args.rows[0], n_trees, args.forest_depth,
                               args.forest_batch)
    if forest:
        print()
        print_forest_table(forest)
    return 0


if __name__ == "__main__":
    sys.exit(main())
