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

# Imported here, eagerly: a worker that unpickles the fit's first task
# imports this package, so it loads the estimators (and scikit-learn) while
# the driver prepares the fit, and its first predict finds them loaded.
# Loading them on first use instead (a module __getattr__) made the fit on
# fresh workers 0.6 s shorter and their first predict 0.9 s longer
# (150,000 x 28, 100 trees, 2 workers on 2 cores): worse for a fit and a
# prediction together.
from .estimators import (DaskDecisionTreeClassifier, DaskDecisionTreeRegressor,  # noqa: E402
                         DaskGradientBoostingClassifier, DaskGradientBoostingRegressor,
                         DaskRandomForestClassifier, DaskRandomForestRegressor)
from .partitions import WorkerLostError  # noqa: E402
from .ranking import DaskGradientBoostingRanker  # noqa: E402

__all__ = ["DaskDecisionTreeClassifier", "DaskDecisionTreeRegressor",
           "DaskGradientBoostingClassifier", "DaskGradientBoostingRegressor",
           "DaskGradientBoostingRanker", "DaskRandomForestClassifier",
           "DaskRandomForestRegressor", "WorkerLostError"]
