"""The rule that picks how many trees of a forest the CUDA backend grows
together (gputree.growth.forest_batch) from a device memory budget."""
import numpy as np
import pytest

from gputree._dtypes import STAT_DTYPE
from gputree.backends.cuda.backend import (check_forest_batch, fit_memory_estimate,
                                           forest_batch_bytes, forest_batch_size,
                                           max_batch_rows)

#: (n_samples, n_features, n_channels, n_bins, max_level_nodes, held_row_bytes)
SHAPES = [(10**6, 28, 3, 256, 512, 28), (7_040_000, 28, 3, 256, 128, 0),
          (5000, 300, 11, 64, 2048, 100), (100, 2, 2, 2, 1, 0)]


@pytest.mark.parametrize("shape", SHAPES)
def test_one_tree_is_the_fit_estimate_and_each_more_adds_its_rows_and_level(shape):
    n_samples, n_features, n_channels, n_bins, max_level_nodes, held = shape
    assert forest_batch_bytes(1, *shape) == fit_memory_estimate(*shape)
    per_tree = forest_batch_bytes(3, *shape) - forest_batch_bytes(2, *shape)
    for k in range(2, 7):
        assert forest_batch_bytes(k, *shape) == forest_batch_bytes(2, *shape) + (k - 2) * per_tree
    # at least what a further tree surely holds: binned X once more, its
    # statistics and its share of the batch's statistics, its held bytes,
    # and its level's histograms while the pool grows
    stat = np.dtype(STAT_DTYPE).itemsize
    code = 1 if n_bins <= 256 else 2
    surely = (n_samples * (n_features * code + 2 * n_channels * stat + held)
              + 2 * max_level_nodes * n_features * n_bins * n_channels * stat)
    assert per_tree >= surely
    # a batch holds the first tree's binned X and statistics once more
    batch = n_samples * (n_features * code + n_channels * stat)
    assert forest_batch_bytes(2, *shape) - forest_batch_bytes(1, *shape) >= surely + batch


@pytest.mark.parametrize("shape", SHAPES)
def test_batch_size_is_the_most_trees_within_the_budget(shape):
    """Against a brute-force search over 1..n_trees, budgets on and around
    each size's bytes and random ones."""
    n_trees = 9
    needs = [forest_batch_bytes(k, *shape) for k in range(1, n_trees + 1)]
    rng = np.random.RandomState(0)
    budgets = ([b + d for b in needs for d in (-1, 0, 1)]
               + list(rng.randint(0, 2 * needs[-1], 50)) + [0, 10 * needs[-1]])
    for budget in budgets:
        fitting = [k for k in range(1, n_trees + 1) if needs[k - 1] <= budget]
        expected = max(fitting) if fitting else 1
        assert forest_batch_size(budget, n_trees, *shape) == expected, budget


def test_a_batch_never_holds_more_rows_than_int32_indexes():
    for n_samples in (1, 1000, 7_040_000, 2 ** 30, 2 ** 31 - 1, 2 ** 31):
        k = forest_batch_size(2 ** 62, 1000, n_samples, 2, 2, 2, 1)
        assert k == min(1000, max_batch_rows(n_samples))
        assert k == 1 or k * n_samples <= 2 ** 31 - 1          # every row indexable
        assert k == 1000 or (k + 1) * n_samples > 2 ** 31 - 1  # and no fewer trees than that


def test_batch_option_is_auto_or_a_positive_int():
    assert check_forest_batch("auto") == "auto"
    assert check_forest_batch(3) == 3 and check_forest_batch("12") == 12
    for bad in (0, -2, "0", "many", 2.5, True, None):
        with pytest.raises(ValueError, match="forest_batch must be 'auto' or an int >= 1"):
            check_forest_batch(bad)
