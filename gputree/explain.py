"""TreeSHAP feature contributions (``predict(X, pred_contrib=True)``, as in
LightGBM): exact path-dependent Shapley values of every tree, where a
feature left out of a coalition sends a row down both children in
proportion to their training weight (``weighted_n_node_samples``).

The host builds, per leaf, its root path merged by feature (the
"zero fraction" of a feature: the product of its edges' weight ratios); a
numba kernel, parallel over rows, decides each path's "one fraction" from
the row's bins and each split's bitset (so categorical splits and missing
values follow the tree exactly) and runs TreeSHAP's extend / unwind on it
(the leaf-wise formulation used by GPUTreeSHAP). Loops over leaves and
nodes run on the host; loops over rows only in the kernel.
"""
import functools

import numba
import numpy as np

from ._compile_cache import cached_kernel
from ._dtypes import FLOAT_DTYPE
from .backends.splitset import make_splitset
from .growth.surrogates import refuse_surrogates

_goes_left_words = make_splitset(numba.njit(inline="always")).goes_left_words


def with_pred_contrib(predict):
    """Decorator: ``predict(X, pred_contrib=True)`` returns :func:`contributions`."""
    @functools.wraps(predict)
    def wrapper(self, X, pred_contrib=False):
        if pred_contrib:
            return contributions(self, X)
        return predict(self, X)
    return wrapper


def contributions(model, X):
    """float64 (n_samples, n_features + 1) per output: TreeSHAP values of the
    raw prediction, the last column the expected value; outputs side by side
    ((n_samples, K * (n_features + 1)), LightGBM's layout) when there are K > 1
    (classes of a classifier tree or forest, classes of softmax boosting).
    Each output's row sums to the raw prediction: predict_proba (trees,
    forests), predict (regression trees, forests), decision_function or the
    raw score before the link (boosting). Trees with surrogate splits are refused."""
    refuse_surrogates(model, "TreeSHAP (pred_contrib=True)")
    backend = model._backend
    X_binned = np.asfortranarray(backend.to_host(model._bin_new_data(X).X_binned))
    trees, columns, scale, baseline = model._contribution_layout()
    n_features, width = X_binned.shape[1], baseline.shape[0]
    paths = _leaf_paths(trees, columns, scale)
    phi = np.zeros((X_binned.shape[0], width, n_features + 1), dtype=FLOAT_DTYPE)
    _shap_kernel(X_binned, *paths, phi)
    phi[:, :, n_features] += baseline + _expected_values(trees, columns, scale, width)
    return phi[:, 0, :] if width == 1 else phi.reshape(phi.shape[0], -1)


def _expected_values(trees, columns, scale, width):
    """float64 (width,): the weight-averaged leaf values, summed over trees."""
    total = np.zeros(width)
    for tree, column in zip(trees, columns):
        leaves = np.flatnonzero(tree.feature < 0)
        share = _ratio(tree.weighted_n_node_samples[leaves], tree.weighted_n_node_samples[0])
        values = tree.value[leaves].reshape(leaves.size, -1)
        total[column:column + values.shape[1]] += scale * (share @ values)
    return total


def _ratio(a, b):
    return np.divide(a, b, out=np.zeros(np.shape(a)), where=np.asarray(b) > 0)


def _leaf_paths(trees, columns, scale):
    """Flat path tables of every leaf of every tree (host loops over nodes):

    leaf_start int64 (n_leaves + 1)  elements of leaf l: leaf_start[l]..
    leaf_value float64 (n_leaves, V) scaled leaf values; leaf_column int64 (n_leaves,)
    elem_feature int64, elem_zero float64, elem_start int64 (n_elems + 1): edges
    edge_feature int64, the edges' split LeftSets (edge_bitset uint32
    (n_edges, BITSET_WORDS), edge_words uint32, edge_word_start int64,
    edge_n_words int32 (n_edges,)), edge_left uint8
    """
    leaf_start, leaf_value, leaf_column = [0], [], []
    elem_feature, elem_zero, elem_start = [], [], [0]
    edge_feature, edge_bitset, edge_left = [], [], []
    edge_words, edge_word_start, edge_n_words, n_edge_words = [], [], [], 0
    for tree, column in zip(trees, columns):
        cover = tree.weighted_n_node_samples
        for leaf in np.flatnonzero(tree.feature < 0):
            by_feature = {}
            node = leaf
            while tree.parent[node] >= 0:
                parent = tree.parent[node]
                by_feature.setdefault(int(tree.feature[parent]), []).append(
                    (parent, node == tree.left_child[parent],
                     _ratio(cover[node], cover[parent])))
                node = parent
            for feature, edges in by_feature.items():
                elem_feature.append(feature)
                elem_zero.append(float(np.prod([e[2] for e in edges])))
                for parent, left, _ in edges:
                    edge_feature.append(feature)
                    edge_bitset.append(tree.bitset[parent])
                    edge_left.append(left)
                    words = tree.node_words(parent)
                    edge_words.append(words)
                    edge_word_start.append(n_edge_words)
                    edge_n_words.append(words.shape[0])
                    n_edge_words += words.shape[0]
                elem_start.append(len(edge_feature))
            leaf_start.append(len(elem_feature))
            leaf_value.append(scale * tree.value[leaf].ravel())
            leaf_column.append(column)
    words = trees[0].bitset.shape[1]
    return (np.asarray(leaf_start, np.int64), np.asarray(leaf_value, FLOAT_DTYPE),
            np.asarray(leaf_column, np.int64), np.asarray(elem_feature, np.int64),
            np.asarray(elem_zero, FLOAT_DTYPE), np.asarray(elem_start, np.int64),
            np.asarray(edge_feature, np.int64),
            np.asarray(edge_bitset, np.uint32).reshape(-1, words),
            np.concatenate(edge_words + [np.zeros(0, np.uint32)]).astype(np.uint32),
            np.asarray(edge_word_start, np.int64), np.asarray(edge_n_words, np.int32),
            np.asarray(edge_left, np.uint8))


@cached_kernel()
def _extend(zero, one, weight, depth, z, o):
    """TreeSHAP EXTEND: element ``depth`` gets fractions (z, o)."""
    zero[depth], one[depth] = z, o
    weight[depth] = 1.0 if depth == 0 else 0.0
    for i in range(depth - 1, -1, -1):
        weight[i + 1] += o * weight[i] * (i + 1) / (depth + 1)
        weight[i] = z * weight[i] * (depth - i) / (depth + 1)


@cached_kernel()
def _unwound_sum(zero, one, weight, depth, k):
    """Sum of the path weights with element ``k`` unwound (TreeSHAP)."""
    o, z = one[k], zero[k]
    total = 0.0
    if o != 0.0:
        following = weight[depth]
        for i in range(depth - 1, -1, -1):
            part = following / ((i + 1) * o)
            total += part
            following = weight[i] - part * z * (depth - i)
    else:
        for i in range(depth - 1, -1, -1):
            total += weight[i] / (z * (depth - i))
    return total * (depth + 1)


@cached_kernel(parallel=True)
def _shap_kernel(X_binned, leaf_start, leaf_value, leaf_column, elem_feature, elem_zero,
                 elem_start, edge_feature, edge_bitset, edge_words, edge_word_start,
                 edge_n_words, edge_left, phi):
    """phi (n_samples, width, n_features + 1) += every leaf's contributions."""
    n_leaves = leaf_start.shape[0] - 1
    longest = 1
    for leaf in range(n_leaves):
        longest = max(longest, leaf_start[leaf + 1] - leaf_start[leaf] + 1)
    for row in numba.prange(X_binned.shape[0]):
        zero, one = np.empty(longest), np.empty(longest)
        weight = np.empty(longest)
        for leaf in range(n_leaves):
            first, stop = leaf_start[leaf], leaf_start[leaf + 1]
            _extend(zero, one, weight, 0, 1.0, 1.0)
            dead = False
            for e in range(first, stop):
                o = 1.0
                for edge in range(elem_start[e], elem_start[e + 1]):
                    b = X_binned[row, edge_feature[edge]]
                    if _goes_left_words(edge_bitset, edge, b, edge_words, edge_word_start,
                                        edge_n_words) != edge_left[edge]:
                        o = 0.0
                if o == 0.0 and elem_zero[e] == 0.0:
                    dead = True       # weight 0 on every coalition: no contribution
                    break
                _extend(zero, one, weight, e - first + 1, elem_zero[e], o)
            if dead:
                continue
            depth = stop - first
            for e in range(first, stop):
                k = e - first + 1
                w = _unwound_sum(zero, one, weight, depth, k) * (one[k] - zero[k])
                for v in range(leaf_value.shape[1]):
                    phi[row, leaf_column[leaf] + v, elem_feature[e]] += w * leaf_value[leaf, v]


def shap_model(model):
    """The model as the dict of tree arrays that ``shap.TreeExplainer``
    accepts: ``shap.TreeExplainer(gputree.explain.shap_model(model))``
    (path-dependent, raw output; explain raw X with NaN for missing).

    shap's dict format has no categorical splits: models with one raise a
    ValueError; use ``model.predict(X, pred_contrib=True)`` for them.
    Trees with surrogate splits are refused."""
    refuse_surrogates(model, "shap_model")
    trees, columns, scale, baseline = model._contribution_layout()
    if any(t.is_categorical.any() for t in trees):
        raise ValueError("this model has categorical splits, which shap's tree format cannot "
                         "express; use model.predict(X, pred_contrib=True) instead.")
    return {"trees": [_shap_tree(t, c, scale, baseline.shape[0]) for t, c in zip(trees, columns)],
            "base_offset": baseline if baseline.shape[0] > 1 else float(baseline[0]),
            "tree_output": "raw_value", "input_dtype": np.float64,
            "internal_dtype": np.float64}


def _shap_tree(tree, column, scale, width):
    """One tree in shap's dict layout; internal nodes hold their children's
    weight-averaged values (filled bottom-up, one depth at a time)."""
    n = tree.node_count
    values = np.zeros((n, width))
    leaf = tree.feature < 0
    flat = tree.value.reshape(n, -1)
    values[:, column:column + flat.shape[1]] = np.where(leaf[:, None], scale * flat, 0.0)
    cover = tree.weighted_n_node_samples
    for depth in range(int(tree.depth.max()) - 1, -1, -1):
        nodes = np.flatnonzero(~leaf & (tree.depth == depth))
        left = tree.left_child[nodes]
        values[nodes] = (_ratio(cover[left], cover[nodes])[:, None] * values[left]
                         + _ratio(cover[left + 1], cover[nodes])[:, None] * values[left + 1])
    right = tree.right_child
    return {"children_left": tree.left_child.astype(np.int32),
            "children_right": right.astype(np.int32),
            "children_default": np.where(tree.missing_left == 1, tree.left_child,
                                         right).astype(np.int32),
            "features": np.where(leaf, -2, tree.feature).astype(np.int32),
            "thresholds": np.where(leaf, -2.0, tree.threshold),
            "values": values, "node_sample_weight": cover.astype(np.float64)}
