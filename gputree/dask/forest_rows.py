"""The rows one worker owns during a tree or forest fit, as a distributed
Actor: a :class:`gputree.dask.worker_rows.WorkerRows` (binned X, the
targets, the weights, the statistics and positions of the tree being grown)
that also builds each tree's statistics and keeps the out-of-bag sums.

Each tree's weights are the one-machine ones for the rows the worker holds:
the sample weights times the bootstrap counts, drawn with the forest's
seeded generator over the global row indices
(:func:`gputree.estimators.forest.bootstrap_counts` with the worker's
``ranges``), times the class weights (their factors from every row's class
counts; ``"balanced_subsample"``'s from every worker's in-bag class draws,
whole numbers added exactly). The statistics take the fixed-point scales of
every row (:func:`gputree.criteria.combined_scales` of the workers'
:func:`gputree.criteria.statistics_scales`), so each worker holds the very
integers one machine holds for its rows; the workers then grow the tree
together (:mod:`gputree.dask.peer_growth`) and add its leaf values to their
out-of-bag rows' sums, which never leave the worker until the fit's end
(:meth:`ForestRows.oob_rows`).
"""
from dataclasses import replace

import numpy as np

from .._arrays import to_host
from ..criteria import Statistics, combined_scales, statistics_scales
from ..estimators.ensemble import device_leaves, stacked_values
from ..estimators.bagging import OutOfBag, bootstrap_counts
from ..estimators.targets import ClassTargets, RegressionTargets
from ..growth.grower import grow
from ..growth.histogram_pool import HistogramPool
from .peer_growth import PeerBackend, WorkerArray
from .worker_rows import WorkerRows, order_free_total


def targets_of(y, spec):
    """The one-machine targets object of the rows y ((n,) or (n, O), host)
    from ``spec``: ("class", class_weight, criterion, per_tree, (classes,
    counts) of every row) or ("regression", criterion): codes, class
    factors and checks of the whole (:mod:`gputree.estimators.targets`)."""
    if spec[0] == "class":
        _, class_weight, criterion, per_tree, whole = spec
        return ClassTargets(y, class_weight, criterion, per_tree, whole=whole)
    return RegressionTargets(y, spec[1], part=True)


class ForestRows(WorkerRows):
    """One worker's rows of a tree or forest fit (see the module docstring;
    created as a :class:`WorkerRows`)."""

    def set_targets(self, spec):
        """The targets of the rows (:func:`targets_of`)."""
        self._use_threads()
        self.targets = targets_of(self.labels, spec)
        self.labels, self.oob = None, None

    def start_oob(self, value_shape, trees, seed, n_total, n_bootstrap):
        """Out-of-bag sums (the rows' (n, *value_shape) and counts) started
        with those of the kept ``trees`` (a warm start's or a continued
        fit's: their bootstraps drawn again from ``seed``)."""
        backend = self._use_threads()
        self.oob = OutOfBag(backend, (self.n_rows,) + tuple(value_shape))
        if trees:
            leaves = device_leaves(backend, self.X["X"], list(trees))
            values = stacked_values(backend, list(trees))
            for i in range(len(trees)):
                counts = bootstrap_counts(seed, i, n_total, n_bootstrap, self.ranges)
                self.oob.add(values, leaves[:, i], counts == 0)

    def grow_trees(self, specs, seed, n_total, n_bootstrap, data, growth, min_weight_fraction,
                   grower=grow):
        """Grow the trees ``specs`` [(index, the state of its RandomState)]
        with the peers (each worker its own generator: in a cluster of
        threads the actors would share one object):
        tree i's weights from its bootstrap (``seed`` None: no bootstrap
        counts, a single tree's weights), its statistics on the whole's
        scales, ``growth`` with min_weight_leaf ``min_weight_fraction``
        times the order-free sum of every row's weights (a single tree's:
        of the sample weights, as one machine's), its leaves added
        to the out-of-bag sums where kept; ``grower`` the function that grows
        a tree (:func:`gputree.growth.grower.grow`, or a single tree's
        :func:`gputree.growth.multiway.grow_multiway`). Returns, on the first worker,
        (the trees, the last generator's state); None on the others."""
        trees, rng = [], None
        for i, state in specs:
            rng = np.random.RandomState()
            rng.set_state(state)
            counts = (None if seed is None else
                      bootstrap_counts(seed, i, n_total, n_bootstrap, self.ranges))
            stats, growth_i = self._tree_statistics(counts, n_total, growth,
                                                    min_weight_fraction)
            if self.grower is None:
                self.grower = PeerBackend(self, self.device)
                self.tree_pool = HistogramPool(self.grower)
            tree, _ = grower(self.grower, data, stats, growth_i, rng, self.tree_pool)
            self.grower.finish("X")
            if self.oob is not None:
                self.oob.add(self.backend.asarray(tree.value), self.positions, counts == 0)
            trees.append(tree)
        self.sliced.settle()
        return (trees, rng.get_state()) if self.sliced.index == 0 else None

    def _tree_statistics(self, counts, n_total, growth, min_weight_fraction):
        """(Statistics of every row, the statistics as WorkerArray "stats"
        with their int64 totals; the tree's GrowthParams) of the weights
        ``counts`` times the sample and class weights; this worker's held
        as ``self.stats``."""
        backend = self._use_threads()
        targets = self.targets
        weight = self.w if self.w is not None or counts is not None else np.ones(self.n_rows)
        bags = None
        if getattr(targets, "per_bootstrap", False):
            parts = self._share(targets.in_bag(counts))
            bags = (sum(part[0] for part in parts),
                    [np.sum([part[1][o] for part in parts], axis=0)
                     for o in range(len(parts[0][1]))])
        w = targets.weights(None if weight is None else to_host(weight), counts, bags)
        scales = combined_scales(self._share(statistics_scales(targets.y, w, targets.criterion)))
        self.stats = stats = targets.statistics(w, scales)
        stats.stats = backend.asarray(stats.stats)
        totals = np.sum(self._share(backend.to_host(stats.stats.sum(axis=0))), axis=0)
        if min_weight_fraction:
            # a forest's tree: of its weights; a single tree: of the sample weights
            of = w if counts is not None else to_host(weight)
            largest = float(np.max(self._share(self._largest(of))))
            total = order_free_total(self._share(self._summable(of, largest, n_total)))
            growth = replace(growth, min_weight_leaf=min_weight_fraction * total)
        whole = Statistics(WorkerArray("stats", (n_total, totals.shape[0]), np.int64),
                           stats.inv_scale, stats.layout, stats.n_classes,
                           totals.reshape(1, -1).astype(np.int64))
        return whole, growth

    def oob_rows(self):
        """The rows' out-of-bag mean leaf values host float64 (n, *value_shape),
        their targets as the one-machine OOB score reads them (class codes
        int32 (n, O) or float64 (n, O)), and whether some row was in every
        bag."""
        return self.oob.values(), self.targets.y, self.oob.missing()
