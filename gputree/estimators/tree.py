"""Single decision trees with the scikit-learn estimator API:
``DecisionTreeClassifier`` and ``DecisionTreeRegressor``."""
import numpy as np

from .._arrays import returns_input_kind
from .._compat import ClassifierMixin, RegressorMixin
from ..backends import devmath
from ..criteria import CLASSIFICATION_CRITERIA, REGRESSION_CRITERIA, SQUARED_ERROR
from ..data.validation import check_choice, check_float, check_int, check_y
from ..explain import with_pred_contrib
from ..growth.grower import grow
from ..growth.median import grow_absolute_error
from ..growth.multiway import check_multiway, grow_multiway
from ..growth.pruning import PRUNING_RISKS, prune, pruning_path
from ..growth.surrogates import fit_surrogates, surrogate_importances
from ..io.sklearn_tree import SklearnTree
from ..model import register_estimator, saved_int
from ..tree import decision_path_indicator
from .base import BaseTreeModel, set_params_from
from .tree_params import (SPLITTERS, growth_params, squared_error_alias, tree_random_streams,
                          weight_total)
from .importances import impurity_importances, normalised, split_improvements
from .prediction import ClassOutputs, TreeValues, ValueOutputs
from .targets import (CLASS_ATTRIBUTES, ClassTargets, RegressionTargets, as_float_targets,
                      check_poisson_targets)


class _BaseDecisionTree(BaseTreeModel):
    _criteria = {}
    _model_kind = "tree"
    _model_attributes = {"n_outputs_": saved_int(1), "max_features_": saved_int(1)}

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

    def _check_params(self):
        check_choice(self.criterion, "criterion", set(self._criteria))
        check_choice(self.splitter, "splitter", set(SPLITTERS))
        check_float(self.ccp_alpha, "ccp_alpha", 0.0)
        check_choice(self._ccp_risk(), "ccp_risk", set(PRUNING_RISKS))
        check_choice(self.missing_strategy, "missing_strategy", {"default", "surrogate"})
        check_int(self.n_surrogates, "n_surrogates", 0)

    def _ccp_risk(self):
        """The pruning risk: classifiers' ``ccp_risk``, impurity otherwise."""
        return getattr(self, "ccp_risk", "impurity")

    def _grower(self):
        """The function that grows the tree (:func:`gputree.growth.grower.grow`:
        best first with ``max_leaf_nodes``, else level by level)."""
        return grow

    def _statistics(self, targets, weight):
        """The Statistics of ``targets`` (:mod:`gputree.estimators.targets`)
        with the rows' weights float64 (n,)."""
        return targets.statistics(targets.weights(weight))

    def _fit(self, X, y, sample_weight):
        self._check_params()
        rng, seed = tree_random_streams(self.random_state)
        inputs = self._bin_training_data(X, seed, sample_weight)
        n_samples, n_features = inputs.data.X_binned.shape
        y = check_y(y, n_samples)
        weight = inputs.sample_weight
        targets = self._targets(y)
        stats = self._statistics(targets, weight)
        stats.stats = inputs.backend.asarray(stats.stats)
        growth = growth_params(self, n_samples, weight_total(weight), n_features)
        tree, _ = self._grower()(inputs.backend, inputs.data, stats, growth, rng)
        tree = prune(tree, self.ccp_alpha, self._ccp_risk())
        surrogates = None
        if self.missing_strategy == "surrogate":
            data = inputs.data
            surrogates = fit_surrogates(tree, np.asarray(inputs.backend.to_host(data.X_binned)),
                                        weight, data.n_bins_non_missing, data.is_categorical,
                                        data.missing_bin, self.n_surrogates)
        self._set_fitted(inputs, targets, growth, tree, surrogates)
        return self

    def _set_fitted(self, inputs, targets, growth, tree, surrogates=None):
        """The fitted attributes, changed together, only once the fit has
        succeeded: the inputs' bins and backend, the targets' classes, the
        (pruned) tree."""
        self._store_inputs(inputs)
        for name, value in targets.attributes().items():
            setattr(self, name, value)
        self.max_features_ = growth.max_features
        self.n_outputs_ = targets.n_outputs
        self._set_tree(tree)
        self.surrogates_ = surrogates

    def _trees_for_prediction(self):
        return [self.tree_.arrays]

    @returns_input_kind
    def apply(self, X):
        """Leaf id (int64 (n_samples,)) of every row."""
        return self._apply(X)

    def _raw_model(self):
        return TreeValues(self.tree_.arrays, getattr(self, "surrogates_", None))

    def _apply(self, X):
        data = self._bin_new_data(X)      # checks it is fitted first
        return self._raw_model().leaves(self._backend, data)

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
        see :func:`gputree.growth.surrogates.surrogate_importances`); needs
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
        data = self._bin_new_data(X)      # checks it is fitted first
        return self._raw_model()(self._backend, data)


@register_estimator
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
    else the majority side; ``surrogates_``, see :mod:`gputree.growth.surrogates`;
    shown by ``export_text``, saved by ``save_model``, credited by
    ``surrogate_importances_``).
    ``multiway=True`` (with ``criterion="entropy"``, ID3, or ``"gain_ratio"``,
    C4.5): a categorical feature splits a node into one child per category
    present there, with C4.5's at-least-average-gain rule for gain ratio;
    unknown categories and missing values go to the heaviest child (see
    :mod:`gputree.growth.multiway`; ``tree_`` shows each multiway split as a chain of
    binary nodes, :mod:`gputree.tree`).
    Missing values (NaN) are supported: each split
    learns which side they go to. With ``max_leaf_nodes`` the tree grows best
    first, as scikit-learn's: the leaf whose split removes the most impurity
    (weighted by its share of the samples) splits next
    (:mod:`gputree.growth.bestfirst`).
    """

    _criteria = CLASSIFICATION_CRITERIA
    _model_attributes = {**CLASS_ATTRIBUTES, **_BaseDecisionTree._model_attributes}

    def __init__(self, criterion="gini", max_depth=None, min_samples_split=2,
                 min_samples_leaf=1, min_weight_fraction_leaf=0.0, max_features=None,
                 random_state=None, max_leaf_nodes=None, min_impurity_decrease=0.0,
                 class_weight=None, ccp_alpha=0.0, max_bins=255,
                 categorical_features=None, device="auto", n_jobs=None, ccp_risk="impurity",
                 missing_strategy="default", n_surrogates=5, multiway=False, splitter="best"):
        set_params_from(self, locals())

    def fit(self, X, y, sample_weight=None):
        """X (n_samples, n_features); y (n_samples,) or (n_samples, n_outputs)
        labels of any type; sample_weight (n_samples,) >= 0."""
        return self._fit(X, y, sample_weight)

    def _grower(self):
        if not self.multiway:
            return grow
        check_multiway(self)
        return grow_multiway

    def _targets(self, y):
        return ClassTargets(y, self.class_weight, self.criterion)

    @returns_input_kind
    def predict_proba(self, X):
        """Class probabilities: float64 (n_samples, n_classes), or a list of
        such arrays (one per output) for multi-output y."""
        values = self._raw_values(X)     # checks it is fitted first
        return self._outputs().predict_proba(values)

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

    def _outputs(self):
        return ClassOutputs(self.classes_, self.n_classes_, self.n_outputs_)

    def _predict_values(self, values):
        """predict's answer for leaf values float64 (n, n_outputs, n_classes)."""
        return self._outputs().predict(values)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.target_tags.multi_output = True
        tags.classifier_tags.multi_class = True
        return tags


@register_estimator
class DecisionTreeRegressor(RegressorMixin, _BaseDecisionTree):
    """A regression tree grown level by level on binned features.

    Parameters follow scikit-learn's ``DecisionTreeRegressor`` (criteria
    "squared_error", "poisson" and "absolute_error": weighted-median leaves,
    splits by an exact search over the node's rows, :mod:`gputree.growth.median`,
    numerical features only) plus ``max_bins``,
    ``categorical_features``, ``device``, ``n_jobs``, ``missing_strategy`` and
    ``n_surrogates`` as in
    :class:`DecisionTreeClassifier`.
    """

    #: absolute_error's statistics are squared error's (counts, weights);
    #: its splits and leaves come from the targets (gputree.growth.median);
    #: "friedman_mse", deprecated, is squared_error (base.squared_error_alias)
    _criteria = {**REGRESSION_CRITERIA, "absolute_error": SQUARED_ERROR,
                 "friedman_mse": SQUARED_ERROR}

    def __init__(self, criterion="squared_error", max_depth=None, min_samples_split=2,
                 min_samples_leaf=1, min_weight_fraction_leaf=0.0, max_features=None,
                 random_state=None, max_leaf_nodes=None, min_impurity_decrease=0.0,
                 ccp_alpha=0.0, max_bins=255, categorical_features=None, device="auto",
                 n_jobs=None, missing_strategy="default", n_surrogates=5, splitter="best"):
        criterion = squared_error_alias(criterion)
        set_params_from(self, locals())

    def fit(self, X, y, sample_weight=None):
        """X (n_samples, n_features); y float (n_samples,) or (n_samples,
        n_outputs); sample_weight (n_samples,) >= 0."""
        if self.criterion == "poisson":
            # y's own requirement first, before its length against X's, as
            # scikit-learn orders the errors
            check_poisson_targets(np.atleast_1d(as_float_targets(y)), strictly=False)
        return self._fit(X, y, sample_weight)

    def _targets(self, y):
        return RegressionTargets(y, self._criteria[self.criterion],
                                 attach=self.criterion == "absolute_error")

    def _grower(self):
        if self.criterion == "absolute_error":
            return grow_absolute_error
        return super()._grower()

    @with_pred_contrib
    @returns_input_kind
    def predict(self, X):
        """float64 (n_samples,) or (n_samples, n_outputs)."""
        return self._predict_values(self._raw_values(X))

    def _outputs(self):
        return ValueOutputs(self.n_outputs_)

    def _predict_values(self, values):
        """predict's answer for leaf values float64 (n, n_outputs, 1)."""
        return self._outputs().predict(values)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.target_tags.multi_output = True
        return tags


