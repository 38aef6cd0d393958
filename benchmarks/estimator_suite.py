"""asv base classes: fit and predict of one gputree estimator, timed and
peak-memory tracked, for every (rows, device) of ``common.ROWS`` x
``common.DEVICES``.

The classes are abstract (asv skips them); each ``bench_*.py`` module
subclasses them and says which estimator and settings to use.

* ``setup_cache`` (shared by every subclass, so it runs once per ``asv run``)
  writes the synthetic data of every size as ``.npy`` files into asv's cache
  directory; ``setup`` loads only the size it needs.
* ``setup`` skips the case (``NotImplementedError``, shown as n/a by asv)
  when the device is unusable here or the estimator is not in gputree yet,
  compiles the numba kernels on a few rows, then resets the process's peak
  RSS, so ``peakmem_*`` is the peak during the call counted from the RSS
  after setup (the data, the imports and the compiled kernels included;
  compilation transients excluded).
* Predict cases fit the model in ``setup`` (not timed) and time
  ``predict_proba`` on the training rows.
"""
import abc
import gc
import os

import numpy as np

from .common import (DEVICES, ROWS, classification_data, device_unavailable,
                     gputree_estimator, reset_peak_rss, warm_up)


def _data_path(cache_dir, rows, name):
    return os.path.join(cache_dir, f"{name}_{rows}.npy")


def write_datasets(cache_dir):
    """Write X_<rows>.npy and y_<rows>.npy for every size of ROWS."""
    for rows in ROWS:
        X, y = classification_data(rows)
        np.save(_data_path(cache_dir, rows, "X"), X)
        np.save(_data_path(cache_dir, rows, "y"), y)


def load_dataset(cache_dir, rows):
    return (np.load(_data_path(cache_dir, rows, "X")),
            np.load(_data_path(cache_dir, rows, "y")))


def skip_unless_available(device, estimator_name=None):
    """Raise NotImplementedError (asv: skipped) when the case cannot run."""
    reason = device_unavailable(device)
    if reason is None and estimator_name is not None:
        try:
            gputree_estimator(estimator_name)
        except ImportError as exc:
            reason = str(exc)
    if reason is not None:
        raise NotImplementedError(reason)


class _CachedData:
    """Parametrisation and the shared data cache."""

    params = (ROWS, DEVICES)
    param_names = ["rows", "device"]
    #: seconds per case; 10^6-row ensembles on 2 CPU cores need minutes
    timeout = 1800

    def setup_cache(self):
        write_datasets(os.getcwd())
        return os.getcwd()


class EstimatorBenchmark(_CachedData, abc.ABC):
    """Subclasses set ``estimator`` (a gputree class name) and ``settings``
    (its parameters); until they do the class is abstract and asv skips it."""

    settings = {}

    @property
    @abc.abstractmethod
    def estimator(self):
        """Name of the gputree estimator class, e.g. "DecisionTreeClassifier"."""

    def make(self, device):
        return gputree_estimator(self.estimator)(device=device, **self.settings)

    def load_warm(self, cache_dir, rows, device):
        skip_unless_available(device, self.estimator)
        self.X, self.y = load_dataset(cache_dir, rows)
        warm_up(lambda: self.make(device), self.X, self.y)


class FitBenchmark(EstimatorBenchmark):
    """Time and peak memory of ``fit`` on all rows."""

    def setup(self, cache_dir, rows, device):
        self.load_warm(cache_dir, rows, device)
        gc.collect()
        reset_peak_rss()

    def time_fit(self, cache_dir, rows, device):
        self.make(device).fit(self.X, self.y)

    def peakmem_fit(self, cache_dir, rows, device):
        self.make(device).fit(self.X, self.y)


class PredictBenchmark(EstimatorBenchmark):
    """Time and peak memory of ``predict_proba`` on the training rows."""

    def setup(self, cache_dir, rows, device):
        self.load_warm(cache_dir, rows, device)
        self.model = self.make(device).fit(self.X, self.y)
        gc.collect()
        reset_peak_rss()

    def time_predict(self, cache_dir, rows, device):
        self.model.predict_proba(self.X)

    def peakmem_predict(self, cache_dir, rows, device):
        self.model.predict_proba(self.X)
