"""The CPU backend on binned X kept lean (a Dataset's codes): the rows of the
nodes to build gathered without scratch arrays equal numpy's grouping and the
gather of other X, positions moved alike; histograms whose count channel
the statistics do not hold (every row counts one) equal those of statistics
with a column of ones, at the root (with the bins' counts) and below; the
bins' counts equal numpy's; Newton statistics without the count channel are
the first columns of those with it, with the same totals."""
import numpy as np
import pytest

from gputree._dtypes import BITSET_WORDS
from gputree.backends.cpu.backend import CPUBackend
from gputree.backends.cpu.lean_gather import rows_by_node_lean
from gputree.criteria import newton_statistics
from gputree.tree import LeftSets

N_ROWS = 100_003    # several chunks of the gathering pass, split between threads


def _level(seed, n=N_ROWS, n_features=5, n_bins=40, n_level=6, level_start=7):
    """Binned rows (C order), statistics with a last column of ones,
    positions spread over a level of ``n_level`` nodes (and rows of earlier
    nodes), and the previous level's splits: nodes 1 .. 3 (of level 1)
    split on features 0, 2, 4 at random bins, their children the level's
    nodes 7 .. 12."""
    rng = np.random.RandomState(seed)
    X = rng.randint(0, n_bins, (n, n_features)).astype(np.uint8)
    stats = rng.randint(-2**40, 2**40, (n, 3)).astype(np.int64)
    stats[:, 2] = 1
    positions = rng.randint(1, 4, n).astype(np.int32)
    positions[rng.rand(n) < 0.1] = 0        # a leaf of an earlier level
    bitset = np.zeros((3, BITSET_WORDS), dtype=np.uint32)
    bitset[:, 0] = (1 << rng.randint(1, 31, 3)) - 1
    moves = (1, np.array([0, 2, 4], np.int32), LeftSets.of_bitset(bitset),
             np.array([7, 9, 11], np.int32))
    assert n_level == 6 and level_start == 7
    return X, stats, positions, moves


def _moved(X, positions, moves):
    """positions after the moves, in numpy."""
    start, feature, sets, left_child = moves
    out = positions.copy()
    k = positions - start
    inside = (k >= 0) & (k < feature.size)
    rows = np.flatnonzero(inside)
    bins = X[rows, feature[k[rows]]].astype(np.int64)
    goes_left = (sets.bitset[k[rows], bins >> 5] >> (bins & 31).astype(np.uint32)) & 1
    out[rows] = left_child[k[rows]] + 1 - goes_left.astype(np.int32)
    return out


@pytest.mark.parametrize("seed", [0, 1])
def test_gather_without_scratch_is_numpys_grouping(seed):
    X, _, positions, moves = _level(seed)
    expected_positions = _moved(X, positions, moves)
    build_index = np.array([-1, 0, 2, -1, 1, -1], np.int32)     # nodes 8, 11, 9 built
    rows = np.full(N_ROWS, -7, np.int32)
    got = positions.copy()
    node_first = rows_by_node_lean(2 * N_ROWS, X, got, moves[0], moves[1], moves[2],
                                   moves[3], 7, build_index, 3, rows)
    np.testing.assert_array_equal(got, expected_positions)
    slot = np.full(expected_positions.shape, -1)
    inside = (expected_positions >= 7) & (expected_positions < 13)
    slot[inside] = build_index[expected_positions[inside] - 7]
    groups = [np.flatnonzero(slot == j) for j in range(3)]
    np.testing.assert_array_equal(node_first, np.cumsum([0] + [g.size for g in groups]))
    np.testing.assert_array_equal(rows[:node_first[-1]], np.concatenate(groups))
    # the other rows follow, each once
    np.testing.assert_array_equal(np.sort(rows[node_first[-1]:]), np.flatnonzero(slot < 0))


def _lean_and_plain(X):
    """The same codes twice: one copy kept lean on a fresh CPU backend."""
    backend = CPUBackend()
    lean = X.copy()
    backend.keep_binned_lean(lean)
    return backend, lean, X.copy()


@pytest.mark.parametrize("seed", [0, 3])
def test_lean_levels_and_implicit_counts_build_the_plain_histograms(seed):
    """A level built on lean X from statistics without the count column
    equals the level built on plain X from the full statistics (rows moved
    alike); so does the root, whose count channel comes from bin_counts."""
    X, stats, positions, moves = _level(seed)
    backend, lean, plain = _lean_and_plain(X)
    node_to_build = np.array([0, -1, 2, 1, -1, -1], np.int32)
    hists, moved = [], []
    for codes, s in ((plain, stats), (lean, np.ascontiguousarray(stats[:, :2]))):
        out = np.full((4, X.shape[1], 40, 3), 99, np.int64)
        p = positions.copy()
        backend.move_and_build_histograms(codes, p, moves, s, 7, node_to_build, 3, 40, out)
        hists.append(out)
        moved.append(p)
    np.testing.assert_array_equal(moved[0], _moved(X, positions, moves))
    np.testing.assert_array_equal(moved[1], moved[0])
    np.testing.assert_array_equal(hists[1], hists[0])
    assert (hists[0][3] == 99).all() and hists[0][:3, :, :, 2].sum() > 0
    # the lean gather keeps one row buffer (the gathered rows), the other three
    # (plus the root's row order: plain X's sparse-rows decision, made at its
    # first level, counts its bins with the root's pass, as a fit's root does)
    assert set(backend.binned.entries[id(lean)]["buffers"]) == {"rows"}
    assert set(backend.binned.entries[id(plain)]["buffers"]) == {"rows", "found", "found_node",
                                                                  "identity"}
    # the root: every row (lean: into the gathered rows' buffer), counts from bin_counts
    root = []
    for codes, s in ((plain, stats), (lean, np.ascontiguousarray(stats[:, :2]))):
        counts = backend.bin_counts(codes, 40)
        np.testing.assert_array_equal(
            counts, [np.bincount(X[:, f], minlength=40) for f in range(X.shape[1])])
        out = np.zeros((1, X.shape[1], 40, 3), np.int64)
        backend.build_histograms(codes, s, np.zeros(N_ROWS, np.int32), 0,
                                 np.zeros(1, np.int32), 1, 40, out=out, bin_counts=counts)
        root.append(out)
    np.testing.assert_array_equal(root[1], root[0])
    np.testing.assert_array_equal(root[0][0, :, :, 0].sum(axis=1), stats[:, 0].sum())
    assert set(backend.binned.entries[id(lean)]["buffers"]) == {"rows"}
    assert "identity" in backend.binned.entries[id(plain)]["buffers"]


def test_implicit_count_with_an_odd_row_and_one_thread():
    """A node of an odd number of rows (its last row added on its own) and
    few rows (one thread): the implicit count channel as a column of ones."""
    X, stats, _, _ = _level(5, n=301)
    backend, lean, plain = _lean_and_plain(X)
    positions = np.zeros(301, np.int32)
    positions[::2] = 1
    hists = []
    for codes, s in ((plain, stats), (lean, np.ascontiguousarray(stats[:, :2]))):
        out = np.zeros((2, X.shape[1], 40, 3), np.int64)
        backend.build_histograms(codes, s, positions, 0, np.array([0, 1], np.int32), 2, 40,
                                 out=out)
        hists.append(out)
    np.testing.assert_array_equal(hists[1], hists[0])
    np.testing.assert_array_equal(hists[0][:, 0, :, 2].sum(axis=1), [150, 151])


def test_lean_fit_makes_no_scratch_row_buffers(monkeypatch):
    """A fit on a Dataset (its codes kept lean) asks for one row buffer
    beside its positions, the gathered rows: no identity rows, no listing
    scratch (a fit on X in memory asks for all three)."""
    import gputree
    from gputree.backends.cpu.binned_cache import BinnedCache
    asked = {True: set(), False: set()}
    rows = BinnedCache.rows
    monkeypatch.setattr(BinnedCache, "rows", lambda self, X, name: asked[
        self.is_lean(X)].add(name) or rows(self, X, name))
    from gputree.growth import level_order
    # level by level, as data too large for memory grows (small data grows
    # its level-wise trees best first, on a row partition: level_order)
    monkeypatch.setattr(level_order, "applies", lambda *args: False)
    rng = np.random.RandomState(0)
    X = rng.normal(size=(3000, 4))
    y = (X[:, 0] + X[:, 1] ** 2 > 0.5).astype(float)
    for data in (gputree.Dataset(X, label=y), X):
        gputree.GradientBoostingClassifier(n_estimators=2, max_depth=3, early_stopping=False,
                                           random_state=0).fit(data, y)
    assert asked == {True: {"rows"}, False: {"rows", "identity", "found", "found_node"}}


def test_newton_statistics_without_the_count_channel():
    rng = np.random.RandomState(0)
    g, h = rng.normal(size=(500, 1)), rng.uniform(0.1, 1, size=(500, 1))
    w = np.ones(500)
    full = newton_statistics(g, h, w)
    lean = newton_statistics(g, h, w, count=False)
    assert full.stats.shape == (500, 3) and lean.stats.shape == (500, 2)
    np.testing.assert_array_equal(lean.stats, full.stats[:, :2])
    np.testing.assert_array_equal(lean.totals, full.totals)
    np.testing.assert_array_equal(lean.inv_scale, full.inv_scale)
    np.testing.assert_array_equal(lean.layout, full.layout)
    assert lean.n_channels == full.n_channels == 3 and lean.ones_last and full.ones_last
