"""Bagging: the rows a forest's tree draws (bootstrap counts from the
forest's seed and the tree's index, by global row index, so that a Dask
worker draws its own rows' counts alike), the classification statistics
of counted rows, and the out-of-bag sums of the trees that left a row
out. No estimator class here (nor scikit-learn): the forests of
:mod:`gputree.estimators.forest` and a Dask worker's
(:mod:`gputree.dask.forest_rows`) use it alike."""
import warnings

import numpy as np

from .._dtypes import STAT_DTYPE
from .._threads import kernel_jit, part_bounds_jit, parts_for, run_parts
from ..criteria import LAYOUT_COUNT_CHANNEL, LAYOUT_N_CHANNELS, Statistics
from .ensemble import tree_rng
from .targets import ClassTargets


def device_statistics(backend, targets, weight, counts, cache):
    """A tree's classification Statistics built on the backend from its
    bootstrap counts when they are the whole weight (no sample or class
    weights), else None. The statistics of weight one are uploaded once per
    fit (kept in ``cache``, a dict of the fit), the counts once per tree."""
    if (not isinstance(targets, ClassTargets) or weight is not None
            or targets.factor is not None or targets.per_bootstrap):
        return None
    if "unit" not in cache:
        cache["unit"] = targets.statistics(np.ones(targets.y.shape[0]))
        cache["unit"].stats = backend.upload(cache["unit"].stats)
    return counted_statistics(backend, cache["unit"], counts)


def counted_statistics(backend, unit, counts):
    """Classification Statistics of the integer weights ``counts`` (host
    float64 (n,)), from ``unit``, those of weight one (no count channel;
    ``unit.stats`` int64 (n, C) on the backend). Class channels are the
    weight where the row has the class, and integer weights are their own
    fixed point (inverse scale 1), so the channels are ``unit * counts``
    (exact int64), plus the count channel (1 where counts > 0) unless every
    count is one: what ``classification_statistics(y, K, counts)`` gives;
    on the CPU in one pass in parts, on a device with one upload (the
    counts, int32 (n,)) and no host pass over rows."""
    if np.all(counts == 1):
        return unit
    n_samples, n_values = unit.stats.shape
    stats = backend.empty((n_samples, n_values + 1), STAT_DTYPE)
    if backend.xp is np:
        run_parts(_fill_counted, parts_for(unit.stats.size), unit.stats, counts, stats)
    else:
        device_counts = backend.upload(counts, dtype=np.int32)
        backend.xp.multiply(unit.stats, device_counts[:, None], out=stats[:, :n_values])
        stats[:, n_values] = device_counts > 0
    layout = unit.layout.copy()
    layout[LAYOUT_COUNT_CHANNEL], layout[LAYOUT_N_CHANNELS] = n_values, n_values + 1
    return Statistics(stats, np.append(unit.inv_scale, 1.0), layout, unit.n_classes)


@kernel_jit()
def _fill_counted(unit, counts, out, part, n_parts):
    """counted_statistics' arithmetic in one host pass over part ``part`` of
    the rows: out int64 (n, C + 1) OUT = ``unit * counts`` (int64 (n, C) IN,
    counts float64 (n,) IN, whole numbers) then 1 where counts > 0: the
    device path's exact products."""
    n_values = unit.shape[1]
    first, stop = part_bounds_jit(unit.shape[0], part, n_parts)
    for i in range(first, stop):
        count = np.int64(counts[i])
        for c in range(n_values):
            out[i, c] = unit[i, c] * count
        out[i, n_values] = 1 if count > 0 else 0


def drawn_rows(seed, i, n_samples, n_bootstrap):
    """int64 (n_bootstrap,) the rows tree ``i`` of a forest seeded ``seed``
    draws with replacement, first from its ``tree_rng``; every row once
    when n_bootstrap is None."""
    if n_bootstrap is None:
        return np.arange(n_samples)
    return tree_rng(seed, i).randint(0, n_samples, n_bootstrap)


def bootstrap_counts(seed, i, n_samples, n_bootstrap, ranges=None):
    """float64 times tree ``i`` draws each of the ``n_samples`` rows (ones
    without bootstrap): (n_samples,), or with ``ranges`` int64 (p, 2) the
    counts of the global rows [start, stop) of each range, concatenated (a
    Dask worker's rows: the same draw, by global row index)."""
    if ranges is None:
        ranges = np.array([[0, n_samples]])
    sizes = [int(stop - start) for start, stop in ranges]
    if n_bootstrap is None:
        return np.ones(sum(sizes))
    drawn = drawn_rows(seed, i, n_samples, n_bootstrap)
    if len(ranges) == 1 and sizes[0] == n_samples:
        return np.bincount(drawn, minlength=n_samples).astype(np.float64)
    return np.concatenate([np.zeros(0)] + [
        np.bincount(drawn[(drawn >= start) & (drawn < stop)] - start,
                    minlength=size).astype(np.float64)
        for (start, stop), size in zip(ranges, sizes)])


class OutOfBag:
    """Per row: sum of the leaf values of the trees that left it out, and how
    many trees did (device arrays)."""

    def __init__(self, backend, shape):
        self.backend = backend
        self.total = backend.zeros(shape, np.float64)
        self.n = backend.zeros(shape[:1], np.float64)

    def add(self, values, leaves, out_of_bag):
        """values (nodes, n_outputs, n_classes) and leaves (n,) on the device;
        out_of_bag host bool (n,): the rows the tree's bootstrap left out."""
        rows = self.backend.asarray(np.flatnonzero(out_of_bag))
        self.total[rows] += values[leaves[rows]]
        self.n[rows] += 1.0

    def mean(self):
        """host (n, n_outputs, n_classes); rows never out of bag get zeros
        (with a warning)."""
        if self.missing():
            warn_no_oob()
        return self.values()

    def missing(self):
        """Whether some row was in every tree's bag."""
        return bool(np.any(self.backend.to_host(self.n) == 0))

    def values(self):
        """:meth:`mean` without the warning."""
        n = self.backend.to_host(self.n)
        return self.backend.to_host(self.total) / np.maximum(n, 1)[:, None, None]


def warn_no_oob():
    warnings.warn("Some inputs do not have OOB scores. This probably means too few "
                  "trees were used to compute any reliable OOB estimates.", UserWarning)
