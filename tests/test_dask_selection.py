"""The distributed exact weighted quantile (gputree.dask.selection) equals
the one-machine grouped_weighted_quantile bit for bit, for any split of the
rows into shards, with ties, zero weights, negative zero and empty groups."""
import numpy as np
import pytest

from gputree.dask import selection
from gputree.quantiles import grouped_weighted_quantile


def distributed(values, weights, groups, n_groups, q, bounds, average=False):
    shards = [slice(a, b) for a, b in zip(bounds[:-1], bounds[1:])]
    summaries = [selection.shard_summary(weights[s]) for s in shards]
    largest, n_kept = max(s[0] for s in summaries), sum(s[1] for s in summaries)
    keys = [selection.order_keys(values[s]) for s in shards]
    fixed = [selection.fixed_weights(weights[s], largest, n_kept) for s in shards]
    huge = np.full(n_groups, np.iinfo(np.int64).max)

    def ask(pivots):
        return sum(selection.weight_at_or_below(k, f, groups[s], n_groups, pivots)
                   for k, f, s in zip(keys, fixed, shards))
    return selection.grouped_quantile(ask, ask(huge), q, average)


def test_order_keys_keep_the_order():
    rng = np.random.default_rng(0)
    v = np.concatenate([rng.normal(size=500) * 10.0 ** rng.integers(-300, 300, 500),
                        [0.0, -0.0, np.inf, -np.inf, 5e-324, -5e-324]])
    keys = selection.order_keys(v)
    order = np.argsort(keys, kind="stable")
    assert np.all(np.diff(v[order]) >= 0)
    np.testing.assert_array_equal(selection.key_values(keys).view(np.int64), v.view(np.int64))


@pytest.mark.parametrize("average", [False, True])
@pytest.mark.parametrize("q", [0.5, 0.9, 0.1, 0.37])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_equals_the_one_machine_quantile(q, seed, average):
    rng = np.random.default_rng(seed)
    n, n_groups = 400, 9
    values = np.round(rng.normal(size=n), 1)                # many ties
    weights = rng.choice([0.0, 0.5, 1.0, 2.0, 3.7], size=n)
    groups = rng.integers(0, n_groups - 1, size=n)          # the last group empty
    expected = grouped_weighted_quantile(np, values, weights, groups, n_groups, q, average)
    for bounds in ([0, n], [0, 1, n], [0, 150, 151, 300, n]):
        got = distributed(values, weights, groups, n_groups, q, np.asarray(bounds), average)
        np.testing.assert_array_equal(got, expected)
        assert np.isnan(got[-1])
