"""The pieces of a forest fit on Dask workers, against the one-machine code
they stand for, with no cluster: a worker's bootstrap counts (its rows of
the one-machine draw), its statistics built on the whole's fixed-point scales
(the whole's integers for its rows), the in-bag class draws, and the
``max_features`` soft limit decided from the feature slices' constant flags
(the CPU kernel's choice)."""
import numpy as np
import pytest

from gputree.backends import get_backend
from gputree.criteria import (ENTROPY, GINI, POISSON, SQUARED_ERROR, classification_statistics,
                              combined_scales, regression_statistics, statistics_scales)
from gputree.dask.sliced_features import constant_features, soft_limit
from gputree.dask.sliced_histograms import feature_bounds
from gputree.estimators.bagging import bootstrap_counts
from gputree.estimators.targets import ClassTargets

#: global [start, stop) rows of two workers' partitions (uneven, interleaved)
RANGES = [np.array([[0, 1], [40, 170]]), np.array([[1, 40], [170, 200]])]


def _rows(values, ranges):
    return np.concatenate([values[a:b] for a, b in ranges])


@pytest.mark.parametrize("n_bootstrap", [None, 200, 57, 450])
def test_bootstrap_counts_of_a_worker_are_its_rows_of_the_whole(n_bootstrap):
    whole = bootstrap_counts(11, 3, 200, n_bootstrap)
    for ranges in RANGES:
        np.testing.assert_array_equal(bootstrap_counts(11, 3, 200, n_bootstrap, ranges),
                                      _rows(whole, ranges))


@pytest.mark.parametrize("weights", ["counts", "fractions", "ones", "huge"])
@pytest.mark.parametrize("criterion", [GINI, ENTROPY, SQUARED_ERROR, POISSON])
def test_statistics_on_the_whole_scales_are_the_whole_ones(weights, criterion):
    """Each part built with combined_scales of the parts' statistics_scales
    holds exactly the rows of the one-machine statistics (values, inverse
    scales, count channel, layout); parts built on their own scales do not."""
    rng = np.random.RandomState(0)
    n = 200
    w = {"counts": bootstrap_counts(5, 0, n, n), "ones": np.ones(n),
         "fractions": rng.rand(n) * (rng.rand(n) > 0.1),
         "huge": bootstrap_counts(5, 0, n, n) * 2.0 ** 60}[weights]
    if criterion.kind == GINI.kind:
        y = rng.randint(0, 3, size=(n, 2)).astype(np.int32)

        def build(y_rows, w_rows, scales=None):
            return classification_statistics(y_rows, 3, w_rows, criterion, scales)
    else:
        y = np.abs(rng.normal(size=(n, 2))) * np.array([1.0, 1e5])
        y[rng.rand(n) < 0.2, 0] = 0.0       # Poisson's zero targets

        def build(y_rows, w_rows, scales=None):
            return regression_statistics(y_rows, w_rows, criterion, scales)
    whole = build(y, w)
    scales = combined_scales([statistics_scales(_rows(y, r), _rows(w, r), criterion)
                              for r in RANGES])
    for ranges in RANGES:
        part = build(_rows(y, ranges), _rows(w, ranges), scales)
        np.testing.assert_array_equal(part.stats, _rows(whole.stats, ranges))
        np.testing.assert_array_equal(part.inv_scale, whole.inv_scale)
        np.testing.assert_array_equal(part.layout, whole.layout)
    if weights == "fractions":        # the scales matter: a few rows' own are finer
        few = np.array([[0, 4]])
        own = build(_rows(y, few), _rows(w, few))
        assert np.all(own.inv_scale[:-1] < whole.inv_scale[:-1])


def test_in_bag_draws_add_up_to_the_whole():
    """balanced_subsample's weights of a part, from the parts' in-bag class
    draws added up, are the whole's rows."""
    rng = np.random.RandomState(1)
    y = rng.randint(0, 4, size=(200, 2))
    counts = bootstrap_counts(2, 1, 200, 200)
    whole = ClassTargets(y, "balanced_subsample", "gini", per_tree=True)
    classes = whole.classes, [np.bincount(whole.y[:, o]) for o in range(2)]
    parts = [ClassTargets(_rows(y, r), "balanced_subsample", "gini", per_tree=True,
                          whole=classes) for r in RANGES]
    bags = [p.in_bag(_rows(counts, r)) for p, r in zip(parts, RANGES)]
    total = (sum(b[0] for b in bags), [sum(b[1][o] for b in bags) for o in range(2)])
    expected = whole.weights(None, counts)
    for part, ranges in zip(parts, RANGES):
        np.testing.assert_array_equal(part.weights(None, _rows(counts, ranges), total),
                                      _rows(expected, ranges))


@pytest.mark.parametrize("n_slices", [1, 2, 3])
@pytest.mark.parametrize("max_features", [1, 2, 4])
@pytest.mark.parametrize("count_channel", [True, False])
def test_soft_limit_from_slices_is_the_kernels(n_slices, max_features, count_channel):
    """The soft limit from every slice's constant flags allows the features
    the CPU kernel allows on the whole histograms (sparse histograms: many
    constant features; some rows not candidates)."""
    backend = get_backend("cpu")
    rng = np.random.RandomState(n_slices * 10 + max_features)
    n_rows, n_features, n_bins, n_classes = 7, 6, 5, 3
    w = np.array([1.0, 2.0]) if count_channel else np.ones(2)
    layout = classification_statistics(np.zeros((2, 1), np.int32), n_classes, w, GINI).layout
    n_channels = n_classes + int(count_channel)
    n_bins_non_missing = rng.randint(1, n_bins, size=n_features).astype(np.int32)
    for _ in range(50):
        hist = (rng.rand(n_rows, n_features, n_bins, n_channels) < 0.12) * rng.randint(
            1, 4, size=(n_rows, n_features, n_bins, n_channels)).astype(np.int64)
        order = np.stack([rng.permutation(n_features) for _ in range(n_rows)]).astype(np.int32)
        order[rng.rand(n_rows) < 0.2] = -1
        allowed = np.zeros((n_rows, n_features), np.uint8)
        for row in range(n_rows):
            allowed[row, order[row, :max_features]] = order[row, 0] >= 0
        expected = allowed.copy()
        backend.choose_node_features(hist, expected, order, max_features, None,
                                     n_bins_non_missing, np.zeros(n_features, np.uint8),
                                     n_bins - 1, layout)
        bounds = feature_bounds(n_features, n_slices)
        flags = [constant_features(hist[:, a:b], n_bins_non_missing[a:b], n_bins - 1, layout)
                 for a, b in zip(bounds[:-1], bounds[1:])]
        soft_limit(order, max_features, np.concatenate(flags, axis=1), allowed)
        np.testing.assert_array_equal(allowed, expected)
