"""CPU backend: the tree primitives as numpy arrays and ``numba.njit`` loops.

Loops are parallel over rows (binning, partition, prediction) or, for
histograms, over threads, each adding its list of pieces of the level's
work: the rows of the nodes to build are gathered grouped by node (in the
same pass that moves rows to their new nodes), and each node is cut into
pieces (row blocks, then feature groups) only as far as the threads need
(:func:`histogram_pieces`); a row block other than a node's first adds into
a private histogram, reduced afterwards in a fixed order. A piece adds
whole rows of X (C order: a row's bins share a cache line) into one node's
histogram, which stays in the core's cache. No two threads ever write the
same cell and no atomics are needed. Histogram cells are int64 fixed-point
sums, so the result is the same for any cut and thread count and equals
the CUDA backend's bit for bit.

The split scan and node summaries are compiled per criterion (the formulas
specialised to it), on first use: a process compiles only what it uses.
Every parallel kernel is staged (:mod:`gputree.backends.cpu_stages`):
serial until a process runs a large job, so that a small fit compiles no
parallel kernel.
"""
import contextlib
import functools
import math
import mmap
import weakref

import numba
import numpy as np
from llvmlite import ir as llvm_ir
from numba import njit, prange
from numba import types as numba_types
from numba.extending import intrinsic

from .._dtypes import NODE_DTYPE, STAT_DTYPE, bin_dtype
from .formulas import measure_of
from .scan import best_split_per_node, empty_scan_outputs, empty_scratch, make_split_scanner
from .base import Backend, node_summaries_kernel_body
from .compile_notice import watch_compilation
from .cpu_stages import renamed_copy, staged
from .splitset import make_splitset
from .kernel_cache import cache_numba_cpu_kernels

# the scan kernels also compile code from other files: their cache covers them
_CACHE_SCAN = cache_numba_cpu_kernels(__file__)

def _without_reference_counting():
    """``njit`` for functions that only index and slice arrays they are given.

    numba reference-counts every array view and every array passed to an
    inlined helper with atomic increments and decrements; in the split scan
    that cost 20 times the arithmetic (123 -> 9 ns per newton candidate in a
    micro-benchmark), and more when two threads share the criterion arrays'
    counters. numba's ``_nrt=False`` compiles without the runtime (no
    allocation possible, views are plain structs). Plain ``njit`` where a
    numba version does not know the option.
    """
    try:
        njit(_nrt=False)(lambda a: a[0:1][0]).compile("(int64[:],)")
    except Exception:  # noqa: BLE001 - any failure means: keep the runtime
        return njit
    return functools.partial(njit, _nrt=False)


#: the helpers below are only called by kernels: numba builds them no
#: wrappers for calls from Python or C (nor emits those wrappers' code)
_plain_jit = functools.partial(_without_reference_counting(), no_cpython_wrapper=True,
                               no_cfunc_wrapper=True)
_force_inline = functools.partial(_plain_jit, forceinline=True)


def _inline(function):
    """The split scan's per-candidate helpers are inlined: calls cost more
    than the arithmetic they do, and inlined, the compiler sees the
    criterion constant (one scan per criterion) and drops the other
    criteria's code. Small helpers (under _IR_INLINE_BYTES of bytecode) are
    inlined in numba's IR, so they are not compiled on their own; larger
    ones by LLVM (``forceinline``): numba compiles each once, where IR
    inlining copied every formula into every call site and took minutes
    to compile. devmath's exp/log family is called, not inlined: those
    functions are large and only a few criteria call them (not gini nor
    newton)."""
    if function.__module__.endswith(".devmath"):
        return _plain_jit(function)
    if len(function.__code__.co_code) < _IR_INLINE_BYTES:
        return njit(inline="always")(function)
    return _force_inline(function)


_ir_inline = njit(inline="always")
_goes_left = make_splitset(_ir_inline).goes_left
#: helpers smaller than this (bytes of CPython bytecode) are inlined in numba's IR
_IR_INLINE_BYTES = 160


# Indices are cast to unsigned in the hot loops: numba wraps negative signed
# indices around (a compare and a select per index), which cost 10% of a
# histogram pass and a third of a prediction.
_U = np.uint64

_BINNING_BLOCK = 256
#: work (about ns, cpu_stages' unit) of binning one value
_SEARCH_WORK = 8
#: thresholds are padded to 2**k - 1 >= this width: the search unrolls its
#: last 8 steps, and loops over the steps above them (16-bit bins only)
_SEARCH_WIDTH = 255


@njit(inline="always")
def _search_step(row, lo, x, step):
    return lo + step * (row[_U(lo + step - 1)] < x)


@staged
def _map_to_bins(X, thresholds, is_categorical, missing_bin, out):
    """X float (n, F) IN; thresholds float64 (F, 2**k - 1 >= 255) IN, rows
    padded with +inf; out uint8 or uint16 (n, F) OUT (either order).

    Parallel over blocks of rows; within a block, feature by feature (a
    block's output stays in cache in either order). The binary search is branch-free, its last 8
    steps unrolled: ``lo`` ends as the number of thresholds strictly below
    ``x``."""
    n_samples, n_features = X.shape
    width = thresholds.shape[1]
    n_blocks = (n_samples + _BINNING_BLOCK - 1) // _BINNING_BLOCK
    for block in prange(n_blocks):
        start = block * _BINNING_BLOCK
        stop = min(start + _BINNING_BLOCK, n_samples)
        for f in range(n_features):
            row = thresholds[f]
            for i in range(start, stop):
                x = np.float64(X[_U(i), _U(f)])
                lo, step = 0, (width + 1) // 2
                while step > 128:
                    lo = _search_step(row, lo, x, step)
                    step //= 2
                lo = _search_step(row, lo, x, 128)
                lo = _search_step(row, lo, x, 64)
                lo = _search_step(row, lo, x, 32)
                lo = _search_step(row, lo, x, 16)
                lo = _search_step(row, lo, x, 8)
                lo = _search_step(row, lo, x, 4)
                lo = _search_step(row, lo, x, 2)
                lo = _search_step(row, lo, x, 1)
                if np.isnan(x) or (is_categorical[f] and (lo == width or row[_U(lo)] != x)):
                    out[_U(i), _U(f)] = missing_bin
                else:
                    out[_U(i), _U(f)] = lo


def _pad_thresholds(thresholds):
    """thresholds (F, T) -> (F, 2**k - 1 >= max(T, 255)) padded with +inf."""
    width = max(_SEARCH_WIDTH, 2 ** int(thresholds.shape[1]).bit_length() - 1)
    padded = np.full((thresholds.shape[0], width), np.inf)
    padded[:, :thresholds.shape[1]] = thresholds
    return padded


#: rows per chunk of the gathering pass, at least ...
_ROW_CHUNK = 16384
#: ... and more where chunks x nodes built would pass this many per-chunk
#: counters (int64; deep trees build up to one node per two rows)
_MAX_CHUNK_COUNTERS = 1 << 22


def _gather_chunk(n_rows, n_build):
    """Rows per chunk of _rows_by_node for this level."""
    return max(_ROW_CHUNK, -(-n_rows * n_build // _MAX_CHUNK_COUNTERS))


def _element_address(builder, array, indices):
    """LLVM IR: the address (i64) of array[indices...] (its data pointer
    plus each index times its stride; ``array`` a numba array struct)."""
    address = builder.ptrtoint(array.data, llvm_ir.IntType(64))
    for axis, index in enumerate(indices):
        address = builder.add(address, builder.mul(builder.extract_value(array.strides, axis),
                                                   index))
    return address


def _llvm_function(module, name, returns, arguments):
    """The module's declaration of LLVM function ``name``, made if absent."""
    return module.globals.get(name) or llvm_ir.Function(
        module, llvm_ir.FunctionType(returns, arguments), name=name)


def _prefetch_codegen(context, builder, signature, args):
    """LLVM IR of _prefetch_row: the address of array[row, 0], then a call
    of llvm.prefetch."""
    array = context.make_array(signature.args[0])(context, builder, args[0])
    byte_pointer = llvm_ir.IntType(8).as_pointer()
    opaque = getattr(byte_pointer, "is_opaque", False)
    i32 = llvm_ir.IntType(32)
    name = "llvm.prefetch.p0" if opaque else "llvm.prefetch.p0i8"
    function = _llvm_function(builder.module, name, llvm_ir.VoidType(),
                              [byte_pointer, i32, i32, i32])
    address = _element_address(builder, array, [args[1]])
    # read (0), keep in all cache levels (3), data (1)
    builder.call(function, [builder.inttoptr(address, byte_pointer), i32(0), i32(3), i32(1)])
    return context.get_dummy_value()


@intrinsic
def _prefetch_row(typingctx, array, row):
    """Ask the cache for the line holding ``array[row, 0]`` (a 2-D array, int64
    row): llvm.prefetch, a hint that never faults."""
    return numba_types.void(array, row), _prefetch_codegen


def _cell_vector_codegen(n_lanes):
    """The LLVM IR of an intrinsic (dest, s, f, b, v0 .. v[n_lanes-1]) that
    adds the values to dest[s, f, b, 0:n_lanes] as one vector: a <2 x i64>
    load, add and store for two lanes; for three, a <4 x i64> one whose
    fourth lane is masked off (never read or written: the next cell may be
    another thread's)."""
    width = 2 if n_lanes == 2 else 4

    def codegen(context, builder, signature, args):
        dest = context.make_array(signature.args[0])(context, builder, args[0])
        i32 = llvm_ir.IntType(32)
        vector = llvm_ir.VectorType(llvm_ir.IntType(64), width)
        pointer = builder.inttoptr(_element_address(builder, dest, args[1:4]),
                                   vector.as_pointer())
        value = llvm_ir.Constant(vector, None)
        for k in range(n_lanes):
            value = builder.insert_element(value, args[4 + k], i32(k))
        if n_lanes == width:
            builder.store(builder.add(builder.load(pointer, align=8), value), pointer, align=8)
            return context.get_dummy_value()
        mask = llvm_ir.Constant(llvm_ir.VectorType(llvm_ir.IntType(1), width),
                                [int(k < n_lanes) for k in range(width)])
        suffix = f"v{width}i64." + ("p0" if getattr(pointer.type, "is_opaque", False)
                                    else f"p0v{width}i64")
        load = _llvm_function(builder.module, "llvm.masked.load." + suffix, vector,
                              [pointer.type, i32, mask.type, vector])
        store = _llvm_function(builder.module, "llvm.masked.store." + suffix,
                               llvm_ir.VoidType(), [vector, pointer.type, i32, mask.type])
        old = builder.call(load, [pointer, i32(8), mask, llvm_ir.Constant(vector, None)])
        builder.call(store, [builder.add(old, value), pointer, i32(8), mask])
        return context.get_dummy_value()
    return codegen


def _cell_vector_typing(dest, n_lanes):
    """(signature, codegen) of a cell vector add on ``dest``, or None (numba
    then refuses to compile the call) unless dest is a C-contiguous int64
    4-D array: the vector covers a cell's channels, which must be adjacent."""
    if not (isinstance(dest, numba_types.Array) and dest.dtype == numba_types.int64
            and dest.ndim == 4 and dest.layout == "C"):
        return None
    i = numba_types.int64
    return numba_types.void(dest, *([i] * (3 + n_lanes))), _cell_vector_codegen(n_lanes)


@intrinsic
def _add_two(typingctx, dest, s, f, b, first, second):
    """dest[s, f, b, 0:2] INOUT += (first, second): one 16-byte
    read-modify-write instead of two (dest int64 4-D C-contiguous; the rest
    int64)."""
    return _cell_vector_typing(dest, 2)


@intrinsic
def _add_three(typingctx, dest, s, f, b, first, second, third):
    """dest[s, f, b, 0:3] INOUT += (first, second, third): one masked
    32-byte read-modify-write instead of three (as _add_two)."""
    return _cell_vector_typing(dest, 3)


#: rows ahead of the one being added whose rows of X and of the statistics a
#: histogram pass prefetches: a node's rows are scattered over X, beyond
#: what the hardware prefetcher follows (the two deepest levels of a depth-8 fit, 750k rows:
#: 1.2-1.4x faster)
_PREFETCH_AHEAD = 12


@njit(inline="always")
def _moved(X_binned, positions, i, level_start, split_feature, split_bitset, left_child):
    """Row i's position once its node (level-relative k, if it splits) sends
    it to a child."""
    p = positions[_U(i)]
    k = p - level_start
    if 0 <= k < split_feature.shape[0] and split_feature[_U(k)] >= 0:
        b = X_binned[_U(i), _U(split_feature[_U(k)])]
        p = left_child[_U(k)] + (0 if _goes_left(split_bitset, k, b) else 1)
    return p


@staged
def _rows_by_node(X_binned, positions, moves_start, split_feature, split_bitset, left_child,
                  level_start, build_index, n_build, chunk_rows, found, found_node, rows):
    """The rows of the nodes to build, grouped by node (``build_index``
    int32 (n_level,): the node's index among them, or -1), ascending within
    a node, into rows int32 (n,) OUT: returns node_first int64 (n_build +
    1,), node j's rows are ``rows[node_first[j]:node_first[j + 1]]``. Each
    row first moves as _update_positions would (positions int32 INOUT;
    moves_start and the split arrays as its level_start and split arrays:
    empty, no move). found, found_node int32 (n,): scratch (the caller
    allocates the three (n,) arrays: numpy's large arrays get huge pages,
    a kernel's own 4 KiB pages, faulted in one by one: 30k faults a tree
    at 7M rows).

    Parallel over chunks of ``chunk_rows`` rows: a first pass moves each
    chunk's rows and lists them with their nodes in place (a branch-free
    store), counting them per node; a second copies them to their offset
    (node by node, chunk by chunk), so ``positions`` is read once in full."""
    n_samples = positions.shape[0]
    n_chunks = (n_samples + chunk_rows - 1) // chunk_rows
    n_found = np.zeros(n_chunks, dtype=np.int64)
    offsets = np.zeros((n_chunks, n_build), dtype=np.int64)
    for chunk in prange(n_chunks):
        start = chunk * chunk_rows
        k = start
        for i in range(start, min(start + chunk_rows, n_samples)):
            p = _moved(X_binned, positions, i, moves_start, split_feature, split_bitset,
                       left_child)
            positions[_U(i)] = p
            j = -1
            if level_start <= p < level_start + build_index.shape[0]:
                j = build_index[_U(p - level_start)]
            found[_U(k)] = i
            found_node[_U(k)] = j
            k += j >= 0
        n_found[chunk] = k - start
        for q in range(start, k):
            offsets[chunk, _U(found_node[_U(q)])] += 1
    node_first = np.zeros(n_build + 1, dtype=np.int64)
    for j in range(n_build):        # counts -> offsets: node by node, chunk by chunk
        at = node_first[j]
        for chunk in range(n_chunks):
            count = offsets[chunk, j]
            offsets[chunk, j] = at
            at += count
        node_first[j + 1] = at
    for chunk in prange(n_chunks):
        start = chunk * chunk_rows
        for q in range(start, start + n_found[chunk]):
            j = _U(found_node[_U(q)])
            rows[_U(offsets[chunk, j])] = found[_U(q)]
            offsets[chunk, j] += 1
    return node_first


@njit(inline="always")
def _prefetch_rows(X_binned, stats, i):
    """Prefetch row i of X_binned and of stats."""
    _prefetch_row(X_binned, np.int64(i))
    _prefetch_row(stats, np.int64(i))


@njit(inline="always")
def _add_rows(X_binned, stats, n_add, rows, first, stop, f_first, f_stop, dest, s, cut):
    """dest[s] INOUT += the histograms (features f_first .. f_stop-1,
    channels 0 .. n_add-1) of rows ``rows[first:stop]`` of X and stats:
    blocks of ``cut[0]`` rows, each added in groups of at most ``cut[1]``
    features (int64 (2,), :func:`_block_cut`), by :func:`_add_block`."""
    n_features = f_stop - f_first
    n_groups = (n_features + cut[1] - 1) // cut[1]
    for block in range(first, stop, cut[0]):
        block_stop = min(stop, block + cut[0])
        for k in range(n_groups):
            _add_block(X_binned, stats, n_add, rows, block, block_stop,
                       f_first + n_features * k // n_groups,
                       f_first + n_features * (k + 1) // n_groups, dest, s)


@njit(inline="always")
def _add_block(X_binned, stats, n_add, rows, first, stop, f_first, f_stop, dest, s):
    """dest[s] INOUT += the histograms (features f_first .. f_stop-1,
    channels 0 .. n_add-1) of rows ``rows[first:stop]`` of X and stats. Two
    or three channels go in pairs of rows, the rest (and an odd last row)
    one at a time: two rows' loads and read-modify-writes are independent,
    so their cache misses overlap. The X and stats rows ``_PREFETCH_AHEAD``
    ahead are prefetched. Cells are indexed, never sliced: numba
    reference-counts every view."""
    if n_add == 3:
        first = _add_row_pairs(X_binned, stats, rows, True, first, stop, f_first, f_stop,
                               dest, s)
    elif n_add == 2:
        first = _add_row_pairs(X_binned, stats, rows, False, first, stop, f_first, f_stop,
                               dest, s)
    for r in range(first, stop):
        i = _U(rows[_U(r)])
        if r + _PREFETCH_AHEAD < stop:
            _prefetch_rows(X_binned, stats, rows[_U(r + _PREFETCH_AHEAD)])
        for f in range(f_first, f_stop):
            b = X_binned[i, _U(f)]
            for c in range(n_add):
                dest[_U(s), _U(f), b, _U(c)] += stats[i, _U(c)]


@njit(inline="always")
def _add_row_pairs(X_binned, stats, rows, three, first, stop, f_first, f_stop, dest, s):
    """_add_block of channels 0, 1 and (``three``) 2 (boosting's gradient,
    hessian and count; two classes' weights), two rows at a time, the
    rows' values in registers (40% faster than the loop over channels, root
    histograms, 750k rows), each cell's channels added as one vector
    (_add_two, _add_three: 1.1x faster again). Returns the first row not
    added (``stop - 1`` for an odd count)."""
    last = stop - (stop - first) % 2
    s = _U(s)
    for r in range(first, last, 2):
        i, j = _U(rows[_U(r)]), _U(rows[_U(r + 1)])
        if r + _PREFETCH_AHEAD + 1 < stop:
            _prefetch_rows(X_binned, stats, rows[_U(r + _PREFETCH_AHEAD)])
            _prefetch_rows(X_binned, stats, rows[_U(r + _PREFETCH_AHEAD + 1)])
        g, h = stats[i, 0], stats[i, 1]
        g2, h2 = stats[j, 0], stats[j, 1]
        n = stats[i, 2] if three else g       # (unused without a third channel)
        n2 = stats[j, 2] if three else g2
        for f in range(f_first, f_stop):
            b, b2 = X_binned[i, _U(f)], X_binned[j, _U(f)]
            if three:
                _add_three(dest, np.int64(s), np.int64(f), np.int64(b), g, h, n)
                _add_three(dest, np.int64(s), np.int64(f), np.int64(b2), g2, h2, n2)
            else:
                _add_two(dest, np.int64(s), np.int64(f), np.int64(b), g, h)
                _add_two(dest, np.int64(s), np.int64(f), np.int64(b2), g2, h2)
    return last


@staged
def _build_histograms(X_binned, stats, n_add, rows, pieces, thread_pieces, thread_first, hist,
                      part, cut):
    """Histograms of pieces of a level's rows, parallel over threads, each
    building its list of pieces.

    X_binned uint8 or uint16 (n, F) IN, best in C order (a row's bins in
    one cache line); stats int64 (n, C) IN, channels 0 .. n_add-1 added
    (the others' cells left zero); rows int32 (m,) IN: the rows to add,
    grouped by node. pieces int64 (P, 5) IN: piece p zeroes, then adds
    rows ``rows[pieces[p, 0]:pieces[p, 1]]``, features pieces[p, 2] ..
    pieces[p, 3]-1, into ``hist[d]`` (int64 (n_hist, F, n_bins, C) INOUT),
    d = pieces[p, 4] >= 0, else into ``part[-1 - d]`` (int64 (n_parts, F,
    n_bins, C) OUT), which :func:`_add_parts` adds to hist. Zeroed by the
    thread that fills them, a node's cells are in its cache when the adds
    start (a level's histograms outgrow the cache: zeroed beforehand, every
    cell's first add missed it). Thread t builds pieces
    ``thread_pieces[thread_first[t]:thread_first[t + 1]]`` (int64), each in
    blocks of rows and groups of features as ``cut`` int64 (2,) IN says
    (:func:`_block_cut`). Pieces write disjoint cells: integer sums, the
    result depends on neither the cut nor the thread count."""
    for t in prange(thread_first.shape[0] - 1):
        for q in range(thread_first[t], thread_first[t + 1]):
            p = thread_pieces[q]
            first, stop, f_first, f_stop, d = (pieces[p, 0], pieces[p, 1], pieces[p, 2],
                                              pieces[p, 3], pieces[p, 4])
            dest = hist if d >= 0 else part
            s = d if d >= 0 else -1 - d
            _zero_cells(dest, s, f_first, f_stop)
            _add_rows(X_binned, stats, n_add, rows, first, stop, f_first, f_stop, dest, s,
                      cut)


@njit(inline="always")
def _zero_cells(dest, s, f_first, f_stop):
    """dest[s, f_first:f_stop] OUT = 0 (indexed, not sliced: no views)."""
    for f in range(f_first, f_stop):
        for b in range(dest.shape[2]):
            for c in range(dest.shape[3]):
                dest[_U(s), _U(f), _U(b), _U(c)] = 0


@staged
def _add_parts(part, part_first, part_hist_row, hist):
    """hist[part_hist_row[k]] INOUT += part[p] for p in part_first[k] ..
    part_first[k + 1]-1, in order (int64, exact); part int64 (P, F, n_bins,
    C) IN. Parallel over (histogram, feature)."""
    n_features = part.shape[1]
    for t in prange(part_hist_row.shape[0] * n_features):
        k, f = t // n_features, t % n_features
        out = hist[part_hist_row[k], f]
        for p in range(part_first[k], part_first[k + 1]):
            block = part[p, f]
            for b in range(out.shape[0]):
                for c in range(out.shape[1]):
                    out[b, c] += block[b, c]


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
    (thread_pieces, thread_first) int64 as _build_histograms takes them."""
    order = np.argsort(-sizes, kind="stable")
    thread = _least_loaded(sizes[order], n_threads)
    by_thread = np.argsort(thread, kind="stable")
    thread_first = np.searchsorted(thread[by_thread], np.arange(n_threads + 1))
    return order[by_thread].astype(np.int64), thread_first.astype(np.int64)


@njit(cache=True)
def _least_loaded(sizes, n_threads):
    """int64 (P,): the thread of each piece (sizes int64 (P,)), in order,
    each to the thread with the least work so far (the lowest on ties)."""
    load = np.zeros(n_threads, dtype=np.int64)
    thread = np.empty(sizes.shape[0], dtype=np.int64)
    for p in range(sizes.shape[0]):
        best = 0
        for t in range(1, n_threads):
            if load[t] < load[best]:
                best = t
        thread[p] = best
        load[best] += sizes[p] + 1
    return thread


#: rows per block of a histogram piece, added feature group by feature
#: group: the block's rows of X and of the statistics stay in the core's
#: cache between the groups ...
_BLOCK_ROWS = 1024
#: ... each group's histogram cells spanning at most this many bytes, near
#: the core's first-level cache (a row's 28 cells, 255 bins, 3 channels,
#: span 170 KiB, so that each add misses it; 750k rows, 2 threads: the
#: root's histograms 1.3x faster, the other levels' 1.1x)
_GROUP_BYTES = 1 << 17


def _block_cut(hist):
    """int64 (2,): the rows per block and the most features per group that
    a histogram piece adds at a time into cells like hist's (int64 (n_hist,
    F, n_bins, C))."""
    cell_bytes = hist.shape[2] * hist.shape[3] * hist.itemsize
    return np.array([_BLOCK_ROWS, max(1, _GROUP_BYTES // cell_bytes)], dtype=np.int64)


def _plan_threads():
    """The threads a histogram pass plans its pieces for: numba's."""
    return numba.get_num_threads()


def _histograms_of_rows(X_binned, stats, rows, node_first, built_rows, hist, n_add):
    """The histograms (channels 0 .. n_add-1, the others zero) of rows
    grouped by node (node j: rows ``rows[node_first[j]:node_first[j + 1]]``)
    into hist's rows built_rows[j] (overwritten), cut by
    :func:`histogram_pieces` for numba's threads."""
    n_threads, n_features = _plan_threads(), X_binned.shape[1]
    node_rows = np.diff(node_first)
    plan, blocks, groups = histogram_pieces(node_rows, n_features, hist.shape[2], n_threads)
    node, block, group = plan[:, 0], plan[:, 1], plan[:, 4]
    per_group = -(-n_features // groups)[node]
    extra = blocks - 1                      # private histograms of each node
    part_of_block = np.cumsum(extra) - extra
    pieces = np.stack([plan[:, 2] + node_first[node], plan[:, 3] + node_first[node],
                       np.minimum(group * per_group, n_features),
                       np.minimum((group + 1) * per_group, n_features),
                       np.where(block == 0, built_rows[node],
                                -1 - (part_of_block[node] + block - 1))], axis=1)
    part = np.empty((int(extra.sum()),) + hist.shape[1:], dtype=hist.dtype)
    thread_pieces, thread_first = assign_pieces(
        (pieces[:, 1] - pieces[:, 0]) * (pieces[:, 3] - pieces[:, 2]), n_threads)
    _build_histograms.run(rows.shape[0] * n_features, X_binned, stats, n_add, rows,
                          pieces, thread_pieces, thread_first, hist, part, _block_cut(hist))
    if part.shape[0]:
        split = np.flatnonzero(extra)
        part_first = np.concatenate([[0], np.cumsum(extra[split])]).astype(np.int64)
        _add_parts.run(part.size, part, part_first, built_rows[split], hist)


@staged
def _subtract_histograms(parent_hist, parent_rows, hist, built_rows, derived_rows):
    """hist[derived_rows[p]] = parent_hist[parent_rows[p]] - hist[built_rows[p]]
    (int64, exact); hist INOUT, the rest IN. Parallel over (pair, feature)."""
    n_features = hist.shape[1]
    for t in prange(parent_rows.shape[0] * n_features):
        p, f = t // n_features, t % n_features
        parent = parent_hist[parent_rows[p], f]
        built = hist[built_rows[p], f]
        derived = hist[derived_rows[p], f]
        for b in range(parent.shape[0]):
            for c in range(parent.shape[1]):
                derived[b, c] = parent[b, c] - built[b, c]


@staged
def _update_positions(X_binned, positions, level_start, split_feature,
                      split_bitset, left_child):
    """positions int32 (n,) INOUT: rows of split nodes move to a child."""
    for i in prange(positions.shape[0]):
        positions[_U(i)] = _moved(X_binned, positions, i, level_start, split_feature,
                                  split_bitset, left_child)


_PREDICT_BLOCK = 64


@njit(cache=True)
def _walk_arrays(node_feature, node_bitset, node_left, tree_roots):
    """Trees (as ``predict_leaves`` takes them) rewritten so that one step is
    the same for every node: a leaf gets feature 0, an all-ones bitset and
    ``next = itself + 1`` (it goes "left" to itself); an internal node gets
    ``next = left + 1``, so the child is ``next - goes_left``. Also returns
    each tree's depth (int32 (n_trees,)): the number of steps to take.
    Children follow their parent (BFS numbering), so one forward pass per
    tree finds every node's depth."""
    feature = np.maximum(node_feature, 0)
    bitset = node_bitset.copy()
    step_next = np.empty(node_left.shape[0], dtype=np.int32)
    depth = np.zeros(node_left.shape[0], dtype=np.int32)
    tree_depth = np.zeros(tree_roots.shape[0], dtype=np.int32)
    for t in range(tree_roots.shape[0]):
        stop = tree_roots[t + 1] if t + 1 < tree_roots.shape[0] else node_left.shape[0]
        depth[tree_roots[t]] = 0
        for node in range(tree_roots[t], stop):
            if node_feature[node] < 0:
                step_next[node] = node + 1
                bitset[node, :] = np.uint32(0xFFFFFFFF)
                tree_depth[t] = max(tree_depth[t], depth[node])
            else:
                step_next[node] = node_left[node] + 1
                depth[node_left[node]] = depth[node] + 1
                depth[node_left[node] + 1] = depth[node] + 1
    return feature, bitset, step_next, tree_depth


@njit(inline="always")
def _descend(X_binned, start, n_rows, root, n_steps, feature, bitset, step_next, nodes):
    """nodes int32 (>= n_rows,) OUT: leaf of rows start .. start+n_rows-1 in
    the tree at ``root`` (arrays from _walk_arrays). All rows of the block
    step down one level together, branch-free, so their loads overlap."""
    for j in range(n_rows):
        nodes[j] = root
    for _ in range(n_steps):
        for j in range(n_rows):
            node = _U(nodes[j])
            b = X_binned[_U(start + j), _U(feature[node])]
            nodes[j] = step_next[node] - np.int32(_goes_left(bitset, node, b))


@staged
def _walk_trees(X_binned, feature, bitset, step_next, tree_roots, tree_depth, leaves,
                node_values, tree_columns, out):
    """Every row down every tree (tree arrays from _walk_arrays), in tree
    order, then with the leaf reached:

    leaves       OUT   int32 (n, n_trees) leaf ids, or (0, 0) to skip;
    out          INOUT float64 (n, W), or (0, 0) to skip:
                 ``out[i, tree_columns[t] + v] += node_values[leaf, v]`` for
                 v < node_values.shape[1] (one fixed order per row).

    Parallel over blocks of rows; each block walks one tree at a time, so the
    tree's nodes stay in cache while the block's rows traverse it."""
    n_samples = X_binned.shape[0]
    n_blocks = (n_samples + _PREDICT_BLOCK - 1) // _PREDICT_BLOCK
    for block in prange(n_blocks):
        start = block * _PREDICT_BLOCK
        n_rows = min(_PREDICT_BLOCK, n_samples - start)
        nodes = np.empty(_PREDICT_BLOCK, dtype=np.int32)
        for t in range(tree_roots.shape[0]):
            _descend(X_binned, start, n_rows, tree_roots[t], tree_depth[t], feature, bitset,
                     step_next, nodes)
            if leaves.shape[0] > 0:
                for j in range(n_rows):
                    leaves[start + j, t] = nodes[j]
            if out.shape[0] > 0:
                for j in range(n_rows):
                    for v in range(node_values.shape[1]):
                        out[_U(start + j), _U(tree_columns[t] + v)] += node_values[_U(nodes[j]),
                                                                                   _U(v)]


@staged
def _zero_rows(array, rows):
    """array (m, ...) INOUT: rows[k] of it set to zero; parallel over
    (row, first inner index)."""
    inner = array.shape[1]
    flat = array.reshape(array.shape[0], inner, -1)
    for t in prange(rows.shape[0] * inner):
        r, j = rows[t // inner], t % inner
        for k in range(flat.shape[2]):
            flat[_U(r), _U(j), _U(k)] = 0


@staged
def _add_node_values(node_values, positions, out, first_column):
    """out float64 (n, W) INOUT: out[i, first_column + v] +=
    node_values[positions[i], v]; the rest IN. Parallel over rows."""
    for i in prange(positions.shape[0]):
        for v in range(node_values.shape[1]):
            out[_U(i), _U(first_column + v)] += node_values[_U(positions[i]), _U(v)]


#: work (about ns, cpu_stages' unit) of the split scan per bin
_SCAN_WORK_PER_BIN = 20
#: scratch slots of the split scan per thread (each slot's tasks run in
#: turn on one thread; several per thread balance the load)
_SCAN_SLOTS_PER_THREAD = 8

#: the scan and the node summary that the two kernels below call: set in
#: each compiled copy's globals by _split_finder and _summaries_kernel
_scan = _node_summary = None


def _find_splits(hist, n_bins_non_missing, is_categorical, feature_allowed,
                 missing_bin, layout, inv, params, scratch_sums, scratch_keys,
                 scratch_order, scratch_prefix, scratch_gains, out_gain, out_missing_left,
                 out_bitset, out_left, out_info):
    """The split scan of every (node, feature) (arguments as
    scan.make_split_scanner; the scan inlined), parallel over the scratch
    slots, slot s scanning tasks s, s + n_slots, ...; compiled per criterion
    by _split_finder."""
    n_features = hist.shape[1]
    n_tasks, n_slots = hist.shape[0] * n_features, scratch_sums.shape[0]
    for slot in prange(n_slots):
        # int64 as typed before the loop became a parallel region (unsigned
        # there): one signature, compiled once
        for t in range(np.int64(slot), n_tasks, n_slots):
            _scan(np.int64(t), np.int64(slot), hist, n_features, n_bins_non_missing,
                  is_categorical, feature_allowed, missing_bin, layout, inv, params,
                  scratch_sums, scratch_keys, scratch_order, scratch_prefix, scratch_gains,
                  out_gain, out_missing_left, out_bitset, out_left, out_info)


def _node_summaries(totals, layout, inv, params, values, impurity):
    """Leaf values and impurity of every node (base.node_summaries_kernel_body);
    serial: a few thousand nodes at most, less work than waking threads.
    Compiled per criterion by _summaries_kernel."""
    for node in range(totals.shape[0]):
        _node_summary(node, totals, layout, inv, params, values, impurity)


@functools.lru_cache(maxsize=None)
def _split_finder(measure, categorical):
    """find_splits of one criterion measure ((kind, impurity), from
    formulas.measure_of; with the categorical scan or without), the scan and
    formulas specialised to it: compiled only for what a process uses, each
    compile smaller than one for everything. Staged, named
    ``_find_splits_<variant>`` (numba's disk cache tells functions apart by
    their qualified names)."""
    scan = make_split_scanner(_plain_jit, _inline, measure, categorical, _ir_inline,
                              vector=True)
    variant = f"{measure[0]}_{measure[1]}{'c' if categorical else 'n'}"
    return staged(renamed_copy(_find_splits, f"_find_splits_{variant}", {"_scan": scan}),
                  cache=_CACHE_SCAN)


@functools.lru_cache(maxsize=None)
def _summaries_kernel(measure):
    """node_summaries of one criterion measure (its formulas specialised)."""
    summary = node_summaries_kernel_body(_plain_jit, _inline, measure, _ir_inline)
    name = f"_node_summaries_{measure[0]}_{measure[1]}"
    return njit(cache=_CACHE_SCAN)(renamed_copy(_node_summaries, name,
                                                {"_node_summary": summary}))


@contextlib.contextmanager
def _loop_vectorizer_off():
    """Compile what runs inside without LLVM's loop vectorizer (numba's
    NUMBA_LOOP_VECTORIZE, read when a kernel is compiled; the disk cache then
    keeps that code). For the tree walk only: vectorized, its row loop
    became AVX-512 gathers that took 62 ms where scalar code takes 42 (100
    trees x 100k rows); the other kernels are faster vectorized."""
    saved = numba.config.LOOP_VECTORIZE
    numba.config.LOOP_VECTORIZE = False
    try:
        yield
    finally:
        numba.config.LOOP_VECTORIZE = saved


def _walk(X_binned, node_feature, node_bitset, node_left, tree_roots, leaves, node_values,
          tree_columns, out):
    """_walk_trees of these trees (its outputs as there)."""
    walk = _walk_arrays(node_feature, node_bitset, node_left, tree_roots)
    steps = X_binned.shape[0] * (int(walk[3].sum()) + tree_roots.shape[0])
    with _loop_vectorizer_off():
        _walk_trees.run(steps, X_binned, *walk[:3], tree_roots, walk[3], leaves, node_values,
                        tree_columns, out)


#: binned X of at least this many values gets a column-major copy for the
#: moves (BinnedCache) ...
_COLUMN_COPY_VALUES = 1 << 22
#: ... when the copy takes at most this fraction of the free memory
_COLUMN_COPY_MEMORY = 1 / 8


@staged
def _copy_rows(X, out):
    """out[:] = X, parallel over blocks of ``_ROW_CHUNK`` rows (X one order,
    out another: a row-major X into a column-major copy 4-5x faster than
    numpy's copy, 750k to 7M x 28 rows, 2 threads)."""
    n_rows = X.shape[0]
    for block in prange((n_rows + _ROW_CHUNK - 1) // _ROW_CHUNK):
        for i in range(block * _ROW_CHUNK, min(n_rows, (block + 1) * _ROW_CHUNK)):
            for f in range(X.shape[1]):
                out[i, f] = X[i, f]


class BinnedCache:
    """What the CPU backend keeps per binned X while X lives (by id; a
    finalizer drops it with X):

    * a column-major (F-order) copy for the moves: a move reads one bin per
      row, its node's split feature, and from the copy it streams that
      column instead of all of X (750k x 28 rows, 2 threads: a depth-8
      tree's moves and gathering 10.8 -> 7.4 ms); made on first use for X of
      at least _COLUMN_COPY_VALUES values while free memory allows (else the
      moves read X itself);
    * the moves' int32 (n,) row buffers and the root's identity rows,
      reused by every level and tree of a fit: fresh large arrays cost their
      pages, which the OS zeroes and maps on first touch (at 7M rows, a
      fresh set per level cost more system time than the moves took). A
      column subset (colsample_bytree) shares its parent's.
    """

    def __init__(self, free_memory_bytes):
        self.free_memory_bytes = free_memory_bytes
        self.entries = {}

    def columns(self, X_binned):
        """X_binned's column-major copy, or X_binned (small, F order
        already, or no room)."""
        entry = self._entry(X_binned)
        copy = entry.get("columns")
        if copy is not None or X_binned.flags.f_contiguous or (
                X_binned.size < _COLUMN_COPY_VALUES):
            return X_binned if copy is None else copy
        free = self.free_memory_bytes()
        if free is not None and X_binned.nbytes > free * _COLUMN_COPY_MEMORY:
            return X_binned
        copy = entry["columns"] = np.empty(X_binned.shape, X_binned.dtype, order="F")
        _copy_rows.run(X_binned.size, X_binned, copy)
        return copy

    def rows(self, X_binned, name):
        """int32 (n,) buffer ``name`` of X_binned's rows (contents left from
        its last use; "identity": 0 .. n-1)."""
        buffers = self._entry(X_binned)["buffers"]
        n = X_binned.shape[0]
        if name not in buffers or buffers[name].shape[0] != n:
            buffers[name] = (np.arange(n, dtype=np.int32) if name == "identity"
                             else np.empty(n, dtype=np.int32))
        return buffers[name]

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


class CPUBackend(Backend):
    """numpy arrays, numba.njit kernels."""

    name = "cpu"
    xp = np
    #: a row's bins in one cache line: the histogram pass reads the rows of
    #: one node at a time, scattered over X
    binned_order = "C"
    #: the root's count channel copied from counts kept per binned X: one
    #: channel less to add over every row (boosting, 750k x 28 rows, 2
    #: threads: the root's histograms 14.8 -> 11.6 ms)
    uses_bin_counts = True
    #: a histogram pass zeroes the cells it builds itself
    overwrites_built_rows = True

    def __init__(self):
        watch_compilation()
        self.binned = BinnedCache(self.free_memory_bytes)

    def take_columns(self, X_binned, columns):
        subset = super().take_columns(X_binned, columns)
        self.binned.derive(X_binned, columns, subset)
        return subset

    def zeros(self, shape, dtype):
        """A zeroed array mapped straight from the OS (anonymous mmap): pages
        never written take no memory, and all of it goes back to the OS when
        the array is dropped. (malloc serves mid-sized arrays from its heap,
        whose pages it may keep after they are freed.)"""
        nbytes = math.prod(shape) * np.dtype(dtype).itemsize
        if nbytes == 0:
            return np.zeros(shape, dtype=dtype)
        return np.frombuffer(mmap.mmap(-1, nbytes), dtype=dtype).reshape(shape)

    def map_to_bins(self, X, thresholds, is_categorical, missing_bin):
        X = np.asarray(X)
        if X.dtype not in (np.float32, np.float64):
            X = X.astype(np.float64)
        out = np.empty(X.shape, dtype=bin_dtype(missing_bin + 1), order=self.binned_order)
        _map_to_bins.run(X.size * _SEARCH_WORK, X, _pad_thresholds(thresholds), is_categorical,
                         missing_bin, out)
        return out

    def build_histograms(self, X_binned, stats, positions, level_start,
                         node_to_build, n_build, n_bins, out=None, bin_counts=None):
        """base.build_histograms; ``bin_counts`` (int64 (n_features, n_bins),
        see :attr:`uses_bin_counts`) when stats' last channel is 1 in every
        row: at the root that channel's histogram is a copy of it, only the
        other channels are added."""
        no_move = np.empty(0, np.int32)
        return self.move_and_build_histograms(
            X_binned, positions, (0, no_move, np.empty((0, 1), np.uint32), no_move), stats,
            level_start, node_to_build, n_build, n_bins, out, bin_counts)

    def move_and_build_histograms(self, X_binned, positions, moves, stats, level_start,
                                  node_to_build, n_build, n_bins, out, bin_counts=None):
        """One pass over the rows moves them (update_positions' ``moves``)
        and gathers the rows of the nodes to build, grouped by node."""
        hist = out
        if hist is None:
            hist = np.zeros((n_build, X_binned.shape[1], n_bins, stats.shape[1]),
                            dtype=STAT_DTYPE)
        built = node_to_build >= 0
        built_rows = node_to_build[built].astype(np.int64)
        moves_start, split_feature, split_bitset, left_child = moves
        n_add = stats.shape[1]
        if (built_rows.size == 1 and built[0] and level_start == 0 and split_feature.size == 0
                and not positions.any()):
            # the root: every row, in order (no gather)
            rows = self.binned.rows(X_binned, "identity")
            node_first = np.array([0, stats.shape[0]], dtype=np.int64)
            n_add -= bin_counts is not None
        else:
            build_index = np.full(node_to_build.shape[0], -1, dtype=np.int32)
            build_index[built] = np.arange(built_rows.size, dtype=np.int32)
            n, cache = positions.shape[0], self.binned
            rows = cache.rows(X_binned, "rows")
            node_first = _rows_by_node.run(
                2 * n, cache.columns(X_binned), positions, moves_start, split_feature,
                split_bitset, left_child, level_start, build_index, built_rows.size,
                _gather_chunk(n, built_rows.size), cache.rows(X_binned, "found"),
                cache.rows(X_binned, "found_node"), rows)
            rows = rows[:node_first[-1]]
        _histograms_of_rows(X_binned, stats, rows, node_first, built_rows, hist, n_add)
        if n_add < stats.shape[1]:
            hist[built_rows[0], :, :, n_add] = bin_counts
        return hist

    def subtract_histograms(self, parent_hist, parent_rows, hist, built_rows, derived_rows):
        _subtract_histograms.run(parent_rows.shape[0] * math.prod(hist.shape[1:]), parent_hist,
                                 parent_rows, hist, built_rows, derived_rows)

    def find_best_splits(self, hist, n_bins_non_missing, is_categorical,
                         feature_allowed, missing_bin, layout, inv, params):
        return best_split_per_node(np, *self.scan_splits(
            hist, n_bins_non_missing, is_categorical, feature_allowed, missing_bin,
            layout, inv, params))

    def scan_splits(self, hist, n_bins_non_missing, is_categorical,
                    feature_allowed, missing_bin, layout, inv, params):
        n_nodes, n_features, n_bins, n_channels = hist.shape
        any_categorical = bool(is_categorical.any())
        outputs = empty_scan_outputs(np, n_nodes, n_features, n_channels)
        n_tasks = n_nodes * n_features
        n_slots = min(n_tasks, _SCAN_SLOTS_PER_THREAD * numba.get_num_threads())
        scratch = empty_scratch(np, max(n_slots, 1), n_channels, any_categorical, vector=True)
        find_splits = _split_finder(measure_of(layout), any_categorical)
        find_splits.run(n_nodes * n_features * n_bins * _SCAN_WORK_PER_BIN, hist,
                        n_bins_non_missing, is_categorical, feature_allowed, missing_bin, layout,
                        inv, params, *scratch, *outputs)
        return outputs

    def update_positions(self, X_binned, positions, level_start, split_feature,
                         split_bitset, left_child):
        _update_positions.run(positions.shape[0], self.binned.columns(X_binned), positions,
                              level_start, split_feature, split_bitset, left_child)

    def predict_leaves(self, X_binned, node_feature, node_bitset, node_left, tree_roots):
        leaves = np.empty((X_binned.shape[0], tree_roots.shape[0]), dtype=NODE_DTYPE)
        _walk(X_binned, node_feature, node_bitset, node_left, tree_roots, leaves,
              np.empty((0, 0)), tree_roots, np.empty((0, 0)))
        return leaves

    def zero_rows(self, array, rows):
        _zero_rows.run(rows.shape[0] * math.prod(array.shape[1:]), array, rows)

    def add_node_values(self, node_values, positions, out, first_column):
        _add_node_values.run(node_values.shape[1] * positions.shape[0], node_values, positions,
                             out, first_column)

    def add_leaf_values(self, X_binned, node_feature, node_bitset, node_left, tree_roots,
                        node_values, tree_columns, out):
        _walk(X_binned, node_feature, node_bitset, node_left, tree_roots,
              np.empty((0, 0), dtype=NODE_DTYPE), node_values, tree_columns, out)

    def node_summaries(self, totals, layout, inv, params, n_outputs, n_classes):
        values, impurity = self.empty_summaries(totals.shape[0], n_outputs, n_classes)
        _summaries_kernel(measure_of(layout))(totals, layout, inv, params, values, impurity)
        return values, impurity
