"""The CPU's compact histogram layout (each feature's own bins side by
side, histograms.row_layout): the histogram passes (dense and sparse rows,
the root's count channel) write the full layout's cells, cell for cell; a
boosted model grown on compact rows (the compiled level and best-first
steps) is the one grown on full rows, with missing values and mostly-constant features."""
import numpy as np
import pytest

import gputree
from gputree.backends.cpu import bestfirst_step, histograms
from gputree.backends.cpu.backend import CPUBackend
from gputree.data.binning import BinMapper
from gputree.tree import LeftSets


def _few_bins(rng, n, n_features, constant_share):
    """float32 (n, F): feature f takes about 2 + 3f distinct values (some
    NaN), a share of each column set to its most frequent value."""
    X = np.stack([rng.randint(0, 2 + 3 * f, n) for f in range(n_features)], axis=1)
    X = X.astype(np.float32)
    X[rng.rand(n, n_features) < constant_share] = 0
    X[rng.rand(n, n_features) < 0.05] = np.nan
    return X


def _compact_view(full, feature_bins, cells, n_bins):
    """The compact rows (m, 1, cells[-1], C) holding full's (m, F, n_bins, C)
    cells that rows can be in."""
    out = np.zeros((full.shape[0], 1, int(cells[-1]), full.shape[3]), dtype=full.dtype)
    for f, n in enumerate(feature_bins):
        out[:, 0, cells[f]:cells[f] + n] = full[:, f, :n]
        if cells[f + 1] - cells[f] > n:
            out[:, 0, cells[f] + n] = full[:, f, n_bins - 1]
    return out


@pytest.mark.parametrize("constant_share", [0.0, 0.9])     # dense rows, sparse rows
@pytest.mark.parametrize("root", [True, False])
def test_compact_passes_write_the_full_layouts_cells(constant_share, root):
    rng = np.random.RandomState(0)
    n, n_features = 4000, 12
    mapper = BinMapper(max_bins=255).fit(_few_bins(rng, n, n_features, constant_share))
    X_binned = np.ascontiguousarray(mapper.transform(_few_bins(rng, n, n_features,
                                                                constant_share)))
    n_bins = mapper.missing_bin_ + 1
    feature_bins, cells = histograms.compact_cells(mapper.n_bins_non_missing_, n_bins)
    stats = rng.randint(-2**30, 2**30, (n, 3)).astype(np.int64)
    if root:
        stats[:, 2] = 1
        positions = np.zeros(n, dtype=np.int32)
        level_start, node_to_build, n_build = 0, np.zeros(1, dtype=np.int32), 1
        counts = {"bin_counts": CPUBackend().bin_counts(X_binned, n_bins)}
    else:
        positions = rng.randint(3, 9, n).astype(np.int32)
        level_start, node_to_build, n_build = 3, np.array([2, -1, 0, 3, -1, 1], np.int32), 4
        counts = {}
    no_move = np.empty(0, np.int32)
    moves = (0, no_move, LeftSets.of_bitset(np.empty((0, 1), np.uint32)), no_move)
    built = []
    for shape in ((n_build, n_features, n_bins, 3), (n_build, 1, int(cells[-1]), 3)):
        out = np.full(shape, -7, dtype=np.int64)      # rows held other histograms before
        CPUBackend().move_and_build_histograms(
            X_binned, positions.copy(), moves, stats, level_start, node_to_build, n_build,
            n_bins, out, feature_bins=mapper.n_bins_non_missing_, **counts)
        built.append(out)
    full, compact = built
    np.testing.assert_array_equal(compact, _compact_view(full, feature_bins, cells, n_bins))
    # and the full pass is right: every feature's cells sum to its node's totals
    for row, node in enumerate(np.argsort(node_to_build)[-n_build:]):
        totals = stats[positions == level_start + node].sum(axis=0)
        np.testing.assert_array_equal(
            compact[row, 0].sum(axis=0), n_features * totals)


@pytest.mark.parametrize("constant_share, colsample, shape", [
    (0.0, 1.0, dict(max_depth=4)), (0.9, 1.0, dict(max_depth=4)),
    (0.3, 0.6, dict(max_depth=4)),
    (0.0, 1.0, dict(grow_policy="lossguide", max_depth=None, max_leaf_nodes=12)),
    (0.9, 1.0, dict(grow_policy="lossguide", max_depth=None, max_leaf_nodes=12)),
    (0.3, 0.6, dict(grow_policy="lossguide", max_depth=None, max_leaf_nodes=12))])
def test_a_ranker_grown_on_compact_rows_is_the_full_layouts(monkeypatch, constant_share,
                                                            colsample, shape):
    # colsample_bytree: each tree's columns, of other bins (other compact rows);
    # the compiled level steps (max_depth) and best-first steps (lossguide)
    rng = np.random.RandomState(1)
    n, n_features = 3000, 10
    X = _few_bins(rng, n, n_features, constant_share)
    y = rng.randint(0, 4, n)
    shapes = []
    original = bestfirst_step.BestFirstSteps.histogram_rows

    def histogram_rows(steps, row_shape):
        shapes.append(original(steps, row_shape))
        return shapes[-1]

    monkeypatch.setattr(bestfirst_step.BestFirstSteps, "histogram_rows", histogram_rows)
    models = []
    for share in (bestfirst_step.COMPACT_SHARE, 0.0):
        monkeypatch.setattr(bestfirst_step, "COMPACT_SHARE", share)
        model = gputree.GradientBoostingRanker(n_estimators=5, random_state=0,
                                               colsample_bytree=colsample, device="cpu",
                                               **shape)
        models.append(model.fit(X, y, group=[30] * (n // 30)))
    assert shapes[0][0] == 1 and shapes[-1][0] > 1        # compact, then full
    np.testing.assert_array_equal(models[0].predict(X), models[1].predict(X))
    X_new = _few_bins(rng, n, n_features, constant_share)
    np.testing.assert_array_equal(models[0].predict(X_new), models[1].predict(X_new))
