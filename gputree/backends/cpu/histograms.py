"""The CPU histogram pass: the rows of the nodes to build (grouped by node)
cut into pieces (row blocks, then feature groups) only as far as the threads
need (:func:`histogram_pieces`), each piece adding whole rows of X into one
node's histogram, which stays in the core's cache; a row block other than a
node's first adds into a private histogram, reduced afterwards in a fixed
order. No two threads ever write the same cell and no atomics are needed.
Cells are int64 fixed-point sums, so the result is the same for any cut and
thread count. Also the subtraction of siblings and the zeroing of rows."""
import functools
from pathlib import Path

import numpy as np

from ..._threads import kernel_jit, parts_for, thread_count
from ..kernel_cache import cache_numba_cpu_kernels
from .intrinsics import add_three, add_two, prefetch_row
from .jit import U64, llvm_inline, part_bounds
from .threaded import threaded

cache_numba_cpu_kernels(__file__)


#: rows ahead of the one being added whose rows of X and of the statistics a
#: histogram pass prefetches: a node's rows are scattered over X, beyond
#: what the hardware prefetcher follows (the two deepest levels of a depth-8 fit, 750k rows:
#: 1.2-1.4x faster)
_PREFETCH_AHEAD = 12

#: the helpers' flags (compile-time constants where they are called): numpy
#: booleans, which numba types as plain booleans, so that each helper is
#: compiled once (Python's True and False would be literal types, a
#: compile per value) and LLVM, inlining it, keeps only the branch taken
_YES, _NO = np.bool_(True), np.bool_(False)


@llvm_inline
def _prefetch_rows(X_binned, stats, i):
    """Prefetch row i of X_binned and of stats."""
    prefetch_row(X_binned, np.int64(i))
    prefetch_row(stats, np.int64(i))


@llvm_inline
def _cell(cells, feature_bins, f, b, compact):
    """(feature, bin) of the cell of bin b of feature f: (0, its compact
    cell) when ``compact`` (a constant where it is called: the loops are
    compiled for each; :func:`compact_cells`), else (f, b)."""
    b = np.int64(b)
    if compact:
        n = np.int64(feature_bins[U64(f)])
        return np.int64(0), cells[U64(f)] + (b if b < n else n)
    return np.int64(f), b


@llvm_inline
def _add_rows(X_binned, stats, n_add, rows, first, stop, f_first, f_stop, dest, s, cut, cells,
              feature_bins, compact):
    """dest[s] INOUT += the histograms (features f_first .. f_stop-1,
    channels 0 .. n_add-1; compact ones, :func:`_cell`) of rows
    ``rows[first:stop]`` of X and stats: blocks of ``cut[0]`` rows, each
    added in groups of at most ``cut[1]`` features (int64 (3,),
    :func:`_block_cut`), by :func:`_add_block`."""
    n_features = f_stop - f_first
    n_groups = (n_features + cut[1] - 1) // cut[1]
    for block in range(first, stop, cut[0]):
        block_stop = min(stop, block + cut[0])
        for k in range(n_groups):
            _add_block(X_binned, stats, n_add, rows, block, block_stop,
                       f_first + n_features * k // n_groups,
                       f_first + n_features * (k + 1) // n_groups, dest, s, cells, feature_bins,
                       cut[2] != 0, compact)


@llvm_inline
def _add_block(X_binned, stats, n_add, rows, first, stop, f_first, f_stop, dest, s, cells,
               feature_bins, vector_three, compact):
    """dest[s] INOUT += the histograms (features f_first .. f_stop-1,
    channels 0 .. n_add-1; compact ones, :func:`_cell`) of rows
    ``rows[first:stop]`` of X and stats. Two
    or three channels go in pairs of rows, the rest (and an odd last row)
    one at a time: two rows' loads and read-modify-writes are independent,
    so their cache misses overlap. The X and stats rows ``_PREFETCH_AHEAD``
    ahead are prefetched. Cells are indexed, never sliced: numba
    reference-counts every view."""
    if n_add == 3 and stats.shape[1] > 2:
        first = _add_row_pairs(X_binned, stats, rows, _YES, _YES, first, stop, f_first,
                               f_stop, dest, s, cells, feature_bins, vector_three, compact)
    elif n_add == 3:        # the third channel counts rows
        first = _add_row_pairs(X_binned, stats, rows, _YES, _NO, first, stop, f_first,
                               f_stop, dest, s, cells, feature_bins, vector_three, compact)
    elif n_add == 2:
        first = _add_row_pairs(X_binned, stats, rows, _NO, _NO, first, stop, f_first,
                               f_stop, dest, s, cells, feature_bins, vector_three, compact)
    n_stats = min(n_add, stats.shape[1])
    for r in range(first, stop):
        i = U64(rows[U64(r)])
        if r + _PREFETCH_AHEAD < stop:
            _prefetch_rows(X_binned, stats, rows[U64(r + _PREFETCH_AHEAD)])
        for f in range(f_first, f_stop):
            fi, k = _cell(cells, feature_bins, f, X_binned[i, U64(f)], compact)
            for c in range(n_stats):
                dest[U64(s), U64(fi), U64(k), U64(c)] += stats[i, U64(c)]
            for c in range(n_stats, n_add):     # a count beyond stats' columns
                dest[U64(s), U64(fi), U64(k), U64(c)] += 1


@llvm_inline
def _add_row_pairs(X_binned, stats, rows, three, counted, first, stop, f_first, f_stop, dest,
                   s, cells, feature_bins, vector_three, compact):
    """_add_block of channels 0, 1 and (``three``) 2 (boosting's gradient,
    hessian and count; two classes' weights), two rows at a time, the
    rows' values in registers (40% faster than the loop over channels, root
    histograms, 750k rows), each cell's channels added as one vector
    (add_two, add_three: 1.1x faster again); ``counted``: the third
    channel is stats' third column, else 1 for every row (constants where
    it is called: the loops are compiled for each). Returns the first row
    not added (``stop - 1`` for an odd count)."""
    last = stop - (stop - first) % 2
    s = U64(s)
    for r in range(first, last, 2):
        i, j = U64(rows[U64(r)]), U64(rows[U64(r + 1)])
        if r + _PREFETCH_AHEAD + 1 < stop:
            _prefetch_rows(X_binned, stats, rows[U64(r + _PREFETCH_AHEAD)])
            _prefetch_rows(X_binned, stats, rows[U64(r + _PREFETCH_AHEAD + 1)])
        g, h = stats[i, 0], stats[i, 1]
        g2, h2 = stats[j, 0], stats[j, 1]
        n = n2 = np.int64(1)                # (unused without a third channel)
        if three and counted:
            n, n2 = stats[i, 2], stats[j, 2]
        for f in range(f_first, f_stop):
            fi, b = _cell(cells, feature_bins, f, X_binned[i, U64(f)], compact)
            fj, b2 = _cell(cells, feature_bins, f, X_binned[j, U64(f)], compact)
            if three and vector_three:
                add_three(dest, np.int64(s), fi, b, g, h, n)
                add_three(dest, np.int64(s), fj, b2, g2, h2, n2)
            elif three:
                add_two(dest, np.int64(s), fi, b, g, h)
                dest[U64(s), U64(fi), U64(b), 2] += n
                add_two(dest, np.int64(s), fj, b2, g2, h2)
                dest[U64(s), U64(fj), U64(b2), 2] += n2
            else:
                add_two(dest, np.int64(s), fi, b, g, h)
                add_two(dest, np.int64(s), fj, b2, g2, h2)
    return last


@threaded
def _build_histograms(X_binned, stats, n_add, rows, pieces, thread_pieces, thread_first, hist,
                      private, feature_bins, cells, compact, cut, layout, part, n_parts):
    """Histograms of pieces of a level's rows, in parts over the planned
    threads' lists of pieces (one part per thread, or one for all).

    X_binned uint8 or uint16 (n, F) IN, best in C order (a row's bins in
    one cache line); stats int64 (n, C) IN, channels 0 .. n_add-1 added
    (the others' cells left zero), a channel c >= C adding 1 per row (a
    count the statistics do not hold; with n_add 2 or 3, C >= 2); rows
    int32 (m,) IN: the rows to add, grouped by node. pieces int64 (P, 5) IN: piece p zeroes, then adds
    rows ``rows[pieces[p, 0]:pieces[p, 1]]``, features pieces[p, 2] ..
    pieces[p, 3]-1, into ``hist[d]`` (int64 (n_hist, F, n_bins, C) INOUT),
    d = pieces[p, 4] >= 0, else into ``private[-1 - d]`` (int64 (n_private, F,
    n_bins, C) OUT), which :func:`_add_private` adds to hist. Zeroed by the
    thread that fills them, a node's cells are in its cache when the adds
    start (a level's histograms outgrow the cache: zeroed beforehand, every
    cell's first add missed it). Thread t builds pieces
    ``thread_pieces[thread_first[t]:thread_first[t + 1]]`` (int64), each in
    blocks of rows and groups of features as ``cut`` int64 (4,) IN says
    (:func:`_block_cut`). Only the cells of :func:`_feature_cells`
    (``feature_bins`` int32 (F,) IN) are written; the others are left as
    they were (no row is in another bin). Where ``cut[3]`` allows it, a
    piece with more adds than cells adds into its part's compact histogram
    ``compact[part, 0]`` (int64 (n_parts, 1, cells[-1], C) scratch; int64
    cells (F + 1,) IN: :func:`compact_cells`), whose cells lie side by side
    (the cells of a feature's few bins share cache lines, and the sets of
    the cache: a histogram row's features lie n_bins * C * 8 bytes apart),
    then copies it into the piece's cells; other pieces add into them in
    place. ``layout`` int64: empty, hist and private as above; else
    ``cells`` (the compact layout, :func:`row_layout`): hist int64 (n_hist,
    1, cells[-1], C) and private alike, each piece zeroing and adding into
    its features' cells in place. Pieces write disjoint cells: integer
    sums, the result depends on neither the cut nor the thread count."""
    first_list, stop_list = part_bounds(thread_first.shape[0] - 1, part, n_parts)
    for t in range(first_list, stop_list):
        for q in range(thread_first[t], thread_first[t + 1]):
            p = thread_pieces[q]
            first, stop, f_first, f_stop, d = (pieces[p, 0], pieces[p, 1], pieces[p, 2],
                                              pieces[p, 3], pieces[p, 4])
            dest = hist if d >= 0 else private
            s = d if d >= 0 else -1 - d
            n_cells = cells[f_stop] - cells[f_first]
            if layout.shape[0]:
                _zero_cells(dest, s, f_first, f_stop, feature_bins, layout)
                _add_rows(X_binned, stats, n_add, rows, first, stop, f_first, f_stop, dest, s,
                          cut, cells, feature_bins, _YES)
            elif cut[3] != 0 and (stop - first) * (f_stop - f_first) >= n_cells:
                for k in range(cells[f_first], cells[f_stop]):
                    for c in range(compact.shape[3]):
                        compact[U64(part), 0, U64(k), U64(c)] = 0
                _add_rows(X_binned, stats, n_add, rows, first, stop, f_first, f_stop, compact,
                          part, cut, cells, feature_bins, _YES)
                _copy_cells(compact, part, cells, feature_bins, f_first, f_stop, dest, s)
            else:
                _zero_cells(dest, s, f_first, f_stop, feature_bins, layout)
                _add_rows(X_binned, stats, n_add, rows, first, stop, f_first, f_stop, dest, s,
                          cut, cells, feature_bins, _NO)



@llvm_inline
def _feature_cells(feature_bins, f, n_bins):
    """(n, last): the bins of feature f that rows can be in, 0 .. n-1 and
    ``last`` (the missing bin; -1 when n covers it), from ``feature_bins``
    int32 (F,), its non-missing bins (n_bins_non_missing, or n_bins for
    every bin). The other cells of a histogram row stay zero (or, in a
    pool reused by data of other features, as they were): the split scan
    reads only these."""
    n = min(np.int64(feature_bins[U64(f)]), np.int64(n_bins))
    return n, (n_bins - 1 if n < n_bins else -1)


@llvm_inline
def _feature_span(layout, feature_bins, f, n_bins):
    """(fi, first, n, last): where feature f's cells lie in a histogram
    row ``hist[s, fi]``: its bins 0 .. n-1 in cells first .. first + n - 1,
    its missing bin in cell ``last`` (-1: none, n covers it). ``layout``
    int64 empty: the full layout (hist (m, F, n_bins, C), the bins of
    :func:`_feature_cells`); else the compact one (:func:`row_layout`:
    hist (m, 1, layout[-1], C), ``feature_bins`` at most n_bins)."""
    if layout.shape[0]:
        first = layout[U64(f)]
        n = np.int64(feature_bins[U64(f)])
        last = first + n if layout[U64(f) + U64(1)] - first > n else np.int64(-1)
        return np.int64(0), first, n, last
    n, last = _feature_cells(feature_bins, f, n_bins)
    return np.int64(f), np.int64(0), n, np.int64(last)


@llvm_inline
def _zero_cells(dest, s, f_first, f_stop, feature_bins, layout):
    """dest[s] OUT = 0 on the cells of features f_first .. f_stop-1
    (:func:`_feature_span` of ``layout``; indexed, not sliced: no views).
    Every feature of a compact row: its cells, side by side, in one loop."""
    if layout.shape[0] and f_first == 0 and f_stop == layout.shape[0] - 1:
        for k in range(layout[0], layout[U64(f_stop)]):
            for c in range(dest.shape[3]):
                dest[U64(s), U64(0), U64(k), U64(c)] = 0
        return
    for f in range(f_first, f_stop):
        fi, first, n, last = _feature_span(layout, feature_bins, f, dest.shape[2])
        for b in range(first, first + n):
            for c in range(dest.shape[3]):
                dest[U64(s), U64(fi), U64(b), U64(c)] = 0
        if last >= 0:
            for c in range(dest.shape[3]):
                dest[U64(s), U64(fi), U64(last), U64(c)] = 0


@llvm_inline
def _copy_cells(compact, part, cells, feature_bins, f_first, f_stop, dest, s):
    """dest[s, f_first:f_stop] OUT = compact[part, 0]'s cells of those
    features (:func:`compact_cells`), on the cells of
    :func:`_feature_cells` (indexed, not sliced: no views)."""
    for f in range(f_first, f_stop):
        n, last = _feature_cells(feature_bins, f, dest.shape[2])
        first = cells[U64(f)]
        for b in range(n):
            for c in range(dest.shape[3]):
                dest[U64(s), U64(f), U64(b), U64(c)] = compact[U64(part), 0, U64(first + b),
                                                               U64(c)]
        if last >= 0:
            for c in range(dest.shape[3]):
                dest[U64(s), U64(f), U64(last), U64(c)] = compact[U64(part), 0, U64(first + n),
                                                                  U64(c)]


@threaded
def _add_private(private, private_first, private_hist_row, hist, feature_bins, layout, part,
                 n_parts):
    """hist[private_hist_row[k]] INOUT += private[p] for p in
    private_first[k] .. private_first[k + 1]-1, in order (int64, exact), on
    the cells of :func:`_feature_span` (``layout``); private int64 (P, ...)
    IN, laid out as hist. In parts over (histogram, feature)."""
    n_features = feature_bins.shape[0]
    first, stop = part_bounds(private_hist_row.shape[0] * n_features, part, n_parts)
    for t in range(first, stop):
        k, f = t // n_features, t % n_features
        fi, start, n, last = _feature_span(layout, feature_bins, f, hist.shape[2])
        out = hist[private_hist_row[k], fi]
        for p in range(private_first[k], private_first[k + 1]):
            block = private[p, fi]
            for b in range(start, start + n):
                for c in range(out.shape[1]):
                    out[b, c] += block[b, c]
            if last >= 0:
                for c in range(out.shape[1]):
                    out[last, c] += block[last, c]


#: pieces per thread wanted in a histogram pass (load balance)
_PIECES_PER_THREAD = 1


#: a node cut into pieces is cut into blocks of rows first (each thread
#: then reads its own rows of X and of the statistics once: 5% faster than
#: feature groups first on 7M rows, 2 threads, as fast on 750k), each
#: holding at least this many rows per histogram bin (an extra block adds
#: into a private histogram, zeroed and reduced) ...
_ROWS_PER_BIN = 16


#: ... then into groups of at least this many features (no reduction)
_GROUP_FEATURES = 7


def histogram_pieces(node_rows, n_features, n_bins, n_threads):
    """Cut each built node's work into pieces so that every thread has some.

    node_rows int64 (n_build,): rows per node. A node wants ``ceil(rows /
    target)`` pieces, target = all rows over ``_PIECES_PER_THREAD *
    n_threads``: blocks of rows first, each keeping ``_ROWS_PER_BIN *
    n_bins`` rows, then groups of features (at most ``n_features /
    _GROUP_FEATURES``). Returns int64 (P, 5): per piece its node, block, first
    row, stop row (within the node) and group, and int64 (n_build,) arrays
    of each node's blocks and groups; pieces node by node, block by
    block."""
    total = int(node_rows.sum())
    target = max(1, -(-total // (_PIECES_PER_THREAD * n_threads)))
    wanted = np.maximum(1, -(-node_rows // target))
    blocks = np.maximum(1, np.minimum(wanted, node_rows // (_ROWS_PER_BIN * n_bins)))
    groups = np.minimum(-(-wanted // blocks), max(1, n_features // _GROUP_FEATURES))
    per_node = groups * blocks
    node = np.repeat(np.arange(node_rows.size), per_node)
    index = np.arange(node.size) - (np.cumsum(per_node) - per_node)[node]
    block, group = index // groups[node], index % groups[node]
    step = -(-node_rows // blocks)[node]
    first = np.minimum(block * step, node_rows[node])
    stop = np.minimum(first + step, node_rows[node])
    return np.stack([node, block, first, stop, group], axis=1), blocks, groups


def assign_pieces(sizes, n_threads):
    """Pieces (sizes int64 (P,)) dealt to threads, largest first, each to
    the thread with the least work so far (ties: the lowest). Returns
    (thread_pieces, thread_first) int64 as _build_histograms takes them.
    One thread takes the pieces in order (their order changes no sum)."""
    if n_threads == 1:
        return (np.arange(sizes.shape[0], dtype=np.int64),
                np.array([0, sizes.shape[0]], dtype=np.int64))
    order = np.argsort(-sizes, kind="stable")
    thread = np.empty(sizes.shape[0], dtype=np.int64)
    _least_loaded(sizes[order], np.zeros(n_threads, dtype=np.int64), thread)
    by_thread = np.argsort(thread, kind="stable")
    thread_first = np.searchsorted(thread[by_thread], np.arange(n_threads + 1))
    return order[by_thread].astype(np.int64), thread_first.astype(np.int64)


@kernel_jit()
def _least_loaded(sizes, load, thread):
    """thread int64 (P,) OUT: the thread of each piece (sizes int64 (P,)
    IN), in order, each to the thread with the least work so far (the
    lowest on ties); load int64 (n_threads,) INOUT, zeros."""
    for p in range(sizes.shape[0]):
        best = 0
        for t in range(1, load.shape[0]):
            if load[t] < load[best]:
                best = t
        thread[p] = best
        load[best] += sizes[p] + 1


#: rows per block of a histogram piece, added feature group by feature
#: group: the block's rows of X and of the statistics stay in the core's
#: cache between the groups ...
_BLOCK_ROWS = 1024


#: ... each group's histogram cells spanning at most a quarter of the
#: core's second-level cache (:func:`_group_bytes`): a row's 28 cells, 255
#: bins, 3 channels, span 170 KiB; 750k rows, 2 threads, 512 KiB: groups
#: of 128 KiB made the root's histograms 1.3x faster, the other levels'
#: 1.1x; 1M rows, 1 MiB (AMD Zen 4): groups of 128 KiB made them 1.2x
#: and 1.13x slower than one group of all 28 features
_GROUP_SHARE_OF_L2 = 4


#: the group bytes where the second-level cache's size is not known ...
_DEFAULT_GROUP_BYTES = 1 << 17


#: ... and where set, the group bytes in any case
_GROUP_BYTES = None


def _group_bytes():
    """The most bytes of histogram cells a feature group of a histogram
    pass spans: _GROUP_BYTES, else :func:`_cache_group_bytes`."""
    return _GROUP_BYTES or _cache_group_bytes()


@functools.cache
def _cache_group_bytes():
    """The second-level cache of CPU 0 (Linux's sysfs) over
    _GROUP_SHARE_OF_L2, else _DEFAULT_GROUP_BYTES."""
    for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            if (index / "level").read_text().strip() != "2" or (
                    index / "type").read_text().strip() not in ("Unified", "Data"):
                continue
            size = (index / "size").read_text().strip().upper()
        except OSError:
            continue
        scale = {"K": 1 << 10, "M": 1 << 20}.get(size[-1:], 1)
        digits = size.rstrip("KM")
        if digits.isdigit():
            return max(1, int(digits) * scale // _GROUP_SHARE_OF_L2)
    return _DEFAULT_GROUP_BYTES


#: a histogram pass adds into compact histograms when they take at most
#: this share of a histogram row's cells (dense features of 255 bins: in
#: place, 10-20% faster than through compact cells' extra index work)
_COMPACT_SHARE = 0.5


def compact_cells(feature_bins, n_bins):
    """A compact histogram's layout: (feature_bins int32 (F,) at most
    n_bins, cells int64 (F + 1,)): feature f's bins b < feature_bins[f] in
    cells[f] + b, its missing bin (when b < n_bins - 1 leaves it out) in
    cells[f] + feature_bins[f]; cells[F] in all."""
    feature_bins = np.minimum(feature_bins, n_bins).astype(np.int32)
    per_feature = feature_bins.astype(np.int64) + (feature_bins < n_bins)
    return feature_bins, np.concatenate([[0], np.cumsum(per_feature)]).astype(np.int64)


#: three channels are added to a cell as one masked vector when the
#: features have at least this many bins on average; with fewer, rows
#: often add to the cell just written, and a masked store does not forward
#: to the next load of it: a vector of two and a scalar instead (LETOR's
#: 300 features of 21 bins on average: the root's histograms 2.6 -> 1.1 ms;
#: 28 features of 255 bins: 5.7 -> 7.2 ms the other way)
_VECTOR_THREE_BINS = 32


def _block_cut(hist, feature_bins, cells):
    """int64 (4,): the rows per block and the most features per group that
    a histogram piece adds at a time into cells like hist's (int64 (n_hist,
    F, n_bins, C)), whether three channels are added as one vector
    (features of ``feature_bins`` int32 (F,) bins), whether pieces may add
    into compact histograms (laid out as ``cells``: :func:`compact_cells`)."""
    cell_bytes = hist.shape[2] * hist.shape[3] * hist.itemsize
    vector = not feature_bins.size or feature_bins.mean() >= _VECTOR_THREE_BINS
    compact = cells[-1] <= _COMPACT_SHARE * hist.shape[1] * hist.shape[2]
    return np.array([_BLOCK_ROWS, max(1, _group_bytes() // cell_bytes), int(vector),
                     int(compact)], dtype=np.int64)


def _plan_threads():
    """The threads a histogram pass plans its pieces for: numba's."""
    return thread_count()


def histograms_of_rows(X_binned, stats, rows, node_first, built_rows, hist, n_add,
                       feature_bins, features=None, n_bins=None):
    """The histograms (channels 0 .. n_add-1, the others zero; channels
    beyond stats' columns count rows, see :func:`_build_histograms`) of rows
    grouped by node (node j: rows ``rows[node_first[j]:node_first[j + 1]]``)
    into hist's rows built_rows[j] (overwritten on the cells of
    :func:`_feature_cells`, ``feature_bins`` int32 (F,)), cut by
    :func:`histogram_pieces` for numba's threads (a pass run on one
    thread: a piece per node, :func:`_one_piece_per_node`). ``features``
    (first, stop): only those features' cells (None: every feature).
    ``n_bins``: hist is in the compact layout of histograms of that many
    bins (:func:`row_layout`); None: the full one."""
    n_threads = _plan_threads()
    first, stop = (0, X_binned.shape[1]) if features is None else features
    n_features = stop - first
    work = rows.shape[0] * n_features
    rows_layout = row_layout(feature_bins, hist.shape, n_bins)
    if parts_for(work) == 1:
        _one_piece_per_node(X_binned, stats, rows, node_first, built_rows, hist, n_add,
                            rows_layout, work, first, stop)
        return
    feature_bins, cells, layout, shape = rows_layout
    pieces, extra, thread_pieces, thread_first = plan_pieces(
        node_first, built_rows, n_features, shape[2], n_threads)
    pieces[:, 2:4] += first
    # the private histograms of a slice are added on every feature: zeros beyond it
    private = (np.empty if features is None else np.zeros)(
        (int(extra.sum()),) + hist.shape[1:], dtype=hist.dtype)
    cut = _block_cut(np.empty(shape, dtype=hist.dtype), feature_bins, cells)
    if layout.shape[0]:
        cut[3] = 0                  # (in place: hist is compact)
    compact = np.empty((n_threads if cut[3] else 0, 1, int(cells[-1]), hist.shape[3]),
                       dtype=hist.dtype)
    _build_histograms.run(work, X_binned, stats, n_add, rows,
                          pieces, thread_pieces, thread_first, hist, private, feature_bins,
                          cells, compact, cut, layout)
    add_private(private, extra, built_rows, hist, feature_bins, layout)


def row_layout(feature_bins, hist_shape, n_bins=None):
    """(feature_bins int32 (F,) at most n_bins, cells int64 (F + 1,) of
    :func:`compact_cells`, layout int64, shape): the layout of histograms
    shaped ``hist_shape``. ``n_bins`` None: the full layout, hist (m, F,
    n_bins, C), ``layout`` empty; else the compact one of histograms of
    n_bins bins: hist (m, 1, cells[-1], C), feature f's bins b <
    feature_bins[f] in cells cells[f] + b, its missing bin in cells[f] +
    feature_bins[f] (where feature_bins[f] < n_bins), ``layout`` = cells.
    ``shape``: the full layout's (0, F, n_bins, C) (a pass's plan, cut
    as the full layout's). Kept per fit (:func:`_compact_layout`)."""
    if n_bins is None:
        n_bins = hist_shape[2]
        shape = (0,) + tuple(hist_shape[1:])
    else:
        shape = (0, feature_bins.shape[0], n_bins, hist_shape[3])
    feature_bins, cells = _compact_layout(
        np.ascontiguousarray(feature_bins, dtype=np.int32).tobytes(), n_bins)
    compact = tuple(hist_shape[1:3]) != shape[1:3]
    return feature_bins, cells, (cells if compact else FULL_LAYOUT), shape


#: the layout argument of the full layout
FULL_LAYOUT = np.empty(0, dtype=np.int64)


@functools.lru_cache(maxsize=16)
def _compact_layout(feature_bins_bytes, n_bins):
    """compact_cells of int32 feature bins given as bytes, kept for the
    passes of a fit (the kernels only read them)."""
    return compact_cells(np.frombuffer(feature_bins_bytes, dtype=np.int32), n_bins)


def plan_pieces(node_first, built_rows, n_features, n_bins, n_threads):
    """The pieces of a histogram pass (:func:`histogram_pieces`) as
    _build_histograms takes them: (pieces int64 (P, 5), extra int64
    (n_build,) the private histograms of each node, thread_pieces,
    thread_first (:func:`assign_pieces`))."""
    n_nodes = node_first.shape[0] - 1
    if n_features == 1 and n_nodes <= _SMALL_PLAN_NODES:
        # a level of few nodes: the plan just below in one compiled call
        pieces = np.empty((n_nodes, 5), dtype=np.int64)
        thread_pieces = np.empty(n_nodes, dtype=np.int64)
        thread_first = np.empty(n_threads + 1, dtype=np.int64)
        if _one_piece_per_node_plan(node_first, built_rows, 2 * _ROWS_PER_BIN * n_bins,
                                    pieces, thread_pieces, thread_first,
                                    np.empty(2 * n_nodes + n_threads, dtype=np.int64)):
            return pieces, np.zeros(n_nodes, dtype=np.int64), thread_pieces, thread_first
    node_rows = np.diff(node_first)
    if n_features == 1 and node_rows.max(initial=0) < 2 * _ROWS_PER_BIN * n_bins:
        # one piece per node (no row blocks, no feature groups): what the
        # plan below makes, without its numpy calls (small levels)
        pieces = np.zeros((node_rows.shape[0], 5), dtype=np.int64)
        pieces[:, 0], pieces[:, 1], pieces[:, 3] = node_first[:-1], node_first[1:], 1
        pieces[:, 4] = built_rows
        return (pieces, np.zeros(node_rows.shape[0], dtype=np.int64),
                *assign_pieces(node_rows, n_threads))
    plan, blocks, groups = histogram_pieces(node_rows, n_features, n_bins, n_threads)
    node, block, group = plan[:, 0], plan[:, 1], plan[:, 4]
    per_group = -(-n_features // groups)[node]
    extra = blocks - 1                      # private histograms of each node
    part_of_block = np.cumsum(extra) - extra
    pieces = np.stack([plan[:, 2] + node_first[node], plan[:, 3] + node_first[node],
                       np.minimum(group * per_group, n_features),
                       np.minimum((group + 1) * per_group, n_features),
                       np.where(block == 0, built_rows[node],
                                -1 - (part_of_block[node] + block - 1))], axis=1)
    thread_pieces, thread_first = assign_pieces(
        (pieces[:, 1] - pieces[:, 0]) * (pieces[:, 3] - pieces[:, 2]), n_threads)
    return pieces, extra, thread_pieces, thread_first


#: the most nodes of a level planned by :func:`_one_piece_per_node_plan`
#: (its dealing sorts them by insertion)
_SMALL_PLAN_NODES = 64


@kernel_jit()
def _one_piece_per_node_plan(node_first, built_rows, most_rows, pieces, thread_pieces,
                             thread_first, scratch):
    """plan_pieces' plan of one feature group where every node (node_first
    int64 (n + 1,), built_rows int64 (n,)) has fewer than ``most_rows``
    rows: one piece per node, pieces int64 (n, 5) OUT, dealt to T =
    len(thread_first) - 1 threads as :func:`assign_pieces` deals them
    (largest first, ties in node order, each to the least loaded thread,
    the lowest on ties; one thread: in order), thread_pieces int64 (n,)
    and thread_first int64 (T + 1,) OUT; scratch int64 (2n + T,).
    Returns False where a node has ``most_rows`` rows or more (the outputs
    then mean nothing)."""
    n = node_first.shape[0] - 1
    n_threads = thread_first.shape[0] - 1
    order, thread, load = scratch[:n], scratch[n:2 * n], scratch[2 * n:]
    for p in range(n):
        size = node_first[p + 1] - node_first[p]
        if size >= most_rows:
            return False
        pieces[p, 0], pieces[p, 1], pieces[p, 2], pieces[p, 3] = (node_first[p],
                                                                 node_first[p + 1], 0, 1)
        pieces[p, 4] = built_rows[p]
        # the nodes by rows, descending, ties in node order
        k = p
        while k > 0 and node_first[order[k - 1] + 1] - node_first[order[k - 1]] < size:
            order[k] = order[k - 1]
            k -= 1
        order[k] = p
    if n_threads == 1:
        for p in range(n):
            order[p] = p
    load[:] = 0
    for k in range(n):
        best = 0
        for t in range(1, n_threads):
            if load[t] < load[best]:
                best = t
        thread[k] = best
        load[best] += node_first[order[k] + 1] - node_first[order[k]] + 1
    placed = 0
    thread_first[0] = 0
    for t in range(n_threads):
        for k in range(n):
            if thread[k] == t:
                thread_pieces[placed] = order[k]
                placed += 1
        thread_first[t + 1] = placed
    return True


def add_private(private, extra, built_rows, hist, feature_bins, layout):
    """hist INOUT += the private histograms of a pass (``extra`` int64
    (n_build,) of them for node j, in order, into hist's row built_rows[j];
    ``layout``: :func:`row_layout`'s)."""
    if private.shape[0]:
        split = np.flatnonzero(extra)
        private_first = np.concatenate([[0], np.cumsum(extra[split])]).astype(np.int64)
        _add_private.run(private.size, private, private_first, built_rows[split], hist,
                         feature_bins, layout)


@functools.lru_cache(maxsize=16)
def _layout(feature_bins_bytes, hist_shape, itemsize):
    """:func:`_block_cut` for int32 feature bins (at most the bins of
    histograms shaped ``hist_shape``, the full layout's) given as bytes
    and that item size, kept for the passes of a fit (the kernels only
    read it)."""
    feature_bins, cells = _compact_layout(feature_bins_bytes, hist_shape[2])
    return _block_cut(np.empty((0,) + hist_shape[1:], dtype=np.dtype(f"i{itemsize}")),
                      feature_bins, cells)


def _one_piece_per_node(X_binned, stats, rows, node_first, built_rows, hist, n_add,
                        rows_layout, work, first=0, stop=None):
    """histograms_of_rows on this thread, each node a piece (a pass that
    does not go to other threads gains nothing from pieces; cut, a node's
    blocks add into private histograms reduced afterwards); ``rows_layout``:
    :func:`row_layout`'s."""
    n_build, n_features = built_rows.shape[0], X_binned.shape[1]
    pieces = np.empty((n_build, 5), dtype=np.int64)
    pieces[:, 0], pieces[:, 1] = node_first[:-1], node_first[1:]
    pieces[:, 2], pieces[:, 3] = first, n_features if stop is None else stop
    pieces[:, 4] = built_rows
    feature_bins, cells, layout, shape = rows_layout
    cut = _layout(feature_bins.tobytes(), shape, hist.itemsize)
    if layout.shape[0]:
        cut = cut.copy()
        cut[3] = 0                  # (in place: hist is compact)
    compact = np.empty((1 if cut[3] else 0, 1, int(cells[-1]), hist.shape[3]),
                       dtype=hist.dtype)
    _build_histograms.run(work, X_binned, stats, n_add, rows, pieces,
                          np.arange(n_build, dtype=np.int64),
                          np.array([0, n_build], dtype=np.int64), hist,
                          np.empty((0,) + hist.shape[1:], dtype=hist.dtype), feature_bins,
                          cells, compact, cut, layout)


@llvm_inline
def subtract_cells(out, o, a, i, b, j, f, feature_bins, n_bins, layout):
    """out[o] OUT = a[i] - b[j] (int64 IN, exact) on feature f's cells
    (:func:`_feature_span` of ``layout``), histograms (m, F, n_bins, C) or
    compact (m, 1, cells, C) seen as (m, F or 1, cells * C): a feature's
    bins and channels one run of cells, subtracted in one loop (LLVM
    vectorizes it: 3x faster than a loop over bins and one over channels,
    on LETOR's features of 21 bins on average). ``out`` may be ``a`` (the
    split scan's in-place derive of a sibling in its parent's row,
    :attr:`CPUBackend.derives_in_scan`); n_bins: the full layout's."""
    n_channels = out.shape[2] // n_bins if layout.shape[0] == 0 else out.shape[2] // layout[-1]
    row, first, n, last = _feature_span(layout, feature_bins, f, n_bins)
    g = U64(row)
    for k in range(U64(first * n_channels), U64((first + n) * n_channels)):
        out[o, g, k] = a[i, g, k] - b[j, g, k]
    if last >= 0:
        for k in range(U64(last * n_channels), U64((last + 1) * n_channels)):
            out[o, g, k] = a[i, g, k] - b[j, g, k]


@threaded
def subtract_histograms(parent_hist, parent_rows, hist, built_rows, derived_rows, feature_bins,
                        layout, part, n_parts):
    """hist[derived_rows[p]] = parent_hist[parent_rows[p]] - hist[built_rows[p]]
    (int64, exact) on the cells of :func:`_feature_cells` (``feature_bins``
    int32 (F,) IN); hist INOUT, the rest IN, in the full layout
    (``layout`` :data:`FULL_LAYOUT`). In parts over (pair, feature), each
    by :func:`subtract_cells`."""
    n_features, n_bins, n_channels = hist.shape[1], hist.shape[2], hist.shape[3]
    parent = parent_hist.reshape(parent_hist.shape[0], n_features, n_bins * n_channels)
    cells = hist.reshape(hist.shape[0], n_features, n_bins * n_channels)
    first, stop = part_bounds(parent_rows.shape[0] * n_features, part, n_parts)
    for t in range(first, stop):
        p, f = t // U64(n_features), t % U64(n_features)
        subtract_cells(cells, U64(derived_rows[p]), parent, U64(parent_rows[p]), cells,
                       U64(built_rows[p]), f, feature_bins, n_bins, layout)


@kernel_jit()
def copy_channel(hist, row, channel, source, feature_bins, layout):
    """hist[row, ..., channel] OUT = source[f, b] (int64 (F, n_bins) IN) on
    the cells of :func:`_feature_span` (``feature_bins`` int32 (F,),
    ``layout`` int64 of :func:`row_layout`): the root's count channel from
    the counts kept per binned X, its features' own cells only (LETOR:
    6,600 of 77,000)."""
    for f in range(feature_bins.shape[0]):
        fi, first, n, last = _feature_span(layout, feature_bins, f, hist.shape[2])
        for b in range(n):
            hist[row, fi, first + b, channel] = source[f, b]
        if last >= 0:
            hist[row, fi, last, channel] = source[f, source.shape[1] - 1]


@threaded
def zero_rows(array, rows, part, n_parts):
    """array (m, ...) INOUT: rows[k] of it set to zero; in parts over
    (row, first inner index)."""
    inner = array.shape[1]
    flat = array.reshape(array.shape[0], inner, -1)
    first, stop = part_bounds(rows.shape[0] * inner, part, n_parts)
    for t in range(first, stop):
        r, j = rows[t // inner], t % inner
        for k in range(flat.shape[2]):
            flat[U64(r), U64(j), U64(k)] = 0
