"""Training on a Dask cluster, bit-identical to one machine.

``DaskGradientBoostingClassifier/Regressor``, ``DaskRandomForestClassifier/
Regressor`` and ``DaskDecisionTreeClassifier/Regressor`` fit on dask arrays
and dataframes held by the workers of a ``distributed.Client``: each worker
bins and keeps its partitions and, per tree level, histograms its own rows;
the driver adds the int64 histograms (exact in any order), so the trees are
those the ordinary estimator grows on the concatenated data, whatever the
partitioning. Boosting, trees and forests keep every row-sized array on the
workers (actors: :mod:`gputree.dask.worker_boosting`,
:mod:`gputree.dask.worker_forest`), the workers summing their histograms
among themselves; the other configurations fit through the driver path
(:mod:`gputree.dask.backend`). A worker lost
mid-fit: the fit continues on the others to the same model, keeping its
finished trees (:mod:`gputree.dask.recovery`), or raises
:class:`WorkerLostError`. ``model.to_local()`` gives that ordinary estimator. See
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

from .estimators import (DaskDecisionTreeClassifier, DaskDecisionTreeRegressor,  # noqa: E402
                         DaskGradientBoostingClassifier, DaskGradientBoostingRegressor,
                         DaskRandomForestClassifier, DaskRandomForestRegressor)
from .partitions import WorkerLostError  # noqa: E402

__all__ = ["DaskDecisionTreeClassifier", "DaskDecisionTreeRegressor",
           "DaskGradientBoostingClassifier", "DaskGradientBoostingRegressor",
           "DaskRandomForestClassifier", "DaskRandomForestRegressor", "WorkerLostError"]
