"""gputree: decision trees, random forests and gradient-boosted trees on
quantile-binned features, on an NVIDIA GPU (``device="cuda"``) or the CPU.

Public estimators only; see the README for the two commands to start.
"""
from .boosting import GradientBoostingClassifier, GradientBoostingRegressor
from .export import export_text
from .forest import RandomForestClassifier, RandomForestRegressor
from .io.json import load_model
from .plotting import export_graphviz, plot_tree
from .pruning_cv import choose_ccp_alpha
from .tree_estimators import DecisionTreeClassifier, DecisionTreeRegressor

__all__ = ["DecisionTreeClassifier", "DecisionTreeRegressor", "export_text",
           "GradientBoostingClassifier", "GradientBoostingRegressor", "load_model",
           "RandomForestClassifier", "RandomForestRegressor", "export_graphviz", "plot_tree",
           "choose_ccp_alpha"]
__version__ = "0.1.0"
