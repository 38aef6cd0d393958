"""Gathering the rows of the nodes to build without per-row scratch: the
level's moves and the grouping of rows by node for binned X kept lean (a
Dataset's codes, memory first).

:func:`gputree.backends.cpu.partition.rows_by_node` lists each chunk's rows
and their nodes in two int32 (n,) scratch arrays, then copies them into
place (``positions`` read once). Here a first pass moves the rows and only
counts them per chunk and node, a second reads the moved positions again
and places every row at once: 8 bytes a row less held through the fit (64
MB at 8M rows), for one more read of ``positions``. Rows of nodes not built
are placed too, after the built ones (so the place is branch-free); the
built rows come out as rows_by_node gives them, grouped by node, ascending
within a node.
"""
import numpy as np

from ..kernel_cache import cache_numba_cpu_kernels
from .jit import U64, part_bounds
from .partition import _moved, chunk_offsets, gather_chunk
from .threaded import threaded

cache_numba_cpu_kernels(__file__)


def rows_by_node_lean(work, X_binned, positions, moves_start, split_feature, split_sets,
                      left_child, level_start, build_index, n_build, rows):
    """As :func:`gputree.backends.cpu.partition.rows_by_node` (same
    arguments and result; positions int32 INOUT, rows int32 (n,) OUT, every
    row of it written: the rows of nodes not built after
    ``node_first[-1]``), without its scratch arrays."""
    n_samples = positions.shape[0]
    chunk_rows = gather_chunk(n_samples, n_build + 1)
    n_chunks = (n_samples + chunk_rows - 1) // chunk_rows
    # the slot of each level node's rows: its build index, else n_build
    # (also for rows outside the level, mapped to the extra last entry)
    slot = np.full(build_index.shape[0] + 1, n_build, dtype=np.int32)
    slot[:-1] = np.where(build_index >= 0, build_index, n_build)
    counts = np.zeros((n_chunks, n_build + 1), dtype=np.int64)
    _move_and_count.run(work, X_binned, positions, moves_start, split_feature, *split_sets,
                        left_child, level_start, slot, chunk_rows, counts)
    first, offsets = chunk_offsets(counts)
    _place.run(work // 2, positions, level_start, slot, chunk_rows, offsets, rows)
    return first[:-1]


@threaded
def _move_and_count(X_binned, positions, moves_start, split_feature, split_bitset, split_words,
                    split_start, split_n_words, left_child, level_start, slot, chunk_rows,
                    counts, part, n_parts):
    """rows_by_node_lean's first pass over chunks ``part`` of ``n_parts``:
    each chunk's rows moved (positions int32 INOUT; no move for empty
    split arrays) and counted by slot into counts int64 (n_chunks, n_build
    + 1) INOUT (zeros); slot int32 (n_level + 1,) IN."""
    n_samples = positions.shape[0]
    any_move = split_feature.shape[0] > 0
    outside = U64(slot.shape[0] - 1)
    first_chunk, stop_chunk = part_bounds(counts.shape[0], part, n_parts)
    for chunk in range(first_chunk, stop_chunk):
        start = chunk * chunk_rows
        for i in range(start, min(start + chunk_rows, n_samples)):
            if any_move:
                positions[U64(i)] = _moved(X_binned, positions, i, moves_start, split_feature,
                                           split_bitset, split_words, split_start,
                                           split_n_words, left_child)
            counts[chunk, U64(slot[min(U64(positions[U64(i)] - level_start), outside)])] += 1


@threaded
def _place(positions, level_start, slot, chunk_rows, offsets, rows, part, n_parts):
    """rows_by_node_lean's second pass over chunks ``part`` of ``n_parts``:
    every row of the chunk to rows (int32 (n,) OUT) at its slot's next
    place, offsets int64 (n_chunks, n_build + 1) INOUT (the chunk's first
    place per slot)."""
    n_samples = positions.shape[0]
    outside = U64(slot.shape[0] - 1)
    first_chunk, stop_chunk = part_bounds(offsets.shape[0], part, n_parts)
    for chunk in range(first_chunk, stop_chunk):
        start = chunk * chunk_rows
        for i in range(start, min(start + chunk_rows, n_samples)):
            j = U64(slot[min(U64(positions[U64(i)] - level_start), outside)])
            rows[U64(offsets[chunk, j])] = i
            offsets[chunk, j] += 1


@threaded
def identity_rows(rows, part, n_parts):
    """rows int32 (n,) OUT = 0 .. n-1, in parts."""
    first, stop = part_bounds(rows.shape[0], part, n_parts)
    for i in range(first, stop):
        rows[U64(i)] = i
