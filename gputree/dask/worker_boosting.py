"""Boosting whose rows stay on the workers: the driver runs the one-machine
grower and boosting loop on node-sized data only.

Every worker holds a :class:`gputree.dask.worker_rows.WorkerRows` actor with
its rows (binned X, targets, weights, raw scores, gradients, statistics,
positions). A round costs the driver two calls per worker before the first
tree (the gradients' largest magnitudes, then the fixed-point statistics
scaled from the workers' maximum, with their int64 totals), one call per
level (the previous level's splits and the plan of the histograms to build;
the workers build them, reduce-scatter them by feature among themselves
and scan their features, :mod:`gputree.dask.sliced_histograms`, and answer
with their best splits) and one per tree (its leaf values added to the raw
scores; with validation rows, to theirs as well, and their loss in parts:
:mod:`gputree.dask.worker_validation`). The calls go straight to the
actors (no scheduler round trip, no task per level). Neither rows nor
histograms reach the driver: y and the weights are checked and summarised
on the workers (:mod:`gputree.dask.targets`), the baseline and every loss
are order-free sums in parts, and the model is the one-machine model bit
for bit, whatever the partitioning.

Used by the Dask boosting estimators for the Newton criterion with a named
loss; the other configurations (``criterion="friedman_mse"``, custom
objectives, ``extra_trees=True``) fit through :class:`gputree.dask.backend.DistributedBackend`.
"""
import asyncio
import math

import numpy as np

from .backend import DistributedBackend
from .partitions import _lost_error, _worker_errors
from .sliced_histograms import merge_splits
from .worker_rows import WorkerRows

#: the random stream of boosting's rounds (gputree.estimators.boosting)
_ROUND_STREAM = 0


class WorkerArray:
    """A row-sized array held by every worker's actor under ``name`` ("X",
    "columns", "stats", "positions"): only its shape and dtype here."""

    def __init__(self, name, shape, dtype):
        self.name, self.shape, self.dtype = name, tuple(shape), np.dtype(dtype)

    @property
    def ndim(self):
        return len(self.shape)


class WorkerHistograms:
    """The grower's histogram pool (n_rows, F, n_bins, C) int64, held by the
    workers, each the rows of its slice of the features
    (:mod:`gputree.dask.sliced_histograms`): only its shape here. Its views
    are the pool itself, and copying into it is the workers' (their pools
    keep their rows when they grow)."""

    def __init__(self, shape):
        self.shape, self.dtype = tuple(shape), np.dtype(np.int64)

    def __getitem__(self, key):
        return self

    def __setitem__(self, key, value):
        pass


class WorkerRowsBackend(DistributedBackend):
    """The distributed backend over :class:`WorkerRows` actors: the grower's
    row-level primitives are actor calls, the histograms are summed and
    scanned among the workers, the rest of its node-level work runs here.

    A level is one actor call per worker (:meth:`find_best_splits`): the
    grower's build, partition and subtraction requests are recorded and
    sent with the scan's."""

    #: the workers overwrite the pool rows they build
    overwrites_built_rows = True

    def __init__(self, partitions, device, X_binned, targets, evaluation=None):
        super().__init__(partitions, device)
        self._moves = None     # a tree's last splits, sent with its leaf values
        client = partitions.client
        groups = balanced_groups(partitions.sizes, partitions.workers,
                                 sorted(partitions.fit_workers))
        self.rows = [np.asarray(parts) for parts in groups.values()]
        offsets = partitions.offsets
        self.ranges = [np.stack([offsets[parts], offsets[parts + 1]], axis=1)
                       for parts in self.rows]
        weights = targets.weights.parts if targets.weights else None
        validation = _validation_groups(evaluation, list(groups))
        futures = [client.submit(WorkerRows, device, ranges,
                                 [X_binned.futures[p] for p in parts],
                                 [targets.y.parts[p] for p in parts],
                                 None if weights is None else [weights[p] for p in parts],
                                 validation[worker], actor=True,
                                 workers=[worker] if worker else None,
                                 allow_other_workers=True, pure=False)
                   for worker, parts, ranges in zip(groups, self.rows, self.ranges)]
        partitions.wait(futures)
        self.actor_futures = futures
        self.actors = [future.result() for future in futures]
        self.call("connect", self.actors, per_worker=list(range(len(self.actors))))
        self.n_rows = partitions.n_rows
        self.n_validation = 0
        self._zero = False
        self._pending, self._derive, self._tag = None, None, 0

    def set_rows(self, per_partition):
        """The training rows after a validation split: int64 rows left in
        each partition, numbered afresh in global order."""
        offsets = np.concatenate([[0], np.cumsum(per_partition)]).astype(np.int64)
        self.ranges = [np.stack([offsets[parts], offsets[parts + 1]], axis=1)
                       for parts in self.rows]
        self.call("set_ranges", per_worker=self.ranges)
        self.n_rows = int(offsets[-1])

    # -------------------------------------------------------------- calls
    def call(self, method, *args, per_worker=None):
        """``method(*args)`` on every actor at once (``per_worker``: a list
        of extra first arguments, one per worker); their results, in worker
        order. A tree's last splits still held here go first (as their own
        call, unless ``method`` is "add_values", which carries them)."""
        if self._moves is not None and method != "add_values":
            self.call("move", *self.take_moves())
        try:
            pending = [getattr(actor, method)(*((per_worker[i],) if per_worker else ()), *args)
                       for i, actor in enumerate(self.actors)]
            return self.partitions.client.sync(_first_failure, pending)
        except _worker_errors() as exc:
            self._abort()
            raise _lost_error(f"{type(exc).__name__}: {exc}") from exc
        except Exception:
            self._abort()
            self.partitions.check_workers()
            raise

    def _abort(self):
        """Release the workers that wait for a peer's histograms (one that
        failed or was lost), as far as they can be reached."""
        for actor in self.actors:
            try:
                actor.abort(separate_thread=False).result(timeout=10)
            except Exception:      # noqa: BLE001 - a lost worker cannot be told
                pass

    # ------------------------------------------------- row-level: actors
    def row_zeros(self, n_rows, dtype, reuse=None):
        self._zero = True      # zeroed by the tree's first call
        return WorkerArray("positions", (n_rows,), dtype)

    def zeros(self, shape, dtype):
        """The histogram pool (the fit's only 4-d buffer) on the workers."""
        if len(shape) == 4:
            return WorkerHistograms(shape)
        return super().zeros(shape, dtype)

    def build_histograms(self, X_binned, stats, positions, level_start, node_to_build, n_build,
                         n_bins, out=None):
        return self._record(X_binned, None, level_start, node_to_build, n_bins, out)

    def move_and_build_histograms(self, X_binned, positions, moves, stats, level_start,
                                  node_to_build, n_build, n_bins, out):
        return self._record(X_binned, self._host_moves(moves), level_start, node_to_build,
                            n_bins, out)

    def _record(self, X_binned, moves, level_start, node_to_build, n_bins, out):
        """The level's build into the workers' pool ``out``, kept for
        :meth:`find_best_splits`."""
        if not isinstance(out, WorkerHistograms):
            raise TypeError("the workers build histograms into their pool only")
        self._pending = (X_binned.name, moves, int(level_start),
                         np.asarray(node_to_build), int(n_bins))
        return out

    def subtract_histograms(self, parent_hist, parent_rows, hist, built_rows, derived_rows):
        if not isinstance(hist, WorkerHistograms):
            return super().subtract_histograms(parent_hist, parent_rows, hist, built_rows,
                                               derived_rows)
        # the grower derives in place: the parent's row becomes the sibling's
        self._derive = (np.asarray(parent_rows), np.asarray(built_rows))

    def find_best_splits(self, hist, n_bins_non_missing, is_categorical, feature_allowed,
                         missing_bin, layout, inv, params, split_bin=None):
        """The level's recorded work and the split scan on the workers, each
        over its features; the best of their splits (see
        :mod:`gputree.dask.sliced_histograms`)."""
        if not isinstance(hist, WorkerHistograms):
            return super().find_best_splits(hist, n_bins_non_missing, is_categorical,
                                            feature_allowed, missing_bin, layout, inv, params,
                                            split_bin=split_bin)
        if split_bin is not None:
            raise NotImplementedError("random thresholds need the whole histograms: "
                                      "boosting with extra_trees fits on the driver path")
        x_name, moves, level_start, node_to_build, n_bins = self._pending
        none = np.empty(0, dtype=node_to_build.dtype)
        derive = self._derive or (none, none)
        self._pending, self._derive = None, None
        zero, self._zero = self._zero, False
        self._tag += 1
        scan = (int(feature_allowed.shape[0]), np.asarray(n_bins_non_missing),
                np.asarray(is_categorical), np.asarray(feature_allowed), missing_bin,
                np.asarray(layout), np.asarray(inv), np.asarray(params))
        return merge_splits(self.call("level_splits", self._tag, x_name, zero, moves,
                                      level_start, node_to_build, n_bins, derive, scan))

    def update_positions(self, X_binned, positions, level_start, split_feature, split_sets,
                         left_child):
        """The tree's last splits: held until its leaf values go to the
        workers (:meth:`take_moves`), so that one call does both."""
        zero, self._zero = self._zero, False
        self._moves = (X_binned.name, zero,
                       self._host_moves((level_start, split_feature, split_sets, left_child)))

    def take_moves(self):
        """The held splits as :meth:`WorkerRows.move`'s arguments (x_name,
        zero, moves), or (None, False, None); no longer held."""
        moves, self._moves = self._moves or (None, False, None), None
        return moves

    @staticmethod
    def _host_moves(moves):
        start, feature, sets, left = moves
        return (int(start), np.asarray(feature), sets.map(np.asarray), np.asarray(left))

    def take_columns(self, X_binned, columns):
        self.call("take_columns", np.asarray(columns))
        return WorkerArray("columns", (X_binned.shape[0], len(columns)), X_binned.dtype)

    def release(self):
        """Drop the actors (their rows are freed on the workers)."""
        super().release()
        for future in getattr(self, "actor_futures", []):
            future.release()
        self.actors, self.actor_futures = [], []


async def _first_failure(futures):
    """The actor futures' results, in order; the first failure is raised as
    soon as it comes (the other workers may wait for the failed one)."""
    async def result(future):
        return await future
    tasks = [asyncio.ensure_future(result(future)) for future in futures]
    await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    for task in tasks:
        if task.done() and task.exception() is not None:
            for other in tasks:
                other.cancel()
            raise task.exception()
    return [task.result() for task in tasks]


def _validation_groups(evaluation, workers):
    """dict worker -> the (binned X, y, weights) parts of the eval_set rows
    it holds (lists of futures; weights None without), or None."""
    if evaluation is None:
        return {worker: None for worker in workers}
    partitions, targets = evaluation
    groups = balanced_groups(partitions.sizes, partitions.workers, workers)
    weights = targets.weights.parts if targets.weights else None
    return {worker: ([partitions.parts[p] for p in groups.get(worker, [])],
                     [targets.y.parts[p] for p in groups.get(worker, [])],
                     None if weights is None else [weights[p] for p in groups.get(worker, [])])
            for worker in workers}


def balanced_groups(sizes, holders, workers):
    """dict worker -> its partitions (ascending) such that every worker gets
    about as many rows: a partition stays with its holder while that holder
    has at most its share, the others go to the worker with the fewest rows
    (binned partitions are small: one byte a feature a row). sizes: int
    (p,) rows; holders: each partition's worker (or None); workers: the
    cluster's."""
    workers = list(workers) or [None]
    share = float(np.sum(sizes)) / len(workers)
    load = {worker: 0 for worker in workers}
    groups = {worker: [] for worker in workers}
    rest = []
    for p in np.argsort(-np.asarray(sizes), kind="stable"):
        holder = holders[p]
        if holder in load and load[holder] + sizes[p] <= share:
            load[holder] += int(sizes[p])
            groups[holder].append(int(p))
        else:
            rest.append(int(p))
    for p in rest:
        worker = min(workers, key=lambda w: load[w])
        load[worker] += int(sizes[p])
        groups[worker].append(p)
    return {worker: sorted(parts) for worker, parts in groups.items() if parts}


def order_free_total(parts):
    """The order-free sum (host float) from the workers' parts: (int, shift)
    each, or (float, None) where the largest magnitude was 0 or not finite."""
    if any(shift is None for _, shift in parts):
        return float(sum(value for value, _ in parts))
    return math.ldexp(float(sum(int(value) for value, _ in parts)), -parts[0][1])


class WorkerResidentBoosting:
    """Mixin of the Dask boosting estimators: the boosting loop over
    :class:`WorkerRows` actors (see the module docstring); the driver path
    of :class:`gputree.dask.backend.DistributedBackend` otherwise."""

    def _rows_on_workers(self):
        """The worker path serves the Newton criterion with a named loss and
        best splits (``extra_trees`` draws thresholds from the whole
        histograms, which the workers hold in feature slices)."""
        return (self.criterion == "newton" and not callable(self.loss)
                and not self.extra_trees)

    def _fit_dask(self, X, y, sample_weight, eval_set=None):
        """The one-machine fit's steps (gputree.estimators.boosting) with
        the targets, weights and validation rows on the workers: checked
        there, their classes, counts and largest values combined here."""
        if not self._rows_on_workers():
            return super()._fit_dask(X, y, sample_weight, eval_set=eval_set)
        from ..data.validation import check_boosting_range_of
        from ..estimators.boosting import _AUTO_EARLY_STOPPING_ROWS
        from ..estimators.ensemble import training_data
        from .targets import WorkerTargets
        from .worker_validation import eval_parts
        growth = self._growth_params()
        classify = self._is_classifier()
        targets = WorkerTargets(self._dask_fit[0], y, sample_weight, classify,
                                poisson=self.loss == "poisson")
        self._dask_fit = (*self._dask_fit, targets)
        warm = self._warm()
        if warm and self.n_estimators < self.n_iter_:
            raise ValueError(f"n_estimators={self.n_estimators} must be larger or equal to "
                             f"n_iter_={self.n_iter_} when warm_start==True.")
        if classify:
            self._encode_targets(targets.labels, fitting=not warm)  # classes_, their check
            magnitude = self._gradient_magnitude(None)
        else:
            magnitude = self._gradient_magnitude(np.array([targets.largest_y]))
        data, _ = training_data(self, X, targets)
        evaluation = None if eval_set is None else eval_parts(self, eval_set)
        if evaluation is not None:
            self._dask_fit = (*self._dask_fit, *evaluation)
        self._backend = backend = WorkerRowsBackend(self._backend.partitions, self.device,
                                                    data.X_binned, targets, evaluation)
        data.X_binned.release()
        largest, unit = self._worker_weights(targets, evaluation)
        check_boosting_range_of(magnitude, largest, targets.n_rows,
                                "sample_weight" if classify else "y or sample_weight")
        early = self.early_stopping is True or (self.early_stopping == "auto" and (
            eval_set is not None or targets.n_rows > _AUTO_EARLY_STOPPING_ROWS))
        n_train = self._worker_validation(targets, evaluation, early)
        data.X_binned = WorkerArray("X", (n_train, data.X_binned.shape[1]), data.X_binned.dtype)
        train = (data, None, None)
        if warm:
            backend.call("load", self._loss)
        else:
            self._start(train)
        growth.constraints = self._constraints(data, self._loss.n_outputs)
        rows = self._make_rows(*train)
        rows._unit = unit
        validation = None
        if backend.n_validation:
            from ..estimators.boosting import _Rows
            validation = _Rows(None, None, None, None, None, None)
        self._boost(rows, validation, growth, early)

    def _worker_validation(self, targets, evaluation, early):
        """The validation rows on the workers (eval_set's, or the split of
        ``validation_fraction`` when stopping early); the training rows
        left."""
        from ..estimators.boosting import _SPLIT_STREAM
        from .worker_validation import hold_out
        backend = self._backend
        if evaluation is not None:
            backend.n_validation = evaluation[1].n_rows
        elif early and self.validation_fraction is not None:
            counts = targets.counts if self._is_classifier() else None
            n_train, per_partition = hold_out(backend, self._seed, _SPLIT_STREAM,
                                              self.validation_fraction, counts, targets.n_rows)
            backend.set_rows(per_partition)
            backend.n_validation = targets.n_rows - n_train
        return backend.n_rows

    def _validation_score(self, rows):
        backend = self._backend
        if not isinstance(backend, WorkerRowsBackend):
            return super()._validation_score(rows)
        from .worker_validation import validation_score
        return validation_score(backend, order_free_total, backend.n_validation)

    def _worker_weights(self, targets, evaluation):
        """The weights times the classes' factors on the workers (and those
        of the eval_set rows): (largest training weight, whether all are
        1)."""
        from ..estimators.targets import class_factors
        from .worker_validation import eval_class_counts
        classes = getattr(self, "classes_", None) if self._is_classifier() else None
        factors = None
        if classes is not None and self.class_weight is not None:
            factors = class_factors(self.class_weight, [targets.counts], [classes],
                                    targets.n_rows)[0]
        answers = self._backend.call("set_weights", classes, factors)
        if evaluation is not None:
            factors = None
            if classes is not None and self.class_weight is not None:
                counts = eval_class_counts(self, evaluation[1])
                factors = class_factors(self.class_weight, [counts], [classes],
                                        evaluation[1].n_rows)[0]
            self._backend.call("set_validation_weights", classes, factors)
        return max(a[0] for a in answers), all(a[1] for a in answers)

    def _initial_raw(self, train):
        """The one-machine baseline from the workers' order-free parts of
        the weighted mean of the targets."""
        backend = self._backend
        if not isinstance(backend, WorkerRowsBackend):
            return super()._initial_raw(train)
        largest = np.max(backend.call("load", self._loss), axis=0)
        if self._loss.refits_leaves:            # a weighted quantile of the targets
            return self._worker_quantile(False, 1)
        parts = backend.call("load", self._loss, largest, backend.n_rows)
        sums = [order_free_total([part[k] for part in parts]) for k in range(largest.size)]
        return self._loss.raw_from_average(np.asarray(sums[1:]) / sums[0])

    def _make_rows(self, data, y, weight, lean=False):
        backend = self._backend
        if not isinstance(backend, WorkerRowsBackend):
            return super()._make_rows(data, y, weight, lean)
        from ..estimators.boosting import _Rows
        backend.call("start_scores", np.asarray(self._baseline, dtype=np.float64),
                     self._trees, self._tree_columns())
        return _Rows(data, None, None, None, None, None)

    def _held_row_bytes(self, train, validation):
        if isinstance(self._backend, WorkerRowsBackend):
            return 0
        return super()._held_row_bytes(train, validation)

    def _grow(self, *args):
        tree, positions = super()._grow(*args)
        if isinstance(self._backend, WorkerRowsBackend):
            return tree, positions
        return tree, self._backend.to_host(positions)     # raw scores updated here

    def _round(self, it, train, validation, growth, pool, held_row_bytes):
        """One round on the workers' rows (see the module docstring)."""
        backend = self._backend
        if not isinstance(backend, WorkerRowsBackend):
            return super()._round(it, train, validation, growth, pool, held_row_bytes)
        from ..criteria import Statistics
        from ..estimators.ensemble import tree_rng
        n = backend.n_rows
        unit = self.subsample >= 1 and train.unit_weights
        rng = tree_rng(self._seed, it, _ROUND_STREAM)
        answers = backend.call("gradients", self._seed, it, _ROUND_STREAM, self.subsample, n,
                               unit)
        if self.subsample < 1:
            rng.set_state(answers[0][0])     # after the row draw, as on one machine
        largest = np.max([answer[1] for answer in answers], axis=0)   # (K, 2)
        score_pending = self._scores["train"][-1] is None
        score_largest = float(np.max([answer[2] for answer in answers]))
        for group, (start, stop) in enumerate(self._groups):
            with_score = score_pending and group == 0
            parts = backend.call("statistics", start, stop, largest[start:stop].ravel(), n,
                                 score_largest if with_score else None)
            totals = np.sum([part[0] for part in parts], axis=0)
            if with_score:
                self._scores["train"][-1] = (-order_free_total([p[1] for p in parts])
                                             / self._weight_total())
            stats = Statistics(WorkerArray("stats", (n, totals.shape[1]), np.int64),
                               parts[0][2], parts[0][3], 1, totals, int(totals[0, -1]) == n)
            tree, _ = self._grow(train.data, stats, growth, rng, pool, held_row_bytes)
            moves = backend.take_moves()
            if self._loss.refits_leaves:
                from ..estimators.losses import _set_leaves
                _set_leaves(tree, self._worker_quantile(True, tree.node_count, moves))
                moves = (None, False, None)
            tree.value *= self.learning_rate
            backend.call("add_values", np.ascontiguousarray(tree.value[:, :, 0]), start,
                         tree if backend.n_validation else None, *moves)
            self._trees.append(tree)

    def _worker_quantile(self, residuals, n_groups, moves=(None, False, None)):
        """float64 (n_groups,): the loss's weighted quantile (the median
        averaged at an exact half for absolute error, ``alpha`` for
        quantile) of the workers' targets, or of the residuals per node of
        the tree just grown (``moves``: its last splits), exactly as one
        machine (:mod:`gputree.dask.selection`)."""
        from .selection import grouped_quantile
        backend = self._backend
        summaries = backend.call("quantile_rows", residuals, *moves)
        n_kept = sum(s[1] for s in summaries)
        if n_kept == 0:
            return np.full(n_groups, np.nan)
        largest = max(s[0] for s in summaries)
        totals = np.sum(backend.call("quantile_scale", largest, n_kept, n_groups), axis=0)
        q = getattr(self._loss, "alpha", 0.5)
        return grouped_quantile(lambda pivots: np.sum(backend.call("quantile_ask", pivots),
                                                      axis=0),
                                totals, q, average=self._loss.name == "absolute_error")

    def _weight_total(self):
        """Order-free sum of the training weights (computed once a fit)."""
        if getattr(self, "_weights_sum", None) is None:
            backend = self._backend
            largest = float(np.max(backend.call("weight_parts")))
            self._weights_sum = order_free_total(backend.call("weight_parts", largest,
                                                              backend.n_rows))
        return self._weights_sum

    def _train_score(self, train):
        backend = self._backend
        if not isinstance(backend, WorkerRowsBackend):
            return super()._train_score(train)
        largest = float(np.max(backend.call("score_largest")))
        total = order_free_total(backend.call("score_part", largest, backend.n_rows))
        # loss.score divides by the order-free weight sum (n when every weight is 1)
        return -total / self._weight_total()

    def _release_fit(self):
        self._weights_sum = None
        del self._weights_sum
        super()._release_fit()

