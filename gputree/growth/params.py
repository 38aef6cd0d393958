"""``GrowthParams``: the stopping rules and regularisation of one tree,
resolved to absolute numbers, as every grower reads them."""
from dataclasses import dataclass

import numpy as np

from .._dtypes import FLOAT_DTYPE
from ..criteria import (PARAM_MIN_SAMPLES_LEAF, PARAM_MIN_WEIGHT_LEAF, PARAM_REG_ALPHA,
                        PARAM_REG_LAMBDA, PARAMS_SIZE)


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

    def criterion_params(self):
        params = np.zeros(PARAMS_SIZE, dtype=FLOAT_DTYPE)
        params[PARAM_MIN_SAMPLES_LEAF] = self.min_samples_leaf
        params[PARAM_MIN_WEIGHT_LEAF] = self.min_weight_leaf
        params[PARAM_REG_LAMBDA] = self.reg_lambda
        params[PARAM_REG_ALPHA] = self.reg_alpha
        return params
