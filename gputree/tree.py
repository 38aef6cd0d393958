"""``TreeArrays``: one fitted tree as flat fixed-width arrays, and the
operations that only read a finished tree (prediction, apply, decision path,
compaction after pruning).

Nodes are numbered breadth-first; the right child of node ``i`` is always
``left_child[i] + 1``. Every split, numerical or categorical, is a bitset over
bins: a row goes left when the bit of its bin is set. A multiway split (ID3 /
C4.5, :mod:`gputree.growth.multiway`) on a feature with m categories at the node is
stored as a chain of m - 1 binary nodes: each link sends one category left
(to that category's child) and the rest right; the last link's right child
is the heaviest category's, which also receives missing values and every
category absent from the node. The links after the first are marked
``chain_link``: they are parts of their head's split, not splits of their own.

A categorical split on a feature with more than 256 categories keeps its
bins from 256 on in a variable number of words beyond its bitset: the
tree's ``cat_words`` hold them, node after node, and ``cat_start`` /
``cat_n_words`` say where each node's begin and how many it has
(:class:`LeftSets`, the layout that partitioning and prediction read).
"""
from dataclasses import dataclass, fields
from typing import NamedTuple, Optional

import numpy as np

from ._dtypes import (BITSET_DTYPE, FEATURE_DTYPE, NODE_DTYPE, WORD_COUNT_DTYPE,
                      WORD_START_DTYPE)


class LeftSets(NamedTuple):
    """The sets of bins that go left at n splits (or nodes), as partitioning
    and prediction read them (gputree/backends/splitset.py):

    bitset   uint32 (n, BITSET_WORDS) the bitmap of bins 0 .. 255 and the
             words for bins beyond of numerical splits and the missing bin
    words    uint32 (n_words,) the bitmaps of categorical splits' bins from
             256 on, split after split
    start    int64 (n,) where split k's words begin in ``words``
    n_words  int32 (n,) how many it has (0: none; bins beyond go right)

    Arrays of one backend's ``xp`` (or host numpy)."""

    bitset: object
    words: object
    start: object
    n_words: object

    @classmethod
    def of_bitset(cls, bitset):
        """Sets without words beyond the bitset (host numpy ``bitset``)."""
        n = bitset.shape[0]
        return cls(bitset, np.zeros(0, dtype=BITSET_DTYPE),
                   np.zeros(n, dtype=WORD_START_DTYPE), np.zeros(n, dtype=WORD_COUNT_DTYPE))

    def map(self, function):
        """The four arrays through ``function`` (e.g. a backend's asarray)."""
        return LeftSets(*(function(array) for array in self))


@dataclass
class TreeArrays:
    """A fitted tree; every array has ``n_nodes`` rows.

    feature          int32   split feature, -1 for leaves
    bitset           uint32  (n_nodes, BITSET_WORDS) bins that go left
    left_child       int32   -1 for leaves (right child = left_child + 1)
    threshold        float64 numerical split: go left when x <= threshold
                             (NaN for leaves and categorical splits)
    missing_left     uint8   1 when missing values go left
    is_categorical   uint8   1 for a categorical split
    value            float64 (n_nodes, n_outputs, n_classes)
    impurity         float64
    n_node_samples   int64   rows with positive weight
    weighted_n_node_samples float64
    gain             float64 split gain (0 for leaves)
    depth            int32
    parent           int32   -1 for the root
    chain_link       uint8   1 for the links of a multiway split after its
                             first node (default: zeros, binary trees)
    cat_words        uint32  (n_words,) bins >= 256 of categorical splits
                             (see LeftSets; default: none)
    cat_start        int64   where the node's words begin in cat_words
    cat_n_words      int32   how many words the node has (0: none)
    """

    feature: np.ndarray
    bitset: np.ndarray
    left_child: np.ndarray
    threshold: np.ndarray
    missing_left: np.ndarray
    is_categorical: np.ndarray
    value: np.ndarray
    impurity: np.ndarray
    n_node_samples: np.ndarray
    weighted_n_node_samples: np.ndarray
    gain: np.ndarray
    depth: np.ndarray
    parent: np.ndarray
    chain_link: Optional[np.ndarray] = None
    cat_words: Optional[np.ndarray] = None
    cat_start: Optional[np.ndarray] = None
    cat_n_words: Optional[np.ndarray] = None

    def __post_init__(self):
        n = self.feature.shape[0]
        if self.chain_link is None:
            self.chain_link = np.zeros(n, dtype=np.uint8)
        if self.cat_words is None:
            self.cat_words = np.zeros(0, dtype=BITSET_DTYPE)
        if self.cat_start is None:
            self.cat_start = np.zeros(n, dtype=WORD_START_DTYPE)
        if self.cat_n_words is None:
            self.cat_n_words = np.zeros(n, dtype=WORD_COUNT_DTYPE)

    @property
    def has_cat_words(self):
        """True when a split keeps categories (bins >= 256) beyond its bitset."""
        return bool(self.cat_n_words.any())

    @property
    def left_sets(self):
        """The nodes' LeftSets (arrays shared, not copied)."""
        return LeftSets(self.bitset, self.cat_words, self.cat_start, self.cat_n_words)

    def node_words(self, node):
        """uint32: node ``node``'s words beyond its bitset (bins 256 ..)."""
        start = int(self.cat_start[node])
        return self.cat_words[start:start + int(self.cat_n_words[node])]

    @property
    def is_multiway(self):
        """True when the tree holds a multiway split."""
        return bool(self.chain_link.any())

    @property
    def node_count(self):
        return int(self.feature.shape[0])

    @property
    def right_child(self):
        return np.where(self.left_child >= 0, self.left_child + 1, -1).astype(NODE_DTYPE)

    @property
    def is_leaf(self):
        return self.feature < 0

    @property
    def n_leaves(self):
        return int(self.is_leaf.sum())

    @property
    def max_depth(self):
        return int(self.depth.max())

    def subset(self, keep):
        """Copy with only the nodes ``keep`` (bool (n_nodes,) or indices),
        renumbered; callers must keep both children of every kept parent."""
        per_node = {f.name: getattr(self, f.name)[keep] for f in fields(self)
                    if f.name not in _WORD_FIELDS}
        words, start, n_words = gather_words(self.cat_words, self.cat_start[keep],
                                             self.cat_n_words[keep])
        return TreeArrays(**per_node, cat_words=words, cat_start=start, cat_n_words=n_words)

    def make_leaves(self, nodes):
        """In place: turn ``nodes`` into leaves (their subtrees stay until
        :func:`compact` drops them)."""
        self.feature[nodes] = -1
        self.left_child[nodes] = -1
        self.bitset[nodes] = 0
        self.threshold[nodes] = np.nan
        self.gain[nodes] = 0.0
        self.is_categorical[nodes] = 0
        self.missing_left[nodes] = 0
        self.chain_link[nodes] = 0
        self.cat_n_words[nodes] = 0
        self.cat_start[nodes] = 0


#: TreeArrays fields that are not one row per node (cat_words) or that
#: point into it
_WORD_FIELDS = ("cat_words", "cat_start", "cat_n_words")


def gather_words(words, start, n_words):
    """(words, start, n_words) of the given nodes' words (``start`` int64,
    ``n_words`` int32 (n,) into ``words`` uint32), copied into one new array
    in node order: each node's words once, none of nodes left out."""
    n_words = np.asarray(n_words, dtype=WORD_COUNT_DTYPE)
    new_start = np.zeros(n_words.shape[0], dtype=WORD_START_DTYPE)
    new_start[1:] = np.cumsum(n_words[:-1], dtype=WORD_START_DTYPE)
    total = int(n_words.sum(dtype=np.int64))
    # the source index of every new word: its node's start plus its place
    node = np.repeat(np.arange(n_words.shape[0]), n_words)
    source = np.asarray(start, dtype=np.int64)[node] + (np.arange(total) - new_start[node])
    return (np.asarray(words, dtype=BITSET_DTYPE)[source],
            np.where(n_words > 0, new_start, 0).astype(WORD_START_DTYPE), n_words)


def compact(tree):
    """Drop nodes unreachable from the root, renumbering breadth-first so that
    siblings stay adjacent. Returns a new TreeArrays."""
    order = [0]
    head = 0
    # breadth-first over nodes (not samples): at most n_nodes steps
    while head < len(order):
        node = order[head]
        head += 1
        left = tree.left_child[node]
        if left >= 0:
            order.extend((left, left + 1))
    order = np.asarray(order, dtype=np.int64)
    new_id = np.full(tree.node_count, -1, dtype=np.int64)
    new_id[order] = np.arange(order.size)
    result = tree.subset(order)
    internal = result.left_child >= 0
    result.left_child[internal] = new_id[result.left_child[internal]]
    has_parent = result.parent >= 0
    result.parent[has_parent] = new_id[result.parent[has_parent]]
    return result


def tree_roots(trees):
    """NODE_DTYPE (n_trees,): each tree's root (its first node) in the
    trees' concatenated node arrays (:func:`concatenate_trees`)."""
    return np.cumsum([0] + [t.node_count for t in trees])[:-1].astype(NODE_DTYPE)


def concatenate_trees(trees):
    """Stack trees for one prediction launch: (feature, LeftSets, left, roots)."""
    offsets = tree_roots(trees)
    feature = np.concatenate([t.feature for t in trees]).astype(FEATURE_DTYPE)
    bitset = np.concatenate([t.bitset for t in trees]).astype(BITSET_DTYPE)
    word_offsets = np.cumsum([0] + [t.cat_words.shape[0] for t in trees])[:-1]
    sets = LeftSets(bitset, np.concatenate([t.cat_words for t in trees]).astype(BITSET_DTYPE),
                    np.concatenate([t.cat_start + off for t, off in zip(trees, word_offsets)])
                    .astype(WORD_START_DTYPE),
                    np.concatenate([t.cat_n_words for t in trees]).astype(WORD_COUNT_DTYPE))
    left = np.concatenate([np.where(t.left_child >= 0, t.left_child + off, -1)
                           for t, off in zip(trees, offsets)]).astype(NODE_DTYPE)
    return feature, sets, left, offsets


def decision_path_indicator(tree, leaves):
    """CSR indicator (n_samples, n_nodes) of the nodes each row visits, given
    its leaf ids (int (n_samples,))."""
    from scipy.sparse import csr_matrix
    depth = tree.depth[leaves]
    n_visits = depth + 1
    indptr = np.concatenate([[0], np.cumsum(n_visits)])
    indices = np.empty(indptr[-1], dtype=np.int64)
    node = leaves.astype(np.int64)
    # walk up one level at a time for all rows together (loop over depth)
    for step in range(int(depth.max(initial=0)) + 1):
        alive = depth - step >= 0
        indices[indptr[:-1][alive] + (depth - step)[alive]] = node[alive]
        node = np.where(alive, tree.parent[node], node)
        node = np.maximum(node, 0)
    data = np.ones(indices.size, dtype=np.int64)
    return csr_matrix((data, indices, indptr), shape=(leaves.shape[0], tree.node_count))

