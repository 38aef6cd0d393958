"""Single decision trees with the scikit-learn estimator API:
``DecisionTreeClassifier`` and ``DecisionTreeRegressor``."""
import math
import numbers

import numpy as np

from ._compat import BaseEstimator, ClassifierMixin, NotFittedError, RegressorMixin
from ._threads import wrap_threaded_methods
from ._training import bin_training_data, bin_with, binning_seed, seed_from
from ._validation import (check_choice, check_float, check_int, check_random_state, check_y,
                          returns_input_kind)
from .backends import devmath
from .explain import with_pred_contrib
from .criteria import CLASSIFICATION_CRITERIA, REGRESSION_CRITERIA, POISSON, SQUARED_ERROR
from .grower import GrowthParams, grow_tree
from .median_splits import grow_absolute_error
from .multiway import check_multiway, grow_multiway
from .pruning import PRUNING_RISKS, prune, pruning_path
from .sklearn_tree import SklearnTree
from .surrogates import apply_surrogates, fit_surrogates, surrogate_importances
from .tree import concatenate_trees, decision_path_indicator

_UNLIMITED_DEPTH = 2 ** 31 - 2
def resolve_max_features(max_features, n_features):
    """Number of features tried per node (int >= 1)."""
    if max_features is None:
        return n_features
    if isinstance(max_features, str):
        check_choice(max_features, "max_features", {"sqrt", "log2"})
        root = math.sqrt if max_features == "sqrt" else math.log2
        return max(1, int(root(n_features)))
    if isinstance(max_features, numbers.Integral) and not isinstance(max_features, bool):
        return check_int(max_features, "max_features", 1, n_features)
    if isinstance(max_features, numbers.Real):
        fraction = check_float(max_features, "max_features", 0.0, 1.0, low_open=True)
        return max(1, int(fraction * n_features))
    raise TypeError(f"max_features must be None, 'sqrt', 'log2', an int or a float; got {max_features!r}.")


def resolve_count(value, name, n_samples, minimum, fraction_high=1.0):
    """Absolute sample count from an int or a fraction of n_samples."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return check_int(value, name, minimum)
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        fraction = check_float(value, name, 0.0, fraction_high, low_open=True)
        return max(minimum, int(math.ceil(fraction * n_samples)))
    raise TypeError(f"{name} must be an int or a float, got {value!r}.")


def growth_params(est, n_samples, total_weight, n_features):
    """GrowthParams from a tree-like estimator's public parameters."""
    max_depth = check_int(est.max_depth, "max_depth", 1, allow_none=True)
    max_leaf_nodes = check_int(est.max_leaf_nodes, "max_leaf_nodes", 2, allow_none=True)
    mwfl = check_float(est.min_weight_fraction_leaf, "min_weight_fraction_leaf", 0.0, 0.5)
    return GrowthParams(
        max_depth=_UNLIMITED_DEPTH if max_depth is None else max_depth,
        min_samples_split=resolve_count(est.min_samples_split, "min_samples_split", n_samples, 2),
        min_samples_leaf=resolve_count(est.min_samples_leaf, "min_samples_leaf", n_samples, 1,
                                       fraction_high=0.5),
        min_weight_leaf=mwfl * total_weight,
        min_impurity_decrease=check_float(est.min_impurity_decrease, "min_impurity_decrease", 0.0),
        max_features=resolve_max_features(est.max_features, n_features),
        max_leaf_nodes=max_leaf_nodes or 0)


class BaseTreeModel(BaseEstimator):
    """What every fitted tree model shares: the encoder and bins learned at fit,
    and turning new X into leaf ids on the fit's backend. Every subclass's
    fit and predict methods run under its ``n_jobs`` (:mod:`gputree._threads`)."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        wrap_threaded_methods(cls)

    def _check_fitted(self):
        if not hasattr(self, "_encoder"):
            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet. "
                                 "Call 'fit' with appropriate arguments before using this estimator.")

    def _bin_new_data(self, X):
        self._check_fitted()
        return bin_with(self._backend, self._bin_mapper,
                        self._encoder.transform(X, type(self).__name__,
                                                self._backend.device_xp))

    def _leaves(self, X, trees=None):
        """int32 (n_samples, n_trees) leaf ids (host) of X in ``trees``."""
        data = self._bin_new_data(X)
        backend = self._backend
        feature, bitset, left, roots = concatenate_trees(trees or self._trees_for_prediction())
        leaves = backend.predict_leaves(data.X_binned, backend.asarray(feature),
                                        backend.asarray(bitset), backend.asarray(left),
                                        backend.asarray(roots))
        return backend.to_host(leaves) - roots[None, :]

    def _bin_training_data(self, X, seed, sample_weight):
        """TrainingInputs of the training X: bins learned with ``seed``, X
        binned on the backend (:func:`gputree._training.bin_training_data`;
        gputree.dask learns them across a cluster instead)."""
        inputs, _ = bin_training_data(X, self.max_bins, self.categorical_features, self.device,
                                      seed, sample_weight)
        return inputs

    def _store_inputs(self, inputs):
        self._backend = inputs.backend
        self._encoder = inputs.encoder
        self._bin_mapper = inputs.bin_mapper
        self.n_features_in_ = inputs.encoder.n_features_in_
        if inputs.encoder.feature_names_in_ is not None:
            self.feature_names_in_ = inputs.encoder.feature_names_in_
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_

    #: fitted attributes besides trees and bins that a saved model keeps
    _model_attributes = ()

    def _restore(self, backend, encoder, mapper, trees):
        """Become fitted from a loaded model's parts (FittedModel.to_estimator);
        the ``_model_attributes`` are already set."""
        from ._training import TrainingInputs
        self._store_inputs(TrainingInputs(backend, encoder, mapper, None))
        self._trees = trees

    def _contribution_layout(self):
        """For TreeSHAP: (trees, first raw-score column of each, scale of
        their values, baseline float64 (width,)); here the mean of the trees."""
        trees = list(self._trees_for_prediction())
        return trees, [0] * len(trees), 1.0 / len(trees), np.zeros(trees[0].value[0].size)

    @property
    def model_(self):
        """The :class:`gputree.model.FittedModel` of this fitted estimator."""
        from .model import FittedModel
        return FittedModel.of(self)

    def save_model(self, path):
        """Write the fitted model to ``path`` as versioned JSON (see
        docs/model_schema.md); ``gputree.load_model(path)`` reads it back."""
        from .io.json import save_model
        save_model(self, path)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True       # scipy.sparse X: see gputree.sparse
        return tags

    def to_treelite(self):
        """The fitted model as a ``treelite.Model`` (see gputree.io.treelite)."""
        from .io.treelite import to_treelite
        return to_treelite(self)

    def __getstate__(self):
        state = self.__dict__.copy()
        if "_backend" in state:
            state["_backend"] = state["_backend"].name
        return state

    def __setstate__(self, state):
        from .backends import get_backend
        if isinstance(state.get("_backend"), str):
            state["_backend"] = get_backend(state["_backend"])
        self.__dict__.update(state)


class _BaseDecisionTree(BaseTreeModel):
    _criteria = {}
    _model_attributes = ("classes_", "n_classes_", "n_outputs_", "max_features_")

    def _restore(self, backend, encoder, mapper, trees):
        super()._restore(backend, encoder, mapper, trees)
        del self._trees
        if len(trees) != 1:
            raise ValueError(f"a {type(self).__name__} holds one tree, not {len(trees)}.")
        self._set_tree(trees[0])

    def _set_tree(self, tree):
        """``tree_``: the TreeArrays seen as scikit-learn's Tree."""
        n_classes = getattr(self, "n_classes_", [1] * self.n_outputs_)
        self.tree_ = SklearnTree(tree, self._bin_mapper, n_classes)

    def _check_common_params(self):
        check_choice(self.criterion, "criterion", set(self._criteria))
        check_float(self.ccp_alpha, "ccp_alpha", 0.0)
        check_choice(self._ccp_risk(), "ccp_risk", set(PRUNING_RISKS))
        check_choice(self.missing_strategy, "missing_strategy", {"default", "surrogate"})
        check_int(self.n_surrogates, "n_surrogates", 0)

    def _ccp_risk(self):
        """The pruning risk: classifiers' ``ccp_risk``, impurity otherwise."""
        return getattr(self, "ccp_risk", "impurity")

    def _grower(self):
        """The function that grows the tree (:func:`gputree.grower.grow_tree`)."""
        return grow_tree

    def _fit(self, X, y, sample_weight):
        self._check_common_params()
        rng = check_random_state(self.random_state)
        seed = binning_seed(self.random_state, seed_from(rng))
        inputs = self._bin_training_data(X, seed, sample_weight)
        n_samples, n_features = inputs.data.X_binned.shape
        y = check_y(y, n_samples)
        weight = inputs.sample_weight
        stats, target_attributes = self._statistics(y, weight)
        stats.stats = inputs.backend.asarray(stats.stats)
        growth = growth_params(self, n_samples, weight.sum(), n_features)
        tree, _ = self._grower()(inputs.backend, inputs.data, stats, growth, rng)
        tree = prune(tree, self.ccp_alpha, self._ccp_risk())
        surrogates = None
        if self.missing_strategy == "surrogate":
            data = inputs.data
            surrogates = fit_surrogates(tree, np.asarray(inputs.backend.to_host(data.X_binned)),
                                        weight, data.n_bins_non_missing, data.is_categorical,
                                        data.missing_bin, self.n_surrogates)
        # fitted attributes change together, only once the fit has succeeded
        self._store_inputs(inputs)
        for name, value in target_attributes.items():
            setattr(self, name, value)
        self.max_features_ = growth.max_features
        self.n_outputs_ = stats.n_outputs
        self._set_tree(tree)
        self.surrogates_ = surrogates
        return self

    def _trees_for_prediction(self):
        return [self.tree_.arrays]

    @returns_input_kind
    def apply(self, X):
        """Leaf id (int64 (n_samples,)) of every row."""
        return self._apply(X)

    def _apply(self, X):
        if getattr(self, "surrogates_", None) is not None:
            data = self._bin_new_data(X)
            return apply_surrogates(self.tree_.arrays, self.surrogates_,
                                    np.asarray(self._backend.to_host(data.X_binned)),
                                    data.missing_bin)
        return self._leaves(X)[:, 0].astype(np.int64)

    def decision_path(self, X):
        """CSR indicator (n_samples, n_nodes) of the nodes each row passes."""
        leaves = self._apply(X)
        return decision_path_indicator(self.tree_.arrays, leaves)

    def get_depth(self):
        self._check_fitted()
        return self.tree_.max_depth

    def get_n_leaves(self):
        self._check_fitted()
        return self.tree_.n_leaves

    @property
    def feature_importances_(self):
        """Normalised total impurity decrease (gain for boosting) per feature."""
        self._check_fitted()
        return impurity_importances(self.tree_.arrays, self.n_features_in_)

    @property
    def surrogate_importances_(self):
        """Normalised surrogate-aware importance (CART's variable importance,
        see :func:`gputree.surrogates.surrogate_importances`); needs
        ``missing_strategy="surrogate"``."""
        self._check_fitted()
        if getattr(self, "surrogates_", None) is None:
            raise AttributeError("surrogate_importances_ needs a tree fitted with "
                                 "missing_strategy='surrogate'; use feature_importances_.")
        internal, decrease = split_improvements(self.tree_.arrays)
        return normalised(surrogate_importances(self.tree_.arrays, self.surrogates_, internal,
                                                decrease, self.n_features_in_))

    def cost_complexity_pruning_path(self, X, y, sample_weight=None):
        """Bunch(ccp_alphas, impurities) of the fully grown tree's pruning path."""
        full = self._clone_unpruned().fit(X, y, sample_weight)
        alphas, impurities = pruning_path(full.tree_.arrays, self._ccp_risk())
        try:
            from sklearn.utils import Bunch
        except ImportError:  # pragma: no cover
            from types import SimpleNamespace as Bunch
        return Bunch(ccp_alphas=alphas, impurities=impurities)

    def _clone_unpruned(self):
        params = self.get_params()
        params["ccp_alpha"] = 0.0
        return type(self)(**params)

    def _raw_values(self, X):
        """float64 (n_samples, n_outputs, n_classes) leaf values of X."""
        leaves = self._apply(X)
        return self.tree_.value[leaves]


def split_improvements(tree):
    """(internal int64 (m,), decrease float64 (m,)): the split nodes and
    their weighted impurity decrease (split gain weighted by node weight for
    boosting trees)."""
    internal = np.flatnonzero(tree.feature >= 0)
    left = tree.left_child[internal]
    w, imp = tree.weighted_n_node_samples, tree.impurity
    decrease = w[internal] * imp[internal] - w[left] * imp[left] - w[left + 1] * imp[left + 1]
    if not np.any(decrease > 0):
        decrease = w[internal] * tree.gain[internal]
    return internal, decrease


def impurity_importances(tree, n_features):
    """float64 (n_features,) normalised weighted impurity decrease per feature
    (split gain weighted by node weight for boosting trees)."""
    internal, decrease = split_improvements(tree)
    return normalised(np.bincount(tree.feature[internal], weights=decrease,
                                  minlength=n_features))


def normalised(importances):
    """``importances`` (float64 (n_features,)) divided by their sum, when positive."""
    total = importances.sum()
    return importances / total if total > 0 else importances


class DecisionTreeClassifier(ClassifierMixin, _BaseDecisionTree):
    """A classification tree grown level by level on binned features.

    Parameters follow scikit-learn's ``DecisionTreeClassifier``; additionally
    ``criterion="gain_ratio"`` (C4.5), ``max_bins`` (non-missing bins per
    feature, 2..65535; 16-bit bin codes beyond 255), ``categorical_features`` (indices, names or a boolean
    mask; pandas ``category`` columns are detected) and ``device`` ("auto",
    "cpu", "cuda", "cuda-sim"), ``n_jobs`` (CPU threads of fit and predict;
    never changes results) and ``ccp_risk``: the risk r(t) of cost-complexity
    pruning, "impurity" (scikit-learn's choice) or "misclassification" (the
    error rate 1 - max p_k of Breiman et al.'s CART; ``impurities`` of
    ``cost_complexity_pruning_path`` are then total leaf risks).
    ``missing_strategy``: "default" (a row missing a split's feature goes the
    side learned for missing values) or "surrogate" (CART: the first of the
    split's ``n_surrogates`` ranked surrogate splits whose feature is present,
    else the majority side; ``surrogates_``, see :mod:`gputree.surrogates`;
    shown by ``export_text``, saved by ``save_model``, credited by
    ``surrogate_importances_``).
    ``multiway=True`` (with ``criterion="entropy"``, ID3, or ``"gain_ratio"``,
    C4.5): a categorical feature splits a node into one child per category
    present there, with C4.5's at-least-average-gain rule for gain ratio;
    unknown categories and missing values go to the heaviest child (see
    :mod:`gputree.multiway`; ``tree_`` shows each multiway split as a chain of
    binary nodes, :mod:`gputree.tree`).
    Missing values (NaN) are supported: each split
    learns which side they go to. ``max_leaf_nodes`` keeps the best-gain
    splits of each level until the budget is used (growth stays level-wise).
    """

    _criteria = CLASSIFICATION_CRITERIA

    def __init__(self, criterion="gini", max_depth=None, min_samples_split=2,
                 min_samples_leaf=1, min_weight_fraction_leaf=0.0, max_features=None,
                 random_state=None, max_leaf_nodes=None, min_impurity_decrease=0.0,
                 class_weight=None, ccp_alpha=0.0, max_bins=255,
                 categorical_features=None, device="auto", n_jobs=None, ccp_risk="impurity",
                 missing_strategy="default", n_surrogates=5, multiway=False):
        self.criterion = criterion
        self.multiway = multiway
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_weight_fraction_leaf = min_weight_fraction_leaf
        self.max_features = max_features
        self.random_state = random_state
        self.max_leaf_nodes = max_leaf_nodes
        self.min_impurity_decrease = min_impurity_decrease
        self.class_weight = class_weight
        self.ccp_alpha = ccp_alpha
        self.max_bins = max_bins
        self.categorical_features = categorical_features
        self.device = device
        self.n_jobs = n_jobs
        self.missing_strategy = missing_strategy
        self.n_surrogates = n_surrogates
        self.ccp_risk = ccp_risk

    def fit(self, X, y, sample_weight=None):
        """X (n_samples, n_features); y (n_samples,) or (n_samples, n_outputs)
        labels of any type; sample_weight (n_samples,) >= 0."""
        return self._fit(X, y, sample_weight)

    def _grower(self):
        if not self.multiway:
            return grow_tree
        check_multiway(self)
        return grow_multiway

    def _statistics(self, y, weight):
        """(Statistics, fitted attributes that describe the targets)."""
        y_encoded, classes, n_classes = encode_labels(y)
        weight = weight * class_weights(self.class_weight, y_encoded, classes)
        # a column vector y (n_samples, 1) is single-output, as in scikit-learn
        single = len(classes) == 1
        attributes = {"classes_": classes[0] if single else classes,
                      "n_classes_": n_classes[0] if single else n_classes}
        criterion = CLASSIFICATION_CRITERIA[self.criterion]
        return criterion.statistics(y_encoded, max(n_classes), weight, criterion), attributes

    @returns_input_kind
    def predict_proba(self, X):
        """Class probabilities: float64 (n_samples, n_classes), or a list of
        such arrays (one per output) for multi-output y."""
        values = self._raw_values(X)
        if self.n_outputs_ == 1:
            return values[:, 0, :self.n_classes_]
        return [values[:, o, :k] for o, k in enumerate(self.n_classes_)]

    @returns_input_kind
    def predict_log_proba(self, X):
        proba = self.predict_proba.__wrapped__(self, X)
        if isinstance(proba, list):
            return [devmath.apply("log", p) for p in proba]
        return devmath.apply("log", proba)

    @with_pred_contrib
    @returns_input_kind
    def predict(self, X):
        """Most probable class of every row ((n_samples,) or (n_samples, n_outputs))."""
        return self._predict_values(self._raw_values(X))

    def _predict_values(self, values):
        """predict's answer for leaf values float64 (n, n_outputs, n_classes)."""
        if self.n_outputs_ == 1:
            return self.classes_[np.argmax(values[:, 0, :self.n_classes_], axis=1)]
        return np.stack([self.classes_[o][np.argmax(values[:, o, :k], axis=1)]
                         for o, k in enumerate(self.n_classes_)], axis=1)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.target_tags.multi_output = True
        tags.classifier_tags.multi_class = True
        return tags


class DecisionTreeRegressor(RegressorMixin, _BaseDecisionTree):
    """A regression tree grown level by level on binned features.

    Parameters follow scikit-learn's ``DecisionTreeRegressor`` (criteria
    "squared_error", "poisson" and "absolute_error": weighted-median leaves,
    splits by an exact search over the node's rows, :mod:`gputree.median_splits`,
    numerical features only) plus ``max_bins``,
    ``categorical_features``, ``device``, ``n_jobs``, ``missing_strategy`` and
    ``n_surrogates`` as in
    :class:`DecisionTreeClassifier`.
    """

    #: absolute_error's statistics are squared error's (counts, weights);
    #: its splits and leaves come from the targets (gputree.median_splits)
    _criteria = {**REGRESSION_CRITERIA, "absolute_error": SQUARED_ERROR}

    def __init__(self, criterion="squared_error", max_depth=None, min_samples_split=2,
                 min_samples_leaf=1, min_weight_fraction_leaf=0.0, max_features=None,
                 random_state=None, max_leaf_nodes=None, min_impurity_decrease=0.0,
                 ccp_alpha=0.0, max_bins=255, categorical_features=None, device="auto",
                 n_jobs=None, missing_strategy="default", n_surrogates=5):
        self.criterion = criterion
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_weight_fraction_leaf = min_weight_fraction_leaf
        self.max_features = max_features
        self.random_state = random_state
        self.max_leaf_nodes = max_leaf_nodes
        self.min_impurity_decrease = min_impurity_decrease
        self.ccp_alpha = ccp_alpha
        self.max_bins = max_bins
        self.categorical_features = categorical_features
        self.device = device
        self.n_jobs = n_jobs
        self.missing_strategy = missing_strategy
        self.n_surrogates = n_surrogates

    def fit(self, X, y, sample_weight=None):
        """X (n_samples, n_features); y float (n_samples,) or (n_samples,
        n_outputs); sample_weight (n_samples,) >= 0."""
        return self._fit(X, y, sample_weight)

    def _statistics(self, y, weight):
        y2 = as_float_targets(y).reshape(y.shape[0], -1)
        criterion = self._criteria[self.criterion]
        if criterion == POISSON:
            check_poisson_targets(y2)
        stats = criterion.statistics(y2, weight, criterion)
        if self.criterion == "absolute_error":
            stats.targets = y2
        return stats, {}

    def _grower(self):
        if self.criterion == "absolute_error":
            return grow_absolute_error
        return super()._grower()

    @with_pred_contrib
    @returns_input_kind
    def predict(self, X):
        """float64 (n_samples,) or (n_samples, n_outputs)."""
        return self._predict_values(self._raw_values(X))

    def _predict_values(self, values):
        """predict's answer for leaf values float64 (n, n_outputs, 1)."""
        return values[:, 0, 0] if self.n_outputs_ == 1 else values[:, :, 0]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.target_tags.multi_output = True
        return tags


def as_float_targets(y):
    """Regression targets as float64, with a clear error for non-numbers."""
    try:
        y = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"y must hold numbers for regression: {exc}") from exc
    if not np.all(np.isfinite(y)):
        raise ValueError("y contains NaN or infinity; targets must be finite.")
    return y


def check_poisson_targets(y):
    if np.any(y < 0):
        raise ValueError("Some value(s) of y are negative which is not allowed for "
                         "Poisson regression (criterion='poisson').")
    if np.any(y.sum(axis=0) <= 0):
        raise ValueError("Sum of y is not strictly positive which is necessary for "
                         "Poisson regression (criterion='poisson').")


def encode_labels(y):
    """(int32 (n_samples, n_outputs) class indices, list of class arrays,
    list of class counts); rejects continuous targets."""
    y2 = y.reshape(y.shape[0], -1)
    if y2.dtype.kind == "f" and np.any(y2 != np.round(y2)):
        raise ValueError("Unknown label type: continuous. Classification needs discrete "
                         "labels; use DecisionTreeRegressor for a continuous y.")
    encoded = np.empty(y2.shape, dtype=np.int32)
    classes = []
    for o in range(y2.shape[1]):
        column = y2[:, o]
        if column.dtype == object:
            column = column.astype(str) if any(isinstance(v, str) for v in column) else column
        values, encoded[:, o] = np.unique(column, return_inverse=True)
        classes.append(values)
    return encoded, classes, [len(c) for c in classes]


def class_weights(class_weight, y_encoded, classes):
    """Per-row multiplier (float64 (n_samples,)) from class_weight."""
    n_samples, n_outputs = y_encoded.shape
    n_classes = [len(c) for c in classes]
    factor = np.ones(n_samples)
    if class_weight is None:
        return factor
    specs = class_weight if isinstance(class_weight, list) else [class_weight] * n_outputs
    if len(specs) != n_outputs:
        raise ValueError(f"class_weight is a list of {len(specs)} dicts but y has "
                         f"{n_outputs} outputs; give one dict per output.")
    for o, spec in enumerate(specs):
        counts = np.bincount(y_encoded[:, o], minlength=n_classes[o])
        if isinstance(spec, str):
            check_choice(spec, "class_weight", {"balanced"})
            per_class = n_samples / (n_classes[o] * np.maximum(counts, 1))
        elif isinstance(spec, dict):
            per_class = np.ones(n_classes[o])
            known = list(classes[o].tolist())
            for label, value in spec.items():
                if label not in known:
                    raise ValueError(f"class_weight names class {label!r}, which is not "
                                     f"in y (classes: {known}).")
                per_class[known.index(label)] = value
        else:
            raise TypeError(f"class_weight must be None, 'balanced', a dict or a list of "
                            f"dicts; got {spec!r}.")
        factor *= per_class[y_encoded[:, o]]
    return factor
