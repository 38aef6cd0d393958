"""The CPU partition kernels: rows moved to the children of the nodes that
split (``update_positions``), and the same pass that also gathers the rows
of the nodes to build, grouped by node, for the histogram pass."""
import numpy as np
from numba import njit

from ..._threads import kernel_jit
from ..kernel_cache import cache_numba_cpu_kernels
from .intrinsics import prefetch_row
from .jit import U64, goes_left_words, part_bounds
from .threaded import threaded

cache_numba_cpu_kernels(__file__)


#: rows per chunk of the gathering pass, at least ...
ROW_CHUNK = 16384


#: ... and more where chunks x nodes built would pass this many per-chunk
#: counters (int64; deep trees build up to one node per two rows)
_MAX_CHUNK_COUNTERS = 1 << 22


def gather_chunk(n_rows, n_build):
    """Rows per chunk of rows_by_node for this level."""
    return max(ROW_CHUNK, -(-n_rows * n_build // _MAX_CHUNK_COUNTERS))


@njit(inline="always")
def _moved(X_binned, positions, i, level_start, split_feature, split_bitset, split_words,
           split_start, split_n_words, left_child):
    """Row i's position once its node (level-relative k, if it splits) sends
    it to a child (the splits' LeftSets: split_bitset, split_words,
    split_start, split_n_words; at least one split).

    Without a branch on the row's node: a row of a splitting node follows a
    row of another in no predictable order, and a mispredicted branch per
    row cost more than the loads for a node that does not split (the move
    of a best-first step, which splits one node, took 7 ns a row)."""
    p = positions[U64(i)]
    k = U64(p - level_start)
    inside = k < U64(split_feature.shape[0])
    k = k if inside else U64(0)
    f = split_feature[k]
    moves = inside & (f >= 0)
    b = X_binned[U64(i), U64(f if moves else 0)]
    left = goes_left_words(split_bitset, k, b, split_words, split_start, split_n_words)
    return left_child[k] + np.int32(1 - left) if moves else p


#: rows ahead whose bins and statistics rows_by_node's copy prefetches
_COPY_AHEAD = 16


def row_bytes(X):
    """X (n, F) C order as its rows' bytes, uint8 (n, F * itemsize) (a
    view): rows_by_node copies rows of bins of any width with one
    compilation (a word at a time was no faster: the copy waits on memory)."""
    return X.view(np.uint8)


def chunk_offsets(counts):
    """Where each chunk's rows of each group go when the rows are grouped,
    group by group and chunk by chunk, from counts int64 (n_chunks,
    n_groups): (first int64 (n_groups + 1,), each group's first place and
    the end; offsets int64 (n_chunks, n_groups), each chunk's first place
    in each group), in one compiled call (a level's numpy calls cost more
    than its few groups' sums)."""
    first = np.empty(counts.shape[1] + 1, dtype=np.int64)
    offsets = np.empty(counts.shape, dtype=np.int64)
    _chunk_offsets(counts, first, offsets)
    return first, offsets


@kernel_jit()
def _chunk_offsets(counts, first, offsets):
    """chunk_offsets' first and offsets OUT from counts (its arguments)."""
    first[0] = 0
    for g in range(counts.shape[1]):
        place = first[g]
        for c in range(counts.shape[0]):
            offsets[c, g] = place
            place += counts[c, g]
        first[g + 1] = place


def rows_by_node(work, X_binned, positions, moves_start, split_feature, split_sets,
                 left_child, level_start, build_index, n_build, chunk_rows, found, found_node,
                 rows, copy_from, copy_to):
    """The rows of the nodes to build, grouped by node (``build_index``
    int32 (n_level,): the node's index among them, or -1), ascending within
    a node, into rows int32 (n,) OUT: returns node_first int64 (n_build +
    1,), node j's rows are ``rows[node_first[j]:node_first[j + 1]]``. Each
    row first moves as update_positions would (positions int32 INOUT;
    moves_start and the split arrays as its level_start and split arrays:
    empty, no move; ``split_sets`` the splits' LeftSets). found, found_node
    int32 (n,): scratch (the caller
    allocates the three (n,) arrays: numpy's large arrays get huge pages,
    a kernel's own 4 KiB pages, faulted in one by one: 30k faults a tree
    at 7M rows). ``work``: the job's work (ThreadedKernel.run).

    In parts over chunks of ``chunk_rows`` rows: a first pass moves each
    chunk's rows and lists them with their nodes in place (a branch-free
    store), counting them per node; a second copies them to their offset
    (node by node, chunk by chunk), so ``positions`` is read once in full.

    The second pass may also copy the listed rows' bins and statistics in
    that order: ``copy_from`` (X_rows uint8 (n, W) C order, stats int64 (n,
    C); X_rows the bins' bytes, :func:`row_bytes`), ``copy_to(node_first)``
    returns (X_out uint8 (m', W), stats_out int64 (m', C)) OUT, m' = m (the
    rows listed) for a copy (``rows`` is then left
    unwritten: node j's rows are X_out[node_first[j]:node_first[j + 1]]),
    m' = 0 for none. The pass reads X_rows and stats in row order, where
    the histogram pass read each node's rows scattered over them (deep
    levels, 1M x 28 rows: 2.5x its time). Returns (node_first, X_out,
    stats_out)."""
    n_samples = positions.shape[0]
    n_chunks = (n_samples + chunk_rows - 1) // chunk_rows
    n_found = np.zeros(n_chunks, dtype=np.int64)
    counts = np.zeros((n_chunks, n_build), dtype=np.int64)
    _move_and_list.run(work, X_binned, positions, moves_start, split_feature, *split_sets,
                       left_child, level_start, build_index, chunk_rows, found, found_node,
                       n_found, counts)
    # counts -> offsets: node by node, chunk by chunk
    node_first, offsets = chunk_offsets(counts)
    X_out, stats_out = copy_to(node_first)
    _place_listed.run(work // 2 * (1 + (X_out.shape[0] > 0)), chunk_rows, found, found_node,
                      n_found, offsets, rows, *copy_from, X_out, stats_out)
    return node_first, X_out, stats_out


@threaded
def _move_and_list(X_binned, positions, moves_start, split_feature, split_bitset, split_words,
                   split_start, split_n_words, left_child, level_start, build_index,
                   chunk_rows, found, found_node, n_found, counts, part, n_parts):
    """rows_by_node's first pass over chunks ``part`` of ``n_parts``: the
    chunk's rows moved, listed in ``found`` from the chunk's first row on
    with their node's build index in ``found_node`` (rows of nodes not
    built are overwritten), n_found int64 (n_chunks,) OUT how many, counts
    int64 (n_chunks, n_build) INOUT (zeros) per node."""
    n_samples = positions.shape[0]
    any_move = split_feature.shape[0] > 0
    n_level = U64(build_index.shape[0])
    first_chunk, stop_chunk = part_bounds(n_found.shape[0], part, n_parts)
    for chunk in range(first_chunk, stop_chunk):
        start = chunk * chunk_rows
        k = start
        for i in range(start, min(start + chunk_rows, n_samples)):
            p = positions[U64(i)]
            if any_move:
                p = _moved(X_binned, positions, i, moves_start, split_feature, split_bitset,
                           split_words, split_start, split_n_words, left_child)
                positions[U64(i)] = p
            u = U64(p - level_start)
            built = u < n_level
            j = build_index[u if built else U64(0)] if built else -1
            found[U64(k)] = i
            found_node[U64(k)] = j
            k += j >= 0
        n_found[chunk] = k - start
        for q in range(start, k):
            counts[chunk, U64(found_node[U64(q)])] += 1


@threaded
def _place_listed(chunk_rows, found, found_node, n_found, offsets, rows, X_rows, stats, X_out,
                  stats_out, part, n_parts):
    """rows_by_node's second pass over chunks ``part`` of ``n_parts``: the
    rows each chunk listed copied to rows (OUT) from offsets int64
    (n_chunks, n_build) INOUT, the chunk's first place per node; where
    X_out has rows, their bins (X_rows IN) and statistics (stats IN) to
    X_out and stats_out (OUT) instead."""
    first_chunk, stop_chunk = part_bounds(n_found.shape[0], part, n_parts)
    copy = X_out.shape[0] > 0
    for chunk in range(first_chunk, stop_chunk):
        start = chunk * chunk_rows
        for q in range(start, start + n_found[chunk]):
            j = U64(found_node[U64(q)])
            o, i = U64(offsets[chunk, j]), U64(found[U64(q)])
            if copy:
                if q + _COPY_AHEAD < start + n_found[chunk]:
                    ahead = np.int64(found[U64(q + _COPY_AHEAD)])
                    prefetch_row(X_rows, ahead)
                    prefetch_row(stats, ahead)
                for f in range(X_out.shape[1]):
                    X_out[o, U64(f)] = X_rows[i, U64(f)]
                for c in range(stats_out.shape[1]):
                    stats_out[o, U64(c)] = stats[i, U64(c)]
            else:
                rows[o] = i
            offsets[chunk, j] += 1


@threaded
def update_positions(X_binned, positions, level_start, split_feature, split_bitset,
                     split_words, split_start, split_n_words, left_child, part, n_parts):
    """positions int32 (n,) INOUT: rows of split nodes move to a child (the
    splits' LeftSets: split_bitset, split_words, split_start,
    split_n_words); in parts over rows."""
    if split_feature.shape[0] == 0:
        return
    first, stop = part_bounds(positions.shape[0], part, n_parts)
    for i in range(first, stop):
        positions[U64(i)] = _moved(X_binned, positions, i, level_start, split_feature,
                                  split_bitset, split_words, split_start, split_n_words,
                                  left_child)
