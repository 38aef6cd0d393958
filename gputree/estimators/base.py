"""What every estimator shares: ``BaseTreeModel`` (the encoder and bins
learned at fit, new X to leaf ids on the fit's backend, saving, exporting,
pickling, ``n_jobs``) and the tree-shaped parameters resolved to
:class:`gputree.growth.params.GrowthParams`."""
import math
import numbers
import warnings

import numpy as np

from .._compat import BaseEstimator, NotFittedError
from .._threads import THREADED_METHODS, wrap_threaded_methods
from ..backends import get_backend
from ..backends.compile_notice import announce_methods
from ..data.binned import bin_with
from ..data.dataset import BinnedRows, Dataset
from ..data.training import TrainingInputs, bin_training_data, binning_seed, seed_from
from ..data.validation import check_choice, check_float, check_int, check_random_state
from ..fixed_point import order_free_sum
from ..growth.params import GrowthParams
from ..io.json import save_model
from ..io.treelite import to_treelite
from ..model import FittedModel
from .prediction import Predictor, leaf_ids
from .streaming import wrap_dataset_methods


#: max_depth=None: deeper than any tree can grow
UNLIMITED_DEPTH = 2 ** 31 - 2


def set_params_from(estimator, arguments):
    """Store ``__init__`` arguments (``locals()``) as attributes, unchanged."""
    for name, value in arguments.items():
        if name not in ("self", "__class__"):
            setattr(estimator, name, value)


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


class BaseTreeModel(BaseEstimator):
    """What every fitted tree model shares: the encoder and bins learned at fit,
    and turning new X into leaf ids on the fit's backend. Every subclass's
    fit and predict methods run under its ``n_jobs`` (:mod:`gputree._threads`)
    and announce long compiles (:mod:`gputree.backends.compile_notice`)."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        wrap_threaded_methods(cls)
        wrap_dataset_methods(cls)
        announce_methods(cls, THREADED_METHODS)

    def _check_fitted(self):
        if not hasattr(self, "_encoder"):
            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet. "
                                 "Call 'fit' with appropriate arguments before using this estimator.")

    #: sample_weight of fit holds one weight per row (a Dataset's weight fits it)
    _row_sample_weight = True

    def _bin_new_data(self, X):
        self._check_fitted()
        if isinstance(X, BinnedRows):
            return X.data
        if isinstance(X, Dataset):
            return X.binned_for(self._encoder, self._bin_mapper, self._backend,
                                type(self).__name__)
        return bin_with(self._backend, self._bin_mapper,
                        self._encoder.transform(X, type(self).__name__,
                                                self._backend.device_xp))

    def _leaves(self, X, trees=None):
        """int32 (n_samples, n_trees) leaf ids (host) of X in ``trees``."""
        return leaf_ids(self._backend, self._bin_new_data(X).X_binned,
                        trees or self._trees_for_prediction())

    def _raw_model(self):
        """The fitted model's raw values of binned rows (one of
        :mod:`gputree.estimators.prediction`'s raw-value objects)."""
        raise NotImplementedError

    def _outputs(self):
        """The prediction methods' answers from raw values (one of
        :mod:`gputree.estimators.prediction`'s output objects)."""
        raise NotImplementedError

    def _predictor(self):
        """A :class:`gputree.estimators.prediction.Predictor` of the fitted
        model: its predictions without this class (a Dask worker's)."""
        self._check_fitted()
        return Predictor(type(self).__name__, self.device, self._encoder, self._bin_mapper,
                         self._raw_model(), self._outputs())

    def _bin_training_data(self, X, seed, sample_weight):
        """TrainingInputs of the training X: bins learned with ``seed``, X
        binned on the backend (:func:`gputree.data.training.bin_training_data`;
        gputree.dask learns them across a cluster instead; a Dataset has them)."""
        if isinstance(X, Dataset):
            return X.training_inputs(self, sample_weight)
        inputs, _ = bin_training_data(X, self.max_bins, self.categorical_features, self.device,
                                      seed, sample_weight)
        return inputs

    def _store_inputs(self, inputs):
        self._backend = inputs.backend
        self._encoder = inputs.encoder
        self._bin_mapper = inputs.bin_mapper
        self.n_features_in_ = inputs.encoder.n_features_in_
        if inputs.encoder.feature_names_in_ is not None:
            self.feature_names_in_ = inputs.encoder.feature_names_in_
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_

    #: fitted attributes besides trees and bins that a saved model keeps:
    #: name -> what it must be (gputree.model.Saved)
    _model_attributes = {}
    #: how the trees make the predictions (one of gputree.model.MODEL_KINDS)
    _model_kind = None

    def _check_params(self):
        """Raise ValueError or TypeError naming a parameter that fit would
        refuse, as far as it can be told without data (fit runs it first;
        loading a model runs it on the saved parameters)."""

    def _restore(self, backend, encoder, mapper, trees):
        """Become fitted from a loaded model's parts (FittedModel.to_estimator);
        the ``_model_attributes`` are already set."""
        self._store_inputs(TrainingInputs(backend, encoder, mapper, None))
        self._trees = trees

    def _contribution_layout(self):
        """For TreeSHAP: (trees, first raw-score column of each, scale of
        their values, baseline float64 (width,)); here the mean of the trees."""
        trees = list(self._trees_for_prediction())
        return trees, [0] * len(trees), 1.0 / len(trees), np.zeros(trees[0].value[0].size)

    @property
    def model_(self):
        """The :class:`gputree.model.FittedModel` of this fitted estimator."""
        return FittedModel.of(self)

    def save_model(self, path):
        """Write the fitted model to ``path`` as versioned JSON (see
        docs/model_schema.md); ``gputree.load_model(path)`` reads it back."""
        save_model(self, path)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True       # scipy.sparse X: see gputree.data.adapters
        return tags

    def to_treelite(self):
        """The fitted model as a ``treelite.Model`` (see gputree.io.treelite)."""
        return to_treelite(self)

    def __getstate__(self):
        state = self.__dict__.copy()
        if "_backend" in state:
            state["_backend"] = state["_backend"].name
        return state

    def __setstate__(self, state):
        if isinstance(state.get("_backend"), str):
            state["_backend"] = get_backend(state["_backend"])
        self.__dict__.update(state)
