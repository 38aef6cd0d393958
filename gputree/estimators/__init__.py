"""The scikit-learn estimators and what only they use: single trees
(:mod:`.tree`), random forests (:mod:`.forest`), extremely randomized trees
(:mod:`.extra_trees`) and gradient boosting
(:mod:`.boosting`, with its losses, TreeBoost leaves and custom objectives;
:mod:`.ranking`, learning to rank with :mod:`.lambdamart`),
over the shared base (:mod:`.base`), targets and ensemble helpers."""
from .boosting import GradientBoostingClassifier, GradientBoostingRegressor
from .extra_trees import (ExtraTreeClassifier, ExtraTreeRegressor, ExtraTreesClassifier,
                          ExtraTreesRegressor)
from .forest import RandomForestClassifier, RandomForestRegressor
from .ranking import GradientBoostingRanker
from .tree import DecisionTreeClassifier, DecisionTreeRegressor

__all__ = ["DecisionTreeClassifier", "DecisionTreeRegressor", "GradientBoostingClassifier",
           "GradientBoostingRanker", "GradientBoostingRegressor", "RandomForestClassifier",
           "RandomForestRegressor", "ExtraTreeClassifier", "ExtraTreeRegressor",
           "ExtraTreesClassifier", "ExtraTreesRegressor"]
