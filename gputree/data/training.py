"""The one way from a user's training X to binned data on a backend: encode
and check X and the weights, learn the bins (:class:`BinMapper`), bin X on
the device; and the seeds of the binning subsample. Shared by single trees,
forests and boosting."""
from dataclasses import dataclass

import numpy as np

from .._dtypes import MAX_NON_MISSING_BINS
from ..backends import get_backend
from .binned import BinnedData, bin_with
from .binning import BinMapper
from .encoder import FeatureEncoder
from .validation import check_int, check_sample_weight


@dataclass
class TrainingInputs:
    """What :func:`bin_training_data` learned and made: the backend, the
    fitted encoder and bin mapper, the binned data and the checked
    weights."""

    backend: object
    encoder: FeatureEncoder
    bin_mapper: BinMapper
    data: BinnedData
    sample_weight: np.ndarray = None   # checked float64 (n_samples,) weights


def bin_training_data(X, max_bins, categorical_features, device, random_state,
                      sample_weight=None):
    """Encode X (n_samples, n_features), check sample_weight, learn bins
    (rows of weight 0 do not shape them), bin on the backend."""
    max_bins = check_int(max_bins, "max_bins", 2, MAX_NON_MISSING_BINS)
    backend = get_backend(device)
    encoder = FeatureEncoder(categorical_features)
    X_float = encoder.fit_transform(X, backend.device_xp)
    mapper = BinMapper(max_bins, encoder.is_categorical_, random_state=random_state)
    weight = check_sample_weight(sample_weight, X_float.shape[0])
    mapper.fit(X_float, weight)
    data = bin_with(backend, mapper, X_float)
    return TrainingInputs(backend, encoder, mapper, data, weight), X_float


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
