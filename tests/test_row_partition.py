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
