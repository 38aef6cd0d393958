"""Leaf refits with the rows spread over workers: the leaf values of the
losses that refit leaves from quantiles (absolute error, quantile, Huber:
:class:`gputree.estimators.losses.LeafQuantileLoss`), the quantile a
round's gradients depend on (Huber's delta), and the Newton leaves of
Friedman's TreeBoost (``criterion="friedman_mse"``:
:mod:`gputree.estimators.treeboost`), as one machine finds them, bit for
bit.

The quantiles are found exactly across the workers
(:mod:`gputree.dask.selection`); the per-leaf int64 sums that complete a
value (Huber's mean clipped step) are every worker's on the scale of all
the rows' weights (the quantile's scale, known before summing), added up:
exact in any order.

``gather(method, *args)`` calls ``method`` of every shard
(:class:`gputree.dask.worker_rows.WorkerRows`) and returns their answers in
shard order.
"""
import numpy as np

from ..estimators.treeboost import newton_values_from_sums
from .selection import distributed_quantile, held_quantile, held_scale


def round_selection(gather, loss):
    """The ``loss.round_quantile`` of its ``round_values`` over every
    shard's rows of the round (host float: Huber's delta), or None for a
    loss without one."""
    if loss.round_quantile is None:
        return None
    return float(distributed_quantile(gather, "round", 1, loss.round_quantile, False)[0])


def leaf_values(gather, loss, n_nodes):
    """float64 (n_nodes,): the refit values of the nodes of the tree just
    grown (NaN where no row of positive weight), from the residuals of every
    shard's rows: ``loss.leaf_quantile`` of them per leaf, completed with
    the shards' summed ``leaf_sums`` where the loss has ``refit_sums``."""
    scale = held_scale(gather, "residuals")
    quantiles = held_quantile(gather, scale, n_nodes, *loss.leaf_quantile)
    sums = None
    if loss.refit_sums:
        sums = np.sum(gather("leaf_sums", quantiles, scale), axis=0, dtype=np.int64)
    return loss.leaf_values(quantiles, sums, scale)


def friedman_leaves(gather, tree, largest, n_total, growth, loss, start, stop):
    """tree.value := Friedman's Newton leaves (in place) of outputs
    start:stop from every shard's per-leaf int64 fixed-point sums of g and
    h (``newton_leaf_sums``), on the scale of ``largest`` float64 (K, 2),
    every shard's largest |g|, |h| per output, over ``n_total`` rows: the one-machine
    ``grouped_order_free_sum`` of each, added up exactly."""
    parts = gather("newton_leaf_sums", start, stop, largest[start:stop], n_total,
                   tree.node_count)
    totals = np.sum([part[0] for part in parts], axis=0, dtype=np.int64)
    sums = [totals[:, c].astype(np.float64) * np.ldexp(1.0, -shift)
            if shift is not None else np.zeros(tree.node_count)
            for c, shift in enumerate(parts[0][1])]
    newton_values_from_sums(tree, list(zip(sums[0::2], sums[1::2])), growth, loss)
