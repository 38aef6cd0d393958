"""``HistogramPool``: the rows of one int64 array on the backend that hold
the histograms of the nodes being grown, reused level after level and tree
after tree."""
import math

import numpy as np

from .._dtypes import NODE_DTYPE, STAT_DTYPE


#: a histogram pool reserves rows for the largest possible level up front when
#: they take at most this many bytes (the CPU maps pages only once written;
#: the CUDA backend's memory check counts them already); beyond, it doubles
_POOL_RESERVE_BYTES = 2 ** 30


class HistogramPool:
    """The histograms of the nodes being grown: rows of one int64 array
    ``hist`` (capacity, n_features, n_bins, n_channels) on the backend.

    A larger child's histogram is derived in place, in its parent's row, so a
    level takes new rows only for the children it builds, once the rows of
    the nodes it no longer needs are released: a level holds its own
    histograms, not also a copy of the previous level's. Free rows are
    handed out lowest first, so the rows ever used, ``hist[:n_touched]``,
    stay few. The array starts with rows for the most nodes a level can have
    when that is at most ``_POOL_RESERVE_BYTES``; otherwise, when a level
    needs more rows than it has, it doubles and the used rows are copied.

    One pool can serve every tree of a fit (forests and boosting pass theirs
    to :func:`grow_tree`): the array is then allocated, and grows, about once
    per fit rather than once per tree; so are the rows' positions. A tree
    may start again with other rows (a backend's compact layout, CPU
    histograms of each feature's own bins): the array of the row shape it
    leaves is kept for the next tree that asks for it (one such array).
    """

    def __init__(self, backend):
        self.backend = backend
        self.row_shape = None
        self.positions = None
        self._kept = {}
        #: the backend's compiled steps of the last tree (Backend.level_steps),
        #: whose arrays follow the pool's rows: the next tree's to start again
        self.kept_steps = None

    def row_positions(self, n_samples):
        """Zeroed int32 (n_samples,) positions for the tree starting: one
        array reused by the pool's trees (a tree's positions serve its
        caller until the next tree starts)."""
        self.positions = self.backend.row_zeros(n_samples, NODE_DTYPE, reuse=self.positions)
        return self.positions

    def start_tree(self, row_shape, max_rows):
        """Release every row, for a tree whose histograms have ``row_shape``
        (n_features, n_bins, n_channels) and whose levels have at most
        ``max_rows`` nodes."""
        if row_shape != self.row_shape:
            kept = self._kept.get(row_shape) or (
                self.backend.zeros((0,) + row_shape, STAT_DTYPE), np.zeros(0, dtype=bool), 0)
            # one other shape kept: trees of ever new shapes (column subsets
            # of other bins) hold two arrays, not one per tree
            self._kept = ({} if self.row_shape is None else
                          {self.row_shape: (self.hist, self.in_use, self.n_touched)})
            self.row_shape = row_shape
            self.hist, self.in_use, self.n_touched = kept
        self.in_use[:] = False
        self.to_zero = []
        self.max_rows = max_rows
        row_bytes = math.prod(row_shape) * np.dtype(STAT_DTYPE).itemsize
        if self.in_use.size < max_rows and max_rows * row_bytes <= _POOL_RESERVE_BYTES:
            self._grow(max_rows)

    def keep_only(self, rows):
        """Release every row except ``rows``."""
        self.in_use[:] = False
        self.in_use[rows] = True

    def release(self, rows):
        """Release ``rows`` (int array), keeping the others."""
        self.in_use[rows] = False

    def take(self, n):
        """``n`` free rows, marked in use: int32 (n,), ascending. Rows that
        held a histogram before are zeroed by the caller, who gets them from
        :meth:`rows_to_zero`."""
        rows = self._free_rows(n)
        self.to_zero.append(rows[rows < self.n_touched])
        self.in_use[rows] = True
        if n:
            self.n_touched = max(self.n_touched, int(rows[-1]) + 1)
        return rows

    def _free_rows(self, n):
        """int32 (n,): the ``n`` lowest free rows, the pool grown where it
        has fewer (one row, a best-first step's, found by argmin: fewer
        numpy calls than the general search)."""
        if n == 1:
            row = int(self.in_use.argmin()) if self.in_use.size else 0
            if row >= self.in_use.size or self.in_use[row]:
                _check_histogram_memory(self.backend, 1, self.row_shape)
                row = self.in_use.size
                self._grow(row + 1)
            return np.array([row], dtype=NODE_DTYPE)
        free = np.flatnonzero(~self.in_use)
        if free.size < n:
            _check_histogram_memory(self.backend, n - free.size, self.row_shape)
            self._grow(self.in_use.size + n - free.size)
            free = np.flatnonzero(~self.in_use)
        return free[:n].astype(NODE_DTYPE)

    def reserve(self, n_rows, touched=0):
        """At least ``n_rows`` rows (the pool grown as :meth:`take` grows
        it), where a caller hands rows out itself by :attr:`in_use`: rows
        below ``touched`` have been handed out."""
        self.n_touched = max(self.n_touched, touched)
        if self.in_use.size < n_rows:
            _check_histogram_memory(self.backend, n_rows - self.in_use.size, self.row_shape)
            self._grow(n_rows)

    def rows_to_zero(self):
        """int32 rows handed out by :meth:`take` since the last call that
        held a histogram before (they must be zeroed before building)."""
        rows = np.concatenate(self.to_zero) if self.to_zero else np.empty(0, NODE_DTYPE)
        self.to_zero = []
        return rows.astype(NODE_DTYPE)

    def _grow(self, n_rows):
        capacity = max(n_rows, min(2 * self.in_use.size, self.max_rows))
        hist = self.backend.zeros((capacity,) + self.row_shape, STAT_DTYPE)
        # only rows in use hold a histogram still needed; a free row taken
        # later is built (or zeroed) anew: copying every touched row wrote
        # all their pages (a forest's deep trees, 10 classes: most of a
        # single tree's fit)
        kept = self.backend.upload(np.flatnonzero(self.in_use[:self.n_touched]))
        if kept.size:
            hist[kept] = self.hist[kept]
        self.hist = hist
        self.in_use = np.concatenate([self.in_use,
                                      np.zeros(capacity - self.in_use.size, dtype=bool)])


def _check_histogram_memory(backend, n_new_rows, row_shape):
    """Raise MemoryError, saying what to change, when ``n_new_rows`` more
    histograms of ``row_shape`` (n_features, n_bins, n_channels) int64 do not
    fit in the memory the backend reports free (unknown: no check)."""
    free = backend.free_memory_bytes()
    needed = n_new_rows * math.prod(row_shape) * np.dtype(STAT_DTYPE).itemsize
    if free is None or needed <= free:
        return
    n_features, n_bins, n_channels = row_shape
    raise MemoryError(
        f"The histograms of this tree level need {needed / 2**20:.0f} MiB more "
        f"({n_new_rows} nodes x {n_features} features x {n_bins} bins x {n_channels} "
        f"channels x 8 bytes) but {backend.name} has {free / 2**20:.0f} MiB free. Lower "
        "max_bins (histograms grow with it; a categorical feature's categories count as "
        "bins of every feature: merge its rare categories), limit max_depth / "
        "max_leaf_nodes, or raise min_samples_leaf.")
