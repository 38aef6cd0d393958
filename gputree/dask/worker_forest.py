"""Trees and forests whose rows stay on the workers: the driver runs the
one-machine fit's steps on node-sized data only, and the workers grow the
trees among themselves.

Every worker holds a :class:`gputree.dask.forest_rows.ForestRows` actor
with its rows (binned X, the targets, the weights, each tree's bootstrap
counts and statistics, the positions and the out-of-bag sums). y and the
weights are checked and summarised on the workers
(:mod:`gputree.dask.targets`: the classes and their counts, the largest
values); a call to the workers grows up to :data:`TREES_PER_CALL` trees
(one, with ``verbose``), each from its bootstrap drawn by global row index
and the tree's seeded generator, on statistics with the scales of every row,
grown together by peer growth (:mod:`gputree.dask.peer_growth`); only the
trees come back. The model is the one-machine model bit for bit, whatever
the partitioning.

With ``oob_score``, ``oob_decision_function_`` / ``oob_prediction_`` are
row-sized by scikit-learn's API: the workers keep the out-of-bag sums
during the fit, and at its end send their rows' mean values and targets to
the driver once, which sets those attributes and scores them as one
machine does (numpy's sums, so the score is one machine's bit for bit).
Without ``oob_score`` nothing row-sized reaches the driver.

Used by every Dask tree and forest: splits of the histograms, best or
random thresholds (``splitter="random"``: each worker draws its
features'), binary or ``multiway`` (ID3 / C4.5: the tree estimator's
grower, :func:`gputree.growth.multiway.grow_multiway`, runs on the
workers). ``criterion="absolute_error"`` is refused before any work is
sent (:meth:`WorkerResidentTrees._check_dask_params`): its exact split
search ranks the targets of every row of a node, which no node-sized
summary of the workers' rows gives, so it would need all of X in one
place.
"""
import numpy as np

from .._arrays import host_values
from .._progress import Progress
from ..estimators.tree_params import growth_params, tree_random_streams
from ..estimators.bagging import warn_no_oob
from ..growth.pruning import prune
from .forest_rows import ForestRows, targets_of
from .peer_growth import WorkerArray
from .targets import WorkerTargets
from .worker_boosting import WorkerRowsBackend

#: the error of a Dask tree or forest given ``criterion="absolute_error"``
ABSOLUTE_ERROR_REFUSED = (
    '{name} does not take criterion="absolute_error": its exact split search needs every '
    "row of a node in one place, so the driver would gather all of X. On Dask use "
    'criterion="squared_error" (histogram splits; the rows stay on the workers), or '
    'DaskGradientBoostingRegressor(loss="absolute_error") or loss="quantile" (leaves refit '
    "to exact weighted medians / quantiles on the workers); or gather the data and fit "
    'gputree.{local}(criterion="absolute_error") on one machine.')

#: the most trees one call to the workers grows (without ``verbose``): a
#: continued fit after a lost worker grows the trees of that call again
TREES_PER_CALL = 10


class WorkerResidentTrees:
    """Mixin of the Dask tree and forest estimators: their fit on
    :class:`ForestRows` actors (see the module docstring), the peer growth
    growing their trees."""

    def _check_dask_params(self, fit_params):
        """The Dask checks, with ``criterion="absolute_error"`` refused (see
        the module docstring), on the driver before any work is sent."""
        if getattr(self, "criterion", None) == "absolute_error":
            raise ValueError(ABSOLUTE_ERROR_REFUSED.format(name=type(self).__name__,
                                                          local=self._local_class.__name__))
        super()._check_dask_params(fit_params)

    def _fit_dask(self, X, y, sample_weight):
        self._check_params()
        classify = hasattr(self._local_class, "predict_proba")
        targets = WorkerTargets(self._dask_fit[0], y, sample_weight, classify,
                                poisson=self.criterion == "poisson", single=False)
        self._dask_fit = (*self._dask_fit, targets)
        if hasattr(self, "n_estimators"):
            return self._fit_forest(X, targets)
        return self._fit_tree(X, targets)

    def _targets_spec(self, targets):
        """What the workers make their targets from (:func:`targets_of`)."""
        if hasattr(targets, "classes"):
            return ("class", self.class_weight, self.criterion, hasattr(self, "n_estimators"),
                    (targets.classes, targets.class_counts))
        return ("regression", self._criteria[self.criterion])

    def _worker_rows(self, inputs_backend, data, targets):
        """The fit's ForestRows actors, holding X's partitions (those of
        ``inputs_backend``, the DistributedBackend that binned them) and the
        targets (data.X_binned becomes their WorkerArray "X"); the targets
        of no rows, with every row's classes, for the driver."""
        spec = self._targets_spec(targets)
        self._backend = backend = WorkerRowsBackend(inputs_backend.partitions, self.device,
                                                    data.X_binned, targets, actor=ForestRows)
        data.X_binned.release()
        data.X_binned = WorkerArray("X", data.X_binned.shape, data.X_binned.dtype)
        backend.call("set_targets", spec)
        return backend, targets_of(np.empty((0, targets.n_outputs)), spec)

    # ----------------------------------------------------------- a tree
    def _fit_tree(self, X, targets):
        """The one-machine tree fit (gputree.estimators.tree) on the workers."""
        grower = self._grower()       # checks the options of multiway=True first
        rng, seed = tree_random_streams(self.random_state)
        inputs = self._bin_training_data(X, seed, targets)
        n_samples, n_features = inputs.data.X_binned.shape
        backend, summary = self._worker_rows(inputs.backend, inputs.data, targets)
        growth = growth_params(self, n_samples, 1.0, n_features)
        trees, state = backend.call("grow_trees", [(0, rng.get_state())], None, n_samples, None,
                                    inputs.data, growth, self.min_weight_fraction_leaf,
                                    grower)[0]
        rng.set_state(state)        # the generator advanced as one machine's
        self._set_fitted(inputs, summary, growth, prune(trees[0], self.ccp_alpha,
                                                        self._ccp_risk()))
        self._backend = backend     # released with the fit

    # --------------------------------------------------------- a forest
    def _fit_forest(self, X, targets):
        """The one-machine forest fit (gputree.estimators.forest) on the
        workers."""
        data, warm, start, done = self._begin_fit(X, targets)
        if done:
            return
        backend, summary = self._worker_rows(self._backend, data, targets)
        self._describe_targets(summary, fitting=not warm)
        n_samples, n_features = data.X_binned.shape
        n_bootstrap = self._n_bootstrap(n_samples)
        if self.oob_score:
            backend.call("start_oob", self._value_shape, self._trees, self._seed, n_samples,
                         n_bootstrap)
        growth = growth_params(self, n_samples, 1.0, n_features)
        progress = Progress(self.n_estimators - start, self.verbose, type(self).__name__)
        per_call = 1 if self.verbose else TREES_PER_CALL
        try:
            while len(self._trees) < self.n_estimators:
                first = len(self._trees)
                count = min(per_call, self.n_estimators - first)
                self._grow_on_workers(first, count, data, growth, n_bootstrap)
                for _ in range(count):
                    progress.step()
        finally:
            progress.close()
        self._end_fit(n_samples, n_features, n_bootstrap)
        if self.oob_score:
            self._oob_from_workers(targets)

    def _grow_on_workers(self, first, count, data, growth, n_bootstrap):
        """Trees first .. first + count - 1, grown by the workers (one call)."""
        backend = self._backend
        specs = [(i, tree_random_streams(self._tree_seed(i))[0].get_state())
                 for i in range(first, first + count)]
        trees, _ = backend.call("grow_trees", specs, self._seed, backend.n_rows, n_bootstrap,
                                data, growth, self.min_weight_fraction_leaf)[0]
        self._trees.extend(trees)

    def _oob_from_workers(self, targets):
        """The OOB attributes (row-sized: see the module docstring) from the
        workers' rows, put back in global row order."""
        backend = self._backend
        answers = backend.call("oob_rows")
        if any(answer[2] for answer in answers):
            warn_no_oob()
        mean = _in_row_order([a[0] for a in answers], backend.ranges, backend.n_rows)
        coded = _in_row_order([a[1] for a in answers], backend.ranges, backend.n_rows)
        y = None
        if callable(self.oob_score):          # the metric takes y as given to fit
            parts = backend.partitions.gather(targets.y.parts)
            y = np.concatenate([host_values(p) for p in parts])
        self._set_oob(mean, _Coded(coded), y)


class _Coded:
    """The targets as the OOB score reads them: ``y`` (n, O)."""

    def __init__(self, y):
        self.y = y


def _in_row_order(parts, ranges, n_rows):
    """The workers' rows (each (n_w, ...), its ranges' rows in order) as one
    host array (n_rows, ...) in global row order."""
    out = np.empty((n_rows,) + parts[0].shape[1:], dtype=parts[0].dtype)
    for part, bounds in zip(parts, ranges):
        first = 0
        for start, stop in bounds:
            out[start:stop] = part[first:first + stop - start]
            first += stop - start
    return out
