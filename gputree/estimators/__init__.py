"""The scikit-learn estimators and what only they use: single trees
(:mod:`.tree`), random forests (:mod:`.forest`), extremely randomized trees
(:mod:`.extra_trees`) and gradient boosting
(:mod:`.boosting`, with its losses, TreeBoost leaves and custom objectives;
:mod:`.ranking`, learning to rank with :mod:`.lambdamart`),
over the shared base (:mod:`.base`), targets and ensemble helpers.

The estimator classes load on first use of their names here (a module
``__getattr__``, which loads them all, so that every model kind is then
registered for :func:`gputree.load_model`): a module that needs only some
helpers, such as a Dask worker's :mod:`gputree.dask.worker_rows`, imports
those modules without scikit-learn."""

__all__ = ["DecisionTreeClassifier", "DecisionTreeRegressor", "GradientBoostingClassifier",
           "GradientBoostingRanker", "GradientBoostingRegressor", "RandomForestClassifier",
           "RandomForestRegressor", "ExtraTreeClassifier", "ExtraTreeRegressor",
           "ExtraTreesClassifier", "ExtraTreesRegressor"]


def __getattr__(name):
    if name not in __all__:
        raise AttributeError(f"module 'gputree.estimators' has no attribute {name!r}")
    from . import boosting, extra_trees, forest, ranking, tree
    for module in (boosting, extra_trees, forest, ranking, tree):
        globals().update({key: getattr(module, key) for key in __all__ if hasattr(module, key)})
    return globals()[name]


def __dir__():
    return sorted(set(globals()) | set(__all__))
