"""gputree: decision trees, random forests and gradient-boosted trees on
quantile-binned features, on an NVIDIA GPU (``device="cuda"``) or the CPU.

Public estimators only; see the README for the two commands to start.
"""
from .estimators import (DecisionTreeClassifier, DecisionTreeRegressor, ExtraTreeClassifier,
                         ExtraTreeRegressor, ExtraTreesClassifier, ExtraTreesRegressor,
                         GradientBoostingClassifier, GradientBoostingRegressor,
                         RandomForestClassifier, RandomForestRegressor)
from .io.json import load_model
from .io.plotting import export_graphviz, plot_tree
from .io.text import export_text
from .fixed_point import PrecisionWarning
from .model_selection import choose_ccp_alpha

__all__ = ["DecisionTreeClassifier", "DecisionTreeRegressor", "export_text",
           "GradientBoostingClassifier", "GradientBoostingRegressor", "load_model",
           "RandomForestClassifier", "RandomForestRegressor", "export_graphviz", "plot_tree",
           "choose_ccp_alpha", "PrecisionWarning", "ExtraTreeClassifier", "ExtraTreeRegressor",
           "ExtraTreesClassifier", "ExtraTreesRegressor"]
__version__ = "0.1.0"
