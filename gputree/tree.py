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
"""
from dataclasses import dataclass, fields
from typing import Optional

import numpy as np

from ._dtypes import BITSET_DTYPE, FEATURE_DTYPE, NODE_DTYPE


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

    def __post_init__(self):
        if self.chain_link is None:
            self.chain_link = np.zeros(self.feature.shape[0], dtype=np.uint8)

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
        return TreeArrays(*(getattr(self, f.name)[keep] for f in fields(self)))

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


def concatenate_trees(trees):
    """Stack trees for one prediction launch: (feature, bitset, left, roots)."""
    offsets = np.cumsum([0] + [t.node_count for t in trees])[:-1].astype(NODE_DTYPE)
    feature = np.concatenate([t.feature for t in trees]).astype(FEATURE_DTYPE)
    bitset = np.concatenate([t.bitset for t in trees]).astype(BITSET_DTYPE)
    left = np.concatenate([np.where(t.left_child >= 0, t.left_child + off, -1)
                           for t, off in zip(trees, offsets)]).astype(NODE_DTYPE)
    return feature, bitset, left, offsets


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

