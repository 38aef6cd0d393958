"""Glue from user inputs to training material on a backend: encode and check
X and y, fit the BinMapper, bin X on the device, build fixed-point statistics.

Shared by single trees, forests and boosting so that there is one way in.
"""
from dataclasses import dataclass

import numpy as np

from ._dtypes import MAX_NON_MISSING_BINS
from ._validation import FeatureEncoder, check_int, check_sample_weight
from .backends import get_backend
from .binning import BinMapper
from .grower import BinnedData


@dataclass
class TrainingInputs:
    backend: object
    encoder: FeatureEncoder
    bin_mapper: BinMapper
    data: BinnedData
    sample_weight: np.ndarray = None   # checked float64 (n_samples,) weights


def resolve_backend(device):
    """Backend for the ``device`` parameter, with a clear error."""
    if not isinstance(device, str):
        raise TypeError(f"device must be a string ('auto', 'cpu', 'cuda', 'cuda-sim'), got {device!r}.")
    return get_backend(device)


def bin_training_data(X, max_bins, categorical_features, device, random_state,
                      sample_weight=None):
    """Encode X (n_samples, n_features), check sample_weight, learn bins
    (rows of weight 0 do not shape them), bin on the backend."""
    max_bins = check_int(max_bins, "max_bins", 2, MAX_NON_MISSING_BINS)
    backend = resolve_backend(device)
    encoder = FeatureEncoder(categorical_features)
    X_float = encoder.fit_transform(X, backend.device_xp)
    mapper = BinMapper(max_bins, encoder.is_categorical_, random_state=random_state)
    weight = check_sample_weight(sample_weight, X_float.shape[0])
    mapper.fit(X_float, weight)
    data = bin_with(backend, mapper, X_float)
    return TrainingInputs(backend, encoder, mapper, data, weight), X_float


def bin_with(backend, mapper, X_float):
    """BinnedData of X_float (already encoded) on ``backend``."""
    X_binned = backend.map_to_bins(backend.asarray(X_float), backend.asarray(mapper.bin_thresholds_),
                                   backend.asarray(mapper.is_categorical_.astype(np.uint8)),
                                   mapper.missing_bin_)
    return BinnedData(X_binned, mapper.n_bins_, mapper.n_bins_non_missing_,
                      mapper.is_categorical_.astype(np.uint8), mapper.bin_thresholds_)


#: seed of the binning subsample when random_state is None: bins (and so the
#: trees of a fit without other randomness) do not change from fit to fit
DEFAULT_BINNING_SEED = 0


def binning_seed(random_state, seed):
    """Seed of the bin-edge subsample: ``seed`` (drawn from the estimator's
    random_state) when random_state is set, else DEFAULT_BINNING_SEED, so
    that default fits are deterministic, as LightGBM's and XGBoost's are."""
    return DEFAULT_BINNING_SEED if random_state is None else seed


def seed_from(rng):
    """An int seed drawn from a RandomState (for sub-components)."""
    return int(rng.randint(np.iinfo(np.int32).max))
