"""Boosting whose rows stay on the workers: the driver runs the one-machine
boosting loop on node-sized data only, and the workers run each round among
themselves.

Every worker holds a :class:`gputree.dask.worker_rows.WorkerRows` actor with
its rows (binned X, targets, weights, raw scores, gradients, statistics,
positions). A round costs the driver at most one call per worker
(:meth:`WorkerRows.boost_rounds`: several rounds a call where nothing is
decided between them on the driver): the workers compute their gradients,
combine the largest magnitudes that fix the fixed-point scale and the int64
totals of their statistics among themselves, then grow each tree of the
round together: every worker runs the one-machine grower, the workers
exchanging each level's histograms (reduce-scatter by feature) and their
slices' best splits, so that each grows the same tree
(:mod:`gputree.dask.peer_growth`); leaf refits to quantiles bisect over the
workers' exchanged integer weights (:mod:`gputree.dask.selection`), Huber's
delta too, and its mean steps add the workers' int64 sums
(:mod:`gputree.dask.leaf_refits`). Each
adds the leaf values to its raw scores (with validation rows, to theirs as
well, whose loss comes in parts: :mod:`gputree.dask.worker_validation`) and
the first returns the trees. The calls go straight to the actors (no
scheduler round trip, no task per level, nothing waiting for the driver
within a round). Neither rows nor histograms reach the driver: y and the
weights are checked and summarised on the workers
(:mod:`gputree.dask.targets`), the baseline and every loss are order-free
sums in parts, and the model is the one-machine model bit for bit, whatever
the partitioning.

Used by the Dask boosting estimators for every configuration (both
criteria: Friedman's Newton leaves from the workers' int64 per-leaf sums,
:func:`gputree.dask.leaf_refits.friedman_leaves`; named losses and custom
objectives, whose callable each worker calls on its own rows: the
one-machine model for a row-wise objective), and (:class:`WorkerRowsBackend`)
by the trees and forests too (:mod:`gputree.dask.worker_forest`).
"""
import asyncio
import collections

import numpy as np

from .backend import DistributedBackend
from .partitions import WorkerLostError, _worker_errors
from .peer_growth import WorkerArray
from .worker_rows import WorkerRows, order_free_total

#: the random stream of boosting's rounds (gputree.estimators.boosting)
_ROUND_STREAM = 0

#: the most rounds one call to the workers runs (without early stopping or
#: verbose output): between rounds the workers then wait for nobody, and the
#: driver's call, its arguments and the trees' answer cost once per call
ROUNDS_PER_CALL = 100
#: seconds the driver waits for a surviving worker's completed rounds
_SURVIVOR_SECONDS = 10.0


class WorkerRowsBackend(DistributedBackend):
    """The :class:`WorkerRows` actors of a fit (``actor``: that class or a
    subclass), called all at once (:meth:`call`); the rounds run on the
    workers (:meth:`WorkerRows.boost_rounds`), a forest's trees too
    (:meth:`gputree.dask.forest_rows.ForestRows.grow_trees`)."""

    def __init__(self, partitions, device, X_binned, targets, evaluation=None, actor=WorkerRows):
        super().__init__(partitions, device)
        client = partitions.client
        groups = balanced_groups(partitions.sizes, partitions.workers,
                                 sorted(partitions.fit_workers))
        self.rows = [np.asarray(parts) for parts in groups.values()]
        offsets = partitions.offsets
        self.ranges = [np.stack([offsets[parts], offsets[parts + 1]], axis=1)
                       for parts in self.rows]
        weights = targets.weights.parts if targets.weights else None
        validation = _validation_groups(evaluation, list(groups))
        futures = [client.submit(actor, device, ranges,
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
        self.call("connect", self.call("listen"), per_worker=list(range(len(self.actors))))
        if targets.unit_offsets is not None:   # the pointwise values are per query (ranking)
            self.set_units(targets.unit_offsets, targets.unit_sizes)
        self.n_rows = partitions.n_rows
        self.n_validation = 0

    def set_rows(self, per_partition):
        """The training rows after a validation split: int64 rows left in
        each partition, numbered afresh in global order."""
        offsets = np.concatenate([[0], np.cumsum(per_partition)]).astype(np.int64)
        self.ranges = [np.stack([offsets[parts], offsets[parts + 1]], axis=1)
                       for parts in self.rows]
        self.call("set_ranges", per_worker=self.ranges)
        self.n_rows = int(offsets[-1])

    def set_units(self, offsets, sizes=None):
        """The units (queries) of a loss's pointwise values: int64 (p + 1,)
        each partition's first (numbered in global order) and the rows of
        each unit int64 (n_units,) (None after a validation split: the
        workers keep theirs); see :meth:`WorkerRows.set_units`."""
        self.call("set_units", int(offsets[-1]), per_worker=[
            (np.stack([offsets[parts], offsets[parts + 1]], axis=1),
             None if sizes is None else np.concatenate([sizes[offsets[p]:offsets[p + 1]]
                                                         for p in parts]))
            for parts in self.rows])

    def per_partition(self, answers):
        """int64 (p,) from the workers' answers, each int64 (its partitions,)."""
        values = np.zeros(len(self.partitions.parts), dtype=np.int64)
        for parts, answer in zip(self.rows, answers):
            values[parts] = answer
        return values

    # -------------------------------------------------------------- calls
    def call(self, method, *args, per_worker=None):
        """``method(*args)`` on every actor at once (``per_worker``: a list
        of extra first arguments, one per worker); their results, in worker
        order."""
        try:
            pending = [getattr(actor, method)(*((per_worker[i],) if per_worker else ()), *args)
                       for i, actor in enumerate(self.actors)]
            return self.partitions.client.sync(_first_failure, pending)
        except _worker_errors() as exc:
            self._abort()
            raise self.partitions.lost(exc) from exc
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

    def completed_rounds(self, first):
        """After a lost worker: the answers of the rounds that the
        ``boost_rounds`` call from round ``first`` completed, as the
        surviving worker that completed most of them holds them
        (:meth:`WorkerRows.completed_rounds`); [] where none answers. Each
        is asked on its actor thread, free once the failed call has ended
        (:meth:`_abort` released it)."""
        done = []
        for answer in [_answer(actor, "completed_rounds", first) for actor in self.actors]:
            if answer is not None and len(answer) > len(done):
                done = answer
        return done

    def release(self):
        """Drop the actors (their rows are freed on the workers)."""
        for future in getattr(self, "actor_futures", []):
            future.release()
        self.actors, self.actor_futures = [], []


def _answer(actor, method, *args):
    """``actor.method(*args)`` waited for (at most _SURVIVOR_SECONDS), or
    None where its worker cannot answer (lost)."""
    try:
        return getattr(actor, method)(*args).result(timeout=_SURVIVOR_SECONDS)
    except Exception:      # noqa: BLE001 - a lost worker cannot answer
        return None


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


class WorkerResidentBoosting:
    """Mixin of the Dask boosting estimators: the boosting loop over
    :class:`WorkerRows` actors (see the module docstring)."""

    def _fit_dask(self, X, y, sample_weight, eval_set=None):
        """The one-machine fit's steps (gputree.estimators.boosting) with
        the targets, weights and validation rows on the workers: checked
        there, their classes, counts and largest values combined here."""
        from ..data.validation import check_boosting_range_of
        from ..estimators.boosting import _AUTO_EARLY_STOPPING_ROWS
        from ..estimators.ensemble import training_data
        growth = self._growth_params()
        classify = self._is_classifier()
        targets = self._worker_targets(y, sample_weight)
        self._dask_fit = (*self._dask_fit, targets)
        warm = self._warm()
        if warm and self.n_estimators < self.n_iter_:
            raise ValueError(f"n_estimators={self.n_estimators} must be larger or equal to "
                             f"n_iter_={self.n_iter_} when warm_start==True.")
        if classify:
            self._encode_targets(targets.labels, fitting=not warm)  # classes_, their check
        magnitude = self._worker_gradient_magnitude(targets)
        data, _ = training_data(self, X, targets)
        evaluation = None if eval_set is None else self._worker_eval_parts(eval_set)
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

    def _worker_targets(self, y, sample_weight):
        """y and sample_weight cut to X's partitions on the workers, checked
        and summarised there (:class:`gputree.dask.targets.WorkerTargets`)."""
        from .targets import WorkerTargets
        return WorkerTargets(self._dask_fit[0], y, sample_weight, self._is_classifier(),
                             poisson=self.loss == "poisson")

    def _worker_eval_parts(self, eval_set):
        """(RowPartitions of the binned eval_set X, its WorkerTargets)."""
        from .worker_validation import eval_parts
        return eval_parts(self, eval_set)

    def _worker_gradient_magnitude(self, targets):
        """The one-machine ``_gradient_magnitude`` from the targets' summary."""
        if self._is_classifier():
            return self._gradient_magnitude(None)
        return self._gradient_magnitude(np.array([targets.largest_y]))

    def _worker_validation(self, targets, evaluation, early):
        """The validation rows on the workers (eval_set's, or the split of
        ``validation_fraction`` when stopping early); the training rows
        left."""
        from ..estimators.boosting import _SPLIT_STREAM
        from .worker_validation import hold_out
        backend = self._backend
        if evaluation is not None:
            backend.n_validation = evaluation[1].n_units
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
        score, self._round_validation = getattr(self, "_round_validation", None), None
        if score is not None:           # computed by the round just run
            return score
        from .worker_validation import validation_score
        return validation_score(backend.call, order_free_total, backend.n_validation,
                                self._loss)

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
        answers = backend.call("load", self._loss)
        if not self._loss.baseline_from_targets:
            return self._loss.init_raw(None, None)
        largest = np.max(answers, axis=0)
        if self._loss.refits_leaves:            # a weighted quantile of the targets
            from .selection import distributed_quantile
            return distributed_quantile(backend.call, "targets", 1, *self._loss.leaf_quantile)
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
        return tree, self._backend.to_host(positions)     # raw scores updated here

    def _boost(self, train, validation, growth, early):
        """The one-machine loop; where nothing is decided or shown between
        rounds (no early stopping, no verbose output), the workers run up to
        :data:`ROUNDS_PER_CALL` rounds a call (:meth:`_round`)."""
        self._rounds_ahead, self._lost_call = collections.deque(), None
        self._rounds_per_call = 1 if early or self.verbose else ROUNDS_PER_CALL
        self._survivors_rounds = not early
        try:
            super()._boost(train, validation, growth, early)
            if self._lost_call is not None:
                raise self._lost_call
        finally:
            del self._rounds_ahead, self._rounds_per_call, self._lost_call
            del self._survivors_rounds

    def _round(self, it, train, validation, growth, pool, held_row_bytes):
        """One round on the workers' rows (see the module docstring): the
        next of the rounds a call ran ahead, else a call for this round (and
        the rounds after it where :meth:`_boost` allows). A call that lost a
        worker still gives the rounds a surviving worker completed: they are
        recorded as these rounds, then the loss is raised (the fit continues
        from them, :mod:`gputree.dask.recovery`)."""
        backend = self._backend
        if not isinstance(backend, WorkerRowsBackend):
            return super()._round(it, train, validation, growth, pool, held_row_bytes)
        ahead = self._rounds_ahead
        if not ahead:
            if self._lost_call is not None:
                raise self._lost_call
            ahead.extend(self._call_rounds(it, train, growth))
        trees, score, self._round_validation = ahead.popleft()
        if score is not None:      # the training score of the raw scores the round started from
            self._scores["train"][-1] = self._loss.score_of_sums(score, self._weight_total())
        self._trees.extend(trees)

    def _call_rounds(self, it, train, growth):
        """The answers of the workers' rounds from ``it`` (one call); after a
        lost worker, those a survivor completed (the loss kept in
        ``_lost_call``), or the loss raised where there are none. Not when
        stopping early: a call runs one round there, and a stop decided on
        a survivor's round would be continued past by the next attempt."""
        backend, loss = self._backend, self._loss
        n_rounds = min(self._rounds_per_call, self.n_estimators - it)
        quantile = loss.leaf_quantile if loss.refits_leaves else None
        self._weight_total()     # the rounds' scores need it, a lost worker's survivor's too
        try:
            return backend.call(
                "boost_rounds", it, n_rounds, self._seed, _ROUND_STREAM, self.subsample,
                backend.n_rows, self.subsample >= 1 and train.unit_weights, self._groups,
                self._scores["train"][-1] is None, train.data, growth, self.colsample_bytree,
                self.learning_rate, backend.n_validation, quantile,
                self.criterion != "newton")[0]
        except WorkerLostError as exc:
            done = backend.completed_rounds(it) if self._survivors_rounds else []
            if not done:
                raise
            self._lost_call = exc
            return done

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
        return self._loss.score_of_sums(total, self._weight_total())

    def _release_fit(self):
        self._weights_sum = self._round_validation = None
        del self._weights_sum, self._round_validation
        super()._release_fit()

