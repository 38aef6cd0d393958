"""``GrowthParams``: the stopping rules and regularisation of one tree,
resolved to absolute numbers, as every grower reads them."""
from dataclasses import dataclass

import numpy as np

from .._dtypes import FLOAT_DTYPE
from ..data.validation import check_choice, check_float, check_int
from ..backends.formulas import (PARAM_CAT_L2, PARAM_CAT_SEARCH, PARAM_CAT_SMOOTH,
                                 PARAM_MAX_CAT_THRESHOLD, PARAM_MAX_CAT_TO_ONEHOT,
                                 PARAM_MIN_DATA_PER_GROUP)
from ..criteria import (PARAM_MIN_SAMPLES_LEAF, PARAM_MIN_WEIGHT_LEAF, PARAM_REG_ALPHA,
                        PARAM_REG_LAMBDA, PARAMS_SIZE)


@dataclass(frozen=True)
class CategoricalSearch:
    """LightGBM's search for categorical splits (boosting; the split scan,
    gputree/backends/scan.py), with LightGBM's parameters and defaults:

    cat_smooth          categories with fewer rows in the node stay out of
                        the sorted order (they go right), and the order is
                        by G / (H + cat_smooth)
    cat_l2              added to reg_lambda in the gain of such a split's
                        children
    min_data_per_group  rows at least in the categories a candidate adds to
                        the last one tried, and in the rest
    max_cat_threshold   categories at most on a split's left side
    max_cat_to_onehot   a feature with at most this many categories splits
                        one category against the rest
    only_many           True: the search only for features of more than 255
                        categories, CART's exact one for the others
    """

    cat_smooth: float = 10.0
    cat_l2: float = 10.0
    min_data_per_group: int = 100
    max_cat_threshold: int = 32
    max_cat_to_onehot: int = 4
    only_many: bool = False

    def fill(self, params):
        """Write the search into a criterion ``params`` array."""
        params[PARAM_CAT_SEARCH] = 2 if self.only_many else 1
        params[PARAM_CAT_SMOOTH] = self.cat_smooth
        params[PARAM_CAT_L2] = self.cat_l2
        params[PARAM_MIN_DATA_PER_GROUP] = self.min_data_per_group
        params[PARAM_MAX_CAT_THRESHOLD] = self.max_cat_threshold
        params[PARAM_MAX_CAT_TO_ONEHOT] = self.max_cat_to_onehot


#: ``categorical_search`` of the boosting estimators
CATEGORICAL_SEARCHES = ("auto", "lightgbm", "exact")


def categorical_search(search, cat_smooth, cat_l2, min_data_per_group, max_cat_threshold,
                       max_cat_to_onehot):
    """The CategoricalSearch of a boosting estimator's parameters (checked),
    or None for ``search="exact"`` (CART's exact search). ``"auto"``:
    LightGBM's search for features of more than 255 categories, CART's for
    the others (the models of features that fit 8-bit codes as they were)."""
    check_choice(search, "categorical_search", set(CATEGORICAL_SEARCHES))
    found = CategoricalSearch(
        cat_smooth=check_float(cat_smooth, "cat_smooth", 0.0),
        cat_l2=check_float(cat_l2, "cat_l2", 0.0),
        min_data_per_group=check_int(min_data_per_group, "min_data_per_group", 1),
        max_cat_threshold=check_int(max_cat_threshold, "max_cat_threshold", 1),
        max_cat_to_onehot=check_int(max_cat_to_onehot, "max_cat_to_onehot", 1),
        only_many=search == "auto")
    return None if search == "exact" else found


@dataclass
class GrowthParams:
    """Stopping rules of one tree (resolved to absolute numbers)."""

    max_depth: int = 2 ** 31 - 1
    min_samples_split: int = 2
    min_samples_leaf: int = 1
    min_weight_leaf: float = 0.0
    min_impurity_decrease: float = 0.0
    max_features: int = 0          # features tried per node; 0 means all
    max_leaf_nodes: int = 0        # 0 means unlimited
    #: best-first growth (gputree.growth.bestfirst): the leaf whose split
    #: improves the tree most splits next, until max_leaf_nodes leaves;
    #: False: level by level, max_leaf_nodes the best splits of each level
    best_first: bool = False
    #: scikit-learn's max_features: where the node's first max_features drawn
    #: features are all constant there, the next drawn ones are tried up to
    #: the first that is not (gputree.backends.node_features)
    soft_max_features: bool = False
    #: extremely randomized trees: one random threshold per feature and node
    random_thresholds: bool = False
    reg_lambda: float = 0.0        # boosting: L2 on leaf values
    min_split_gain: float = 0.0    # boosting: gamma
    reg_alpha: float = 0.0         # boosting: L1 on leaf values
    constraints: object = None     # boosting: constraints.TreeConstraints
    #: boosting: LightGBM's categorical search; None: CART's exact one
    categorical: CategoricalSearch = None
    #: level-wise growth may take the backend's compiled levels
    #: (Backend.level_steps; the same trees, less host work a level), whose
    #: kernel compiles once per machine in about 1.5 s more of the first fit:
    #: asked for by the long fits of the ranker only
    compiled_levels: bool = False

    def criterion_params(self):
        params = np.zeros(PARAMS_SIZE, dtype=FLOAT_DTYPE)
        params[PARAM_MIN_SAMPLES_LEAF] = self.min_samples_leaf
        params[PARAM_MIN_WEIGHT_LEAF] = self.min_weight_leaf
        params[PARAM_REG_LAMBDA] = self.reg_lambda
        params[PARAM_REG_ALPHA] = self.reg_alpha
        if self.categorical is not None:
            self.categorical.fill(params)
        return params
