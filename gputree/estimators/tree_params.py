"""The tree-shaped parameters of the estimators resolved for a fit:
``max_depth``, ``min_samples_*``, ``max_features``, ``splitter``... to
:class:`gputree.growth.params.GrowthParams` (:func:`growth_params`), and a
tree's random streams from its ``random_state``. No estimator class here
(nor scikit-learn): a Dask worker growing trees
(:mod:`gputree.dask.worker_forest`) uses it as the estimators do."""
import math
import numbers
import warnings

import numpy as np

from ..data.training import binning_seed, seed_from
from ..data.validation import check_choice, check_float, check_int, check_random_state
from ..fixed_point import order_free_sum
from ..growth.params import GrowthParams


#: max_depth=None: deeper than any tree can grow
UNLIMITED_DEPTH = 2 ** 31 - 2


def tree_random_streams(random_state):
    """(numpy RandomState the growth of a tree draws from, seed of its
    bin-edge subsample) for a tree's ``random_state``. A single tree and
    each tree of a forest (with the int seed it shows as ``random_state``)
    draw alike, so a forest's tree is the one its parameters grow on its
    drawn rows."""
    rng = check_random_state(random_state)
    return rng, binning_seed(random_state, seed_from(rng))


#: scikit-learn's ``splitter``: "best", the best split over every bin
#: threshold of the node's features; "random", extremely randomized trees:
#: one random threshold per feature (gputree.backends.node_features)
SPLITTERS = ("best", "random")


def squared_error_alias(criterion):
    """A regressor's ``criterion``, "friedman_mse" read as "squared_error"
    with scikit-learn 1.9's FutureWarning: within a node Friedman's
    improvement ranks the splits as the squared-error gain does, so the
    trees are the same."""
    if isinstance(criterion, str) and criterion == "friedman_mse":
        warnings.warn('criterion="friedman_mse" is deprecated, as in scikit-learn 1.9: it is '
                      '"squared_error" (Friedman\'s improvement ranks the splits of a node as '
                      'the squared-error gain does). Use criterion="squared_error".',
                      FutureWarning)
        return "squared_error"
    return criterion


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
    what = (f"The {name!r} parameter must be an int in the range [{minimum}, inf) or a "
            f"float in the range (0.0, {fraction_high}], got {value!r}.")
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        if value < minimum:
            raise ValueError(what)
        return int(value)
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        if not 0.0 < value <= fraction_high:
            raise ValueError(what)
        return max(minimum, int(math.ceil(value * n_samples)))
    raise TypeError(what)


def weight_total(w):
    """The sum of a tree's weights float64 (n,) that ``min_weight_fraction_leaf``
    takes a fraction of: an order-free sum (:func:`gputree.fixed_point.order_free_sum`;
    exact for whole numbers), which the parts of the rows (Dask workers')
    give alike."""
    return order_free_sum(np, np.asarray(w, dtype=np.float64))


def growth_params(est, n_samples, total_weight, n_features):
    """GrowthParams from a tree-like estimator's public parameters (a tree's
    ``splitter``; a forest's trees' ``_splitter``), with scikit-learn's
    max_features soft limit."""
    splitter = check_choice(getattr(est, "splitter", getattr(est, "_splitter", "best")),
                            "splitter", set(SPLITTERS))
    max_depth = check_int(est.max_depth, "max_depth", 1, allow_none=True)
    max_leaf_nodes = check_int(est.max_leaf_nodes, "max_leaf_nodes", 2, allow_none=True)
    mwfl = check_float(est.min_weight_fraction_leaf, "min_weight_fraction_leaf", 0.0, 0.5)
    return GrowthParams(
        max_depth=UNLIMITED_DEPTH if max_depth is None else max_depth,
        min_samples_split=resolve_count(est.min_samples_split, "min_samples_split", n_samples, 2),
        min_samples_leaf=resolve_count(est.min_samples_leaf, "min_samples_leaf", n_samples, 1,
                                       fraction_high=0.5),
        min_weight_leaf=mwfl * total_weight,
        min_impurity_decrease=check_float(est.min_impurity_decrease, "min_impurity_decrease", 0.0),
        max_features=resolve_max_features(est.max_features, n_features),
        max_leaf_nodes=max_leaf_nodes or 0, best_first=max_leaf_nodes is not None,
        soft_max_features=True,
        random_thresholds=splitter == "random")
