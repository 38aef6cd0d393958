"""Level-wise trees of small data grown best first: a tree without a leaf
budget splits every node that may split, whichever order the splits are
taken in, so the best-first grower's compiled steps (one call a tree,
:mod:`gputree.growth.bestfirst`) grow the level-wise grower's tree; its
nodes renumbered in level order (root, then each level's children of the
level before, left then right, in their parents' order) give the
level-wise tree field for field and its rows' leaves.

On small data a level's host work costs more than its kernels (LETOR's
3,005 rows, depth 6: 0.19 s a 100-tree fit level by level, 0.17 s in
steps); on large data a level's parallel passes over many nodes win
(30,000 rows, depth 8: 0.58 s against 0.70 s), hence :data:`MOST_ROWS`.
Nothing may be drawn per node (the draws follow the order of the splits)
nor constrained, and the criterion must be Newton's (the compiled steps').
"""
import dataclasses

import numpy as np

from ..criteria import KIND_NEWTON, LAYOUT_KIND
from ..tree import TreeArrays
from .bestfirst import grow_best_first
from .levelwise import scans_directly, split_words

#: training rows up to which a level-wise tree grows best first (measured,
#: 2 threads: 15,000 rows at depth 6 0.28 s against 0.31 s; 30,000 rows at
#: depth 8 0.70 s against 0.58 s)
MOST_ROWS = 16_384


def applies(backend, data, stats, growth):
    """Whether a level-wise tree of ``growth`` on ``data`` grows best first:
    no leaf budget, the backend's compiled best-first steps, nothing drawn
    or constrained, the Newton criterion, no category beyond a bitset (the
    tree's words keep their level-wise places) and at most MOST_ROWS rows."""
    return (not growth.best_first and not growth.max_leaf_nodes
            and data.X_binned.shape[0] <= MOST_ROWS and backend.compiles_best_first
            and scans_directly(backend, data, growth)
            and stats.layout[LAYOUT_KIND] == KIND_NEWTON and not split_words(data))


def grow_in_level_order(backend, data, stats, growth, rng, pool=None, held_row_bytes=0):
    """Grow the level-wise tree of ``growth`` best first, with a leaf
    budget it cannot reach (:func:`most_leaves`) (arguments and result as
    :func:`gputree.growth.levelwise.grow_tree`; :func:`applies` must hold),
    renumbered in level order."""
    budget = dataclasses.replace(growth, max_leaf_nodes=most_leaves(data.X_binned.shape[0],
                                                                     growth))
    tree, positions = grow_best_first(backend, data, stats, budget, rng, pool, held_row_bytes)
    order = level_order(tree.left_child)
    new_id = np.empty(order.shape[0], dtype=positions.dtype)
    new_id[order] = np.arange(order.shape[0], dtype=positions.dtype)
    return renumbered(tree, order, new_id), new_id[positions]


def most_leaves(n_rows, growth):
    """The most leaves a tree of ``growth`` on ``n_rows`` rows can have
    (2**max_depth; every leaf min_samples_leaf rows): a leaf budget that
    never stops a split, which sizes the compiled steps' node arrays for
    the whole tree (no budget: grown, and handed back, as the tree grows)."""
    by_rows = n_rows // max(1, growth.min_samples_leaf)
    return max(1, min(by_rows, 1 << growth.max_depth) if growth.max_depth < 62 else by_rows)


def level_order(left_child):
    """int64 (n,): the node ids in level order (``left_child`` int32 (n,),
    -1 for leaves, the right child left_child + 1): the root, then each
    level's children of the level before, left then right (a level at a
    time: a few numpy calls each)."""
    order = np.empty(left_child.shape[0], dtype=np.int64)
    order[0], start, stop = 0, 0, 1
    while start < stop:
        first = left_child[order[start:stop]]
        first = first[first >= 0]
        k = first.shape[0]
        order[stop:stop + 2 * k:2] = first
        order[stop + 1:stop + 2 * k:2] = first + 1
        start, stop = stop, stop + 2 * k
    return order


def renumbered(tree, order, new_id):
    """The TreeArrays ``tree`` with node order[k] as node k (``new_id``
    its inverse): each node's row moved (every per-node field), child and
    parent ids mapped, the split words (indexed by cat_start) kept."""
    fields = {field.name: getattr(tree, field.name)[order]
              for field in dataclasses.fields(tree) if field.name != "cat_words"}
    for name in ("left_child", "parent"):
        ids = fields[name]
        fields[name] = np.where(ids >= 0, new_id[np.maximum(ids, 0)], ids).astype(ids.dtype)
    return TreeArrays(cat_words=tree.cat_words, **fields)
