"""Minimal cost-complexity (weakest-link) pruning, with scikit-learn's meaning
or with CART's error rate.

A node's cost is ``R(t) = p(t) r(t)``, ``p(t) = weighted_n_node_samples[t] /
W`` its share of the weight and ``r(t)`` its risk: its impurity
(``risk="impurity"``, scikit-learn's choice) or, for classification trees,
its misclassification rate ``1 - max_k p_k(t)`` (``risk="misclassification"``,
Breiman et al.'s CART); a branch's is the sum over its leaves. The weakest link is the internal node
with the smallest ``(R(t) - R(T_t)) / (|leaves(T_t)| - 1)``; it is pruned
first (ties: lowest node id). A multiway split (a chain of binary nodes,
:mod:`gputree.tree`) is pruned as a unit: only its first node is a candidate,
and pruning it collapses all its children at once. All loops here run over tree depth or pruning
steps, never over samples.
"""
import numpy as np

from ..tree import compact

PRUNING_RISKS = ("impurity", "misclassification")


def node_risk(tree, risk="impurity"):
    """R(t) float64 (n_nodes,): weight share times the node's risk rate (the
    misclassification rate is averaged over outputs)."""
    share = tree.weighted_n_node_samples / tree.weighted_n_node_samples[0]
    if risk == "misclassification":
        return share * (1.0 - tree.value.max(axis=2)).mean(axis=1)
    return share * tree.impurity


def _branch_costs(tree, node_cost, is_leaf):
    """(R(T_t) float64, leaf count int64) of every node's current branch,
    bottom-up one depth at a time."""
    branch_cost = np.where(is_leaf, node_cost, 0.0)
    n_leaves = is_leaf.astype(np.int64)
    internal = ~is_leaf
    for depth in range(tree.max_depth - 1, -1, -1):
        nodes = np.flatnonzero(internal & (tree.depth == depth))
        left = tree.left_child[nodes]
        branch_cost[nodes] = branch_cost[left] + branch_cost[left + 1]
        n_leaves[nodes] = n_leaves[left] + n_leaves[left + 1]
    return branch_cost, n_leaves


def _descendants(tree, node):
    """Bool mask (n_nodes,) of the strict descendants of ``node``."""
    mask = np.zeros(tree.node_count, dtype=bool)
    frontier = np.array([node])
    while frontier.size:
        frontier = frontier[tree.left_child[frontier] >= 0]
        children = np.concatenate([tree.left_child[frontier], tree.left_child[frontier] + 1])
        mask[children] = True
        frontier = children
    return mask


def _weakest_links(tree, ccp_alpha=np.inf, risk="impurity"):
    """Prune step by step; yields (effective alpha, leaf mask) after each
    step while the weakest link's alpha <= ccp_alpha. The leaf mask (bool
    (n_nodes,), pruned nodes and their descendants set) is the working mask,
    changed by the next step; the final one is StopIteration.value."""
    node_cost = node_risk(tree, risk)
    is_leaf = tree.is_leaf.copy()
    while not is_leaf[0]:
        branch_cost, n_leaves = _branch_costs(tree, node_cost, is_leaf)
        alpha = np.full(tree.node_count, np.inf)
        internal = ~is_leaf
        alpha[internal] = ((node_cost[internal] - branch_cost[internal])
                           / (n_leaves[internal] - 1))
        # a multiway split collapses as a unit, at its chain's first node
        alpha[tree.chain_link == 1] = np.inf
        weakest = int(np.argmin(alpha))
        if alpha[weakest] > ccp_alpha:
            break
        is_leaf[weakest] = True
        is_leaf[_descendants(tree, weakest)] = True
        yield float(alpha[weakest]), is_leaf
    return is_leaf


def _reachable(tree, is_leaf):
    """Bool mask of nodes reachable from the root when ``is_leaf`` nodes stop."""
    reach = np.zeros(tree.node_count, dtype=bool)
    reach[0] = True
    for depth in range(tree.max_depth):
        nodes = np.flatnonzero(reach & (tree.depth == depth) & ~is_leaf)
        reach[tree.left_child[nodes]] = True
        reach[tree.left_child[nodes] + 1] = True
    return reach


def pruning_path(tree, risk="impurity"):
    """(ccp_alphas, impurities) float64 arrays: the effective alphas of the
    nested subtrees (starting at 0 for the full tree) and each subtree's
    total leaf cost (impurity, or misclassification risk), as
    scikit-learn's ``cost_complexity_pruning_path``."""
    node_cost = node_risk(tree, risk)
    alphas, impurities = [0.0], [float(node_cost[tree.is_leaf].sum())]
    for alpha, is_leaf in _weakest_links(tree, risk=risk):
        alphas.append(alpha)
        impurities.append(float(node_cost[is_leaf & _reachable(tree, is_leaf)].sum()))
    return np.asarray(alphas), np.asarray(impurities)


def pruned_leaf_masks(tree, ccp_alphas, risk="impurity"):
    """bool (len(ccp_alphas), n_nodes): for each alpha of the ascending
    ``ccp_alphas``, the nodes that are leaves or lie below a leaf once
    ``tree`` is pruned at that alpha (as :func:`prune`, without compacting:
    node ids stay those of ``tree``; alpha <= 0 prunes nothing)."""
    ccp_alphas = np.asarray(ccp_alphas, dtype=np.float64)
    masks = np.repeat(tree.is_leaf[None, :], ccp_alphas.size, axis=0)
    pruning = ccp_alphas > 0.0
    for alpha, is_leaf in _weakest_links(tree, risk=risk):
        pruning &= ccp_alphas >= alpha     # prune() stops at the first larger alpha
        masks[pruning] = is_leaf
    return masks


def prune(tree, ccp_alpha, risk="impurity"):
    """New TreeArrays pruned at ``ccp_alpha`` (>= 0) with ``risk``."""
    if ccp_alpha <= 0.0:
        return tree
    steps = _weakest_links(tree, ccp_alpha, risk)
    try:
        while True:
            next(steps)
    except StopIteration as stop:
        is_leaf = stop.value
    if is_leaf is None:
        return tree
    pruned = tree.subset(np.arange(tree.node_count))
    pruned.make_leaves(np.flatnonzero(is_leaf & ~tree.is_leaf))
    return compact(pruned)
