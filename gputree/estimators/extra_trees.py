"""Extremely randomized trees (Geurts, Ernst and Wehenkel, 2006) with
scikit-learn's API and defaults: the single trees ``ExtraTreeClassifier``
and ``ExtraTreeRegressor`` (``splitter="random"``) and their ensembles
``ExtraTreesClassifier`` and ``ExtraTreesRegressor`` (``bootstrap=False``).

At every node each tried feature gets one threshold drawn at random between
the node's lowest and highest bins holding rows, and the best of those
splits is taken (:mod:`gputree.backends.node_features`; the draws come from
the tree's RandomState on the host, so every device grows the same tree). A
categorical feature gets one random cut of its categories sorted by the
criterion's key (the order the best splitter scans). Everything else is the
decision tree's and the random forest's.
"""
from ..model import register_estimator
from .base import set_params_from
from .tree_params import squared_error_alias
from .forest import RandomForestClassifier, RandomForestRegressor
from .tree import DecisionTreeClassifier, DecisionTreeRegressor


@register_estimator
class ExtraTreeClassifier(DecisionTreeClassifier):
    """An extremely randomized classification tree: scikit-learn's
    ``ExtraTreeClassifier`` (``splitter="random"``, ``max_features="sqrt"``),
    otherwise :class:`gputree.DecisionTreeClassifier` (its extra parameters
    included; ``multiway=True`` needs ``splitter="best"``)."""

    def __init__(self, *, criterion="gini", splitter="random", max_depth=None,
                 min_samples_split=2, min_samples_leaf=1, min_weight_fraction_leaf=0.0,
                 max_features="sqrt", random_state=None, max_leaf_nodes=None,
                 min_impurity_decrease=0.0, class_weight=None, ccp_alpha=0.0, max_bins=255,
                 categorical_features=None, device="auto", n_jobs=None, ccp_risk="impurity",
                 missing_strategy="default", n_surrogates=5, multiway=False):
        set_params_from(self, locals())


@register_estimator
class ExtraTreeRegressor(DecisionTreeRegressor):
    """An extremely randomized regression tree: scikit-learn's
    ``ExtraTreeRegressor`` (``splitter="random"``, ``max_features=1.0``),
    otherwise :class:`gputree.DecisionTreeRegressor` (with
    ``criterion="absolute_error"`` the random threshold's split is scored by
    the exact median search)."""

    def __init__(self, *, criterion="squared_error", splitter="random", max_depth=None,
                 min_samples_split=2, min_samples_leaf=1, min_weight_fraction_leaf=0.0,
                 max_features=1.0, random_state=None, max_leaf_nodes=None,
                 min_impurity_decrease=0.0, ccp_alpha=0.0, max_bins=255,
                 categorical_features=None, device="auto", n_jobs=None,
                 missing_strategy="default", n_surrogates=5):
        criterion = squared_error_alias(criterion)
        set_params_from(self, locals())


@register_estimator
class ExtraTreesClassifier(RandomForestClassifier):
    """An ensemble of :class:`ExtraTreeClassifier`: scikit-learn's
    ``ExtraTreesClassifier`` (every tree on every row, ``bootstrap=False``;
    ``bootstrap=True`` draws rows as the random forest does), otherwise
    :class:`gputree.RandomForestClassifier`."""

    _tree_class = ExtraTreeClassifier
    #: the splitter of the trees (estimators.base.growth_params)
    _splitter = "random"

    def __init__(self, n_estimators=100, *, criterion="gini", max_depth=None,
                 min_samples_split=2, min_samples_leaf=1, min_weight_fraction_leaf=0.0,
                 max_features="sqrt", max_leaf_nodes=None, min_impurity_decrease=0.0,
                 bootstrap=False, oob_score=False, random_state=None, verbose=0,
                 warm_start=False, class_weight=None, max_samples=None, max_bins=255,
                 categorical_features=None, device="auto", n_jobs=None):
        set_params_from(self, locals())


@register_estimator
class ExtraTreesRegressor(RandomForestRegressor):
    """An ensemble of :class:`ExtraTreeRegressor`: scikit-learn's
    ``ExtraTreesRegressor`` (``bootstrap=False``, ``max_features=1.0``),
    otherwise :class:`gputree.RandomForestRegressor`."""

    _tree_class = ExtraTreeRegressor
    _splitter = "random"

    def __init__(self, n_estimators=100, *, criterion="squared_error", max_depth=None,
                 min_samples_split=2, min_samples_leaf=1, min_weight_fraction_leaf=0.0,
                 max_features=1.0, max_leaf_nodes=None, min_impurity_decrease=0.0,
                 bootstrap=False, oob_score=False, random_state=None, verbose=0,
                 warm_start=False, max_samples=None, max_bins=255, categorical_features=None,
                 device="auto", n_jobs=None):
        criterion = squared_error_alias(criterion)
        set_params_from(self, locals())
