"""Training on a Dask cluster, bit-identical to one machine.

``DaskGradientBoostingClassifier/Regressor/Ranker``,
``DaskRandomForestClassifier/Regressor`` and
``DaskDecisionTreeClassifier/Regressor`` fit on dask arrays and dataframes
held by the workers of a ``distributed.Client``: each worker bins and keeps
its partitions and, per tree level, histograms its own rows; the workers
sum the int64 histograms among themselves (exact in any order), so the
trees are those the ordinary estimator grows on the concatenated data,
whatever the partitioning. Boosting, trees and forests keep every row-sized
array on the workers (actors: :mod:`gputree.dask.worker_boosting`,
:mod:`gputree.dask.worker_forest`; ``multiway`` trees too): the driver never
holds O(rows). ``criterion="absolute_error"`` trees and forests are refused
(their exact split search needs a node's rows in one place): boosting's
``loss="absolute_error"`` / ``"quantile"`` refit their leaves to exact
weighted quantiles on the workers.
A worker lost mid-fit: the fit continues on
the others to the same model, keeping its finished trees
(:mod:`gputree.dask.recovery`), or raises :class:`WorkerLostError`.
``model.to_local()`` gives that ordinary estimator. See
:mod:`gputree.dask.estimators` for what stays on the driver and what is not
supported yet.

Needs ``pip install "gputree[dask]"`` (dask and distributed).
"""
try:
    import dask  # noqa: F401
    import distributed  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised without dask installed
    raise ImportError('gputree.dask needs dask and distributed: pip install "gputree[dask]"'
                      ) from exc

from .._lazy import lazy_exports  # noqa: E402

# The estimators load on first use of their names (a module __getattr__):
# a worker imports this package for the fit's tasks and actors, and needs
# neither the estimator classes nor scikit-learn, whose import was most of
# a fresh worker's start; its predictions get a Predictor
# (gputree.estimators.prediction), not an estimator, so they need none of
# them either.
def _estimators():
    from . import estimators
    return estimators


def _ranking():
    from . import ranking
    return ranking


def _partitions():
    from . import partitions
    return partitions


#: public name -> the loader of the module that defines it
_EXPORTS = {"DaskDecisionTreeClassifier": _estimators, "DaskDecisionTreeRegressor": _estimators,
            "DaskGradientBoostingClassifier": _estimators,
            "DaskGradientBoostingRegressor": _estimators,
            "DaskRandomForestClassifier": _estimators, "DaskRandomForestRegressor": _estimators,
            "DaskGradientBoostingRanker": _ranking, "WorkerLostError": _partitions}

__all__ = list(_EXPORTS)


__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
