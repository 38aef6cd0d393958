"""``DaskGradientBoostingRanker``: LambdaMART on Dask collections, the
one-machine :class:`gputree.GradientBoostingRanker`'s model bit for bit,
whatever the partitioning (each query's rows in one partition).

The rounds run on the workers' path of the other boosting estimators
(:mod:`gputree.dask.worker_boosting`): each worker keeps its partitions'
rows with their labels, queries and query weights
(:mod:`gputree.dask.queries`), computes its queries' gradients, hessians
and NDCGs with the one-machine per-query pass, and the trees grow from the
workers' exchanged histograms; the training NDCG is the order-free sum of
the queries' weighted NDCGs over every worker's queries. ``subsample``
draws whole queries, as on one machine, each worker keeping the rows of its
drawn queries.

Not supported yet (a clear error): early stopping and ``eval_set``
(``early_stopping`` defaults to False here).
"""
from ..estimators import GradientBoostingRanker
from ..estimators.lambdamart import label_gains
from .estimators import _NO_EARLY_STOPPING, _make
from .worker_boosting import WorkerResidentBoosting


class _DaskRanking:
    """fit(X, y, group=None, qid=None, sample_weight=None) on Dask
    collections, the queries on the workers (see the module docstring)."""

    def fit(self, X, y, group=None, qid=None, sample_weight=None, eval_set=None,
            eval_group=None, eval_qid=None):
        """Fit on a dask array or DataFrame X (n_samples, n_features): y
        relevance labels (a dask or host vector, X's rows); the queries as
        ``qid`` (a query id per row, dask or host) or ``group`` (host query
        sizes in row order), each query's rows in one partition of X;
        ``sample_weight``: one weight per query (host, or a dask vector of
        n_queries)."""
        if eval_set is not None or eval_group is not None or eval_qid is not None:
            raise ValueError("DaskGradientBoostingRanker does not validate on an eval_set yet: "
                             "pass no eval_set (or fit the ordinary GradientBoostingRanker).")
        if self.early_stopping is not False:
            raise ValueError("DaskGradientBoostingRanker does not stop early yet: pass "
                             f"early_stopping=False (got {self.early_stopping!r}), or fit the "
                             "ordinary GradientBoostingRanker.")
        if not self._rows_on_workers():
            raise ValueError("DaskGradientBoostingRanker grows Newton trees with its "
                             "named losses; keep criterion='newton'.")
        self._check_params()
        return super().fit(X, y, sample_weight, group=group, qid=qid)

    def _fit_dask(self, X, y, sample_weight, group=None, qid=None):
        self._query_inputs = (group, qid)
        try:
            return super()._fit_dask(X, y, sample_weight)
        finally:
            del self._query_inputs

    def _worker_targets(self, y, sample_weight):
        """Labels, queries and query weights on the workers, checked."""
        from .queries import RankingWorkerTargets
        group, qid = self._query_inputs
        targets = RankingWorkerTargets(self._dask_fit[0], y, group, qid, sample_weight)
        try:
            label_gains(self.label_gain, targets.largest_label)      # every label has a gain
        except ValueError:
            targets.release()
            raise
        return targets

    def _worker_gradient_magnitude(self, targets):
        return self._gradient_magnitude(targets)

    def score(self, X, y, group=None, qid=None, sample_weight=None):
        """Mean NDCG@eval_at of in-memory X's queries (see the ordinary
        estimator); a Dask collection: a clear error."""
        for name, value in {"X": X, "y": y, "group": group, "qid": qid}.items():
            if callable(getattr(value, "__dask_graph__", None)):
                raise TypeError(f"DaskGradientBoostingRanker.score takes data in memory ({name} "
                                f"is a Dask collection): compute it ({name}.compute()), or "
                                "score with predict(X) on the collection.")
        return GradientBoostingRanker.score(self, X, y, group, qid, sample_weight)


DaskGradientBoostingRanker = _make(GradientBoostingRanker, _NO_EARLY_STOPPING,
                                   (_DaskRanking, WorkerResidentBoosting))
DaskGradientBoostingRanker.__module__ = __name__      # pickled by reference to this module
