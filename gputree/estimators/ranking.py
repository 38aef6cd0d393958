"""``GradientBoostingRanker``: learning to rank with gradient-boosted trees
(LambdaMART), as LightGBM's ``LGBMRanker`` and XGBoost's ``XGBRanker``.

The boosting loop is :class:`gputree.estimators.boosting._BaseGradientBoosting`'s;
what ranking adds lives here and in :mod:`gputree.estimators.lambdamart`:
the queries (``group`` or ``qid``, :mod:`gputree.data.queries`) ride with the
targets, so every round's gradients are one per-query pass on the fit's
device. A validation split (``validation_fraction``) and ``subsample`` draw
whole queries.
"""
from dataclasses import replace

import numpy as np

from ..data.queries import query_layout, query_weights, relevance_labels
from ..data.validation import check_choice, check_float, check_int
from ..model import register_estimator
from .base import set_params_from
from .boosting import _SPLIT_STREAM, _OneOutputBoosting, split_rows
from .ensemble import tree_rng
from .lambdamart import RANKING_LOSSES, LambdaMART, host_targets


def _refuse_dask(**inputs):
    """The ordinary ranker does not train on Dask collections: a clear error
    naming the Dask ranker."""
    for name, value in inputs.items():
        if callable(getattr(value, "__dask_graph__", None)):
            raise TypeError(
                f"GradientBoostingRanker trains on data in memory ({name} is a Dask "
                "collection): fit gputree.dask.DaskGradientBoostingRanker on the collections, "
                f"or compute them into memory (e.g. {name}.compute()).")


def _n_rows(X, name="X"):
    shape = getattr(X, "shape", None)
    if shape is not None and len(shape) >= 1:
        return int(shape[0])
    try:
        return len(X)
    except TypeError:
        raise TypeError(f"{name} must be a 2-D array-like (n_samples, n_features); got "
                        f"{type(X).__name__}.") from None


def check_held_out_queries(n_queries):
    """A ValueError naming the fix unless ``n_queries`` (int) can give
    validation_fraction's split of whole queries (at least two)."""
    if n_queries < 2:
        raise ValueError("Early stopping with validation_fraction holds out whole queries "
                         f"and y has {n_queries} query; pass early_stopping=False or an "
                         "eval_set.")


def _one(value, name):
    """The single validation set's part: ``value`` or a list of one (a list
    of numbers is the part itself: group sizes or query ids)."""
    if isinstance(value, list) and not all(np.isscalar(v) for v in value):
        if len(value) != 1:
            raise ValueError(f"{name} must describe exactly one validation set; got a list of "
                             f"{len(value)}.")
        return value[0]
    return value


@register_estimator
class GradientBoostingRanker(_OneOutputBoosting):
    """Gradient-boosted trees for ranking (LambdaMART).

    ``fit(X, y, group=None, qid=None, sample_weight=None, eval_set=None,
    eval_group=None, eval_qid=None)``: ``y`` relevance labels (non-negative
    integers), the queries as ``group`` (the number of rows of each query,
    queries in row order, LightGBM) or ``qid`` (a query id per row, each
    query's rows consecutive, XGBoost): both give the same model.
    ``sample_weight``: one weight per query (XGBoost's convention).
    ``eval_set``: ``(X_val, y_val)`` or ``(X_val, y_val, query_weights)`` (or
    a list of one) with ``eval_group`` or ``eval_qid``: validation queries
    scored every round and watched by early stopping.

    ``loss``: ``"lambdarank"`` (pairs weighted by |delta NDCG|, LightGBM's
    lambdarank, XGBoost's rank:ndcg) or ``"rank:pairwise"`` (RankNet pairs,
    XGBoost's). Pairs: rows with different labels whose better-ranked row is
    among the first ``lambdarank_truncation_level`` of its query by the
    current scores. ``lambdarank_norm``: divide a pair's weight by 0.01 +
    its score gap and scale each query's gradients by log2(1 + S) / S (S its
    lambdas' sum), as LightGBM's lambdarank_norm. ``label_gain``: the gain of
    each label (default 2**label - 1, labels up to 31). ``sigmoid``: the
    sigmoid's scale. See :mod:`gputree.backends.lambdarank` for the exact
    arithmetic (the same on every device).

    ``eval_at``: k of NDCG@k, the score recorded in ``train_score_`` and
    ``validation_score_`` (before the first round and after each) and
    returned by :meth:`score`; a query without a relevant row scores 1 (as
    LightGBM and XGBoost); ties in scores rank in row order. Early stopping
    as the other boosting estimators (``early_stopping="auto"``: with
    ``eval_set`` or more than 10,000 rows; ``validation_fraction`` holds out
    whole queries). ``subsample`` draws whole queries. Tree parameters as
    :class:`gputree.GradientBoostingRegressor` (``extra_trees=True`` included:
    one random threshold per feature and node); ``predict`` gives scores
    (higher ranks first).

    On Dask: :class:`gputree.dask.DaskGradientBoostingRanker`, the same model
    bit for bit, each query's rows in one partition (``qid`` as a dask
    vector or ``group`` on the driver; ``subsample``, ``warm_start``, early
    stopping on ``eval_set`` or ``validation_fraction`` included;
    ``early_stopping`` defaults to False there).
    """

    _losses = tuple(RANKING_LOSSES)
    #: sample_weight weighs queries, not rows
    _row_sample_weight = False
    #: ranking trees split and take leaves by the Newton step
    criterion = "newton"

    def _growth_params(self):
        # long fits: the backend's compiled levels pay their compile back
        return replace(super()._growth_params(), compiled_levels=True)

    def __init__(self, loss="lambdarank", learning_rate=0.1, n_estimators=100, max_depth=6,
                 max_leaf_nodes=None, min_samples_leaf=20, min_child_weight=1e-3,
                 reg_lambda=1.0, gamma=0.0, subsample=1.0, colsample_bytree=1.0,
                 max_bins=255, categorical_features=None, early_stopping="auto",
                 validation_fraction=0.1, n_iter_no_change=10, tol=1e-7, eval_at=10,
                 lambdarank_truncation_level=30, lambdarank_norm=True, label_gain=None,
                 sigmoid=1.0, warm_start=False, random_state=None, verbose=0, device="auto",
                 reg_alpha=0.0, monotonic_cst=None, interaction_cst=None, n_jobs=None,
                 categorical_search="auto", cat_smooth=10.0, cat_l2=10.0, min_data_per_group=100,
                 max_cat_threshold=32, max_cat_to_onehot=4, extra_trees=False,
                 grow_policy="depthwise"):
        set_params_from(self, locals())

    # --------------------------------------------------------------- params
    def _check_loss_params(self):
        check_choice(self.loss, "loss", set(RANKING_LOSSES))
        check_int(self.eval_at, "eval_at", 1)
        check_int(self.lambdarank_truncation_level, "lambdarank_truncation_level", 1)
        check_float(self.sigmoid, "sigmoid", 0.0, low_open=True)
        if self.lambdarank_norm not in (True, False):
            raise ValueError(f"lambdarank_norm must be True or False, got "
                             f"{self.lambdarank_norm!r}.")
        if self.label_gain is not None:
            gains = np.asarray(self.label_gain, dtype=np.float64)
            if gains.ndim != 1 or gains.size == 0 or not np.all(np.isfinite(gains)):
                raise ValueError("label_gain must be None or a 1-D list of finite gains, one "
                                 f"per label 0, 1, ...; got {self.label_gain!r:.80}.")
            if np.any(np.diff(gains) < 0):
                raise ValueError("label_gain must not decrease with the label (a more "
                                 "relevant row gains at least as much); got "
                                 f"{self.label_gain!r:.80}.")

    def _make_loss(self):
        gain = None if self.label_gain is None else tuple(float(g) for g in self.label_gain)
        return LambdaMART(self.loss, int(self.lambdarank_truncation_level),
                          bool(self.lambdarank_norm), float(self.sigmoid), gain,
                          int(self.eval_at))

    # ------------------------------------------------------------------ fit
    def fit(self, X, y, group=None, qid=None, sample_weight=None, eval_set=None,
            eval_group=None, eval_qid=None):
        """Fit ``n_estimators`` rounds (fewer with early stopping); see the
        class docstring for the arguments."""
        _refuse_dask(X=X, y=y, group=group, qid=qid, sample_weight=sample_weight)
        queries = query_layout(_n_rows(X), group, qid)
        weight = queries.expand(query_weights(sample_weight, queries))
        eval_queries = None
        if eval_set is not None:
            eval_set, eval_queries = self._eval_inputs(eval_set, eval_group, eval_qid)
        elif eval_group is not None or eval_qid is not None:
            raise ValueError("eval_group / eval_qid describe the queries of eval_set; pass "
                             "eval_set too.")
        self._fit_queries = {"train": queries, "eval": eval_queries}
        try:
            super().fit(X, y, weight, eval_set)
        finally:
            del self._fit_queries
        return self

    def _eval_inputs(self, eval_set, eval_group, eval_qid):
        """((X_val, y_val, row weights), Queries) of the validation set."""
        eval_set = _one(eval_set, "eval_set")
        if not isinstance(eval_set, tuple) or len(eval_set) not in (2, 3):
            raise ValueError("eval_set must be (X_val, y_val) or (X_val, y_val, "
                             "query_weights), or a list of one such tuple.")
        _refuse_dask(eval_set=eval_set[0], eval_y=eval_set[1])
        queries = query_layout(_n_rows(eval_set[0], "eval_set X"),
                               _one(eval_group, "eval_group"), _one(eval_qid, "eval_qid"),
                               "eval_group", "eval_qid")
        weights = query_weights(eval_set[2] if len(eval_set) == 3 else None, queries,
                                "eval_set's sample_weight")
        return (eval_set[0], eval_set[1], queries.expand(weights)), queries

    def _encode_targets(self, y, fitting):
        return host_targets(relevance_labels(y, y.shape[0]), self._fit_queries["train"])

    def _encode_eval_targets(self, y):
        return host_targets(relevance_labels(y, y.shape[0], "eval_set's y"),
                            self._fit_queries["eval"])

    def _gradient_magnitude(self, y):
        """Largest |gradient| per unit weight, about: sigmoid times the
        pairs of a row."""
        return float(self.sigmoid) * max(1, int(np.max(y.queries.sizes)))

    def _train_and_validation(self, data, y, weight, eval_set, early):
        """As boosting's, but a validation split holds out whole queries."""
        if eval_set is not None or not early or self.validation_fraction is None:
            return super()._train_and_validation(data, y, weight, eval_set, early)
        n_queries = y.queries.n_queries
        check_held_out_queries(n_queries)
        train, held_out = split_rows(n_queries, self.validation_fraction,
                                     tree_rng(self._seed, 0, _SPLIT_STREAM))
        parts = []
        for queries in (train, held_out):
            rows = y.queries.rows_of(queries)
            parts.append((data.take_rows(self._backend, rows), y.take(queries), weight[rows]))
        return tuple(parts)

    def _row_mask(self, rng, rows):
        """float64 (n,) on the device: 1 for the rows of round(subsample *
        n_queries) queries drawn without replacement, else 0."""
        queries = rows.labels.queries
        n_queries = queries.n_queries
        chosen = np.zeros(n_queries, dtype=np.uint8)
        chosen[rng.choice(n_queries, max(1, int(round(self.subsample * n_queries))),
                          replace=False)] = 1
        return self._backend.upload(queries.expand(chosen)).astype(np.float64)

    def _validation_score(self, rows):
        return self._loss.score(self._backend.xp, rows.y, rows.raw, rows.w)

    def _latest_scores(self):
        name = f"ndcg@{self.eval_at}"
        scores = {f"train_{name}": self._scores["train"][-1]}
        if self._scores["validation"]:
            scores[f"validation_{name}"] = self._scores["validation"][-1]
        return scores

    # ------------------------------------------------------------ prediction
    def score(self, X, y, group=None, qid=None, sample_weight=None):
        """Mean NDCG@eval_at of the queries of X (weighted by
        ``sample_weight``, one weight per query), as ``validation_score_``."""
        self._check_fitted()
        queries = query_layout(_n_rows(X), group, qid)
        weights = queries.expand(query_weights(sample_weight, queries))
        targets = host_targets(relevance_labels(y, queries.n_rows), queries)
        backend = self._backend
        raw = next(self._raw_rounds(self._bin_new_data(X).X_binned, staged=False))
        return self._loss.score(backend.xp, self._loss.rows_targets(backend, targets), raw,
                                backend.asarray(weights))
