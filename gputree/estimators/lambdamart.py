"""LambdaMART's losses for boosting: ``"lambdarank"`` (pairs weighted by
|delta NDCG|, LightGBM's lambdarank) and ``"rank:pairwise"`` (RankNet pairs,
XGBoost's), and NDCG@k, the score a ranking fit records.

The queries travel with the targets: :meth:`LambdaMART.rows_targets` turns a
set of rows' :class:`RankingTargets` (host labels and query layout) into
:class:`QueryTargets` on the fit's backend (labels, query boundaries, the
inverse ideal DCGs, gain and discount tables, scratch), and the boosting
loop hands those back as ``y``; so the training rows, the validation rows
and a validation split each carry their own queries, and the loop needs no
ranking branch. Every query's gradients, hessians and NDCG come from one
launch of the backend's ``query_terms`` (the same device code on every
device: :mod:`gputree.backends.lambdarank`). Raw scores start at 0 (as
LightGBM's); predictions are the raw scores.
"""
from dataclasses import dataclass

import numpy as np

from ..backends.lambdarank import (FLAG_GRADIENTS, FLAG_NORM, FLAG_PAIRWISE, QueryArrays,
                                   WORK_ROWS, RankSettings, discount_table,
                                   exponential_gains,
                                   ideal_dcg_inverse, largest_query)
from ..data.queries import LABEL_DTYPE, QUERY_DTYPE, Queries
from ..fixed_point import weighted_mean
from .losses import Loss

#: the objectives and whether each weighs pairs by |delta NDCG|
RANKING_LOSSES = {"lambdarank": True, "rank:pairwise": False}
#: labels the default gains (2**label - 1) cover, as LightGBM's default label_gain
DEFAULT_GAIN_LABELS = 32


@dataclass
class RankingTargets:
    """Host targets of a set of rows: labels int32 (n,) and their queries."""

    labels: np.ndarray
    queries: Queries

    def take(self, queries):
        """The targets of ``queries`` (sorted query indices) alone."""
        return RankingTargets(self.labels[self.queries.rows_of(queries)],
                              self.queries.take(queries))

    @classmethod
    def joined(cls, parts):
        """The targets of consecutive sets of rows, one after the other."""
        return cls(np.concatenate([part.labels for part in parts]),
                   Queries.joined([part.queries for part in parts]))


@dataclass
class QueryTargets:
    """RankingTargets on a backend, with what the per-query pass reads."""

    backend: object
    host: RankingTargets
    arrays: QueryArrays
    first_rows: object      # int64 (n_queries,): each query's first row (backend)

    @property
    def n_rows(self):
        return self.host.labels.shape[0]

    @property
    def n_queries(self):
        return self.host.queries.n_queries


def label_gains(label_gain, max_label):
    """float64 gains indexed by label: ``label_gain`` (LightGBM's parameter)
    or 2**label - 1; a ValueError naming the fix when a label has no gain."""
    if label_gain is None:
        if max_label >= DEFAULT_GAIN_LABELS:
            raise ValueError(f"y holds relevance label {max_label}; the default gains "
                             f"2**label - 1 cover labels 0..{DEFAULT_GAIN_LABELS - 1} (as "
                             "LightGBM's). Pass label_gain with one gain per label, or "
                             "relabel y.")
        return exponential_gains(DEFAULT_GAIN_LABELS)
    gains = np.asarray(label_gain, dtype=np.float64)
    if max_label >= gains.shape[0]:
        raise ValueError(f"y holds relevance label {max_label} but label_gain has gains for "
                         f"labels 0..{gains.shape[0] - 1}; give every label a gain.")
    return gains


class LambdaMART(Loss):
    """LambdaMART (see the module docstring and gputree.backends.lambdarank):
    ``name`` "lambdarank" or "rank:pairwise"; gradients from pairs whose
    better-ranked row is among the first ``truncation_level``; ``norm``
    (LightGBM's lambdarank_norm); ``sigmoid`` (sigma); ``label_gain`` (None:
    2**label - 1); NDCG at ``eval_at`` for scores."""

    link = "identity"
    baseline_from_targets = False

    def __init__(self, name="lambdarank", truncation_level=30, norm=True, sigmoid=1.0,
                 label_gain=None, eval_at=10):
        self.name = name
        self.truncation_level, self.norm, self.sigmoid = truncation_level, norm, sigmoid
        self.label_gain, self.eval_at = label_gain, eval_at

    # -------------------------------------------------------------- targets
    def targets(self, xp, y):
        """Host RankingTargets stay as they are (init_raw needs nothing)."""
        return y

    def rows_targets(self, backend, y):
        """QueryTargets of host RankingTargets ``y`` on ``backend``."""
        starts = y.queries.starts
        gains = label_gains(self.label_gain, int(y.labels.max()) if y.labels.size else 0)
        discounts = discount_table(largest_query(starts))
        n = y.labels.shape[0]
        host = dict(starts=starts, labels=y.labels, gains=gains, discounts=discounts,
                    inv_ideal=ideal_dcg_inverse(starts, y.labels, gains, discounts,
                                                self.truncation_level),
                    inv_ideal_eval=ideal_dcg_inverse(starts, y.labels, gains, discounts,
                                                     self.eval_at))
        device = backend.upload_many(host)
        arrays = QueryArrays(order=backend.empty((n,), QUERY_DTYPE),
                             buffer=backend.empty((n,), QUERY_DTYPE),
                             work=backend.empty((WORK_ROWS, n), np.float64), **device)
        return QueryTargets(backend, y, arrays, device["starts"][:-1])

    def init_raw(self, y, w):
        return np.zeros(1)

    # ------------------------------------------------------------ the pass
    def _settings(self, gradients):
        flags = ((FLAG_GRADIENTS if gradients else 0) | (FLAG_NORM if self.norm else 0)
                 | (0 if RANKING_LOSSES[self.name] else FLAG_PAIRWISE))
        return RankSettings(float(self.sigmoid), int(self.truncation_level), int(self.eval_at),
                            flags)

    def _derivatives_and_pointwise(self, xp, y, raw, out=None):
        """(g (n, 1), h (n, 1), NDCG per query (n_queries,)) at ``raw``,
        into ``out`` when its arrays have the shapes."""
        backend = y.backend
        shapes = ((y.n_rows, 1), (y.n_rows, 1), (y.n_queries,))
        if out is None or tuple(a.shape for a in out) != shapes:
            out = tuple(backend.empty(shape, np.float64) for shape in shapes)
        g, h, ndcg = out
        backend.query_terms(_scores(xp, raw), y.arrays, self._settings(True), g.reshape(-1),
                            h.reshape(-1), ndcg)
        return g, h, ndcg

    def pointwise(self, xp, y, raw):
        """NDCG@eval_at of every query (n_queries,) at ``raw``."""
        backend = y.backend
        ndcg = backend.empty((y.n_queries,), np.float64)
        unused = backend.empty((0,), np.float64)
        backend.query_terms(_scores(xp, raw), y.arrays, self._settings(False), unused, unused,
                            ndcg)
        return ndcg

    # --------------------------------------------------------------- scores
    def score(self, xp, y, raw, w):
        """Mean NDCG@eval_at of the queries, weighted by their weights."""
        return self.score_of_pointwise(xp, y, self.pointwise(xp, y, raw), w)

    def score_of_pointwise(self, xp, y, pointwise, w):
        """The weighted mean of per-query NDCGs (``w`` row weights; a query's
        weight is its first row's)."""
        return weighted_mean(xp, pointwise, None if w is None else self.unit_weights(y, w))

    def score_of_sums(self, weighted_total, weight_total):
        """The mean NDCG from the order-free sums of the queries' weighted
        NDCGs and of their weights (higher is better: no sign change)."""
        return weighted_total / weight_total

    def unit_weights(self, y, w):
        """float64 (n_queries,): each query's weight, its first row's."""
        return w[y.first_rows]

    def value(self, xp, y, raw, w):
        """1 - mean NDCG@eval_at."""
        return 1.0 - self.score(xp, y, raw, w)

    def predict(self, xp, raw):
        return raw

    def __repr__(self):
        return (f"LambdaMART({self.name!r}, truncation_level={self.truncation_level}, "
                f"norm={self.norm}, sigmoid={self.sigmoid}, eval_at={self.eval_at})")


def _scores(xp, raw):
    """raw (n, 1) as a contiguous float64 (n,) (a view when it is one)."""
    return xp.ascontiguousarray(raw[:, 0], dtype=np.float64)


def host_targets(labels, queries):
    """RankingTargets from labels (int, (n,)) and Queries."""
    return RankingTargets(np.asarray(labels, dtype=LABEL_DTYPE), queries)
