"""Histogram gradient boosting with the scikit-learn API:
``GradientBoostingClassifier`` and ``GradientBoostingRegressor``.

Owns the boosting loop. X is binned once per fit on the backend. Every round
computes the loss's gradients and hessians (:mod:`gputree.estimators.losses`) with the
backend's array module, turns them into fixed-point Newton statistics, grows
trees level by level with :func:`gputree.growth.levelwise.grow_tree`, or
best first with ``grow_policy="lossguide"`` (:mod:`gputree.growth.bestfirst`) (leaf value
``-G / (H + reg_lambda)``, scaled by ``learning_rate``) and adds the leaf
values to the training rows' raw scores through the leaf ids the grower
returns (``positions``): training rows are never re-predicted. Targets,
weights, gradients, hessians and raw scores therefore stay on the device
across rounds on the CUDA backend; only per-level split decisions, the finished
trees and one loss value per round come back to the host.

Multiclass (softmax): by default one tree per class per round
(``multi_strategy="one_output_per_tree"``, as scikit-learn, LightGBM and
XGBoost do, so results are comparable with them); ``"multi_output_tree"``
grows one tree per round whose leaves hold a value per class (one histogram
pass with all classes' gradients: fewer launches, shared structure).

Early stopping follows scikit-learn's histogram GBDT: scores are "higher is
better" (``-loss`` for ``scoring="loss"``); fitting stops when none of the last
``n_iter_no_change`` scores beats the score ``n_iter_no_change`` rounds before
them by more than ``tol``. All fitted rounds are kept (``n_iter_``).
"""
import math
import warnings
from dataclasses import dataclass

import numpy as np

from .._arrays import returns_input_kind
from .._compat import ClassifierMixin, RegressorMixin
from ..criteria import NEWTON_BLOCK_ROWS, newton_statistics, newton_statistics_in_blocks
from ..data.binned import BinnedData
from ..fixed_point import BlockOrderFreeSum, order_free_sum
from ..data.validation import (check_boosting_range, check_choice, check_float, check_int,
                               check_sample_weight, check_y)
from ..explain import with_pred_contrib
from ..growth.constraints import TreeConstraints, check_interaction_cst, check_monotonic_cst
from ..growth.histogram_pool import HistogramPool
from ..growth.params import GrowthParams, categorical_search
from ..model import register_estimator, saved_floats, saved_int, saved_int_pairs
from .base import BaseTreeModel, set_params_from
from .custom_objective import CustomObjective, metric_score
from .._progress import Progress
from .ensemble import LazyTreeRng, add_tree_values, training_data, tree_rng
from .prediction import BoostedClassOutputs, BoostedScores, BoostedValueOutputs
from .sampling import grow_on_columns, subsample_rows
from .losses import ALPHA_LOSSES, CLASSIFICATION_LOSSES, REGRESSION_LOSSES, Loss, make_loss
from .targets import (CLASS_ATTRIBUTES, as_float_targets, check_poisson_targets, class_weights,
                      encode_labels)
from .tree_params import UNLIMITED_DEPTH
from .treeboost import BOOSTING_CRITERIA, set_newton_values, weight_hessians

try:
    from sklearn.exceptions import DataConversionWarning
except ImportError:  # pragma: no cover
    class DataConversionWarning(UserWarning):
        """y had to be reshaped."""

#: early_stopping="auto" turns on above this many rows (as scikit-learn)
_AUTO_EARLY_STOPPING_ROWS = 10_000
#: ``grow_policy``, XGBoost's names: "depthwise", level by level
#: (max_leaf_nodes: the best splits of each level while the budget lasts);
#: "lossguide", best first: the leaf with the largest gain splits next
#: (gputree.growth.bestfirst), LightGBM's leaf-wise growth
GROW_POLICIES = ("depthwise", "lossguide")
#: max_leaf_nodes=None with grow_policy="lossguide": LightGBM's num_leaves default
LOSSGUIDE_LEAVES = 31
_SPLIT_STREAM, _ROUND_STREAM = 1, 0
#: float64 arrays per training row that a round keeps on the device, per raw
#: output (targets, raw scores, gradients, hessians and their temporaries)
#: and besides (weights, row mask, pointwise loss, a temporary)
_ROW_FLOATS_PER_OUTPUT, _ROW_FLOATS = 8, 4


@dataclass
class _Rows:
    """A set of rows on the device during fit: binned X, loss targets (n, K),
    weights (n,), current raw scores (n, K); host labels for scorers.

    Lean training rows (statistics built in blocks) hold neither targets
    nor unit weights: ``y`` is None and ``make_targets`` makes the targets
    of a block of ``labels``; ``w`` and ``w_host`` are None when every
    weight is one (16 bytes a row less)."""

    data: BinnedData
    y: object
    w: object
    raw: object
    labels: np.ndarray
    w_host: np.ndarray
    make_targets: object = None

    @property
    def unit_weights(self):
        """Every weight is one (losses then skip multiplying by them)."""
        if not hasattr(self, "_unit"):
            self._unit = self.w_host is None or bool(np.all(self.w_host == 1.0))
        return self._unit

    def targets(self, start=0, stop=None):
        """The loss targets of rows start:stop: held, or made from the labels."""
        if self.y is None:
            return self.make_targets(self.labels[start:stop])
        return self.y if start == 0 and stop is None else self.y[start:stop]

    def weights(self, start=0, stop=None):
        """The weights float64 of rows start:stop: held, or ones."""
        if self.w is not None:
            return self.w[start:stop]
        return np.ones(len(range(self.raw.shape[0])[start:stop]), dtype=np.float64)


def _block_score(total, rows, unit):
    """The score -sum(w l) / sum(w) of ``rows`` (a _Rows) from the
    BlockOrderFreeSum ``total`` of their weighted pointwise losses (``unit``:
    every weight one)."""
    weights = rows.raw.shape[0] if unit else order_free_sum(np, rows.w)
    return -(total.value() / weights)


class _RawScores:
    """Stands for X in scorer calls during fit: already-computed raw scores
    (host (n, K)), so a scorer costs no re-prediction."""

    def __init__(self, raw):
        self.raw = raw
        self.shape = (raw.shape[0], 0)

    def __len__(self):
        return self.raw.shape[0]


def _one_column_y(y, n_samples):
    """1-D y; a column vector is raveled with scikit-learn's warning."""
    y = check_y(y, n_samples)
    if y.ndim == 2:
        if y.shape[1] != 1:
            raise ValueError(f"Gradient boosting fits a single target; y has shape {y.shape}. "
                             "Fit one model per column.")
        warnings.warn("A column-vector y was passed when a 1d array was expected. Please "
                      "change the shape of y to (n_samples,), for example using ravel().",
                      DataConversionWarning, stacklevel=3)
        y = y[:, 0]
    return y


def split_rows(n_samples, fraction, rng, strata=None):
    """(train, validation) sorted row indices; stratified by ``strata``
    (int codes) when given: floor(fraction * count) rows of every class."""
    perm = rng.permutation(n_samples)
    if strata is None:
        validation = perm[:int(math.ceil(fraction * n_samples))]
    else:
        order = perm[np.argsort(strata[perm], kind="stable")]
        counts = np.bincount(strata)
        rank = np.arange(n_samples) - np.repeat(np.cumsum(counts) - counts, counts)
        validation = order[rank < np.repeat(np.floor(fraction * counts), counts)]
    if validation.size == 0 or validation.size == n_samples:
        raise ValueError(f"validation_fraction={fraction} leaves an empty training or validation "
                         f"set for {n_samples} samples; change it or pass eval_set.")
    held_out = np.zeros(n_samples, dtype=bool)
    held_out[validation] = True
    return np.flatnonzero(~held_out), np.flatnonzero(held_out)


def checked_eval_set(eval_set):
    """``(X_val, y_val)`` or ``(X_val, y_val, sample_weight_val)`` from
    eval_set (such a tuple, or a list holding one)."""
    if isinstance(eval_set, list):
        if len(eval_set) != 1:
            raise ValueError("eval_set must hold exactly one (X, y) pair.")
        eval_set = eval_set[0]
    if not isinstance(eval_set, tuple) or len(eval_set) not in (2, 3):
        raise ValueError("eval_set must be (X_val, y_val) or (X_val, y_val, sample_weight).")
    return eval_set


def should_stop(scores, n_iter_no_change, tol):
    """True when none of the last ``n_iter_no_change`` scores (higher is
    better) beats the score just before them by more than ``tol``."""
    if len(scores) <= n_iter_no_change:
        return False
    reference = scores[-n_iter_no_change - 1] + tol
    return not any(score > reference for score in scores[-n_iter_no_change:])


class _BaseGradientBoosting(BaseTreeModel):
    """The boosting loop and prediction shared by classifier and regressor;
    subclasses define the loss, target encoding and output transforms."""

    _losses = ()
    multi_strategy = "one_output_per_tree"
    _model_kind = "boosting"
    _model_attributes = {"_baseline": saved_floats(1), "_groups": saved_int_pairs(),
                         "n_trees_per_iteration_": saved_int(1), "n_iter_": saved_int(0),
                         "train_score_": saved_floats(1), "validation_score_": saved_floats(1),
                         "_seed": saved_int(0)}

    def _restore(self, backend, encoder, mapper, trees):
        super()._restore(backend, encoder, mapper, trees)
        self._loss = self._make_loss()
        self._scores = {"train": list(self.train_score_),
                        "validation": list(self.validation_score_)}

    # ---------------------------------------------------------------- params
    def _check_params(self):
        self._growth_params()

    def _check_loss_params(self):
        """Check the parameters of the loss and of its scores."""
        if not callable(self.loss):
            check_choice(self.loss, "loss", set(self._losses))
        if self.loss in ALPHA_LOSSES:
            check_float(self.alpha, "alpha", 0.0, 1.0, low_open=True)
        if self.eval_metric is not None and not callable(self.eval_metric):
            raise ValueError("eval_metric must be None or a callable f(y_true, y_pred, "
                             f"sample_weight); got {self.eval_metric!r}.")

    def _growth_params(self):
        self._check_loss_params()
        check_int(self.n_estimators, "n_estimators", 1)
        check_float(self.learning_rate, "learning_rate", 0.0, low_open=True)
        check_float(self.subsample, "subsample", 0.0, 1.0, low_open=True)
        check_float(self.colsample_bytree, "colsample_bytree", 0.0, 1.0, low_open=True)
        check_int(self.n_iter_no_change, "n_iter_no_change", 1)
        check_float(self.tol, "tol", 0.0)
        check_choice(self.criterion, "criterion", set(BOOSTING_CRITERIA))
        check_choice(self.multi_strategy, "multi_strategy",
                     {"one_output_per_tree", "multi_output_tree"})
        if self.validation_fraction is not None:
            check_float(self.validation_fraction, "validation_fraction", 0.0, 1.0, low_open=True)
        if self.early_stopping not in ("auto", True, False):
            raise ValueError(f"early_stopping must be 'auto', True or False, got {self.early_stopping!r}.")
        if self.extra_trees not in (True, False):
            raise ValueError(f"extra_trees must be True or False, got {self.extra_trees!r}.")
        max_depth = check_int(self.max_depth, "max_depth", 1, allow_none=True)
        lossguide = check_choice(self.grow_policy, "grow_policy", set(GROW_POLICIES)) == "lossguide"
        max_leaf_nodes = check_int(self.max_leaf_nodes, "max_leaf_nodes", 2, allow_none=True)
        if lossguide and max_leaf_nodes is None:
            max_leaf_nodes = LOSSGUIDE_LEAVES
        return GrowthParams(
            max_depth=UNLIMITED_DEPTH if max_depth is None else max_depth,
            min_samples_leaf=check_int(self.min_samples_leaf, "min_samples_leaf", 1),
            min_weight_leaf=check_float(self.min_child_weight, "min_child_weight", 0.0),
            max_leaf_nodes=max_leaf_nodes or 0, best_first=lossguide,
            reg_lambda=check_float(self.reg_lambda, "reg_lambda", 0.0),
            reg_alpha=check_float(self.reg_alpha, "reg_alpha", 0.0),
            min_split_gain=check_float(self.gamma, "gamma", 0.0),
            categorical=self._categorical_search(),
            random_thresholds=bool(self.extra_trees))

    def _categorical_search(self):
        """LightGBM's categorical search (growth.params.categorical_search);
        None (CART's exact search) with criterion="friedman_mse", whose
        splits are least squares on the residuals."""
        search = categorical_search(self.categorical_search, self.cat_smooth, self.cat_l2,
                                    self.min_data_per_group, self.max_cat_threshold,
                                    self.max_cat_to_onehot)
        return search if self.criterion == "newton" else None

    def _constraints(self, data, n_outputs):
        """TreeConstraints from monotonic_cst and interaction_cst (None if unset)."""
        n_features = data.X_binned.shape[1]
        monotonic = check_monotonic_cst(self.monotonic_cst, n_features,
                                        getattr(self, "feature_names_in_", None),
                                        data.is_categorical)
        if monotonic is not None and (n_outputs > 1
                                      or self.multi_strategy != "one_output_per_tree"):
            raise ValueError("monotonic_cst is not supported for multiclass classification "
                             "(as in scikit-learn); leave it None or fit a binary model.")
        if monotonic is not None and self.criterion != "newton":
            raise ValueError(f"monotonic_cst needs criterion='newton' (criterion="
                             f"{self.criterion!r} recomputes the leaves without the bounds).")
        groups = check_interaction_cst(self.interaction_cst, n_features)
        if monotonic is None and groups is None:
            return None
        return TreeConstraints(monotonic, groups)

    def _scorer(self):
        if isinstance(self.scoring, str) and self.scoring == "loss":
            return None
        if callable(self.scoring):
            return self.scoring
        from sklearn.metrics import get_scorer
        return get_scorer(self.scoring)

    # ------------------------------------------------------------------- fit
    def fit(self, X, y, sample_weight=None, eval_set=None):
        """Fit ``n_estimators`` rounds (fewer with early stopping).

        X (n_samples, n_features); y (n_samples,); sample_weight (n_samples,);
        eval_set: ``(X_val, y_val)`` or ``(X_val, y_val, sample_weight_val)``
        (or a list holding one such tuple): validation data scored every
        round, used for early stopping instead of a ``validation_fraction``
        split.
        """
        growth = self._growth_params()
        data, warm = training_data(self, X, sample_weight)
        n_samples = data.X_binned.shape[0]
        y = self._encode_targets(_one_column_y(y, n_samples), fitting=not warm)
        weight = check_sample_weight(sample_weight, n_samples) * self._weight_factor(y)
        check_boosting_range(self._gradient_magnitude(y), weight,
                             "sample_weight" if self._losses == CLASSIFICATION_LOSSES
                             else "y or sample_weight")
        early = self.early_stopping is True or (self.early_stopping == "auto" and (
            eval_set is not None or n_samples > _AUTO_EARLY_STOPPING_ROWS))
        train, validation = self._train_and_validation(data, y, weight, eval_set, early)
        if not warm:
            self._start(train)
        elif self.n_estimators < self.n_iter_:
            raise ValueError(f"n_estimators={self.n_estimators} must be larger or equal to "
                             f"n_iter_={self.n_iter_} when warm_start==True.")
        growth.constraints = self._constraints(data, self._loss.n_outputs)
        rows = self._make_rows(*train, lean=self._blocks_for(train[0]) and (
            type(self._loss).refit_leaves is Loss.refit_leaves))
        validation = self._make_rows(*validation) if validation else None
        del train, y, weight    # lean rows hold neither targets nor unit weights
        self._boost(rows, validation, growth, early)
        return self

    def _train_and_validation(self, data, y, weight, eval_set, early):
        """((data, y, weight) of the training rows, same for validation or None)."""
        if eval_set is not None:
            return (data, y, weight), self._eval_rows(eval_set)
        if not early or self.validation_fraction is None:
            return (data, y, weight), None
        strata = y if self._is_classifier() else None
        train, held_out = split_rows(y.shape[0], self.validation_fraction,
                                     tree_rng(self._seed, 0, _SPLIT_STREAM), strata)
        return ((data.take_rows(self._backend, train), y[train], weight[train]),
                (data.take_rows(self._backend, held_out), y[held_out], weight[held_out]))

    def _eval_rows(self, eval_set):
        eval_set = checked_eval_set(eval_set)
        data = self._bin_new_data(eval_set[0])
        n_samples = data.X_binned.shape[0]
        y = self._encode_eval_targets(_one_column_y(eval_set[1], n_samples))
        weight = check_sample_weight(eval_set[2] if len(eval_set) == 3 else None, n_samples)
        return data, y, weight * self._weight_factor(y)

    def _start(self, train):
        """Fresh fit: loss, baseline raw score from the training rows, no trees."""
        self._loss = self._make_loss()
        self._baseline = self._initial_raw(train)
        k = self._loss.n_outputs
        per_tree = [(0, k)] if self.multi_strategy == "multi_output_tree" else [
            (j, j + 1) for j in range(k)]
        self._groups = per_tree
        self.n_trees_per_iteration_ = len(per_tree)
        self._trees = []
        self._scores = {"train": [], "validation": []}
        self.n_iter_ = 0

    def _initial_raw(self, train):
        """The baseline raw scores float64 (K,) of the training rows."""
        _, y, weight = train
        return self._loss.init_raw(self._loss.targets(np, y), weight)

    def _make_loss(self):
        """The Loss of ``loss``: a name, or a callable custom objective."""
        n_classes = getattr(self, "n_classes_", None)
        if callable(self.loss):
            return CustomObjective(self.loss, make_loss(self._losses[0], n_classes))
        return make_loss(self.loss, n_classes, getattr(self, "alpha", None))

    def _make_rows(self, data, y, weight, lean=False):
        """_Rows of binned rows ``data``, labels ``y`` and weights; ``lean``:
        the targets made a block at a time, unit weights not held."""
        backend = self._backend
        raw = next(self._raw_rounds(data.X_binned, staged=False))
        if not lean:
            return _Rows(data, self._loss.rows_targets(backend, y), backend.asarray(weight),
                         raw, y, weight)
        if self.subsample >= 1 and bool(np.all(weight == 1.0)):
            weight = None
        if self._is_classifier():   # class codes in the narrowest integers (uint8 mostly)
            y = y.astype(np.min_scalar_type(int(y.max(initial=0))))
        return _Rows(data, None, weight, raw, y, weight,
                     lambda labels: self._loss.rows_targets(backend, labels))

    def _boost(self, train, validation, growth, early):
        """Rounds n_iter_ .. n_estimators-1 (stopping early when asked).

        The training loss of the raw scores a round starts from comes with
        that round's gradients (they share the work); it is computed on its
        own only where it is needed at once (early stopping on the training
        loss, progress output) and after the last round."""
        eager = bool(self.verbose) or (early and validation is None)
        if not self._trees:
            self._record_scores(train, validation, eager)
        progress = Progress(self.n_estimators - self.n_iter_, self.verbose, type(self).__name__)
        pool = HistogramPool(self._backend)
        held = self._held_row_bytes(train, validation)
        # a round's statistics array and gradients, refilled by the next
        self._spare_stats = self._spare_gradients = None
        try:
            for it in range(self.n_iter_, self.n_estimators):
                self._round(it, train, validation, growth, pool, held)
                self.n_iter_ = it + 1
                self._record_scores(train, validation, eager)
                progress.step(**(self._latest_scores() if self.verbose else {}))
                watched = self._scores["validation" if validation else "train"]
                if early and should_stop(watched, self.n_iter_no_change, self.tol):
                    break
        finally:
            progress.close()
            del self._spare_stats, self._spare_gradients
        if self._scores["train"][-1] is None:
            self._scores["train"][-1] = self._train_score(train)
        self.train_score_ = np.asarray(self._scores["train"])
        self.validation_score_ = np.asarray(self._scores["validation"])

    def _held_row_bytes(self, train, validation):
        """Device bytes per training row that boosting keeps beside the
        trees (for the memory check): the per-row float64 arrays of a round,
        and the validation rows (binned X, targets, raw scores, weights;
        with a validation split, the binned X of all rows as well) spread
        over the training rows."""
        k, n_train = self._loss.n_outputs, train.raw.shape[0]
        held = 8 * (_ROW_FLOATS_PER_OUTPUT * k + _ROW_FLOATS)
        if validation is None:
            return held
        n_val, n_features = validation.data.X_binned.shape
        extra = n_val * (n_features + 8 * (2 * k + 1)) + (n_train + n_val) * n_features
        return held + -(-extra // n_train)

    def _round(self, it, train, validation, growth, pool, held_row_bytes):
        """Grow this round's tree(s), their histograms in ``pool``, and update
        raw scores in place (``held_row_bytes``: for the memory check)."""
        backend, loss = self._backend, self._loss
        xp = backend.xp
        rng = LazyTreeRng(self._seed, it, _ROUND_STREAM)
        w = train.w * self._row_mask(rng, train) if self.subsample < 1 else train.w
        unit = self.subsample >= 1 and train.unit_weights
        refill = xp is np             # host arrays, reused next round
        blocks = self._statistics_in_blocks(train)
        if blocks:
            block_stats = self._block_statistics(train, w, unit)
        else:
            g, h, pointwise = loss.gradients_and_pointwise(xp, train.y, train.raw,
                                                           None if unit else w,
                                                           out=self._spare_gradients)
            if self._scores["train"][-1] is None:
                self._scores["train"][-1] = loss.score_of_pointwise(xp, train.y, pointwise,
                                                                    None if unit else train.w)
        for start, stop in self._groups:
            treeboost = self.criterion != "newton"
            if blocks:
                stats = block_stats
            else:
                g_k, h_k = g[:, start:stop], h[:, start:stop]
                split_h = weight_hessians(xp, w, stop - start) if treeboost else h_k
                stats = newton_statistics(g_k, split_h, w, xp, out=self._spare_stats)
            tree, positions = self._grow(train.data, stats, growth, rng, pool, held_row_bytes)
            self._spare_stats = stats.stats if refill else None
            if treeboost:
                set_newton_values(xp, tree, positions, g_k, h_k, growth, loss)
            if train.y is not None:     # else a loss without refit (fit)
                loss.refit_leaves(xp, tree, positions, train.y, train.raw, w)
            tree.value *= self.learning_rate
            backend.add_node_values(backend.asarray(tree.value[:, :, 0]), positions, train.raw,
                                    start)
            if validation is not None:
                add_tree_values(backend, validation.data.X_binned, [tree], [start],
                                validation.raw)
            self._trees.append(tree)
        if refill and not blocks:
            self._spare_gradients = (g, h, pointwise)

    def _statistics_in_blocks(self, train):
        """Whether this round's statistics of ``train`` are built in blocks
        (:meth:`_blocks_for`)."""
        return self._blocks_for(train.data)

    def _blocks_for(self, data):
        """Whether this round's statistics are built a block of rows at a
        time (:func:`gputree.criteria.newton_statistics_in_blocks`): lean
        training rows (a Dataset's) on the host, a row-wise loss, one tree
        per round, the Newton criterion: the whole float64 gradients and
        hessians (16 bytes a row) are never held, for one more gradient
        pass (the scale needs every row's first)."""
        loss = self._loss
        return (data.lean and self._backend.xp is np and loss.rowwise
                and self.criterion == "newton" and len(self._groups) == 1
                and data.X_binned.shape[0] > NEWTON_BLOCK_ROWS)

    def _block_statistics(self, train, w, unit):
        """Statistics of the training rows, their gradients made a block of
        rows at a time (weights ``w``; ``unit``: all one, not multiplied);
        the training score of the raw scores, when due, from the same blocks'
        pointwise losses (:class:`gputree.fixed_point.BlockOrderFreeSum`:
        Loss.score_of_pointwise's order-free sums, bit for bit)."""
        loss, n_rows = self._loss, train.raw.shape[0]
        total = BlockOrderFreeSum(n_rows) if self._scores["train"][-1] is None else None
        block_out = [None]

        def block_gradients(start, stop, first):
            g, h, p = loss.gradients_and_pointwise(
                np, train.targets(start, stop), train.raw[start:stop],
                None if unit else w[start:stop], out=block_out[0])
            block_out[0] = (g, h, p)
            if total is not None:
                weighted = p if unit else p * train.w[start:stop]
                (total.see if first else total.add)(weighted)
            return g, h, train.weights(start, stop) if w is None else w[start:stop]

        # every weight one: the histograms count the rows themselves where
        # the backend can (no count channel of ones: 8 bytes a row)
        count = not (unit and self._backend.implicit_count_channel)
        stats = newton_statistics_in_blocks(block_gradients, n_rows, 1, out=self._spare_stats,
                                            block_rows=NEWTON_BLOCK_ROWS, count=count)
        if total is not None:
            self._scores["train"][-1] = _block_score(total, train, unit)
        return stats

    def _block_train_score(self, train):
        """The training score (:meth:`_train_score`) of lean rows, their
        pointwise losses made a block of rows at a time, summed as
        Loss.score sums them (bit for bit): no whole-row temporaries."""
        n_rows, unit = train.raw.shape[0], train.unit_weights
        total = BlockOrderFreeSum(n_rows)
        for step in (total.see, total.add):     # the scale of every block's, then sums
            for start in range(0, n_rows, NEWTON_BLOCK_ROWS):
                stop = min(n_rows, start + NEWTON_BLOCK_ROWS)
                p = self._loss.pointwise(np, train.targets(start, stop), train.raw[start:stop])
                step(p if unit else p * train.w[start:stop])
        return _block_score(total, train, unit)

    def _row_mask(self, rng, rows):
        """float64 (n,) on the device: 1 for round(subsample * n) of the
        ``rows`` (a _Rows) drawn without replacement, else 0 (drawn on the
        host, copied as uint8)."""
        n_samples = rows.raw.shape[0]
        mask = np.zeros(n_samples, dtype=np.uint8)
        mask[subsample_rows(rng, n_samples, self.subsample)] = 1
        return self._backend.upload(mask).astype(np.float64)

    def _grow(self, data, stats, growth, rng, pool, held_row_bytes):
        return grow_on_columns(self._backend, data, stats, growth, rng, pool, held_row_bytes,
                               self.colsample_bytree)

    def _record_scores(self, train, validation, eager):
        """Append this round's scores; the training one stays None (filled in
        by the next round's gradients) unless ``eager``."""
        self._scores["train"].append(self._train_score(train) if eager else None)
        if validation is not None:
            self._scores["validation"].append(self._validation_score(validation))

    def _train_score(self, train):
        """The loss's score of the training rows' current raw scores."""
        if train.y is None:
            return self._block_train_score(train)
        return self._loss.score(self._backend.xp, train.y, train.raw, train.w)

    def _validation_score(self, rows):
        if self.eval_metric is not None:
            raw = np.asarray(self._backend.to_host(rows.raw))
            return metric_score(self.eval_metric, rows.labels.astype(float),
                                self._metric_predictions(raw), rows.w_host)
        scorer = self._scorer()
        if scorer is None:
            return self._loss.score(self._backend.xp, rows.y, rows.raw, rows.w)
        raw = _RawScores(np.array(self._backend.to_host(rows.raw), copy=True))
        return float(scorer(self, raw, self._labels(rows.labels), sample_weight=rows.w_host))

    def _metric_predictions(self, raw):
        """eval_metric's y_pred from host raw scores (n, K): see
        :mod:`gputree.estimators.custom_objective`."""
        if callable(self.loss):
            return raw[:, 0] if raw.shape[1] == 1 else raw
        predicted = self._loss.predict(np, raw)
        return predicted[:, -1] if predicted.shape[1] <= 2 else predicted

    def _latest_scores(self):
        scores = {"train_loss": -self._scores["train"][-1]}
        if self._scores["validation"]:
            last = self._scores["validation"][-1]
            scores.update({"validation_loss": -last}
                          if self._scorer() is None and self.eval_metric is None
                          else {"validation_score": last})
        return scores

    # ------------------------------------------------------------ prediction
    def _trees_for_prediction(self):
        return self._trees

    def _raw_rounds(self, X_binned, staged):
        """Device raw scores (n, K) of binned rows: after every round when
        ``staged``, else once with all rounds. The same array is updated in
        place between yields."""
        backend = self._backend
        if not staged:
            yield self._raw_model().on_device(backend, X_binned)
            return
        raw = BoostedScores([], [], self._baseline).on_device(backend, X_binned)
        per_round = len(self._groups)
        columns = self._tree_columns()
        for first in range(0, len(self._trees), per_round):
            add_tree_values(backend, X_binned, self._trees[first:first + per_round],
                            columns[first:first + per_round], raw)
            yield raw

    def _tree_columns(self):
        """First raw-score column each tree adds to (host ints, tree order)."""
        per_round = len(self._groups)
        return [self._groups[t % per_round][0] for t in range(len(self._trees))]

    def _contribution_layout(self):
        return self._trees, self._tree_columns(), 1.0, np.asarray(self._baseline, np.float64)

    def _raw_model(self):
        return BoostedScores(self._trees, self._tree_columns(), self._baseline)

    def _raw_predict(self, X):
        """Host raw scores (n, K) of X."""
        if isinstance(X, _RawScores):
            return X.raw
        data = self._bin_new_data(X)      # checks it is fitted first
        return self._raw_model()(self._backend, data)

    def _staged_raw(self, X):
        """Host raw scores (n, K) of X after each round."""
        for raw in self._raw_rounds(self._bin_new_data(X).X_binned, staged=True):
            yield np.array(self._backend.to_host(raw), copy=True)

    @property
    def feature_importances_(self):
        """Total split gain per feature over all trees, normalised to sum to 1."""
        self._check_fitted()
        total = np.zeros(self.n_features_in_)
        for tree in self._trees:
            internal = tree.feature >= 0
            total += np.bincount(tree.feature[internal], weights=tree.gain[internal],
                                 minlength=self.n_features_in_)
        return total / total.sum() if total.sum() > 0 else total

    def _is_classifier(self):
        return False

    def _weight_factor(self, y):
        return 1.0

    def _labels(self, y):
        return y

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        return tags


@register_estimator
class GradientBoostingClassifier(ClassifierMixin, _BaseGradientBoosting):
    """Gradient-boosted trees for classification (binary log-loss or softmax).

    Histogram GBDT with level-wise trees (XGBoost-style parameters): leaf
    values are Newton steps ``sum(y - p) / (sum(p (1 - p)) + reg_lambda)``
    times ``learning_rate``; ``gamma`` is the minimum split gain,
    ``min_child_weight`` the minimum hessian sum of a child, ``subsample``
    the fraction of rows drawn (without replacement) per round,
    ``colsample_bytree`` the fraction of features per tree. Multiclass grows
    one tree per class per round, or one multi-output tree per round with
    ``multi_strategy="multi_output_tree"``. Early stopping: see the module
    docstring; ``early_stopping="auto"`` turns it on for more than 10,000
    rows or when ``eval_set`` is given. ``device``: "auto", "cpu", "cuda",
    "cuda-sim".

    Controls as in XGBoost / LightGBM / scikit-learn: ``reg_alpha`` (L1 on
    leaf values: G is soft-thresholded in the gain and the leaf value
    ``-T(G) / (H + reg_lambda)``, as XGBoost); ``monotonic_cst`` (one sign
    -1/0/1 per feature, or a dict; +1 means the prediction, the probability
    of ``classes_[1]`` for classifiers, never decreases with the feature;
    not for multiclass) and ``interaction_cst`` (scikit-learn's format:
    "pairwise", "no_interactions" or a list of sets of feature indices), see
    :mod:`gputree.growth.constraints`; ``loss`` may be a callable custom objective
    and ``eval_metric`` a callable metric for early stopping (LightGBM's
    conventions, see :mod:`gputree.estimators.custom_objective`); ``n_jobs``: CPU
    threads of fit and predict (never changes results). ``criterion``:
    "newton" (splits by the second-order gain) or "friedman_mse" (equal:
    "squared_error"): Friedman's TreeBoost, as scikit-learn's
    ``GradientBoostingClassifier``: splits by least squares on the residuals
    ``y - p``, leaves the Newton step (with ``reg_lambda=0``, Friedman's
    ``sum(y - p) / sum(p (1 - p))``, which is also what the default
    criterion's leaves are), see :mod:`gputree.estimators.treeboost`.
    ``extra_trees=True`` (LightGBM's option): each feature of a node is
    split at one threshold drawn at random between the node's lowest and
    highest bins holding rows (a categorical one at one random cut of its
    sorted categories), the best of those splits taken, as
    :class:`gputree.ExtraTreeClassifier` splits
    (:mod:`gputree.backends.node_features`).
    ``grow_policy`` (XGBoost's names): ``"depthwise"`` grows the trees
    level by level (``max_leaf_nodes``: the largest gains of each level while
    the budget lasts); ``"lossguide"`` grows them best first, LightGBM's
    leaf-wise growth: the leaf with the largest gain splits next, until
    ``max_leaf_nodes`` leaves (None: 31, LightGBM's ``num_leaves``);
    ``max_depth`` still bounds the depth (None: unbounded, LightGBM's -1).

    Categorical features (``categorical_features``, pandas ``category``
    columns) hold up to 65,535 categories. Their splits send a subset of
    the categories left, found as LightGBM finds them (criterion "newton"):
    categories of at least ``cat_smooth`` rows in the node sorted by
    ``G / (H + cat_smooth)``, prefixes of that order of at most
    ``max_cat_threshold`` categories scanned from both ends, each adding at
    least ``min_data_per_group`` rows, the children scored with
    ``reg_lambda + cat_l2``; one category against the rest for features of
    at most ``max_cat_to_onehot`` categories. ``categorical_search``:
    "auto" (that search for features of more than 255 categories, the exact
    sorted-prefix search of the trees for the others, as before such
    features existed), "lightgbm" (for all) or "exact" (for none; rare
    categories then overfit).

    Attributes: ``classes_``, ``n_iter_``, ``n_trees_per_iteration_``,
    ``train_score_`` (``-loss`` on the training rows, before the first round
    and after each), ``validation_score_`` (``scoring`` on the validation
    rows; empty without validation data), ``feature_importances_`` (gain).
    """

    _losses = CLASSIFICATION_LOSSES
    _model_attributes = {**CLASS_ATTRIBUTES, **_BaseGradientBoosting._model_attributes}

    def __init__(self, loss="log_loss", learning_rate=0.1, n_estimators=100, max_depth=6,
                 max_leaf_nodes=None, min_samples_leaf=20, min_child_weight=1e-3,
                 reg_lambda=1.0, gamma=0.0, subsample=1.0, colsample_bytree=1.0,
                 max_bins=255, categorical_features=None, early_stopping="auto",
                 scoring="loss", validation_fraction=0.1, n_iter_no_change=10, tol=1e-7,
                 multi_strategy="one_output_per_tree", class_weight=None, warm_start=False,
                 random_state=None, verbose=0, device="auto", reg_alpha=0.0,
                 monotonic_cst=None, interaction_cst=None, eval_metric=None, n_jobs=None,
                 criterion="newton",
                 categorical_search="auto", cat_smooth=10.0, cat_l2=10.0, min_data_per_group=100,
                 max_cat_threshold=32, max_cat_to_onehot=4, extra_trees=False,
                 grow_policy="depthwise"):
        set_params_from(self, locals())

    def _gradient_magnitude(self, y):
        """Log-loss gradients per unit weight are at most 1."""
        return 1.0

    def _encode_targets(self, y, fitting):
        codes, classes, n_classes = encode_labels(y)
        if fitting:
            if n_classes[0] < 2:
                raise ValueError("GradientBoostingClassifier needs samples of at least 2 "
                                 f"classes; y has only one class ({classes[0][0]!r}).")
            self.classes_, self.n_classes_ = classes[0], n_classes[0]
        elif not np.array_equal(classes[0], self.classes_):
            raise ValueError(f"warm_start needs the same classes as before ({self.classes_}); "
                             f"y has {classes[0]}.")
        return codes[:, 0]

    def _encode_eval_targets(self, y):
        codes = np.clip(np.searchsorted(self.classes_, y), 0, self.n_classes_ - 1)
        unknown = self.classes_[codes] != y
        if np.any(unknown):
            raise ValueError(f"eval_set has labels not seen in y: {np.unique(y[unknown])[:5]}.")
        return codes

    def _weight_factor(self, y):
        return class_weights(self.class_weight, y[:, None], [self.classes_])

    def _is_classifier(self):
        return True

    def _labels(self, y):
        return self.classes_[y]

    def _outputs(self):
        return BoostedClassOutputs(self._loss, self.classes_)

    def _decision(self, raw):
        return self._outputs().decision_function(raw)

    def _proba(self, raw):
        return self._outputs().predict_proba(raw)

    def _predict_labels(self, raw):
        return self._outputs().predict(raw)

    @returns_input_kind
    def decision_function(self, X):
        """Raw scores: log-odds (n_samples,) for two classes, else logits
        (n_samples, n_classes)."""
        return self._decision(self._raw_predict(X))

    @returns_input_kind
    def predict_proba(self, X):
        """Class probabilities, float64 (n_samples, n_classes)."""
        return self._proba(self._raw_predict(X))

    @with_pred_contrib
    @returns_input_kind
    def predict(self, X):
        """Most probable class of every row."""
        return self._predict_labels(self._raw_predict(X))

    @returns_input_kind
    def staged_decision_function(self, X):
        """decision_function after each round (a generator)."""
        return map(self._decision, self._staged_raw(X))

    @returns_input_kind
    def staged_predict_proba(self, X):
        """predict_proba after each round (a generator)."""
        return map(self._proba, self._staged_raw(X))

    @returns_input_kind
    def staged_predict(self, X):
        """predict after each round (a generator)."""
        return map(self._predict_labels, self._staged_raw(X))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = True
        return tags


class _OneOutputBoosting(_BaseGradientBoosting):
    """Boosting whose prediction is one value per row, the loss's inverse
    link of the raw score: regression (the mean) and ranking (the score)."""

    def _outputs(self):
        return BoostedValueOutputs(self._loss)

    def _one_output(self, raw):
        return self._outputs().predict(raw)

    @with_pred_contrib
    @returns_input_kind
    def predict(self, X):
        """Predictions, float64 (n_samples,): the predicted mean of a
        regressor, the ranking score of a ranker (higher ranks first)."""
        return self._one_output(self._raw_predict(X))

    @returns_input_kind
    def staged_predict(self, X):
        """predict after each round (a generator)."""
        return map(self._one_output, self._staged_raw(X))


@register_estimator
class GradientBoostingRegressor(RegressorMixin, _OneOutputBoosting):
    """Gradient-boosted trees for regression: ``loss`` "squared_error",
    "absolute_error" (trees grown on the gradient's sign, leaf values refit to
    the median residual), "quantile" (the ``alpha``-quantile: leaves refit to
    the weighted ``alpha``-quantile of their residuals), "huber" (delta the
    ``alpha``-quantile of |residual| each round; leaves refit by Friedman's
    step, as scikit-learn's GradientBoostingRegressor), "poisson" (log link;
    predictions are positive) or a callable custom objective.
    Other parameters, early stopping and attributes as in
    :class:`GradientBoostingClassifier`.
    """

    _losses = tuple(REGRESSION_LOSSES)

    def __init__(self, loss="squared_error", learning_rate=0.1, n_estimators=100, max_depth=6,
                 max_leaf_nodes=None, min_samples_leaf=20, min_child_weight=1e-3,
                 reg_lambda=1.0, gamma=0.0, subsample=1.0, colsample_bytree=1.0,
                 max_bins=255, categorical_features=None, early_stopping="auto",
                 scoring="loss", validation_fraction=0.1, n_iter_no_change=10, tol=1e-7,
                 warm_start=False, random_state=None, verbose=0, device="auto", alpha=0.9,
                 reg_alpha=0.0, monotonic_cst=None, interaction_cst=None, eval_metric=None,
                 n_jobs=None, criterion="newton",
                 categorical_search="auto", cat_smooth=10.0, cat_l2=10.0, min_data_per_group=100,
                 max_cat_threshold=32, max_cat_to_onehot=4, extra_trees=False,
                 grow_policy="depthwise"):
        set_params_from(self, locals())

    def _gradient_magnitude(self, y):
        """About the largest |gradient| per unit weight: residuals in y's
        units (poisson's baseline mean is at least float64's eps); signs (1)
        for absolute error."""
        if self.loss == "absolute_error":
            return 1.0
        magnitude = float(np.max(np.abs(y))) or 1.0
        return max(magnitude, np.finfo(np.float64).eps) if self.loss == "poisson" else magnitude

    def _encode_targets(self, y, fitting):
        y = as_float_targets(y)
        if self.loss == "poisson":
            check_poisson_targets(y[:, None])
        return y

    def _encode_eval_targets(self, y):
        return as_float_targets(y)
