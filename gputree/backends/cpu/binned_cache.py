"""``BinnedCache``: what the CPU backend keeps per binned X while X lives:
its column-major copy for the moves and the row buffers of a fit."""
import weakref

import numpy as np
from ..kernel_cache import cache_numba_cpu_kernels
from .jit import part_bounds
from .partition import ROW_CHUNK, row_bytes
from .sparse_rows import sparse_rows
from .threaded import threaded

cache_numba_cpu_kernels(__file__)


#: binned X of at least this many values gets a column-major copy for the
#: moves (BinnedCache) ...
_COLUMN_COPY_VALUES = 1 << 22


#: ... when the copy takes at most this fraction of the free memory
_COLUMN_COPY_MEMORY = 1 / 8


#: binned X whose rows and statistics take at least this many bytes has the
#: rows of a level's built nodes copied in node order for the histogram
#: pass (BinnedCache.ordered_rows); beyond the last-level cache the pass
#: read them scattered at 2.5x the time (a depth-8 tree's deeper levels,
#: gathering and histograms, 1 thread: 1M x 28 rows 150 -> 114 ms,
#: 500k x 28 70 -> 60 ms, 300k x 20 about even)
_ORDERED_COPY_BYTES = 1 << 24


#: ... where the built nodes hold less than this share of the rows on
#: average (a node of more is read nearly in order: 1M x 28, the one node
#: built below the root, 28% of the rows: 14.7 ms scattered, 15.3 copied)
_ORDERED_SHARE = 0.2


@threaded
def _copy_rows(X, out, part, n_parts):
    """out[:] = X, in parts over blocks of ``ROW_CHUNK`` rows (X one order,
    out another: a row-major X into a column-major copy 4-5x faster than
    numpy's copy, 750k to 7M x 28 rows, 2 threads)."""
    n_rows = X.shape[0]
    first, stop = part_bounds((n_rows + ROW_CHUNK - 1) // ROW_CHUNK, part, n_parts)
    for block in range(first, stop):
        for i in range(block * ROW_CHUNK, min(n_rows, (block + 1) * ROW_CHUNK)):
            for f in range(X.shape[1]):
                out[i, f] = X[i, f]


class BinnedCache:
    """What the CPU backend keeps per binned X while X lives (by id; a
    finalizer drops it with X):

    * a column-major (F-order) copy for the moves: a move reads one bin per
      row, its node's split feature, and from the copy it streams that
      column instead of all of X (750k x 28 rows, 2 threads: a depth-8
      tree's moves and gathering 10.8 -> 7.4 ms); made on first use for X of
      at least _COLUMN_COPY_VALUES values while free memory allows and X is
      not kept lean (:meth:`keep_lean`; else the moves read X itself);
    * the moves' int32 (n,) row buffers and the root's identity rows,
      reused by every level and tree of a fit: fresh large arrays cost their
      pages, which the OS zeroes and maps on first touch (at 7M rows, a
      fresh set per level cost more system time than the moves took). A
      column subset (colsample_bytree) shares its parent's. X kept lean
      has only the gathered rows' buffer (:mod:`.lean_gather`: 12 bytes a
      row less);
    * its sparse rows (:mod:`.sparse_rows`) where most of its values are
      their feature's most frequent bin.
    """

    def __init__(self, free_memory_bytes):
        self.free_memory_bytes = free_memory_bytes
        self.entries = {}

    def columns(self, X_binned):
        """X_binned's column-major copy, or X_binned (small, F order
        already, or no room)."""
        entry = self._entry(X_binned)
        copy = entry.get("columns")
        if copy is not None or X_binned.flags.f_contiguous or entry.get("lean") or (
                X_binned.size < _COLUMN_COPY_VALUES):
            return X_binned if copy is None else copy
        free = self.free_memory_bytes()
        if free is not None and X_binned.nbytes > free * _COLUMN_COPY_MEMORY:
            return X_binned
        copy = entry["columns"] = np.empty(X_binned.shape, X_binned.dtype, order="F")
        _copy_rows.run(X_binned.size, X_binned, copy)
        return copy

    def keep_lean(self, X_binned):
        """No column-major copy of X_binned (a Dataset's codes: memory
        first; 8M x 28 rows: 214 MiB less, the moves of a depth-8 tree a
        few tens of ms slower)."""
        self._entry(X_binned)["lean"] = True

    def is_lean(self, X_binned):
        """Whether X_binned is kept lean (:meth:`keep_lean`): its fits then
        make no row buffers beyond positions and the gathered rows
        (:mod:`.lean_gather`)."""
        return bool(self._entry(X_binned).get("lean"))

    def sparse(self, X_binned, n_bins, bin_counts=None):
        """X_binned's :class:`gputree.backends.cpu.sparse_rows.SparseRows`
        (values of at most ``n_bins`` bins), made on first use, or None
        where its features are not mostly constant, there is no room, or
        X_binned is kept lean (memory first: no second copy).
        ``bin_counts``: as :func:`.sparse_rows.sparse_rows` takes it."""
        entry = self._entry(X_binned)
        if entry.get("lean"):
            return None
        if "sparse" not in entry:
            free = self.free_memory_bytes()
            entry["sparse"] = sparse_rows(X_binned, n_bins,
                                          None if free is None else free * _COLUMN_COPY_MEMORY,
                                          bin_counts)
        return entry["sparse"]

    def rows(self, X_binned, name):
        """int32 (n,) buffer ``name`` of X_binned's rows (contents left from
        its last use; "identity": 0 .. n-1)."""
        buffers = self._entry(X_binned)["buffers"]
        n = X_binned.shape[0]
        if name not in buffers or buffers[name].shape[0] != n:
            buffers[name] = (np.arange(n, dtype=np.int32) if name == "identity"
                             else np.empty(n, dtype=np.int32))
        return buffers[name]

    def ordered_rows(self, X_binned, stats, may_copy=True):
        """``copy_from, copy_to`` of :func:`.partition.rows_by_node`: the
        histogram pass of a level reads the built nodes' rows of X_binned
        and of ``stats`` (int64 (n, C)) copied in node order into buffers
        kept per X_binned (fresh pages cost their faults: made once, the
        pages of rows never copied untouched) where ``may_copy``, X_binned
        and stats take at least _ORDERED_COPY_BYTES in C order, X_binned is
        not kept lean, the built nodes hold less than _ORDERED_SHARE of the
        rows on average, and free memory allows; else no copy (empty
        buffers)."""
        entry = self._entry(X_binned)
        copy = (may_copy and not entry.get("lean") and X_binned.flags.c_contiguous
                and stats.flags.c_contiguous
                and X_binned.nbytes + stats.nbytes >= _ORDERED_COPY_BYTES)
        rows = row_bytes(X_binned if copy else np.empty((0, X_binned.shape[1]),
                                                        dtype=X_binned.dtype))
        no_copy = (rows[:0], np.empty((0, stats.shape[1]), dtype=stats.dtype))
        if not copy:
            return no_copy, lambda node_first: no_copy
        buffers, n = entry["buffers"], X_binned.shape[0]

        def copy_to(node_first):
            m, n_build = int(node_first[-1]), node_first.shape[0] - 1
            if m >= _ORDERED_SHARE * n * n_build:
                return no_copy
            key = ("ordered", rows.shape[1], stats.shape[1])
            copies = buffers.get(key)
            if copies is None:
                free = self.free_memory_bytes()
                if free is not None and m * (rows[0].nbytes + stats[0].nbytes) > (
                        free * _COLUMN_COPY_MEMORY):
                    return no_copy
                copies = buffers[key] = (np.empty(rows.shape, dtype=rows.dtype),
                                         np.empty(stats.shape, dtype=stats.dtype))
            return copies[0][:m], copies[1][:m]
        return (rows, stats), copy_to

    def derive(self, X_binned, columns, subset):
        """``subset`` = X_binned[:, columns] shares X_binned's row buffers
        and gets its column copy from X_binned's (boosting's
        colsample_bytree: one transposing copy per fit, then column
        copies)."""
        self._entry(subset)["buffers"] = self._entry(X_binned)["buffers"]
        copy = self.columns(X_binned)
        if copy is not X_binned and not subset.flags.f_contiguous:
            columns_copy = np.empty(subset.shape, dtype=subset.dtype, order="F")
            for j, f in enumerate(columns):
                columns_copy[:, j] = copy[:, f]
            self._entry(subset)["columns"] = columns_copy

    def _entry(self, X_binned):
        key = id(X_binned)
        entry = self.entries.get(key)
        if entry is None:
            entry = self.entries[key] = {"buffers": {}}
            weakref.finalize(X_binned, self.entries.pop, key, None)
        return entry
