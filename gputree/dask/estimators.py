"""Estimators for Dask collections: the one-machine estimators fitted through
the distributed backend, so that the model is the one-machine model, bit for
bit, whatever the partitioning.

Each ``DaskX`` subclasses ``X`` and takes X's parameters plus ``client`` (a
``distributed.Client``; None: the current one); ``DaskGradientBoostingRanker``
is made the same way in :mod:`gputree.dask.ranking` (its queries on the
workers). ``fit`` takes a 2-D dask
array or a dask DataFrame (pandas ``category`` columns with known
categories), y and sample_weight as dask or host vectors of one entry per
row. X is encoded, binned and kept by the workers.

What stays on the driver: nothing row-sized. Boosting
(both criteria, every named loss and custom objectives) keeps every
row-sized array on the workers, y and the weights included
(:mod:`gputree.dask.worker_boosting`), and stops early on validation rows
held there (``eval_set`` as Dask collections, or ``validation_fraction``;
``scoring="loss"``). A custom objective (``loss=callable``) is called by
each worker on its own rows (y_true and raw of the rows it holds), as
XGBoost's and LightGBM's Dask estimators call theirs: the model is the
one-machine model bit for bit when the objective is row-wise (each row's
grad and hess depend only on its own y and raw score, as boosting
objectives do); a callable that is not (one normalising by the mean of the
rows it gets, say) sees each worker's rows and gives a model that depends
on the partitioning. Trees and forests of best splits keep theirs there
too, bootstrap counts and out-of-bag sums included, ``multiway`` trees
as well (:mod:`gputree.dask.worker_forest`); only a forest's row-sized OOB
attributes (``oob_score``) come to the driver, once, at the fit's end.
``to_local()`` gives the
ordinary fitted estimator; ``predict``-like methods on a Dask collection
predict partition by partition on the workers and return a Dask collection
(on in-memory data they predict on the driver, as the ordinary estimator).

``warm_start=True`` continues the fitted trees: the
workers recompute boosting's raw scores, or a forest's out-of-bag sums, from
them on their rows.

A worker lost during a fit: the fit continues on the workers left, to the
same model (:mod:`gputree.dask.recovery`), or raises
:class:`gputree.dask.WorkerLostError` and leaves the estimator as it was.

Not supported on Dask (a clear error, before any work is sent):
``criterion="absolute_error"`` trees and forests (their exact split search
needs a node's rows in one place: :mod:`gputree.dask.worker_forest`),
another ``scoring`` or an ``eval_metric`` when validating (boosting's
defaults turn early stopping off), and ``missing_strategy="surrogate"``.
The absolute-error, quantile and huber losses refit their leaves from
weighted quantiles found exactly across the workers, Huber's delta too, and
Huber's mean steps from the workers' int64 fixed-point sums
(:mod:`gputree.dask.leaf_refits`), as ``criterion="friedman_mse"`` sets its
Newton leaves.
"""
import inspect

import numpy as np

from ..data.dataset import Dataset
from ..estimators import (DecisionTreeClassifier, DecisionTreeRegressor,
                          GradientBoostingClassifier, GradientBoostingRegressor,
                          RandomForestClassifier, RandomForestRegressor)
from .partition_prediction import model_backend, predict_frame, predict_part
from .recovery import fit_recovering, keep_bins, kept_bins
from .worker_boosting import WorkerResidentBoosting
from .worker_forest import WorkerResidentTrees
from .inputs import (bin_partitions, binned_with, encoded_partitions, fit_encoder,
                     is_dask_collection, is_dask_frame, row_blocks)


def _client(client):
    if client is not None:
        return client
    from distributed import get_client
    try:
        return get_client()
    except ValueError as exc:
        raise ValueError("No Dask client: pass client=distributed.Client(...) or create one "
                         "before fitting.") from exc


class _DaskEstimator:
    """fit / to_local / predict on Dask collections, shared by every DaskX."""

    _local_class = None

    def fit(self, X, y, sample_weight=None, **fit_params):
        """Fit on a dask collection X (n_samples, n_features); y and
        sample_weight (n_samples,) dask or host vectors."""
        self._check_dask_params(fit_params)
        if isinstance(X, Dataset):
            raise TypeError(f"{type(self).__name__} fits Dask collections; fit a gputree.Dataset "
                            f"with the ordinary {self._local_class.__name__}.")
        client = _client(self.client)
        encoder = (self._encoder if self._warm() else
                   fit_encoder(X, self.categorical_features))

        def attempt():
            """One fit from the collections (again after a lost worker)."""
            self._dask_fit = (encoded_partitions(client, X, encoder, self.device), encoder)
            try:
                self._fit_dask(X, y, sample_weight, **fit_params)
            finally:
                self._release_fit()

        # a lost worker: continued on the others; a failed fit leaves no partial model
        fit_recovering(self, client, (X, y, sample_weight, fit_params), attempt)
        self._backend = model_backend(self.device)
        return self

    def _bin_training_data(self, X, seed, targets):
        """TrainingInputs of the fit's partitions (:func:`bin_partitions`;
        ``targets``: the fit's WorkerTargets)."""
        partitions, encoder = self._dask_fit[:2]
        inputs = bin_partitions(partitions, encoder, self.max_bins, self.device, seed,
                                targets, kept_bins(self))
        keep_bins(self, inputs.bin_mapper)
        return inputs

    def _warm(self):
        """Whether this fit continues the fitted trees (``warm_start``)."""
        return bool(getattr(self, "warm_start", False)) and hasattr(self, "_trees")

    def _bin_new_data(self, X):
        """During a warm-started fit, the fit's partitions binned with the
        first fit's bins on the workers; otherwise the ordinary estimator's."""
        if getattr(self, "_dask_fit", None) is None:
            return super()._bin_new_data(X)
        self._backend, data = binned_with(self._dask_fit[0], self._bin_mapper, self.device)
        return data

    def _release_fit(self):
        for part in self._dask_fit[0].parts:
            part.release()
        for held in self._dask_fit[2:]:
            held.release()
        backend = getattr(self, "_backend", None)
        if hasattr(backend, "release"):
            backend.release()
        del self._dask_fit

    def _check_dask_params(self, fit_params):
        """Raise ValueError for what a Dask fit does not support (see the
        module docstring), before any work is sent to the workers."""
        if getattr(self, "missing_strategy", "default") != "default":
            raise ValueError("missing_strategy='surrogate' is not supported on Dask; use "
                             "'default', or fit the ordinary estimator on data in memory.")
        validates = (getattr(self, "early_stopping", False) is not False
                     or fit_params.get("eval_set") is not None)
        if validates and (getattr(self, "scoring", "loss") != "loss"
                          or getattr(self, "eval_metric", None) is not None):
            raise ValueError("Early stopping on Dask scores the loss: pass scoring='loss' and "
                             "eval_metric=None (or fit the ordinary estimator).")

    # ---------------------------------------------------------- the model
    def to_local(self):
        """The ordinary fitted estimator (same trees, bins and parameters),
        which predicts without Dask."""
        self._check_fitted()
        params = {k: v for k, v in self.get_params().items() if k != "client"}
        local = self._local_class(**params)
        for name, value in self.__dict__.items():
            if name not in params and name != "client":
                setattr(local, name, value)
        local._backend = model_backend(self.device)
        return local

    def _predict_collection(self, method, X, output_width):
        """``method`` of the fitted model on every partition of the dask
        collection X; ``output_width`` None: one value per row. The workers
        get the model's Predictor, not this estimator, so they never load
        the estimator classes (nor scikit-learn)."""
        model = self._predictor()
        if is_dask_frame(X):
            import pandas as pd
            row_blocks(X)  # checks the categories are known
            if output_width is None:
                meta = pd.Series([], dtype=_output_dtype(self, method))
            else:
                meta = pd.DataFrame({k: pd.Series([], dtype=np.float64)
                                     for k in range(output_width)})
            return X.map_partitions(predict_frame, model, method, output_width, meta=meta)
        row_blocks(X)
        X = X.rechunk({1: -1})
        if output_width is None:
            return X.map_blocks(predict_part, model, method, output_width, drop_axis=1,
                                dtype=_output_dtype(self, method))
        return X.map_blocks(predict_part, model, method, output_width, dtype=np.float64,
                            chunks=(X.chunks[0], (output_width,)))


def _output_dtype(estimator, method):
    classes = getattr(estimator, "classes_", None)
    if method == "predict" and isinstance(classes, np.ndarray):
        return classes.dtype
    return np.float64


def _dask_method(name, width):
    """A predict-like method: on a Dask collection, partition by partition
    (a Dask collection back); otherwise the ordinary estimator's."""
    def method(self, X):
        if is_dask_collection(X):
            self._check_fitted()
            return self._predict_collection(name, X, width(self))
        return getattr(self._local_class, name)(self, X)
    method.__name__ = name
    method.__doc__ = (f"``{name}`` of the fitted model; on a dask collection a dask "
                      "collection, computed partition by partition on the workers.")
    return method


def _n_classes(estimator):
    return int(estimator.n_classes_)


def _decision_width(estimator):
    return None if estimator.n_classes_ == 2 else int(estimator.n_classes_)


def _one(estimator):
    return None


#: the Dask boosting estimators' word on ``loss=callable``
_CUSTOM_OBJECTIVE_NOTE = (
    " A custom objective (``loss=callable``) is called by each worker on its own rows:"
    " the one-machine model bit for bit for a row-wise objective (each row's grad and hess"
    " from its own y and raw score only); one that is not row-wise (normalising by a mean"
    " over the rows it gets, say) gives per-partition results.")


def _make(local_class, defaults=None, bases=()):
    """The Dask class of ``local_class`` (with mixins ``bases``): its
    parameters (``defaults`` changed) plus ``client``."""
    signature = inspect.signature(local_class.__init__)
    parameters = [p.replace(kind=p.KEYWORD_ONLY, default=(defaults or {}).get(p.name, p.default))
                  for p in list(signature.parameters.values())[1:]]
    parameters.append(inspect.Parameter("client", inspect.Parameter.KEYWORD_ONLY, default=None))
    names = {p.name: p.default for p in parameters}

    def __init__(self, **params):
        unknown = set(params) - set(names)
        if unknown:
            raise TypeError(f"unexpected parameters {sorted(unknown)}")
        for name, default in names.items():
            setattr(self, name, params.get(name, default))

    __init__.__signature__ = signature.replace(
        parameters=[list(signature.parameters.values())[0]] + parameters)
    methods = {"__init__": __init__, "_local_class": local_class,
               "__module__": __name__,
               "__doc__": f"{local_class.__name__} fitted on a Dask cluster: see "
                          f":mod:`gputree.dask`. Parameters: those of "
                          f":class:`gputree.{local_class.__name__}` plus ``client``."
                          + (_CUSTOM_OBJECTIVE_NOTE if issubclass(local_class, (
                              GradientBoostingClassifier, GradientBoostingRegressor)) else "")}
    if hasattr(local_class, "predict_proba"):
        methods["predict_proba"] = _dask_method("predict_proba", _n_classes)
    if hasattr(local_class, "decision_function"):
        methods["decision_function"] = _dask_method("decision_function", _decision_width)
    methods["predict"] = _dask_method("predict", _one)
    return type("Dask" + local_class.__name__, (*bases, _DaskEstimator, local_class), methods)


_NO_EARLY_STOPPING = {"early_stopping": False}

DaskDecisionTreeClassifier = _make(DecisionTreeClassifier, bases=(WorkerResidentTrees,))
DaskDecisionTreeRegressor = _make(DecisionTreeRegressor, bases=(WorkerResidentTrees,))
DaskRandomForestClassifier = _make(RandomForestClassifier, bases=(WorkerResidentTrees,))
DaskRandomForestRegressor = _make(RandomForestRegressor, bases=(WorkerResidentTrees,))
DaskGradientBoostingClassifier = _make(GradientBoostingClassifier, _NO_EARLY_STOPPING,
                                       (WorkerResidentBoosting,))
DaskGradientBoostingRegressor = _make(GradientBoostingRegressor, _NO_EARLY_STOPPING,
                                      (WorkerResidentBoosting,))
