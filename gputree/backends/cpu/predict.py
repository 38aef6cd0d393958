"""The CPU tree walk: every row down every tree (leaf ids, or leaf values
added to raw scores), parallel over blocks of rows; and the training rows'
update from their leaves."""
import contextlib

import numba
import numpy as np
from numba import njit

from ..._threads import kernel_jit, parts_for, run_parts
from ..kernel_cache import cache_numba_cpu_kernels
from .jit import U64, goes_left, part_bounds
from .threaded import threaded

cache_numba_cpu_kernels(__file__)


_PREDICT_BLOCK = 64


def _walk_arrays(node_feature, node_bitset, node_left, tree_roots):
    """Trees (as ``predict_leaves`` takes them) rewritten so that one step is
    the same for every node: a leaf gets feature 0, an all-ones bitset and
    ``next = itself + 1`` (it goes "left" to itself); an internal node gets
    ``next = left + 1``, so the child is ``next - goes_left``. Also returns
    each tree's depth (int32 (n_trees,)): the number of steps to take."""
    feature = np.maximum(node_feature, 0)
    bitset = node_bitset.copy()
    step_next = np.empty(node_left.shape[0], dtype=np.int32)
    tree_depth = np.zeros(tree_roots.shape[0], dtype=np.int32)
    _fill_walk_arrays(node_feature, node_left, tree_roots, bitset, step_next,
                      np.zeros(node_left.shape[0], dtype=np.int32), tree_depth)
    return feature, bitset, step_next, tree_depth


@kernel_jit()
def _fill_walk_arrays(node_feature, node_left, tree_roots, bitset, step_next, depth,
                      tree_depth):
    """_walk_arrays' pass: bitset INOUT (leaves' rows set to all ones),
    step_next OUT, depth and tree_depth int32 INOUT (zeros). Children follow
    their parent (BFS numbering), so one forward pass per tree finds every
    node's depth."""
    for t in range(tree_roots.shape[0]):
        stop = tree_roots[t + 1] if t + 1 < tree_roots.shape[0] else node_left.shape[0]
        depth[tree_roots[t]] = 0
        for node in range(tree_roots[t], stop):
            if node_feature[node] < 0:
                step_next[node] = node + 1
                for w in range(bitset.shape[1]):
                    bitset[node, w] = np.uint32(0xFFFFFFFF)
                tree_depth[t] = max(tree_depth[t], depth[node])
            else:
                step_next[node] = node_left[node] + 1
                depth[node_left[node]] = depth[node] + 1
                depth[node_left[node] + 1] = depth[node] + 1


@njit(inline="always")
def _descend(X_binned, start, n_rows, root, n_steps, feature, bitset, step_next, nodes):
    """nodes int32 (>= n_rows,) OUT: leaf of rows start .. start+n_rows-1 in
    the tree at ``root`` (arrays from _walk_arrays). All rows of the block
    step down one level together, branch-free, so their loads overlap."""
    for j in range(n_rows):
        nodes[j] = root
    for _ in range(n_steps):
        for j in range(n_rows):
            node = U64(nodes[j])
            b = X_binned[U64(start + j), U64(feature[node])]
            nodes[j] = step_next[node] - np.int32(goes_left(bitset, node, b))


@threaded
def _walk_trees(X_binned, feature, bitset, step_next, tree_roots, tree_depth, leaves,
                node_values, tree_columns, out, scratch, part, n_parts):
    """Every row down every tree (tree arrays from _walk_arrays), in tree
    order, then with the leaf reached:

    leaves       OUT   int32 (n, n_trees) leaf ids, or (0, 0) to skip;
    out          INOUT float64 (n, W), or (0, 0) to skip:
                 ``out[i, tree_columns[t] + v] += node_values[leaf, v]`` for
                 v < node_values.shape[1] (one fixed order per row);
    scratch      int32 (n_parts, _PREDICT_BLOCK): row ``part`` this part's.

    In parts over blocks of rows; each block walks one tree at a time, so the
    tree's nodes stay in cache while the block's rows traverse it."""
    n_samples = X_binned.shape[0]
    n_blocks = (n_samples + _PREDICT_BLOCK - 1) // _PREDICT_BLOCK
    nodes = scratch[part]
    first, stop = part_bounds(n_blocks, part, n_parts)
    for block in range(first, stop):
        start = block * _PREDICT_BLOCK
        n_rows = min(_PREDICT_BLOCK, n_samples - start)
        for t in range(tree_roots.shape[0]):
            _descend(X_binned, start, n_rows, tree_roots[t], tree_depth[t], feature, bitset,
                     step_next, nodes)
            if leaves.shape[0] > 0:
                for j in range(n_rows):
                    leaves[start + j, t] = nodes[j]
            if out.shape[0] > 0:
                for j in range(n_rows):
                    for v in range(node_values.shape[1]):
                        out[U64(start + j), U64(tree_columns[t] + v)] += node_values[U64(nodes[j]),
                                                                                   U64(v)]


@threaded
def add_node_values(node_values, positions, out, first_column, part, n_parts):
    """out float64 (n, W) INOUT: out[i, first_column + v] +=
    node_values[positions[i], v]; the rest IN. In parts over rows."""
    first, stop = part_bounds(positions.shape[0], part, n_parts)
    for i in range(first, stop):
        for v in range(node_values.shape[1]):
            out[U64(i), U64(first_column + v)] += node_values[U64(positions[i]), U64(v)]


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


def walk(X_binned, node_feature, node_bitset, node_left, tree_roots, leaves, node_values,
          tree_columns, out):
    """_walk_trees of these trees (its outputs as there)."""
    walk = _walk_arrays(node_feature, node_bitset, node_left, tree_roots)
    steps = X_binned.shape[0] * (int(walk[3].sum()) + tree_roots.shape[0])
    n_parts = parts_for(steps)
    scratch = np.empty((n_parts, _PREDICT_BLOCK), dtype=np.int32)
    with _loop_vectorizer_off():
        run_parts(_walk_trees.compiled, n_parts, X_binned, *walk[:3], tree_roots, walk[3],
                  leaves, node_values, tree_columns, out, scratch)
