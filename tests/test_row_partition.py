"""The CPU row partition of best-first growth against numpy: each node's
leaves' rows are their parent's rows that go their way, in ascending order, whatever the
number of chunks; the positions written at the end are every row's leaf."""
import numpy as np
import pytest

from gputree._dtypes import BITSET_EXTRA_WORD, BITSET_RANGE_WORD, BITSET_WORDS
from gputree.backends.cpu import row_partition
from gputree.backends.cpu.row_partition import RowPartition
from gputree.backends.splitset import goes_left, left_sets
from gputree.tree import LeftSets


def _random_split(rng, n_bins):
    """(bitset uint32 (1, BITSET_WORDS), words uint32 (1, 2), host set of
    the bins that go left) of a random categorical-like split over
    ``n_bins`` bins (some from 256 on, in the extension words)."""
    left = rng.random(n_bins) < 0.5
    bitset = np.zeros((1, BITSET_WORDS), dtype=np.uint32)
    words = np.zeros((1, 2), dtype=np.uint32)
    for b in np.flatnonzero(left):
        if b < 256:
            bitset[0, b // 32] |= np.uint32(1 << (b % 32))
        else:
            words[0, (b - 256) // 32] |= np.uint32(1 << ((b - 256) % 32))
    return bitset, words, left


def _chunked(monkeypatch, parallel_rows):
    """Splits of at least ``parallel_rows`` rows moved in three chunks (the
    two-pass path; its chunks as if for three threads, whatever the rows)."""
    monkeypatch.setattr(row_partition, "_PARALLEL_ROWS", parallel_rows)
    if parallel_rows == 1:
        monkeypatch.setattr(row_partition, "parts_for", lambda work: 3)


@pytest.mark.parametrize("parallel_rows", [1 << 16, 1])
def test_splits_match_numpy(monkeypatch, parallel_rows):
    # parallel_rows 1: every split in chunks, the threaded two-pass path
    _chunked(monkeypatch, parallel_rows)
    rng = np.random.default_rng(3)
    n, n_bins = 5000, 300
    X = rng.integers(0, n_bins, size=(n, 3)).astype(np.uint16)
    partition = RowPartition(np.arange(n, dtype=np.int32), np.empty(n, np.int32),
                             np.empty(n, np.int32))
    expected = {0: np.arange(n)}
    leaves = {0}
    for _ in range(12):
        node = int(rng.choice(sorted(leaves)))
        feature = int(rng.integers(3))
        bitset, words, left = _random_split(rng, n_bins)
        partition.split(X, node, feature, left_sets(bitset, words))
        parent = expected[node]
        goes_left = left[X[parent, feature]]
        first_child = len(expected)
        expected[first_child], expected[first_child + 1] = parent[goes_left], parent[~goes_left]
        leaves = (leaves - {node}) | {first_child, first_child + 1}
    for node, rows in expected.items():
        # a split node's range holds its children's rows, one after the other
        got = partition.rows(node)
        np.testing.assert_array_equal(got if node in leaves else np.sort(got), rows)
    positions = np.full(n, -1, dtype=np.int32)
    partition.write_positions(positions)
    want = np.full(n, -1, dtype=np.int32)
    for leaf in leaves:
        want[expected[leaf]] = leaf
    np.testing.assert_array_equal(positions, want)


@pytest.mark.parametrize("parallel_rows", [1 << 16, 1])
def test_numerical_splits_beyond_the_bitmap_match_numpy(monkeypatch, parallel_rows):
    # "bins <= t" splits of 16-bit bins (t past the bitmap: the range word),
    # the missing bin left through the extra word, or a split of bins < 256
    # alone: their sides by the set rule and by the side table alike
    _chunked(monkeypatch, parallel_rows)
    rng = np.random.default_rng(5)
    n, n_bins = 6000, 400
    missing = n_bins - 1
    X = rng.integers(0, n_bins, size=(n, 2)).astype(np.uint16)
    partition = RowPartition(np.arange(n, dtype=np.int32), np.empty(n, np.int32),
                             np.empty(n, np.int32))
    node_rows = {0: np.arange(n)}
    for node, (feature, last, missing_left) in enumerate([(0, 300, True), (1, 120, False),
                                                         (0, 350, False), (1, 260, True)]):
        bitset = np.zeros((1, BITSET_WORDS), dtype=np.uint32)
        for b in range(min(last, 255) + 1):
            bitset[0, b // 32] |= np.uint32(1 << (b % 32))
        if last >= 256:
            bitset[0, BITSET_RANGE_WORD] = last
        if missing_left:
            bitset[0, BITSET_EXTRA_WORD] = missing
        partition.split(X, node, feature, LeftSets.of_bitset(bitset))
        parent = node_rows[node]
        bins = X[parent, feature]
        left = (bins <= last) | ((bins == missing) & missing_left)
        np.testing.assert_array_equal(goes_left(bitset[0], bins), left)
        first_child = len(node_rows)
        node_rows[first_child], node_rows[first_child + 1] = parent[left], parent[~left]
        np.testing.assert_array_equal(partition.rows(first_child), parent[left])
        np.testing.assert_array_equal(partition.rows(first_child + 1), parent[~left])


@pytest.mark.parametrize("compact", [False, True])
@pytest.mark.parametrize("most_leaf_rows, one_piece_rows", [(None, None), (None, 16),
                                                             (100, None)])
def test_split_and_build_equals_its_two_primitives(monkeypatch, compact, most_leaf_rows,
                                                   one_piece_rows):
    """CPUBackend.split_and_build (a best-first step's row move and histogram
    build in one compiled call, on sparse rows) leaves the partition and the
    histogram rows of split_node_rows then build_node_histogram, cell for
    cell: the built child in one piece, or left to the primitive (a child of
    more rows than one piece holds: ``one_piece_rows``, bins of 1 row), or
    both left to them (a leaf of more rows than one chunk moves:
    ``most_leaf_rows``)."""
    from gputree.backends.base import Backend
    from gputree.backends.cpu import histograms, split_build
    from gputree.backends.cpu.backend import CPUBackend
    if most_leaf_rows:
        monkeypatch.setattr(split_build, "MOST_LEAF_ROWS", most_leaf_rows)
    if one_piece_rows:
        monkeypatch.setattr(histograms, "_ROWS_PER_BIN", 1)
    rng = np.random.default_rng(7)
    n, n_features, n_bins = 3000, 6, 16
    feature_bins = rng.integers(1, n_bins, n_features).astype(np.int32)
    X = (rng.integers(0, n_bins, (n, n_features)) % feature_bins).astype(np.uint8)
    X[rng.random((n, n_features)) < 0.8] = 0            # mostly constant: sparse rows
    stats = rng.integers(-2**40, 2**40, (n, 3)).astype(np.int64)
    backend = CPUBackend()
    assert backend._sparse(X, n_bins) is not None
    _, cells, _, _ = histograms.row_layout(feature_bins, (0, n_features, n_bins, 3))
    shape = (4, 1, int(cells[-1]), 3) if compact else (4, n_features, n_bins, 3)
    results = []
    for split_and_build in (CPUBackend.split_and_build, Backend.split_and_build):
        partition = backend.start_row_partition(X)
        hist = np.full(shape, -5, dtype=np.int64)
        for node, feature, last in [(0, 1, 3), (1, 2, 7), (2, 0, 1), (4, 3, 5)]:
            bitset, _, _ = _random_split(rng, 1)
            bitset[:] = 0
            for b in range(last + 1):
                bitset[0, b // 32] |= np.uint32(1 << (b % 32))
            first_child = int(partition.size[0])
            smaller = first_child + int(np.sum(X[partition.rows(node), feature] > last)
                                        < partition.count[node] / 2)
            split_and_build(backend, partition, X, stats, node, feature, bitset[0],
                            np.zeros(1, dtype=np.uint32), smaller, node % 4, hist,
                            feature_bins=feature_bins, n_bins=n_bins)
        n_nodes = int(partition.size[0])
        results.append((partition.order.copy(), partition.begin[:n_nodes].copy(),
                        partition.count[:n_nodes].copy(), hist))
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)
