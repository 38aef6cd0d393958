"""What the ranker's split scan costs per (node, feature) task, level by
level: the histograms and arguments of one tree's scans are kept, then each
level's scan is run again on one thread many times (the fastest run
counts; before each, the cells the scan derives are copied back, as the
fit leaves them), in three forms: as the fit runs it, with the features that can
never split (one bin, no missing value) left out of ``feature_allowed``,
and without the in-place derivation of larger siblings.

    python benchmarks/scan_cost.py --data /work/data/lambdarank
    python benchmarks/scan_cost.py --rows 90000            # synthetic queries

A diagnosis of the scan kernel alone (``fit_breakdown.py`` places it in
the fit): the nanoseconds per task show what a cheaper scan of some
features or of the derivation could save, and how a task's cost grows
with the level's histograms (more nodes: more memory read).
"""
import argparse
import sys
import time
from pathlib import Path

import numpy as np

# the gputree of this checkout, whatever else is installed
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _kept_scans(model, data, n_levels):
    """Fit one tree of ``model``, keeping each of its first ``n_levels``
    scans' (steps, histograms copy, rows, allowed copy, built_of copy)."""
    from gputree.backends.cpu import level_step
    original, kept = level_step.LevelSteps.scan, []

    def scan(steps, hist, n_rows, n_scan):
        if len(kept) < n_levels:
            kept.append((steps, hist.copy(), n_rows, steps.allowed[:n_rows].copy(),
                         steps.built_of[:n_rows].copy()))
        return original(steps, hist, n_rows, n_scan)

    level_step.LevelSteps.scan = scan
    try:
        model.set_params(n_estimators=1).fit(data.X_train, data.y_train,
                                             group=data.group_train)
    finally:
        level_step.LevelSteps.scan = original
    return kept


def _fastest(steps, hist, n_rows, allowed, built_of, derived, cells, repeat):
    """Seconds of the fastest of ``repeat`` one-thread scans of the level,
    each after the cells the fit uses (``cells`` bool (F, n_bins): each
    feature's non-missing bins and the missing bin; the compact layout's
    (1, cells): all) of the rows ``derived``
    (int64, the derivation writes them) are copied back from ``hist``
    (whatever ``built_of`` says: every form then meets the same cache)."""
    from gputree.backends.cpu import claims, split_scan
    n_bins_non_missing, is_categorical, missing_bin, layout, inv, params = steps.constants
    rows = np.flatnonzero(allowed.any(axis=1)).astype(np.int64)     # the rows the fit scans
    scratch = steps._scratch(split_scan.scan_slots(rows.shape[0] * steps.n_features))
    outputs = [a[:n_rows] for a in steps.outputs]
    best, h = np.inf, hist.copy()
    for _ in range(repeat):
        for r in derived:
            h[r][cells] = hist[r][cells]
        start = time.perf_counter()
        steps.find_splits.compiled(h[:n_rows], n_bins_non_missing, is_categorical, allowed,
                                   steps.split_bin[:n_rows], missing_bin, layout, inv, params,
                                   *scratch, *outputs, h, built_of, steps.cells, rows,
                                   claims.slot_claims(scratch[0].shape[0], rows.shape[0]), 0, 1)
        best = min(best, time.perf_counter() - start)
    return best


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", help="a folder of LETOR-style files (compare.py rank --data)")
    parser.add_argument("--rows", type=int, default=90_000, help="synthetic query rows")
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args(argv)

    import gputree
    from benchmarks.compare import RANK_SETTINGS
    from benchmarks.datasets import letor_files, synthetic_ranking
    data = letor_files(args.data) if args.data else synthetic_ranking(args.rows)
    model = gputree.GradientBoostingRanker(**dict(
        RANK_SETTINGS, max_depth=6, reg_lambda=1.0, max_bins=255,
        lambdarank_truncation_level=30, early_stopping=False, device="cpu"))
    model.fit(data.X_train, data.y_train, group=data.group_train)     # compiles
    kept = _kept_scans(model, data, 6)
    n_bins, missing_bin = kept[0][0].constants[0], kept[0][0].constants[2]
    if kept[0][0].cells.size:       # the compact layout: every cell is a feature's
        cells = np.ones(kept[0][1].shape[1:3], dtype=bool)
    else:
        cells = np.arange(kept[0][1].shape[2]) < n_bins[:, None]
        cells[:, missing_bin] = True
    never = n_bins <= 1
    never &= ~np.isnan(np.asarray(data.X_train, dtype=float)).any(axis=0)
    print(f"data: {data.X_train.shape[0]:,} rows x {data.X_train.shape[1]} features, "
          f"{int(never.sum())} of one bin and no missing value; non-missing bins per "
          f"feature: mean {n_bins.mean():.1f}, max {n_bins.max()}")
    print(f"{'level':>5} {'nodes':>6} {'as fit':>9} {'w/o 1-bin':>10} {'no derive':>10}"
          "   (ns per scanned (node, feature), one thread)")
    for level, (steps, hist, n_rows, allowed, built_of) in enumerate(kept):
        n_tasks = int((allowed.sum(axis=1) > 0).sum()) * allowed.shape[1]
        skipped = allowed.copy()
        skipped[:, never] = 0
        derived = np.flatnonzero(built_of >= 0)
        seconds = [_fastest(steps, hist, n_rows, a, b, derived, cells,
                             args.repeat) for a, b in
                   ((allowed, built_of), (skipped, built_of),
                    (allowed, np.full_like(built_of, -1)))]
        print(f"{level:5d} {n_tasks // allowed.shape[1]:6d} "
              + " ".join(f"{s / n_tasks * 1e9:9.0f}" for s in seconds))


if __name__ == "__main__":
    main()
