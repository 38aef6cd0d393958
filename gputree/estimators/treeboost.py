"""Friedman's TreeBoost as a boosting option: ``criterion="friedman_mse"``
(or its equal ``"squared_error"``) on the gradient-boosting estimators.

Friedman (2001, "Greedy function approximation", algorithms 5 and 6), as
scikit-learn's ``GradientBoostingClassifier``: every tree is split by least
squares on the residuals ``r = -g / w`` (``y - p`` for the log-loss), and each
leaf then takes the loss's Newton step ``sum(w r) / sum(h)`` (for the
log-loss ``sum(y - p) / sum(p (1 - p))``; for softmax with K classes times
``(K - 1) / K``). Least squares on the residuals is the Newton gain with every
hessian replaced by the row's weight, so the trees grow on the usual
statistics ``(g, w)``; the leaves are then recomputed from the true hessians
(fixed-point sums per leaf, so every device gives the same values) with
``reg_lambda`` and ``reg_alpha`` as in the default leaves:
``-T(G) / (H + reg_lambda)``. Friedman's algorithm is ``reg_lambda=0``.
Friedman's improvement ``w_l w_r / (w_l + w_r) (mean_l - mean_r)**2`` equals
the least-squares reduction exactly, which is why the two names give the same
trees here (scikit-learn computes them differently, to rounding).

The default criterion, ``"newton"``, splits on the second-order gain (as
XGBoost and LightGBM); its leaves are the same Newton step, so with
``reg_lambda=0`` a default tree's leaves already equal Friedman's formula, and
the two criteria differ only in the splits (and in ``min_child_weight``,
which here bounds the children's weight rather than their hessian sum).
"""
import numpy as np

from ..fixed_point import grouped_order_free_sum
from .losses import MultinomialLoss

BOOSTING_CRITERIA = ("newton", "friedman_mse", "squared_error")


def weight_hessians(xp, w, n_outputs):
    """float64 (n, n_outputs): every row's weight w (n,) in each output's
    column, the hessians that make the Newton gain least squares on the
    residuals (the trees of "friedman_mse" and "squared_error" are split with
    them; "newton" uses the loss's own)."""
    return xp.ones((w.shape[0], n_outputs)) * w[:, None]


def set_newton_values(xp, tree, positions, g, h, growth, loss):
    """tree.value := -T(G) / (H + reg_lambda) per node and output from the
    sums of g, h float64 (n, K) over the node's rows (``positions``: every
    row's leaf, int (n,)), times (K - 1) / K for softmax (in place; 0 where
    H + reg_lambda <= 0)."""
    def leaf_sums(values):
        return grouped_order_free_sum(xp, values, positions, tree.node_count)
    newton_values_from_sums(tree, [(leaf_sums(g[:, o]), leaf_sums(h[:, o]))
                                   for o in range(g.shape[1])], growth, loss)


def newton_values_from_sums(tree, sums, growth, loss):
    """:func:`set_newton_values` from ``sums``: per output, the order-free
    sums of g and h over each leaf's rows (float64 (n_nodes,) each, host or
    device; those of rows spread over workers: gputree.dask)."""
    scale = 1.0
    if isinstance(loss, MultinomialLoss):
        scale = (loss.n_outputs - 1) / loss.n_outputs
    for o, (g_sums, h_sums) in enumerate(sums):
        G, H = _node_sums(tree, g_sums), _node_sums(tree, h_sums)
        G = np.sign(G) * np.maximum(np.abs(G) - growth.reg_alpha, 0.0)
        denominator = H + growth.reg_lambda
        safe = denominator > 0.0
        tree.value[:, o, 0] = np.where(safe, -G / np.where(safe, denominator, 1.0), 0.0) * scale


def _node_sums(tree, leaf_sums):
    """float64 (n_nodes,) host: every node's sum from its leaves' (n_nodes,),
    added up the tree one depth at a time."""
    sums = np.array(leaf_sums if isinstance(leaf_sums, np.ndarray) else leaf_sums.get())
    sums[~tree.is_leaf] = 0.0
    for depth in range(int(tree.depth.max()), 0, -1):
        left = tree.left_child[(tree.depth == depth - 1) & ~tree.is_leaf]
        sums[tree.parent[left]] = sums[left] + sums[left + 1]
    return sums
