"""Same answer whatever the thread count or the cut of the work: histogram
passes cut into any pieces (node, row block, feature group) equal the numpy
reference exactly, and fits with 1, 2 and 3 threads (a subprocess, as
numba's thread count is fixed when it starts; every job of a kernel cut
into one part per thread, gputree._threads) give bit-identical trees,
predictions and training scores."""
import hashlib
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import reference
from gputree import _threads
from gputree.backends.cpu import binned_cache, histograms, partition

ROOT = Path(__file__).resolve().parents[1]


def _level(rng, n, n_features, n_bins, n_level):
    codes = rng.randint(0, n_bins, (n, n_features))
    X_binned = np.asfortranarray(codes.astype(np.uint8 if n_bins <= 256 else np.uint16))
    stats = rng.randint(-2**40, 2**40, (n, 3)).astype(np.int64)
    positions = rng.randint(3, 3 + n_level, n).astype(np.int32)
    positions[rng.rand(n) < 0.1] = -1
    return X_binned, stats, positions


@pytest.mark.parametrize("threads,chunk,block,group,vector,compact,ordered", [
    (1, 16384, 1024, 0, True, False, True), (3, 7, 5, 3, False, True, False),
    (16, 100, 2, 1, True, True, True), (2, 100, 1024, 0, False, False, True)])
@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("n_level", [1, 4])
@pytest.mark.parametrize("n_bins", [33, 300])
def test_any_cut_of_a_histogram_pass_gives_the_reference(backend, monkeypatch, threads, chunk,
                                                         block, group, vector, compact, ordered,
                                                         order, n_level, n_bins):
    """Pieces planned for 1, 3 or 16 threads (rows cut into blocks of as few
    as n_bins rows, features into groups of 2), rows gathered in chunks of
    7, 100 or all, each piece adding blocks of 1024, 5 or 2 rows in groups
    of all (the default's cells fit), 3 or 1 features, three channels
    added as one vector or not, into compact histograms or in place, the
    built rows read where they are or copied in node order (X in C order),
    on 8- or 16-bit binned X in either order, built into rows of ``out``
    that held other values."""
    rng = np.random.RandomState(threads * 10 + n_level)
    n, n_features = 1000, 8
    X_binned, stats, positions = _level(rng, n, n_features, n_bins, n_level)
    X_binned = np.asarray(X_binned, order=order)
    monkeypatch.setattr(histograms, "_plan_threads", lambda: threads)
    monkeypatch.setattr(partition, "ROW_CHUNK", chunk)
    monkeypatch.setattr(histograms, "_ROWS_PER_BIN", 1)
    monkeypatch.setattr(histograms, "_GROUP_FEATURES", 2)
    monkeypatch.setattr(histograms, "_BLOCK_ROWS", block)
    if group:
        monkeypatch.setattr(histograms, "_GROUP_BYTES", group * n_bins * 3 * 8)
    monkeypatch.setattr(histograms, "_VECTOR_THREE_BINS", 0 if vector else 10**6)
    monkeypatch.setattr(histograms, "_COMPACT_SHARE", 1.0 if compact else 0.0)
    monkeypatch.setattr(binned_cache, "_ORDERED_COPY_BYTES", 0 if ordered else 1 << 62)
    monkeypatch.setattr(binned_cache, "_ORDERED_SHARE", 1.0)
    every_bin = np.full(n_features, n_bins, np.int32)
    cells = histograms.compact_cells(every_bin, n_bins)[1]
    assert list(histograms._block_cut(np.empty((1, n_features, n_bins, 3), np.int64),
                                      every_bin, cells)) == [
        block, group or histograms._group_bytes() // (n_bins * 24), int(vector), int(compact)]
    node_to_build = np.full(n_level, -1, dtype=np.int32)
    built = np.arange(0, n_level, 2)
    node_to_build[built] = np.arange(built.size)[::-1] + 1   # rows of a larger array
    out = rng.randint(-9, 9, (built.size + 2, n_features, n_bins, 3)).astype(np.int64)
    expected = out.copy()       # the built rows overwritten (the CPU zeroes them itself)
    assert backend.overwrites_built_rows
    rows = node_to_build[built]
    expected[rows] = reference.build_histograms(X_binned, stats, positions, 3, node_to_build,
                                                built.size + 2, n_bins)[rows]
    backend.build_histograms(X_binned, stats, positions, 3, node_to_build, built.size + 2,
                             n_bins, out=out)
    np.testing.assert_array_equal(out, expected)
    copies = [k for k in backend.binned._entry(X_binned)["buffers"] if k[0] == "ordered"]
    assert len(copies) == (ordered and order == "C")
    # the root: every row in order
    root = np.zeros(n, dtype=np.int32)
    got = backend.build_histograms(X_binned, stats, root, 0, np.zeros(1, np.int32), 1, n_bins)
    np.testing.assert_array_equal(got, reference.build_histograms(
        X_binned, stats, root, 0, np.zeros(1, np.int32), 1, n_bins))


def test_chunk_offsets_place_each_chunk_after_the_earlier_chunks_of_its_group():
    """partition.chunk_offsets: group g starts after every row of the groups
    before it, and chunk c's rows of g after the earlier chunks' rows of g
    (numpy's cumulative sums, the reference)."""
    from gputree.backends.cpu import partition
    rng = np.random.RandomState(5)
    for shape in [(1, 0), (1, 1), (1, 9), (4, 1), (3, 7), (6, 40)]:
        counts = rng.randint(0, 50, size=shape).astype(np.int64)
        first, offsets = partition.chunk_offsets(counts)
        expected_first = np.concatenate([[0], np.cumsum(counts.sum(axis=0))])
        np.testing.assert_array_equal(first, expected_first)
        np.testing.assert_array_equal(offsets,
                                      np.cumsum(counts, axis=0) - counts + expected_first[:-1])


def test_gathering_chunks_bound_their_counters():
    for n_rows in (1000, 750_000, 7_000_000):
        for n_build in (1, 128, 50_000, 3_000_000):
            chunk = partition.gather_chunk(n_rows, n_build)
            n_chunks = -(-n_rows // chunk)
            assert chunk >= partition.ROW_CHUNK
            assert n_chunks * n_build <= partition._MAX_CHUNK_COUNTERS + n_build
            assert chunk == partition.ROW_CHUNK or n_chunks * n_build > partition._MAX_CHUNK_COUNTERS // 2


@pytest.mark.parametrize("threads", [1, 2, 3, 16, 64])
@pytest.mark.parametrize("node_rows", [[7_000_000], [750_000], [500], [3_000_000, 40, 0],
                                       list(range(0, 200_000, 1_000))])
def test_histogram_pieces_cover_every_cell_once_and_give_every_thread_work(threads, node_rows):
    node_rows = np.array(node_rows, dtype=np.int64)
    n_features, n_bins = 28, 256
    plan, blocks, groups_of = histograms.histogram_pieces(node_rows, n_features, n_bins, threads)
    node, block, first, stop, group = plan.T
    for j, rows in enumerate(node_rows):
        mine = plan[node == j]
        groups = groups_of[j]
        assert mine.shape[0] == groups * blocks[j] >= 1
        # each block's rows are disjoint and cover the node; each block has every group
        spans = sorted({(a, b) for a, b in mine[:, 2:4]})
        assert spans[0][0] == 0 and spans[-1][1] == rows
        assert all(spans[k][1] == spans[k + 1][0] for k in range(len(spans) - 1))
        assert sorted(mine[:, 4]) == sorted(list(range(groups)) * blocks[j])
        assert groups <= n_features // histograms._GROUP_FEATURES
        # an extra block (a private histogram) keeps enough rows per bin
        assert blocks[j] == 1 or rows // blocks[j] >= histograms._ROWS_PER_BIN * n_bins
    # every thread gets a piece whenever the rows allow it
    most = sum(min(n_features // histograms._GROUP_FEATURES, max(1, r // (histograms._ROWS_PER_BIN * n_bins)))
               for r in node_rows)
    assert plan.shape[0] >= min(threads, most)
    sizes = (stop - first) * n_features
    pieces, thread_first = histograms.assign_pieces(sizes, threads)
    assert sorted(pieces) == list(range(plan.shape[0]))
    load = np.array([sizes[pieces[thread_first[t]:thread_first[t + 1]]].sum()
                     for t in range(threads)])
    assert load.max() - load.min() <= sizes.max()    # greedy, largest first



@pytest.mark.parametrize("threads", [1, 2, 5])
@pytest.mark.parametrize("node_rows", [[500], [3, 0, 8000, 40], [9000, 9000], [20_000, 7]])
def test_pieces_without_feature_groups_cover_each_node_once(threads, node_rows):
    """plan_pieces for passes over whole rows (one feature group: sparse
    rows): each node's rows are covered once by its pieces, the first into
    its built row, extra blocks into private histograms counted in
    ``extra``, and every piece goes to one thread."""
    node_rows = np.array(node_rows, dtype=np.int64)
    node_first = np.concatenate([[0], np.cumsum(node_rows)])
    built_rows = np.arange(node_rows.size, dtype=np.int32)[::-1] + 3
    n_bins = 256
    pieces, extra, thread_pieces, thread_first = histograms.plan_pieces(
        node_first, built_rows, 1, n_bins, threads)
    assert (pieces[:, 2] == 0).all() and (pieces[:, 3] == 1).all()
    piece_first = np.concatenate([[0], np.cumsum(extra + 1)])   # node by node
    for j in range(node_rows.size):
        mine = pieces[piece_first[j]:piece_first[j + 1]]
        assert mine[0, 0] == node_first[j] and mine[-1, 1] == node_first[j + 1]
        assert (mine[1:, 0] == mine[:-1, 1]).all()
        assert mine[0, 4] == built_rows[j] and (mine[1:, 4] < 0).all()
        assert extra[j] == 0 or node_rows[j] >= 2 * histograms._ROWS_PER_BIN * n_bins
    assert pieces.shape[0] == node_rows.size + extra.sum()
    assert sorted(thread_pieces) == list(range(pieces.shape[0]))
    assert thread_first[0] == 0 and thread_first[-1] == pieces.shape[0]


@pytest.mark.parametrize("threads", [1, 2, 3, 5])
def test_small_levels_are_planned_as_assign_pieces_deals_them(threads):
    """plan_pieces' compiled plan of a level of few nodes, none with rows
    for a second block (ties in size, empty nodes, one node over the limit
    among them: the general plan), is a piece per node into its built row,
    dealt to the threads exactly as assign_pieces deals the nodes' rows."""
    rng = np.random.RandomState(3)
    n_bins = 8
    most = 2 * histograms._ROWS_PER_BIN * n_bins
    for n in [0, 1, 2, 7, 33, histograms._SMALL_PLAN_NODES]:
        for sizes in (rng.randint(0, most, n), rng.randint(0, 3, n) * 20,
                      np.minimum(rng.randint(0, 2 * most, n), most)):
            node_first = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
            built_rows = rng.permutation(3 * n + 1)[:n].astype(np.int64)
            pieces, extra, thread_pieces, thread_first = histograms.plan_pieces(
                node_first, built_rows, 1, n_bins, threads)
            if (sizes >= most).any():           # the general plan's (covered above)
                assert pieces.shape[0] == n + extra.sum()
                continue
            expected = np.stack([node_first[:-1], node_first[1:], np.zeros(n, np.int64),
                                 np.ones(n, np.int64), built_rows], axis=1)
            np.testing.assert_array_equal(pieces, expected.reshape(n, 5))
            assert not extra.any() and extra.shape == (n,)
            dealt = histograms.assign_pieces(np.diff(node_first), threads)
            np.testing.assert_array_equal(thread_pieces, dealt[0])
            np.testing.assert_array_equal(thread_first, dealt[1])

_FITS = """
import hashlib, sys
import numba, numpy as np
from gputree import DecisionTreeClassifier
from gputree.estimators.boosting import GradientBoostingClassifier
from gputree import _threads
_threads.PARALLEL_WORK = 0   # every job in parts, one per thread
rng = np.random.RandomState(0)
X = rng.normal(size=(6000, 10)).astype(np.float32)
X[rng.rand(*X.shape) < 0.05] = np.nan
y = (X[:, 0] + np.nan_to_num(X[:, 1]) * X[:, 2] > 0.3).astype(int)
for threads in (1, 2, 3):
    numba.set_num_threads(threads)
    assert numba.get_num_threads() == threads
    digest = hashlib.sha256()
    boost = GradientBoostingClassifier(n_estimators=5, max_depth=5, early_stopping=False,
                                       random_state=0, device="cpu").fit(X, y)
    tree = DecisionTreeClassifier(max_depth=8, random_state=0, device="cpu").fit(X, y)
    # best first: the compiled steps' team of threads, a leaf's rows split in place
    leaves = GradientBoostingClassifier(n_estimators=5, grow_policy="lossguide", max_depth=None,
                                        early_stopping=False, random_state=0,
                                        device="cpu").fit(X, y)
    for t in list(boost._trees) + list(leaves._trees) + [tree.tree_.arrays]:
        for name, value in sorted(vars(t).items()):
            digest.update(np.ascontiguousarray(value).tobytes())
    for array in (boost.predict_proba(X), boost.train_score_, leaves.predict_proba(X),
                  tree.predict_proba(X)):
        digest.update(np.ascontiguousarray(array).tobytes())
    print(threads, digest.hexdigest())
"""


def test_fits_are_bit_identical_with_1_2_and_3_threads():
    env = dict(os.environ, NUMBA_NUM_THREADS="3", PYTHONPATH=str(ROOT))
    result = subprocess.run([sys.executable, "-c", _FITS], env=env, capture_output=True,
                            text=True, timeout=900)
    assert result.returncode == 0, result.stderr
    digests = dict(line.split() for line in result.stdout.split("\n") if line.strip())
    assert sorted(digests) == ["1", "2", "3"]
    assert len(set(digests.values())) == 1, digests


@pytest.mark.parametrize("threads,block,group", [(1, 1024, 0), (3, 7, 2)])
def test_root_with_bin_counts_gives_the_reference(backend, monkeypatch, threads, block, group):
    """The root's last channel copied from the bin counts (stats' last
    channel 1 in every row), the others added (in blocks of 1024 or 7 rows,
    groups of all or 2 features): the reference histogram;
    bin_counts are the counts of a channel of ones, and a level below the
    root ignores them."""
    from gputree.data.binned import BinnedData
    rng = np.random.RandomState(threads)
    n, n_features, n_bins = 3000, 5, 40
    X_binned, stats, _ = _level(rng, n, n_features, n_bins, 1)
    X_binned = backend.in_binned_order(X_binned)
    stats[:, 2] = 1
    monkeypatch.setattr(histograms, "_plan_threads", lambda: threads)
    monkeypatch.setattr(histograms, "_ROWS_PER_BIN", 1)
    monkeypatch.setattr(histograms, "_BLOCK_ROWS", block)
    if group:
        monkeypatch.setattr(histograms, "_GROUP_BYTES", group * n_bins * 3 * 8)
    data = BinnedData(X_binned, n_bins, np.full(n_features, n_bins - 1, np.int32),
                      np.zeros(n_features, np.uint8), np.zeros((n_features, n_bins - 2)))
    counts = data.bin_counts(backend)
    root = np.zeros(n, dtype=np.int32)
    np.testing.assert_array_equal(counts, [np.bincount(X_binned[:, f], minlength=n_bins)
                                           for f in range(n_features)])
    build = np.zeros(1, np.int32)
    got = backend.build_histograms(X_binned, stats, root, 0, build, 1, n_bins, bin_counts=counts)
    np.testing.assert_array_equal(got, reference.build_histograms(X_binned, stats, root, 0,
                                                                  build, 1, n_bins))
    positions = rng.randint(1, 3, n).astype(np.int32)
    got = backend.build_histograms(X_binned, stats, positions, 1, np.array([0, -1], np.int32),
                                   1, n_bins, bin_counts=counts)
    np.testing.assert_array_equal(got, reference.build_histograms(
        X_binned, stats, positions, 1, np.array([0, -1], np.int32), 1, n_bins))


def test_moves_from_column_copies_give_the_same_models(backend, monkeypatch):
    """Moves read from column-major copies of binned X (made here for any
    size; a column-subset copy derived for colsample_bytree) or from X
    itself: identical models; what the backend keeps per binned X (copies,
    row buffers) goes with X."""
    import gc

    import gputree
    rng = np.random.RandomState(3)
    X = rng.normal(size=(3000, 6))
    X[rng.rand(*X.shape) < 0.05] = np.nan
    y = (X[:, 0] + np.nan_to_num(X[:, 1]) ** 2 > 0.5).astype(int)

    def fit():
        model = gputree.GradientBoostingClassifier(n_estimators=6, max_depth=5,
                                                   colsample_bytree=0.7, random_state=0)
        return model.fit(X, y).predict_proba(X)

    made = []
    columns = binned_cache.BinnedCache.columns

    def recording(self, X_binned):
        copy = columns(self, X_binned)
        if copy is not X_binned:
            made.append(copy.shape)
        return copy

    monkeypatch.setattr(binned_cache.BinnedCache, "columns", recording)
    monkeypatch.setattr(binned_cache, "_COLUMN_COPY_VALUES", 1 << 62)
    kept_before = set(backend.binned.entries)      # other tests' live binned X
    without = fit()
    assert not made
    monkeypatch.setattr(binned_cache, "_COLUMN_COPY_VALUES", 0)
    np.testing.assert_array_equal(fit(), without)
    assert (3000, 6) in made and (3000, 4) in made     # the full X and a subset
    gc.collect()
    assert set(backend.binned.entries) <= kept_before


@pytest.mark.parametrize("max_bins", [255, 1000])
def test_rows_copied_in_node_order_give_the_same_models(backend, monkeypatch, max_bins):
    """The histogram passes below the root reading the built nodes' rows
    copied in node order (forced here for any size) or scattered over X
    and the statistics: identical boosted models (colsample_bytree: a
    column subset; sample weights) and forests (three classes: more
    channels), on 8- and 16-bit bins."""
    import gputree
    from gputree.growth import level_order
    # the level-wise passes (small data grows its trees best first: level_order)
    monkeypatch.setattr(level_order, "applies", lambda *args: False)
    rng = np.random.RandomState(5)
    X = rng.normal(size=(3000, 7))
    X[:, 3] = np.round(X[:, 3] * 500)         # many distinct values: 16-bit bins
    X[rng.rand(*X.shape) < 0.05] = np.nan
    y = (X[:, 0] + np.nan_to_num(X[:, 1]) ** 2 > 0.5).astype(int) + (X[:, 2] > 1)
    weight = rng.randint(0, 3, X.shape[0]).astype(float)

    def fit():
        boosted = gputree.GradientBoostingClassifier(
            n_estimators=4, max_depth=5, colsample_bytree=0.7, max_bins=max_bins,
            random_state=0).fit(X, y > 0, sample_weight=weight)
        forest = gputree.RandomForestClassifier(n_estimators=3, max_depth=6, max_bins=max_bins,
                                                random_state=0).fit(X, y)
        return boosted.predict_proba(X), forest.predict_proba(X)

    copied = []
    ordered_rows = binned_cache.BinnedCache.ordered_rows

    def recording(self, X_binned, stats, may_copy=True):
        copy_from, copy_to = ordered_rows(self, X_binned, stats, may_copy)
        if copy_from[0].shape[0]:
            copied.append((X_binned.dtype, stats.shape[1]))
        return copy_from, copy_to

    monkeypatch.setattr(binned_cache.BinnedCache, "ordered_rows", recording)
    monkeypatch.setattr(binned_cache, "_ORDERED_COPY_BYTES", 1 << 62)
    scattered = fit()
    assert not copied
    monkeypatch.setattr(binned_cache, "_ORDERED_COPY_BYTES", 0)
    monkeypatch.setattr(binned_cache, "_ORDERED_SHARE", 1.0)
    for got, expected in zip(fit(), scattered):
        np.testing.assert_array_equal(got, expected)
    assert {dtype.itemsize for dtype, _ in copied} == {1 if max_bins <= 256 else 2}
    assert len({channels for _, channels in copied}) == 2     # boosting's and the forest's


@pytest.mark.parametrize("into_buffer", [False, True])
@pytest.mark.parametrize("threads", [1, 3])
def test_a_pass_in_feature_slices_gives_each_slice_when_done_and_the_whole_pass(
        backend, monkeypatch, threads, into_buffer):
    """build_histograms_by_features (a pass per feature slice over rows
    gathered once, cut for 1 or 3 threads, nodes cut into row blocks added
    through private histograms): each slice equals the reference when its
    ``done`` comes, in the order asked, and the whole equals the reference;
    built into a larger buffer of arbitrary former contents (``out``), the
    same, in the buffer's first rows."""
    rng = np.random.RandomState(threads)
    n, n_features, n_bins = 3000, 7, 33
    X_binned, stats, positions = _level(rng, n, n_features, n_bins, 4)
    X_binned = np.ascontiguousarray(X_binned)
    monkeypatch.setattr(histograms, "_plan_threads", lambda: threads)
    monkeypatch.setattr(histograms, "parts_for", lambda work: threads)
    monkeypatch.setattr(histograms, "_ROWS_PER_BIN", 1)
    node_to_build = np.array([1, -1, 0, 2], np.int32)
    expected = reference.build_histograms(X_binned, stats, positions, 3, node_to_build, 3,
                                          n_bins)
    bounds, seen = np.array([0, 2, 5, 7]), []

    def done(s, hist):
        seen.append(s)
        part = slice(bounds[s], bounds[s + 1])
        np.testing.assert_array_equal(hist[:, part], expected[:, part])
    out = None
    if into_buffer:
        out = rng.randint(-2**40, 2**40, size=(5,) + expected.shape[1:]).astype(np.int64)
    got = backend.build_histograms_by_features(X_binned, stats, positions, 3, node_to_build,
                                               3, n_bins, bounds, [2, 0, 1], done, out=out)
    assert seen == [2, 0, 1]
    np.testing.assert_array_equal(got, expected)
    if into_buffer:
        np.testing.assert_array_equal(out[:3], expected)


def _record_part(seen, part, n_parts):
    """A kernel's stand-in: records (part, n_parts); part 1 of a call with a
    negative ``seen[0]`` raises."""
    seen.append((part, n_parts))
    if part == 1 and seen[0] == -1:
        raise ValueError("part 1 failed")
    return part


def test_run_parts_runs_each_part_once_on_concurrent_callers_and_raises_a_helper_error():
    """Every part of every call runs once, part 0's result is returned, calls
    from several threads at once each get their parts, and an exception of
    a part on a helper thread is raised on the caller, whose helpers then
    serve the next calls."""
    import threading
    from gputree._threads import run_parts
    results, records = [], []

    def caller(n_parts):
        for _ in range(50):
            seen = []
            results.append(run_parts(_record_part, n_parts, seen))
            records.append((n_parts, sorted(seen)))

    threads = [threading.Thread(target=caller, args=(n,)) for n in (2, 3, 4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [0] * 150
    assert all(seen == [(part, n) for part in range(n)] for n, seen in records)
    with pytest.raises(ValueError, match="part 1 failed"):
        run_parts(_record_part, 3, [-1])
    seen = []
    assert run_parts(_record_part, 3, seen) == 0 and sorted(seen) == [(0, 3), (1, 3), (2, 3)]


def test_claimed_parts_no_pool_thread_started_are_cancelled_the_others_awaited():
    """run_parts(claimed=True) (a kernel whose parts claim its work, any
    part may do all of it): with every pool thread busy, part 0 returns
    without the parts no thread started, which never run; with a free
    pool, every part runs and is awaited, as without ``claimed``."""
    import threading
    import time

    from gputree._threads import _executor, run_parts
    pool, gate = _executor(), threading.Event()
    busy = [pool.submit(gate.wait) for _ in range(pool.n_workers)]
    try:
        seen = []
        assert run_parts(_record_part, 3, seen, claimed=True) == 0
        assert seen == [(0, 3)]
    finally:
        gate.set()
        for future in busy:
            future.result()
    time.sleep(0.05)                # (a cancelled part, were it run, would show now)
    assert seen == [(0, 3)]

    started = threading.Event()

    def slow_part(seen, part, n_parts):
        if part:                    # started while part 0 runs: awaited, then done
            started.set()
            time.sleep(0.05)
        else:
            assert started.wait(10)
        return _record_part(seen, part, n_parts)

    seen = []
    assert run_parts(slow_part, 2, seen, claimed=True) == 0
    assert sorted(seen) == [(0, 2), (1, 2)]


def test_fetch_add_gives_each_of_two_threads_its_own_values():
    """Two threads claiming 200,000 values of one counter (the split scan's
    slots) each get distinct ones, together every value once."""
    import threading

    from numba import njit

    from gputree.backends.cpu.intrinsics import fetch_add

    @njit(nogil=True)
    def claim(counter, n, out):
        for i in range(n):
            out[i] = fetch_add(counter, 0, 1)

    counter, n = np.zeros(1, dtype=np.int64), 100_000
    outs = [np.empty(n, dtype=np.int64) for _ in range(2)]
    claim(counter, 1, outs[0])                  # compiled before the threads start
    counter[0] = 0
    threads = [threading.Thread(target=claim, args=(counter, n, out)) for out in outs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    np.testing.assert_array_equal(np.sort(np.concatenate(outs)), np.arange(2 * n))
    assert counter[0] == 2 * n



def test_work_zero_runs_as_one_part_even_when_every_job_runs_in_parts(monkeypatch):
    """A call with work 0 asks for one part (kernels that work in place, as
    a leaf's row split, row_partition._split_range, must run as one): so it
    stays with every job of some work in parts (PARALLEL_WORK 0, as the
    bit-identity fits above force)."""
    monkeypatch.setattr(_threads, "PARALLEL_WORK", 0)
    with _threads.numba_threads(2):
        assert _threads.parts_for(0) == 1
        assert _threads.parts_for(1) == 2
