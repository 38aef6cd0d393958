"""The CPU row partition of best-first growth: the training rows grouped by
the leaf they sit in, each leaf owning a contiguous range of one int32 index
array (ascending rows within a range), so that a split reads and moves only
its leaf's rows and the histogram of a child reads only the child's.

A split partitions its leaf's range stably in place (rows going left first,
then rows going right, each in their order), as LightGBM's data partition
and XGBoost's row partitioner do: in parts over chunks of the range, a
first pass writes each chunk's left and right rows to two scratch arrays at
the chunk's place, a second copies them back to the range at offsets from the
chunks' counts. The result is the same for any number of chunks and
threads. A split whose left set reaches only a few bins (a categorical
split, against its leaf's rows) is first written out as one byte per bin
(``_side_table``): a row's side is then one load, not the branches of the
set's rule (bitmap, words beyond, range). A range of fewer than
``_PARALLEL_ROWS`` rows is split in one call on one thread (handing work
to another thread costs more than it saves there). The rows' positions are written once, when the tree is
grown (:meth:`RowPartition.write_positions`): a split writes only its
range.
"""
import numpy as np

from ..._dtypes import BITMAP_BINS, BITSET_EXTRA_WORD, BITSET_RANGE_WORD, BITSET_WORD_BITS
from ..._threads import parts_for
from ..kernel_cache import cache_numba_cpu_kernels
from .jit import U64, goes_left_words, ir_inline, part_bounds
from .threaded import threaded

cache_numba_cpu_kernels(__file__)


#: nanoseconds of one thread per row moved (a job's work for parts_for) ...
_WORK_PER_ROW = 4


#: ... in ranges of at least this many rows (40k rows: 2 threads as fast as one)
_PARALLEL_ROWS = 1 << 16


#: a split's side table (one byte per bin up to its last left bin) is
#: written when its bins are at most this share of the rows it moves (a
#: categorical split of 2,000 categories on 22,000 rows: 43 -> 25 us)
_TABLE_SHARE = 1 / 8


class RowPartition:
    """Rows grouped by node for one tree: ``order`` int32 (n,) (a buffer
    kept per binned X), node ``k``'s rows (ascending) ``order[begin[k]:begin[k] +
    count[k]]`` (int64 arrays, the first ``size[0]`` nodes'; ``is_split``
    uint8 marks the nodes split); node ids as the grower numbers them (the
    root 0, each split's children appended). Scratch: ``left``, ``right``
    int32 (n,). A compiled caller may split nodes itself (:func:`split_one`,
    then :func:`append_children`) where :meth:`reserve` made room."""

    def __init__(self, order, left, right, capacity=64):
        self.order, self.left, self.right = order, left, right
        self.begin = np.zeros(capacity, dtype=np.int64)
        self.count = np.zeros(capacity, dtype=np.int64)
        self.is_split = np.zeros(capacity, dtype=np.uint8)
        self.count[0] = order.shape[0]
        self.size = np.ones(1, dtype=np.int64)
        self.table = np.empty(0, dtype=np.uint8)
        self.one_count = np.empty((1, 2), dtype=np.int64)

    def reserve(self, n_more):
        """Room for ``n_more`` more nodes in the node arrays."""
        n = int(self.size[0]) + n_more
        if n > self.begin.shape[0]:
            capacity = max(n, 2 * self.begin.shape[0])
            for name in ("begin", "count", "is_split"):
                old = getattr(self, name)
                array = np.zeros(capacity, dtype=old.dtype)
                array[:old.shape[0]] = old
                setattr(self, name, array)

    def rows(self, node):
        """int32 view of node's rows."""
        first = int(self.begin[node])
        return self.order[first:first + int(self.count[node])]

    def split(self, X_columns, node, feature, split_sets):
        """Move the rows of ``node`` to its children, the node ids next in
        line (their ranges appended): the rows whose bin of ``feature`` is
        in the left set of ``split_sets`` (a LeftSets of one split) go
        left, the others right."""
        first, n = int(self.begin[node]), int(self.count[node])
        n_chunks = parts_for(n * _WORK_PER_ROW) if n >= _PARALLEL_ROWS else 1
        counts = self.one_count if n_chunks == 1 else np.empty((n_chunks, 2), dtype=np.int64)
        arguments = (X_columns, self.order, first, first + n, np.int64(feature), *split_sets,
                     self.left, self.right, counts)
        n_table = _table_bins(split_sets)
        if n_table > n * _TABLE_SHARE:
            n_table = 0
        elif n_table > self.table.shape[0]:
            self.table = np.empty(max(n_table, 2 * self.table.shape[0]), dtype=np.uint8)
        if n_chunks == 1:
            _split_range.run(0, *arguments, self.table, n_table)
        else:
            if n_table:
                _fill_table.run(0, *split_sets, self.table, n_table)
            _split_chunks.run(n * _WORK_PER_ROW, *arguments, self.table, n_table)
            _place_chunks.run(n * _WORK_PER_ROW, self.order, first, self.left, self.right,
                              counts)
        n_left = int(counts[0, 0]) if n_chunks == 1 else int(counts[:, 0].sum())
        self.reserve(2)
        # (its Python function: no compile of its own)
        append_children.py_func(self.begin, self.count, self.is_split, self.size, node, n_left)

    def write_positions(self, positions):
        """positions int32 (n,) OUT: every row's leaf (the nodes not split)."""
        n = int(self.size[0])
        leaves = np.flatnonzero(self.is_split[:n] == 0).astype(np.int32)
        _write_positions.run(positions.shape[0], self.order, leaves, self.begin[leaves],
                             self.count[leaves], positions)


@ir_inline
def append_children(begin, count, is_split, size, node, n_left):
    """Node ``node``'s children appended to a RowPartition's node arrays
    (room made): its first ``n_left`` rows the left one's, the others the
    right one's."""
    k = size[0]
    first, n = begin[node], count[node]
    begin[k], count[k] = first, n_left
    begin[k + 1], count[k + 1] = first + n_left, n - n_left
    is_split[node] = 1
    size[0] = k + 2


def _table_bins(split_sets):
    """The entries of the side table of a split (a LeftSets of one): its
    bins up to the last that may go left, and one more for every bin
    beyond (which goes right)."""
    bitset = split_sets.bitset[0]
    last = max(BITMAP_BINS - 1 + BITSET_WORD_BITS * int(split_sets.n_words[0]),
               int(bitset[BITSET_RANGE_WORD]), int(bitset[BITSET_EXTRA_WORD]))
    return last + 2


@threaded
def _write_positions(order, leaves, begin, count, positions, part, n_parts):
    """positions[order[begin[k]:begin[k] + count[k]]] OUT = leaves[k], in
    parts over the leaves k."""
    first, stop = part_bounds(leaves.shape[0], part, n_parts)
    for k in range(first, stop):
        for q in range(begin[k], begin[k] + count[k]):
            positions[U64(order[U64(q)])] = leaves[k]


@ir_inline
def _deal_rows(X_columns, order, start, stop, feature, split_bitset, split_words, split_start,
               split_n_words, left, n_left, right, n_right):
    """Each row of order[start:stop] written to ``left`` at ``n_left`` and
    to ``right`` at ``n_right`` (OUT), the place of its side advancing
    (without a branch on the side): returns (n_left, n_right) after them.
    ``left`` may be ``order`` itself with ``n_left <= start``: a left row's
    place never passes the row read."""
    for q in range(start, stop):
        i = order[U64(q)]
        b = X_columns[U64(i), U64(feature)]
        go_left = goes_left_words(split_bitset, U64(0), b, split_words, split_start,
                                  split_n_words)
        left[U64(n_left)] = i
        right[U64(n_right)] = i
        n_left += go_left
        n_right += 1 - go_left
    return n_left, n_right


@ir_inline
def _side_table(split_bitset, split_words, split_start, split_n_words, table, n_table):
    """table uint8 OUT: the side (1: left) of bins 0 .. n_table - 2 under
    the split (a LeftSets of one), and 0 (right) at n_table - 1, the side
    of every bin beyond (:func:`_table_bins`)."""
    for b in range(n_table - 1):
        table[U64(b)] = goes_left_words(split_bitset, U64(0), b, split_words, split_start,
                                        split_n_words)
    table[U64(n_table - 1)] = 0


@threaded
def _fill_table(split_bitset, split_words, split_start, split_n_words, table, n_table,
                part, n_parts):
    """:func:`_side_table` as a kernel of its own (before a split in chunks)."""
    _side_table(split_bitset, split_words, split_start, split_n_words, table, n_table)


@ir_inline
def _deal_rows_by_table(X_columns, order, start, stop, feature, table, n_table, left, n_left,
                        right, n_right):
    """:func:`_deal_rows` with the split's side table ``table`` uint8
    (>= n_table,) IN: bin b's side table[min(b, n_table - 1)]."""
    last = U64(n_table - 1)
    for q in range(start, stop):
        i = order[U64(q)]
        go_left = table[min(U64(X_columns[U64(i), U64(feature)]), last)]
        left[U64(n_left)] = i
        right[U64(n_right)] = i
        n_left += go_left
        n_right += 1 - go_left
    return n_left, n_right


@threaded
def _split_range(X_columns, order, first, stop, feature, split_bitset, split_words,
                 split_start, split_n_words, left, right, counts, table, n_table, part,
                 n_parts):
    """RowPartition.split in one chunk (run as one part): the same result
    as both passes, in place: a row going left is written to ``order`` at
    its place among the left rows (never after the row read: the place
    passes no unread row), a row going right to ``right``, from which the
    right rows are copied after the left ones (a third of the writes of the
    two passes; ``left`` is not used). ``n_table`` > 0: the rows' sides
    are read from ``table`` uint8 OUT, filled first with the side of bins 0
    .. n_table - 2 and 0 (right) for the bins beyond (:func:`_table_bins`)."""
    if n_table > 0:
        _side_table(split_bitset, split_words, split_start, split_n_words, table, n_table)
        n_left, n_right = _deal_rows_by_table(X_columns, order, first, stop, feature, table,
                                              n_table, order, first, right, 0)
    else:
        n_left, n_right = _deal_rows(X_columns, order, first, stop, feature, split_bitset,
                                     split_words, split_start, split_n_words, order, first,
                                     right, 0)
    for q in range(n_right):
        order[U64(n_left + q)] = right[U64(q)]
    counts[0, 0] = n_left - first
    counts[0, 1] = n_right


@ir_inline
def _split_chunks_part(X_columns, order, first, stop, feature, split_bitset, split_words,
                       split_start, split_n_words, left, right, counts, table, n_table, part,
                       n_parts):
    """First pass of RowPartition.split over chunks ``part`` of ``n_parts``
    (counts.shape[0] chunks of order[first:stop]): chunk c's rows that go
    left to ``left`` from its first place on, the others to ``right``,
    without a branch on the side; counts int64 (n_chunks, 2) OUT (left,
    right). ``n_table`` > 0: sides read from the split's side table
    ``table`` uint8 IN (:func:`_side_table`)."""
    n_chunks = counts.shape[0]
    chunk_first, chunk_stop = part_bounds(n_chunks, part, n_parts)
    n = stop - first
    for c in range(chunk_first, chunk_stop):
        start = first + n * c // n_chunks
        end = first + n * (c + 1) // n_chunks
        if n_table > 0:
            n_left, n_right = _deal_rows_by_table(X_columns, order, start, end, feature, table,
                                                  n_table, left, start, right, start)
        else:
            n_left, n_right = _deal_rows(X_columns, order, start, end, feature, split_bitset,
                                         split_words, split_start, split_n_words, left, start,
                                         right, start)
        counts[c, 0] = n_left - start
        counts[c, 1] = n_right - start


@ir_inline
def _place_chunks_part(order, first, left, right, counts, part, n_parts):
    """Second pass of RowPartition.split over chunks ``part`` of
    ``n_parts``: chunk c's left rows to order (OUT) after the left rows of
    chunks before it, its right rows after all left rows and the right
    rows of chunks before it."""
    n_chunks = counts.shape[0]
    n = 0
    n_left = 0
    for c in range(n_chunks):
        n += counts[c, 0] + counts[c, 1]
        n_left += counts[c, 0]
    chunk_first, chunk_stop = part_bounds(n_chunks, part, n_parts)
    left_before, right_before = 0, 0
    for c in range(chunk_first):
        left_before += counts[c, 0]
        right_before += counts[c, 1]
    for c in range(chunk_first, chunk_stop):
        start = first + n * c // n_chunks
        to_left = first + left_before
        for q in range(counts[c, 0]):
            order[U64(to_left + q)] = left[U64(start + q)]
        to_right = first + n_left + right_before
        for q in range(counts[c, 1]):
            order[U64(to_right + q)] = right[U64(start + q)]
        left_before += counts[c, 0]
        right_before += counts[c, 1]


@threaded
def _split_chunks(X_columns, order, first, stop, feature, split_bitset, split_words,
                  split_start, split_n_words, left, right, counts, table, n_table, part,
                  n_parts):
    """:func:`_split_chunks_part` in parts on gputree's threads."""
    _split_chunks_part(X_columns, order, first, stop, feature, split_bitset, split_words,
                       split_start, split_n_words, left, right, counts, table, n_table, part,
                       n_parts)


@threaded
def _place_chunks(order, first, left, right, counts, part, n_parts):
    """:func:`_place_chunks_part` in parts on gputree's threads."""
    _place_chunks_part(order, first, left, right, counts, part, n_parts)
