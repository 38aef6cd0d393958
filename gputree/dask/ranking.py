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
drawn queries. Early stopping watches the NDCG of an ``eval_set`` (Dask
collections, its queries as ``eval_qid`` or ``eval_group``) held by the
workers the same way, or the NDCG of the one-machine ``validation_fraction``
split of whole queries (each worker holding out its drawn queries), or the
training NDCG (``validation_fraction=None``); ``early_stopping`` defaults to
False here, as the other Dask estimators.
"""
import numpy as np

from ..estimators import GradientBoostingRanker
from ..estimators.lambdamart import label_gains
from ..estimators.ranking import _one, check_held_out_queries
from .estimators import _NO_EARLY_STOPPING, _make
from .inputs import is_dask_collection
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
        n_queries). ``eval_set``: ``(X_val, y_val)`` or ``(X_val, y_val,
        query_weights)`` (or a list of one), X_val and y_val Dask
        collections, its queries as ``eval_qid`` or ``eval_group``."""
        if eval_set is None and (eval_group is not None or eval_qid is not None):
            raise ValueError("eval_group / eval_qid describe the queries of eval_set; pass "
                             "eval_set too.")
        self._check_params()
        return super().fit(X, y, sample_weight, group=group, qid=qid, eval_set=eval_set,
                           eval_queries=(eval_group, eval_qid))

    def _fit_dask(self, X, y, sample_weight, group=None, qid=None, eval_set=None,
                  eval_queries=None):
        self._query_inputs = (group, qid, *eval_queries)
        try:
            return super()._fit_dask(X, y, sample_weight, eval_set=eval_set)
        finally:
            del self._query_inputs

    def _worker_eval_parts(self, eval_set):
        """(RowPartitions of the binned eval_set X, RankingWorkerTargets of
        its labels, queries and query weights)."""
        from .queries import RankingWorkerTargets
        from .worker_validation import eval_partitions
        eval_set = _one(eval_set, "eval_set")
        if not isinstance(eval_set, tuple) or len(eval_set) not in (2, 3):
            raise ValueError("eval_set must be (X_val, y_val) or (X_val, y_val, "
                             "query_weights), or a list of one such tuple.")
        group, qid = (_one(value, name) for value, name in
                      zip(self._query_inputs[2:], ("eval_group", "eval_qid")))
        val = eval_partitions(self, eval_set[0])
        try:
            targets = RankingWorkerTargets(
                val, eval_set[1], group, qid, eval_set[2] if len(eval_set) == 3 else None,
                ("eval_group", "eval_qid", "eval_set's y", "eval_set's sample_weight"))
        except Exception:
            val.release()
            raise
        return val, self._checked_labels(targets)

    def _worker_validation(self, targets, evaluation, early):
        """As the other boosting estimators', but ``validation_fraction``
        holds out whole queries (the one-machine split of the queries)."""
        if evaluation is not None or not early or self.validation_fraction is None:
            return super()._worker_validation(targets, evaluation, early)
        from ..estimators.boosting import _SPLIT_STREAM
        from .worker_validation import hold_out
        n_queries = targets.n_units
        check_held_out_queries(n_queries)
        backend = self._backend
        n_train, per_partition = hold_out(backend, self._seed, _SPLIT_STREAM,
                                          self.validation_fraction, None, n_queries)
        backend.set_rows(backend.per_partition(backend.call("rows_left")))
        backend.set_units(np.concatenate([[0], np.cumsum(per_partition)]).astype(np.int64))
        backend.n_validation = n_queries - n_train
        return backend.n_rows

    def _worker_targets(self, y, sample_weight):
        """Labels, queries and query weights on the workers, checked."""
        from .queries import RankingWorkerTargets
        group, qid = self._query_inputs[:2]
        return self._checked_labels(
            RankingWorkerTargets(self._dask_fit[0], y, group, qid, sample_weight))

    def _checked_labels(self, targets):
        """``targets`` (RankingWorkerTargets) once every label has a gain."""
        try:
            label_gains(self.label_gain, targets.largest_label)
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
            if is_dask_collection(value):
                raise TypeError(f"DaskGradientBoostingRanker.score takes data in memory ({name} "
                                f"is a Dask collection): compute it ({name}.compute()), or "
                                "score with predict(X) on the collection.")
        return GradientBoostingRanker.score(self, X, y, group, qid, sample_weight)


DaskGradientBoostingRanker = _make(GradientBoostingRanker, _NO_EARLY_STOPPING,
                                   (_DaskRanking, WorkerResidentBoosting))
DaskGradientBoostingRanker.__module__ = __name__      # pickled by reference to this module
