"""What every estimator shares: ``BaseTreeModel`` (the encoder and bins
learned at fit, new X to leaf ids on the fit's backend, saving, exporting,
pickling, ``n_jobs``); the tree-shaped parameters are
:mod:`gputree.estimators.tree_params`'s."""
import numpy as np

from .._compat import BaseEstimator, NotFittedError
from .._threads import THREADED_METHODS, wrap_threaded_methods
from ..backends import get_backend
from ..backends.compile_notice import announce_methods
from ..data.binned import bin_with
from ..data.dataset import BinnedRows, Dataset
from ..data.training import TrainingInputs, bin_training_data
from ..io.json import save_model
from ..io.treelite import to_treelite
from ..model import FittedModel
from .prediction import Predictor, leaf_ids
from .streaming import wrap_dataset_methods


def set_params_from(estimator, arguments):
    """Store ``__init__`` arguments (``locals()``) as attributes, unchanged."""
    for name, value in arguments.items():
        if name not in ("self", "__class__"):
            setattr(estimator, name, value)


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
