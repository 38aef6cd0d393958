"""The CPU's best-first move and build in one compiled call: the rows of the
leaf split move to its children in the row partition
(:mod:`.row_partition`, the leaf's range in one chunk) and the histogram of
the child built is added from sparse rows in one piece (:mod:`.sparse_rows`),
the calls CPUBackend.split_node_rows and build_node_histogram make, without
their Python between them (some 10 us a best-first step: LETOR's 3,000
steps a fit). A leaf of too many rows for one chunk, or a child of too many
for one piece, is left to those primitives (:class:`PreparedSplitBuild`
says what it did; :class:`TreeSplitBuild` calls them)."""
import numpy as np

from ..._dtypes import WORD_COUNT_DTYPE, WORD_START_DTYPE
from ..kernel_cache import cache_numba_cpu_kernels
from . import row_partition, sparse_rows
from .row_partition import append_children
from .threaded import threaded

cache_numba_cpu_kernels(__file__)

_split_range = row_partition._split_range.compiled
_add_sparse = sparse_rows._add_sparse.compiled

#: what :func:`_split_and_build` did
SPLIT, BUILT = 1, 2

#: the rows of a leaf it moves: a range split in one chunk (row_partition's)
MOST_LEAF_ROWS = row_partition._PARALLEL_ROWS


@threaded
def _split_and_build(X_columns, order, left, right, counts, table, begin, count, is_split, size,
                     node, feature, split_bitset, split_words, split_start, split_n_words,
                     built_node, first, sparse_feature, sparse_bins, stats, n_add, pieces,
                     first_piece, one_thread, hist, private, feature_bins, totals, mode, alone,
                     layout, most_rows, part, n_parts):
    """Node ``node``'s rows (a RowPartition's ``order``, node arrays begin,
    count, is_split, size INOUT, room made) moved to its children by the
    split of ``feature`` and the sets (split_bitset uint32 (1, W), the
    words split_words uint32 from split_start[0], trailing zeros allowed:
    split_n_words[0] OUT their count without them; ``left``, ``right``,
    ``counts`` (1, 2) and ``table`` scratch), as
    row_partition._split_range moves them; then, where ``built_node`` >= 0
    has fewer than ``most_rows`` rows, its histogram into hist row
    pieces[0, 4] (pieces int64 (1, 5) INOUT, the rest of
    sparse_rows._node_piece's arguments as there). Returns SPLIT, or
    SPLIT | BUILT where it built the histogram. Run as one part (its
    threaded form: fit_breakdown's clock sees it)."""
    start, n = begin[node], count[node]
    n_words = split_words.shape[0]      # its words but the trailing zeros
    while n_words > 0 and split_words[n_words - 1] == 0:
        n_words -= 1
    split_n_words[0] = n_words
    _split_range(X_columns, order, start, start + n, feature, split_bitset, split_words,
                 split_start, split_n_words, left, right, counts, table, 0, 0, 1)
    append_children(begin, count, is_split, size, node, counts[0, 0])
    if built_node < 0 or count[built_node] >= most_rows:
        return SPLIT
    m = count[built_node]
    pieces[0, 1] = m
    b = begin[built_node]
    _add_sparse(first, sparse_feature, sparse_bins, stats, n_add, order[b:b + m], pieces,
                first_piece, one_thread, hist, private, feature_bins, totals, mode, alone,
                layout, 0, 1)
    return SPLIT | BUILT


class SplitBuild:
    """The scratch of :func:`_split_and_build` for histograms of
    ``n_channels`` channels (a RowPartition's buffers are per binned X):
    one per thread, its calls one at a time."""

    def __init__(self, n_channels):
        self.n_channels = n_channels
        self.counts = np.empty((1, 2), dtype=np.int64)
        self.table = np.empty(1, dtype=np.uint8)
        self.split_start = np.zeros(1, dtype=WORD_START_DTYPE)
        self.split_n_words = np.zeros(1, dtype=WORD_COUNT_DTYPE)
        self.pieces = np.zeros((1, 5), dtype=np.int64)
        self.pieces[0, 3] = 1
        self.totals = np.empty((1, n_channels), dtype=np.int64)

    def prepare(self, X_columns, sparse, stats, hist, feature_bins, layout, n_bins):
        """The one call with the arguments of one tree bound once (a
        best-first tree calls it at every step: some 3,000 a LETOR fit, each
        of which found the sparse rows, the layout and their cells again),
        valid while ``hist`` is the pool's array (:class:`PreparedSplitBuild`):
        ``sparse`` (SparseRows; its values' features, or cells in the
        compact ``layout``, as sparse_rows.histograms_of_rows takes them),
        stats int64 (n, C), ``feature_bins`` int32 (F,), ``n_bins`` the
        full layout's bins."""
        feature_of = sparse.cells(feature_bins, layout) if layout.shape[0] else sparse.feature
        return PreparedSplitBuild(
            (X_columns,), (self.counts, self.table),
            (self.split_start, self.split_n_words),
            (sparse.first, feature_of, sparse.bins, stats, hist.shape[3], self.pieces,
             sparse_rows._FIRST_PIECE, sparse_rows._ONE_THREAD, hist, hist[:0], feature_bins,
             self.totals, sparse.mode, sparse_rows._ALONE, layout,
             sparse_rows._one_piece_rows(n_bins)))


class PreparedSplitBuild:
    """:func:`_split_and_build`'s arguments of one tree but the partition's
    and the split's (SplitBuild.prepare): ``head`` (X_columns,),
    ``scratch`` (counts, table), ``words`` (split_start, split_n_words),
    ``tail`` the arguments from ``first`` to ``most_rows``."""

    def __init__(self, head, scratch, words, tail):
        self.head, self.scratch, self.words, self.tail = head, scratch, words, tail
        self.pieces = tail[5]       # (1, 5): its row, column 4, the step's

    def __call__(self, partition, node, feature, bitset, words, built_node, built_row):
        """Split ``node`` of ``partition`` (RowPartition) by ``feature`` and
        its sets (``bitset`` uint32 (W,), ``words`` uint32 (m,) beyond it,
        trailing zeros allowed) and build ``built_node``'s histogram (-1:
        none) into the tree's hist row ``built_row``, in one call; returns
        whether it built it (else the caller builds). The leaf must have
        fewer than :data:`MOST_LEAF_ROWS` rows."""
        partition.reserve(2)
        self.pieces[0, 4] = built_row
        done = _split_and_build.run(0, *self.head, partition.order, partition.left,
                                    partition.right, *self.scratch, partition.begin,
                                    partition.count, partition.is_split, partition.size, node,
                                    feature, bitset[None], words, *self.words, built_node,
                                    *self.tail)
        return bool(done & BUILT)

    def arguments(self, partition):
        """The call's arguments but the split's, in order, on ``partition``'s
        arrays as they are (one tuple: X_columns .. size, split_start,
        split_n_words, first .. most_rows)."""
        return (*self.head, partition.order, partition.left, partition.right, *self.scratch,
                partition.begin, partition.count, partition.is_split, partition.size,
                *self.words, *self.tail)


class TreeSplitBuild:
    """A tree's best-first split and build on the CPU
    (CPUBackend.split_builder's function): ``in_one_call`` (a
    :class:`PreparedSplitBuild`) on ``partition`` where the leaf moves in
    one chunk, else ``primitives`` (the same arguments); ``build(node,
    row)`` the histogram it left."""

    def __init__(self, partition, in_one_call, primitives, build):
        self.partition, self.in_one_call = partition, in_one_call
        self.primitives, self.build = primitives, build

    def __call__(self, node, feature, bitset, words, built_node, built_row):
        if self.partition.count[node] >= MOST_LEAF_ROWS:
            self.primitives(node, feature, bitset, words, built_node, built_row)
        elif (not self.in_one_call(self.partition, node, feature, bitset, words, built_node,
                                   built_row) and built_node >= 0):
            self.build(built_node, built_row)

    def loop_arguments(self):
        """(the one call's arguments but the split's on the partition as it
        is (PreparedSplitBuild.arguments), :data:`MOST_LEAF_ROWS`): what a
        compiled loop of steps passes it."""
        return self.in_one_call.arguments(self.partition), MOST_LEAF_ROWS
