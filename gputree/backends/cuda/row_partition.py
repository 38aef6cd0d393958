"""The row partition of the CUDA backend: the training rows grouped by the
node they sit in, each node's rows contiguous and in ascending row order,
kept on the device level by level beside the rows' positions (as XGBoost's
row partitioner keeps them), so that a histogram launch reads only the rows
of the nodes it builds (kernels/row_partition.cu, kernels/histogram.cu).

:class:`RowSegments` is one level's grouping; :func:`segments_from_positions`
finds it from the positions alone (a stable sort: for a level that was not
followed); :class:`RowPartition` follows one positions array through a tree:
the root's grouping is the identity, and each level's splits, recorded when
the rows move, are applied (a stable partition of each split node's rows)
when the next level's histograms are built, so the tree's last level costs
no partition.

The partition assumes the numbering of :func:`gputree.growth.levelwise.grow_tree`:
the children of a level's split nodes make up the next level, in the order of
their parents (left child ids ``next_start + 2 i``, right ``+ 1``).
"""
import weakref
from dataclasses import dataclass

from ..._dtypes import NODE_DTYPE


@dataclass
class RowSegments:
    """Rows grouped by node for one level.

    order : int32 (n_samples,) row ids, node after node, or None for the
        identity (the root's grouping, never written out);
    begin, end : int32 (>= n_level,) the level node k's rows are
        ``order[begin[k]:end[k]]`` (begins non-decreasing in k);
    level_start : int, the global id of the level's node 0.
    """

    order: object
    begin: object
    end: object
    level_start: int

    @property
    def capacity(self):
        """Level nodes the segments describe (at most)."""
        return int(self.begin.shape[0])


def segments_from_positions(xp, positions, level_start, n_level):
    """The :class:`RowSegments` of the level nodes ``level_start ..
    level_start + n_level - 1`` from positions int32 (n_samples,) alone: a
    stable sort of the rows by node (on the device, O(n log n))."""
    order = xp.argsort(positions, kind="stable").astype(NODE_DTYPE)
    ordered = positions[order]
    nodes = xp.arange(level_start, level_start + n_level, dtype=positions.dtype)
    begin = xp.searchsorted(ordered, nodes, side="left").astype(NODE_DTYPE)
    end = xp.searchsorted(ordered, nodes, side="right").astype(NODE_DTYPE)
    return RowSegments(order, begin, end, int(level_start))


@dataclass
class _Split:
    """A level's splits recorded when its rows moved (device arrays)."""
    split_feature: object   # int32 (n_level,), -1 = not split
    left_child: object      # int32 (n_level,) left child's global id
    next_start: int         # global id of the next level's node 0


class RowPartition:
    """The row grouping of one positions array, following its tree level
    by level.

    backend : the CUDABackend (its ``kernels`` launch, its ``empty`` and
    ``zeros`` allocate, counted); positions : int32 (n_samples,) on the
    device, held by a weak reference (the caller owns it). Device memory:
    three int32 arrays of n_samples (two orders used in turn and the scan of
    the partition), taken at the first partition and kept for later trees.
    """

    def __init__(self, backend, positions):
        self.backend = backend
        self.positions = weakref.ref(positions)
        self.n_samples = int(positions.shape[0])
        self.segments = None
        self.pending = None
        self._orders = ()     # two int32 (n_samples,) arrays, used in turn
        self._scan = None

    def start_tree(self, n_roots=1):
        """Every row at a root, the identity order: one segment [0, n), or
        for a batch of ``n_roots`` trees grown together
        (:mod:`gputree.growth.forest_batch`) root t's rows are the t-th of
        ``n_roots`` equal segments."""
        xp = self.backend.xp
        per_root = self.n_samples // n_roots
        begin = xp.arange(0, self.n_samples, per_root, dtype=NODE_DTYPE)[:n_roots]
        self.segments = RowSegments(None, begin, begin + per_root, 0)
        self.pending = None

    def record_split(self, level_start, split_feature, left_child):
        """The rows of level ``level_start``'s split nodes moved to their
        children (update_positions): partition them before the next level's
        histograms. A level that is not the one followed ends the following."""
        if self.pending is not None:
            self._apply()
        if self.segments is None or self.segments.level_start != level_start:
            self.segments = None
            return
        self.pending = _Split(split_feature, left_child,
                              level_start + int(split_feature.shape[0]))

    def level(self, level_start, n_level):
        """The :class:`RowSegments` of the level (after its pending
        partition), or None when this partition does not follow it."""
        if self.pending is not None and self.pending.next_start == level_start:
            self._apply()
        segments = self.segments
        if segments is None or segments.level_start != level_start or segments.capacity < n_level:
            return None
        return segments

    def _apply(self):
        """Partition the recorded split nodes' rows (three launches and a scan)."""
        split, self.pending = self.pending, None
        segments, positions = self.segments, self.positions()
        if segments is None or positions is None:
            self.segments = None
            return
        backend, n_next = self.backend, 2 * int(split.split_feature.shape[0])
        if self._scan is None:
            self._scan = backend.empty((self.n_samples,), NODE_DTYPE)
            self._orders = tuple(backend.empty((self.n_samples,), NODE_DTYPE) for _ in range(2))
        new_order = self._orders[1] if segments.order is self._orders[0] else self._orders[0]
        begin = backend.zeros((n_next,), NODE_DTYPE)
        end = backend.zeros((n_next,), NODE_DTYPE)
        backend.kernels.partition_rows(segments, positions, split.split_feature,
                                       split.left_child, split.next_start, self._scan, new_order,
                                       begin, end)
        self.segments = RowSegments(new_order, begin, end, split.next_start)
