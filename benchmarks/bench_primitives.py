"""asv: gputree's primitives alone, per (rows, device), on the synthetic data.

* ``BinMapper.fit``: quantile thresholds (host numpy, on a 200,000-row
  subsample, so it stops growing past that).
* binning: float64 X (what the estimators hand over) -> uint8 bins on the
  device, as the estimators do it.
* ``build_histograms`` with boosting statistics (gradient, hessian, count
  channels) for one node holding every row (the root) and for 64 nodes with
  the rows spread over them (a depth-6 level).

CUDA cases wait for the device before the clock stops.
"""
import gc

import numpy as np

from .common import DEVICES, ROWS, reset_peak_rss
from .estimator_suite import _CachedData, load_dataset, skip_unless_available

MAX_BINS = 255


def _backend(device):
    from gputree.backends import get_backend
    return get_backend(device)


def _synchronize(backend):
    """Wait for the device's queued work (no-op for numpy backends)."""
    if backend.xp is not np:
        backend.xp.cuda.get_current_stream().synchronize()


def _binned(backend, X):
    from gputree.data.binned import bin_with
    from gputree.data.binning import BinMapper
    mapper = BinMapper(MAX_BINS).fit(X)
    return mapper, bin_with(backend, mapper, X)


class Binning(_CachedData):
    """Learning thresholds and mapping values to bins."""

    def setup(self, cache_dir, rows, device):
        skip_unless_available(device)
        self.backend = _backend(device)
        X, _ = load_dataset(cache_dir, rows)
        self.X = X.astype(np.float64)
        self.mapper, _ = _binned(self.backend, self.X[:1_000])   # compiles
        self.mapper.fit(self.X)
        gc.collect()
        reset_peak_rss()

    def time_bin_fit(self, cache_dir, rows, device):
        from gputree.data.binning import BinMapper
        BinMapper(MAX_BINS).fit(self.X)

    def time_map_to_bins(self, cache_dir, rows, device):
        self._map()

    def peakmem_map_to_bins(self, cache_dir, rows, device):
        self._map()

    def _map(self):
        from gputree.data.binned import bin_with
        bin_with(self.backend, self.mapper, self.X)
        _synchronize(self.backend)


class Histogram(_CachedData):
    """One histogram pass over all rows, for 1 node or 64 nodes."""

    params = (ROWS, DEVICES, [1, 64])
    param_names = ["rows", "device", "nodes"]

    def setup(self, cache_dir, rows, device, nodes):
        from gputree.criteria import newton_statistics
        skip_unless_available(device)
        backend = self.backend = _backend(device)
        X, y = load_dataset(cache_dir, rows)
        _, self.data = _binned(backend, X.astype(np.float64))
        gradients = (0.5 - y)[:, None].astype(np.float64)
        stats = newton_statistics(gradients, np.full_like(gradients, 0.25), np.ones(rows))
        self.stats = backend.asarray(stats.stats)
        self.level_start = nodes - 1      # breadth-first id of the level's first node
        rng = np.random.RandomState(0)
        self.positions = backend.asarray(
            self.level_start + rng.randint(nodes, size=rows).astype(np.int32))
        self.node_to_build = backend.asarray(np.arange(nodes, dtype=np.int32))
        self.nodes = nodes
        self._build()                     # compiles
        gc.collect()
        reset_peak_rss()

    def time_build_histograms(self, cache_dir, rows, device, nodes):
        self._build()

    def peakmem_build_histograms(self, cache_dir, rows, device, nodes):
        self._build()

    def _build(self):
        self.backend.build_histograms(self.data.X_binned, self.stats, self.positions,
                                      self.level_start, self.node_to_build,
                                      self.nodes, self.data.n_bins)
        _synchronize(self.backend)
