"""Training on a Dask cluster, bit-identical to one machine.

``DaskGradientBoostingClassifier/Regressor/Ranker``,
``DaskRandomForestClassifier/Regressor`` and
``DaskDecisionTreeClassifier/Regressor`` fit on dask arrays and dataframes
held by the workers of a ``distributed.Client``: each worker bins and keeps
its partitions and, per tree level, histograms its own rows; the driver adds
the int64 histograms (exact in any order), so the trees are those the
ordinary estimator grows on the concatenated data, whatever the
partitioning. Boosting, trees and forests keep every row-sized array on the
workers (actors: :mod:`gputree.dask.worker_boosting`,
:mod:`gputree.dask.worker_forest`), the workers summing their histograms
among themselves; ``multiway`` trees and ``criterion="absolute_error"``
trees and forests fit through the driver path (:mod:`gputree.dask.backend`). A worker lost mid-fit: the fit continues on
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

def _estimators():
    from . import estimators
    return estimators


def _ranking():
    from . import ranking
    return ranking


def _partitions():
    from . import partitions
    return partitions


#: public name -> the loader of the module that defines it, imported on
#: first use (a module ``__getattr__``, as ``gputree`` itself): a worker
#: process that unpickles a task of :mod:`.inputs` or an actor of
#: :mod:`.worker_rows` imports this package without the estimators (nor
#: scikit-learn, scipy and pandas, 0.5 s of a fresh worker's first fit)
_EXPORTS = {"DaskDecisionTreeClassifier": _estimators, "DaskDecisionTreeRegressor": _estimators,
            "DaskGradientBoostingClassifier": _estimators,
            "DaskGradientBoostingRegressor": _estimators,
            "DaskGradientBoostingRanker": _ranking,
            "DaskRandomForestClassifier": _estimators, "DaskRandomForestRegressor": _estimators,
            "WorkerLostError": _partitions}

__all__ = ["DaskDecisionTreeClassifier", "DaskDecisionTreeRegressor",
           "DaskGradientBoostingClassifier", "DaskGradientBoostingRegressor",
           "DaskGradientBoostingRanker", "DaskRandomForestClassifier",
           "DaskRandomForestRegressor", "WorkerLostError"]


def __getattr__(name):
    loader = _EXPORTS.get(name)
    if loader is None:
        raise AttributeError(f"module 'gputree.dask' has no attribute {name!r}")
    value = getattr(loader(), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))
