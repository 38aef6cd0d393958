"""gputree: decision trees, random forests and gradient-boosted trees on
quantile-binned features, on an NVIDIA GPU (``device="cuda"``) or the CPU.

Public estimators only; see the README for the two commands to start.

``import gputree`` loads none of its modules but the small export helper
(:mod:`gputree._lazy`), nor scikit-learn, nor numba: each public name loads
its module when first used (a module ``__getattr__``), so a script that only asks for the version, or a worker
process that unpickles a model, pays for what it uses.
"""
from ._lazy import lazy_exports


def _estimators():
    from . import estimators
    return estimators


def _json():
    from .io import json
    return json


def _plotting():
    from .io import plotting
    return plotting


def _text():
    from .io import text
    return text


def _fixed_point():
    from . import fixed_point
    return fixed_point


def _dataset():
    from .data import dataset
    return dataset


def _model_selection():
    from . import model_selection
    return model_selection


#: public name -> the loader of the module that defines it
_EXPORTS = {
    "DecisionTreeClassifier": _estimators, "DecisionTreeRegressor": _estimators,
    "GradientBoostingClassifier": _estimators, "GradientBoostingRegressor": _estimators,
    "GradientBoostingRanker": _estimators,
    "RandomForestClassifier": _estimators, "RandomForestRegressor": _estimators,
    "ExtraTreeClassifier": _estimators, "ExtraTreeRegressor": _estimators,
    "ExtraTreesClassifier": _estimators, "ExtraTreesRegressor": _estimators,
    "load_model": _json, "export_graphviz": _plotting, "plot_tree": _plotting,
    "export_text": _text, "PrecisionWarning": _fixed_point,
    "choose_ccp_alpha": _model_selection, "Dataset": _dataset,
}

__all__ = ["DecisionTreeClassifier", "DecisionTreeRegressor", "export_text",
           "GradientBoostingClassifier", "GradientBoostingRanker", "GradientBoostingRegressor",
           "load_model",
           "RandomForestClassifier", "RandomForestRegressor", "export_graphviz", "plot_tree",
           "choose_ccp_alpha", "PrecisionWarning", "Dataset", "ExtraTreeClassifier",
           "ExtraTreeRegressor", "ExtraTreesClassifier", "ExtraTreesRegressor"]
__version__ = "0.1.0"


__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
