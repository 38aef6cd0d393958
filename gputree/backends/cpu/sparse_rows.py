"""Histograms of mostly-constant features without their most frequent bin:
binned X kept as sparse rows (each row's values other than its feature's
most frequent bin, ``SparseRows``), added as they are, and each feature's
most frequent bin recovered as the node's total minus the feature's other
bins (int64 fixed point: exact, so the histograms equal the dense pass's
cell for cell). Sparse ranking and text features (LETOR: 70% of the values
are their feature's most frequent) then cost the adds of their other
values only, as LightGBM's sparse features do."""
from dataclasses import dataclass, field

import numpy as np
from numba import njit

from ..._threads import parts_for
from ..kernel_cache import cache_numba_cpu_kernels
from . import histograms
from .histograms import _feature_span, _zero_cells, add_private, plan_pieces, row_layout
from .jit import U64, part_bounds
from .threaded import threaded

cache_numba_cpu_kernels(__file__)


#: binned X is kept as sparse rows when at most this share of its values
#: lie outside their feature's most frequent bin (a sparse value costs
#: about twice a dense one: its feature index is read too)
SPARSE_SHARE = 0.4


@dataclass
class SparseRows:
    """Binned X (n, F) as rows of the values outside their feature's most
    frequent bin: row i's are ``feature[first[i]:first[i + 1]]`` (uint16 or
    int32) in bins ``bins[...]`` (X's dtype), features ascending; ``mode``
    int32 (F,) each feature's most frequent bin (the lowest on ties)."""
    mode: np.ndarray
    first: np.ndarray
    feature: np.ndarray
    bins: np.ndarray
    #: :meth:`cells` made, by the layout's bytes
    kept_cells: dict = field(default_factory=dict, repr=False, compare=False)

    def cells(self, feature_bins, layout):
        """Each value's cell in a histogram row of the compact ``layout``
        (histograms.row_layout; ``feature_bins`` int32 (F,) at most n_bins):
        ``layout[f] + min(b, feature_bins[f])`` for feature f, bin b, as
        ``feature``'s dtype where the cells fit it (else int32); made once
        per layout (the pass then reads one index per value)."""
        key = layout.tobytes()
        if key not in self.kept_cells:
            dtype = (self.feature.dtype if layout[-1] <= np.iinfo(self.feature.dtype).max
                     else np.int32)
            feature = self.feature.astype(np.int64)
            cell = layout[feature] + np.minimum(self.bins, feature_bins[feature])
            self.kept_cells = {key: cell.astype(dtype)}
        return self.kept_cells[key]


def sparse_rows(X_binned, n_bins, max_bytes=None, bin_counts=None):
    """X_binned (n, F) as :class:`SparseRows`, or None where more than
    :data:`SPARSE_SHARE` of its values lie outside their feature's most
    frequent bin (``n_bins`` bins at most), or the rows would take more
    than ``max_bytes`` (None: no limit). ``bin_counts``: a function of no
    arguments returning int64 (F, n_bins), the rows in each bin of each
    feature (the backend's histogram pass: both threads, X read once in row
    order, where a bincount per column reads X F times across its rows);
    None: counted here by numpy."""
    n, n_features = X_binned.shape
    if n == 0 or n_features == 0:
        return None
    counts = (np.stack([np.bincount(X_binned[:, f], minlength=n_bins)
                        for f in range(n_features)]) if bin_counts is None
              else np.asarray(bin_counts()))
    mode = counts.argmax(axis=1).astype(np.int32)       # the lowest bin on ties
    count = X_binned.size - int(counts[np.arange(n_features), mode].sum())
    feature_dtype = np.uint16 if n_features <= np.iinfo(np.uint16).max else np.int32
    size = count * (np.dtype(feature_dtype).itemsize + X_binned.itemsize) + 8 * (n + 1)
    if count > SPARSE_SHARE * X_binned.size or (max_bytes is not None and size > max_bytes):
        return None
    outside = X_binned != mode.astype(X_binned.dtype)
    rows, features = np.nonzero(outside)            # row-major: row by row, features ascending
    first = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=first[1:])
    return SparseRows(mode, first, features.astype(feature_dtype),
                      np.ascontiguousarray(X_binned[rows, features]))


def histograms_of_rows(sparse, stats, rows, node_first, built_rows, hist, n_add, feature_bins,
                       n_threads, n_bins=None):
    """histograms.histograms_of_rows from ``sparse`` (:class:`SparseRows`
    of X): pieces of blocks of rows (:func:`histograms.plan_pieces`, no
    feature groups) add their values outside the most frequent bins in
    place and sum their rows' statistics; the private histograms of extra
    blocks are added; each feature's most frequent bin is its node's total
    minus the feature's other cells (``feature_bins`` int32 (F,) the
    non-missing bins): by the piece itself for a node of one piece, after
    the private histograms' sums for a node of several. ``n_bins``: hist
    is in the compact layout of histograms of that many bins
    (histograms.row_layout); None: the full one."""
    feature_bins, _, layout, shape = row_layout(feature_bins, hist.shape, n_bins)
    n_features = feature_bins.shape[0]
    # the compact layout: each value's cell in place of its feature
    feature = sparse.cells(feature_bins, layout) if layout.shape[0] else sparse.feature
    if node_first.shape[0] == 2 and rows.shape[0] < _one_piece_rows(shape[2]):
        # one node of one piece (plan_pieces' plan, without its numpy calls: a
        # best-first step's build, 3,000 a LETOR fit; a level's root)
        _node_piece(sparse, feature, stats, rows, int(built_rows[0]), hist, n_add, feature_bins,
                    layout)
        return
    per_row = int(sparse.first[-1]) // max(1, sparse.first.shape[0] - 1)
    work = (per_row + 1) * rows.shape[0]
    # a pass that runs as one part is planned for one thread (no dealing)
    pieces, extra, thread_pieces, thread_first = plan_pieces(
        node_first, built_rows, 1, shape[2], n_threads if parts_for(work) > 1 else 1)
    # the private histograms: extra.sum(), each node's pieces but its first
    n_private = pieces.shape[0] - built_rows.shape[0]
    private = np.empty((n_private,) + hist.shape[1:], dtype=hist.dtype)
    totals = np.empty((pieces.shape[0], hist.shape[3]), dtype=hist.dtype)
    alone = np.ones(pieces.shape[0], dtype=np.bool_)
    if n_private:
        one_piece = np.zeros(hist.shape[0], dtype=np.bool_)
        one_piece[built_rows[extra == 0]] = True
        alone = (pieces[:, 4] >= 0) & one_piece[np.maximum(pieces[:, 4], 0)]
    # one piece (a level of one node, not cut): run as one part, no other
    # thread woken for nothing (LETOR: the root and the first level of
    # every tree, a third of the passes)
    _add_sparse.run(work if pieces.shape[0] > 1 else 0, sparse.first, feature, sparse.bins,
                    stats, n_add, rows, pieces, thread_pieces, thread_first, hist, private,
                    feature_bins, totals, sparse.mode, alone, layout)
    if not n_private:           # every node one piece: its modes are set
        return
    add_private(private, extra, built_rows, hist, feature_bins, layout)
    blocked = np.flatnonzero(extra)
    if blocked.size:
        node_pieces = np.zeros(built_rows.shape[0] + 1, dtype=np.int64)
        np.cumsum(extra + 1, out=node_pieces[1:])
        _fill_modes.run(blocked.size * n_features * 16, hist, built_rows, blocked, node_pieces,
                        totals, sparse.mode, feature_bins, n_add, layout)


def _one_piece_rows(n_bins):
    """The rows below which histograms.plan_pieces makes a node one piece
    (of histograms of ``n_bins`` bins, the full layout's)."""
    return 2 * histograms._ROWS_PER_BIN * n_bins


#: a piece's place in its thread's list, its thread's pieces, and that it
#: is its node's only one: :func:`_node_piece`'s (read only)
_FIRST_PIECE, _ONE_THREAD = np.zeros(1, dtype=np.int64), np.array([0, 1], dtype=np.int64)
_ALONE = np.ones(1, dtype=np.bool_)


def _node_piece(sparse, feature, stats, rows, hist_row, hist, n_add, feature_bins, layout):
    """hist[hist_row] OUT: the histogram of ``rows`` (int32 (m,)) added as
    one piece on this thread by :func:`_add_sparse` (arguments as
    :func:`histograms_of_rows`'; ``feature`` the sparse values' features
    or cells, ``layout`` histograms.row_layout's)."""
    pieces = np.array([[0, rows.shape[0], 0, 1, hist_row]], dtype=np.int64)
    # (work 0: one part, on this thread)
    _add_sparse.run(0, sparse.first, feature, sparse.bins, stats, n_add, rows, pieces,
                    _FIRST_PIECE, _ONE_THREAD, hist, hist[:0], feature_bins,
                    np.empty((1, hist.shape[3]), dtype=hist.dtype), sparse.mode, _ALONE, layout)


@threaded
def _add_sparse(first, feature, bins, stats, n_add, rows, pieces, thread_pieces, thread_first,
                hist, private, feature_bins, totals, mode, alone, layout, part, n_parts):
    """Piece p (pieces int64 (P, 5) IN, as histograms._build_histograms
    takes them; features ignored: every feature) zeroes its histogram's
    cells (histograms._feature_cells; hist, private INOUT as
    _build_histograms') and adds its rows' sparse values (``first``,
    ``feature``, ``bins``: :class:`SparseRows`; in the compact layout
    ``feature`` is :meth:`SparseRows.cells`), channels 0 .. n_add-1 of
    stats int64 (n, C) IN; totals int64 (P, C) OUT: the sums of its rows'
    statistics. A piece that is its node's only one (``alone`` bool (P,))
    sets each feature's most frequent bin (``mode`` int32 (F,)) to the total
    minus the feature's other cells. ``layout`` int64: that of
    histograms.row_layout (empty: the full layout)."""
    n_features = feature_bins.shape[0]
    first_list, stop_list = part_bounds(thread_first.shape[0] - 1, part, n_parts)
    for t in range(first_list, stop_list):
        for q in range(thread_first[t], thread_first[t + 1]):
            p = thread_pieces[q]
            d = pieces[p, 4]
            dest = hist if d >= 0 else private
            s = U64(d if d >= 0 else -1 - d)
            _zero_cells(dest, s, 0, n_features, feature_bins, layout)
            for c in range(totals.shape[1]):
                totals[p, c] = 0
            if n_add == 3:
                _add_piece_registers(first, feature, bins, stats, rows, pieces[p, 0],
                                     pieces[p, 1], dest, s, totals, p, True, layout)
            elif n_add == 2:
                _add_piece_registers(first, feature, bins, stats, rows, pieces[p, 0],
                                     pieces[p, 1], dest, s, totals, p, False, layout)
            else:
                _add_piece(first, feature, bins, stats, n_add, rows, pieces[p, 0],
                           pieces[p, 1], dest, s, totals, p, layout)
            if alone[p]:
                for f in range(n_features):
                    _fill_feature(dest, s, U64(f), U64(mode[f]), totals, p, p + 1, n_add,
                                  feature_bins, layout)


@njit(inline="always")
def _add_piece_registers(first, feature, bins, stats, rows, r_first, r_stop, dest, s, totals,
                         p, three, layout):
    """_add_piece of channels 0, 1 and (``three``, a constant where it is
    called) 2, a row's values held in registers (3.5x faster than the loop
    over channels: LETOR's root)."""
    for r in range(r_first, r_stop):
        i = U64(rows[U64(r)])
        g, h = stats[i, 0], stats[i, 1]
        m = stats[i, 2] if three else g      # (unused without a third channel)
        totals[p, 0] += g
        totals[p, 1] += h
        if three:
            totals[p, 2] += m
        for k in range(first[i], first[i + U64(1)]):
            f, b = _sparse_cell(feature[U64(k)], bins[U64(k)], layout)
            dest[s, f, b, 0] += g
            dest[s, f, b, 1] += h
            if three:
                dest[s, f, b, 2] += m


@njit(inline="always")
def _sparse_cell(f, b, layout):
    """(row, cell) uint64 of a sparse value in a histogram row ``hist[s,
    row]`` (histograms._feature_span's layouts): (f, b), its feature and
    bin, in the full layout; (0, f) in the compact one, where ``f`` is
    its cell (:meth:`SparseRows.cells`)."""
    if layout.shape[0]:
        return U64(0), U64(f)
    return U64(f), U64(b)


@njit(inline="always")
def _add_piece(first, feature, bins, stats, n_add, rows, r_first, r_stop, dest, s, totals, p,
               layout):
    """totals[p] INOUT += the statistics of rows ``rows[r_first:r_stop]``
    (channels 0 .. n_add-1), their sparse values added into dest[s]
    (:func:`_sparse_cell`)."""
    for r in range(r_first, r_stop):
        i = U64(rows[U64(r)])
        for c in range(n_add):
            totals[p, c] += stats[i, U64(c)]
        for k in range(first[i], first[i + U64(1)]):
            f, b = _sparse_cell(feature[U64(k)], bins[U64(k)], layout)
            for c in range(n_add):
                dest[s, f, b, U64(c)] += stats[i, U64(c)]


@njit(inline="always")
def _fill_feature(hist, s, f, m, totals, p_first, p_stop, n_add, feature_bins, layout):
    """hist[s]'s cell of bin m of feature f OUT = the sum of
    totals[p_first:p_stop, c] minus feature f's other cells
    (histograms._feature_span of ``layout``; bin m's cell still 0),
    channels c < n_add."""
    row, first, n, last = _feature_span(layout, feature_bins, f, hist.shape[2])
    row, m = U64(row), np.int64(m)
    cell = U64(first + m if m < n else last)
    if n_add == 3:      # boosting's channels summed in registers, one pass over the cells
        t0, t1, t2 = np.int64(0), np.int64(0), np.int64(0)
        for p in range(p_first, p_stop):
            t0, t1, t2 = t0 + totals[p, 0], t1 + totals[p, 1], t2 + totals[p, 2]
        for b in range(first, first + n):
            t0 -= hist[s, row, U64(b), U64(0)]
            t1 -= hist[s, row, U64(b), U64(1)]
            t2 -= hist[s, row, U64(b), U64(2)]
        if last >= 0:
            t0 -= hist[s, row, U64(last), U64(0)]
            t1 -= hist[s, row, U64(last), U64(1)]
            t2 -= hist[s, row, U64(last), U64(2)]
        hist[s, row, cell, U64(0)], hist[s, row, cell, U64(1)] = t0, t1
        hist[s, row, cell, U64(2)] = t2
        return
    for c in range(n_add):
        total = np.int64(0)
        for p in range(p_first, p_stop):
            total += totals[p, c]
        for b in range(first, first + n):
            total -= hist[s, row, U64(b), U64(c)]
        if last >= 0:
            total -= hist[s, row, U64(last), U64(c)]
        hist[s, row, cell, U64(c)] = total


@threaded
def _fill_modes(hist, built_rows, nodes, node_pieces, totals, mode, feature_bins, n_add, layout,
                part, n_parts):
    """hist[built_rows[j]]'s cell of bin mode[f] of feature f OUT = the
    node's total (the sum of totals[node_pieces[j]:node_pieces[j + 1], c])
    minus the feature's other cells (histograms._feature_span of
    ``layout``), channels c < n_add, for the nodes j in ``nodes`` (int64);
    in parts over (node, feature). (A private histogram adds 0 in that
    cell: its piece never fills it.)"""
    n_features = feature_bins.shape[0]
    first, stop = part_bounds(nodes.shape[0] * n_features, part, n_parts)
    for t in range(first, stop):
        j, f = U64(nodes[t // U64(n_features)]), t % U64(n_features)
        _fill_feature(hist, U64(built_rows[j]), f, U64(mode[f]), totals, node_pieces[j],
                      node_pieces[j + U64(1)], n_add, feature_bins, layout)
