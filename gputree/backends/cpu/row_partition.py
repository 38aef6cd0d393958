"""The CPU row partition of best-first growth: the training rows grouped by
the leaf they sit in, each leaf owning a contiguous range of one int32 index
array (ascending rows within a range), so that a split reads and moves only
its leaf's rows and the histogram of a child reads only the child's.

A split partitions its leaf's range stably in place (rows going left first,
then rows going right, each in their order), as LightGBM's data partition
and XGBoost's row partitioner do: in parts over chunks of the range, a
first pass writes each chunk's left and right rows to two scratch arrays at
the chunk's place and sets the rows' positions, a second copies them back
to the range at offsets from the chunks' counts. The result is the same for
any number of chunks and threads.
"""
import numpy as np

from ..._threads import parts_for
from ..kernel_cache import cache_numba_cpu_kernels
from .jit import U64, goes_left_words, part_bounds
from .threaded import threaded

cache_numba_cpu_kernels(__file__)


#: nanoseconds of one thread per row moved (a job's work for parts_for)
_WORK_PER_ROW = 4


class RowPartition:
    """Rows grouped by node for one tree: ``order`` int32 (n,) (a buffer
    kept per binned X), node ``k``'s rows ``order[begin[k]:begin[k] +
    count[k]]``; node ids as the grower numbers them (the root 0, each
    split's children appended). Scratch: ``left``, ``right`` int32 (n,)."""

    def __init__(self, order, left, right):
        self.order, self.left, self.right = order, left, right
        self.begin, self.count = [0], [order.shape[0]]

    def rows(self, node):
        """int32 view of node's rows."""
        first = self.begin[node]
        return self.order[first:first + self.count[node]]

    def split(self, X_columns, positions, node, feature, split_sets, left_child):
        """Move the rows of ``node`` to its children ``left_child`` and ``+
        1`` (the node ids next in line): the rows whose bin of ``feature``
        is in the left set of ``split_sets`` (a LeftSets of one split) go
        left; positions int32 (n,) INOUT of the node's rows; their ranges
        appended."""
        first, n = self.begin[node], self.count[node]
        n_chunks = parts_for(n * _WORK_PER_ROW)
        counts = np.empty((n_chunks, 2), dtype=np.int64)
        _split_chunks.run(n * _WORK_PER_ROW, X_columns, self.order, first, first + n,
                          np.int64(feature), *split_sets, np.int32(left_child), positions,
                          self.left, self.right, counts)
        _place_chunks.run(n * _WORK_PER_ROW, self.order, first, self.left, self.right, counts)
        n_left = int(counts[:, 0].sum())
        self.begin += [first, first + n_left]
        self.count += [n_left, n - n_left]


@threaded
def _split_chunks(X_columns, order, first, stop, feature, split_bitset, split_words,
                  split_start, split_n_words, left_child, positions, left, right, counts,
                  part, n_parts):
    """First pass of RowPartition.split over chunks ``part`` of ``n_parts``
    (counts.shape[0] chunks of order[first:stop]): chunk c's rows that go
    left to ``left`` from its first place on, the others to ``right``,
    without a branch on the side; counts int64 (n_chunks, 2) OUT (left,
    right); positions INOUT set to the rows' child."""
    n_chunks = counts.shape[0]
    chunk_first, chunk_stop = part_bounds(n_chunks, part, n_parts)
    n = stop - first
    for c in range(chunk_first, chunk_stop):
        start = first + n * c // n_chunks
        end = first + n * (c + 1) // n_chunks
        n_left, n_right = start, start
        for q in range(start, end):
            i = order[U64(q)]
            b = X_columns[U64(i), U64(feature)]
            go_left = goes_left_words(split_bitset, U64(0), b, split_words, split_start,
                                      split_n_words)
            positions[U64(i)] = left_child + np.int32(1 - go_left)
            left[U64(n_left)] = i
            right[U64(n_right)] = i
            n_left += go_left
            n_right += 1 - go_left
        counts[c, 0] = n_left - start
        counts[c, 1] = n_right - start


@threaded
def _place_chunks(order, first, left, right, counts, part, n_parts):
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
