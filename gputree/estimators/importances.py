"""Feature importances read off fitted trees: each feature's share of the
weighted impurity decrease of its splits (split gain weighted by node
weight for boosting trees)."""
import numpy as np


def split_improvements(tree):
    """(internal int64 (m,), decrease float64 (m,)): the split nodes and
    their weighted impurity decrease (split gain weighted by node weight for
    boosting trees)."""
    internal = np.flatnonzero(tree.feature >= 0)
    left = tree.left_child[internal]
    w, imp = tree.weighted_n_node_samples, tree.impurity
    decrease = w[internal] * imp[internal] - w[left] * imp[left] - w[left + 1] * imp[left + 1]
    if not np.any(decrease > 0):
        decrease = w[internal] * tree.gain[internal]
    return internal, decrease


def impurity_importances(tree, n_features):
    """float64 (n_features,) normalised weighted impurity decrease per feature
    (split gain weighted by node weight for boosting trees)."""
    internal, decrease = split_improvements(tree)
    return normalised(np.bincount(tree.feature[internal], weights=decrease,
                                  minlength=n_features))


def normalised(importances):
    """``importances`` (float64 (n_features,)) divided by their sum, when positive."""
    total = importances.sum()
    return importances / total if total > 0 else importances
