"""Boosting losses (gputree.estimators.losses): gradients and hessians against central
finite differences of the loss, loss values against scikit-learn's metrics,
initial raw scores as the best constant, weighted medians against brute
force, and the inverse links."""
import numpy as np
import pytest
from sklearn import metrics

from gputree.estimators.losses import AbsoluteError, BinaryLogLoss, MultinomialLoss, PoissonLoss, SquaredError, make_loss
from gputree.quantiles import grouped_weighted_median

LOSSES = {
    "binary": BinaryLogLoss(),
    "multinomial": MultinomialLoss(3),
    "squared_error": SquaredError(),
    "absolute_error": AbsoluteError(),
    "poisson": PoissonLoss(),
}


def _problem(name, n=50, seed=0):
    """(loss, y in the loss's coding (n, K), raw (n, K), weights (n,), host y)."""
    rng = np.random.RandomState(seed)
    loss = LOSSES[name]
    if name == "binary":
        labels = rng.randint(0, 2, n)
    elif name == "multinomial":
        labels = rng.randint(0, 3, n)
    elif name == "poisson":
        labels = rng.poisson(2.0, n).astype(float)
    else:
        labels = rng.normal(size=n)
    raw = rng.normal(scale=1.5, size=(n, loss.n_outputs))
    if name == "absolute_error":          # keep clear of the kink at raw == y
        raw[:, 0] = labels + np.where(rng.rand(n) < 0.5, -1, 1) * rng.uniform(0.1, 1.0, n)
    weights = rng.uniform(0.2, 3.0, n)
    return loss, loss.targets(np, labels), raw, weights, labels


def _weighted_losses_around(loss, y, raw, w, k, eps):
    """Per-row weighted losses at raw - eps, raw, raw + eps in output k (the
    loss is a sum over rows, so one column step perturbs every row alone)."""
    step = np.zeros_like(raw)
    step[:, k] = eps
    return [w * loss.pointwise(np, y, raw + s * step) for s in (-1, 0, 1)]


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_gradients_match_finite_differences(name):
    loss, y, raw, w, _ = _problem(name)
    g, _ = loss.gradients(np, y, raw, w)
    eps = 1e-5
    for k in range(loss.n_outputs):
        down, _, up = _weighted_losses_around(loss, y, raw, w, k, eps)
        np.testing.assert_allclose(g[:, k], (up - down) / (2 * eps), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", ["binary", "multinomial", "squared_error", "poisson"])
def test_hessians_match_finite_differences(name):
    loss, y, raw, w, _ = _problem(name)
    _, h = loss.gradients(np, y, raw, w)
    eps = 1e-4
    for k in range(loss.n_outputs):
        down, centre, up = _weighted_losses_around(loss, y, raw, w, k, eps)
        np.testing.assert_allclose(h[:, k], (up - 2 * centre + down) / eps ** 2,
                                   rtol=1e-4, atol=1e-6)


def test_absolute_error_uses_unit_hessian_times_weight():
    loss, y, raw, w, _ = _problem("absolute_error")
    _, h = loss.gradients(np, y, raw, w)
    np.testing.assert_array_equal(h[:, 0], w)


def test_loss_values_match_sklearn_metrics():
    for name, metric in [
        ("binary", lambda y, p: metrics.log_loss(y, p[:, 1], labels=[0, 1])),
        ("multinomial", lambda y, p: metrics.log_loss(y, p, labels=[0, 1, 2])),
        ("squared_error", lambda y, p: metrics.mean_squared_error(y, p[:, 0]) / 2),
        ("absolute_error", lambda y, p: metrics.mean_absolute_error(y, p[:, 0])),
        ("poisson", lambda y, p: metrics.mean_poisson_deviance(y, p[:, 0]) / 2),
    ]:
        loss, y, raw, _, labels = _problem(name)
        ones = np.ones(labels.shape[0])
        expected = metric(labels, loss.predict(np, raw))
        assert loss.value(np, y, raw, ones) == pytest.approx(expected, rel=1e-10), name


@pytest.mark.parametrize("name", ["binary", "multinomial", "squared_error", "poisson"])
def test_initial_raw_score_zeroes_the_total_gradient(name):
    """The best constant raw score: the weighted gradient sums to zero there."""
    loss, y, _, w, _ = _problem(name)
    init = loss.init_raw(y, w)
    raw = np.tile(init, (y.shape[0], 1))
    g, _ = loss.gradients(np, y, raw, w)
    np.testing.assert_allclose(g.sum(axis=0), 0.0, atol=1e-10)


def test_binary_initial_raw_score_is_the_log_odds():
    loss = BinaryLogLoss()
    y = loss.targets(np, np.array([0, 1, 1, 1]))
    assert loss.init_raw(y, np.ones(4))[0] == pytest.approx(np.log(3.0))
    assert loss.init_raw(y, np.array([3.0, 1, 1, 1]))[0] == pytest.approx(0.0)


def test_multinomial_initial_raw_scores_are_symmetric_logits_of_the_priors():
    loss = MultinomialLoss(3)
    y = loss.targets(np, np.array([0, 1, 1, 2, 2, 2]))
    init = loss.init_raw(y, np.ones(6))
    assert init.sum() == pytest.approx(0.0, abs=1e-12)
    np.testing.assert_allclose(loss.predict(np, init[None, :])[0], [1 / 6, 2 / 6, 3 / 6])


def test_absolute_error_initial_raw_score_minimises_the_weighted_loss():
    loss, y, _, w, labels = _problem("absolute_error", n=41)
    init = loss.init_raw(y, w)[0]
    candidates = np.concatenate([labels, [init]])
    totals = [np.sum(w * np.abs(labels - c)) for c in candidates]
    assert totals[-1] <= min(totals) + 1e-12


def test_grouped_weighted_median_with_unit_weights_is_the_median():
    rng = np.random.RandomState(1)
    values = rng.normal(size=200)
    groups = rng.randint(0, 7, 200)
    medians = grouped_weighted_median(np, values, np.ones(200), groups, 9)
    for k in range(7):
        assert medians[k] == np.median(values[groups == k])
    assert np.isnan(medians[7]) and np.isnan(medians[8])       # empty groups


def test_grouped_weighted_median_with_integer_weights_repeats_rows():
    rng = np.random.RandomState(2)
    values = rng.normal(size=120)
    weights = rng.randint(0, 4, 120).astype(float)             # zeros drop rows
    groups = rng.randint(0, 5, 120)
    medians = grouped_weighted_median(np, values, weights, groups, 5)
    for k in range(5):
        repeated = np.repeat(values[groups == k], weights[groups == k].astype(int))
        assert medians[k] == pytest.approx(np.median(repeated), abs=0)


def test_inverse_links():
    raw = np.random.RandomState(3).normal(scale=3, size=(20, 3))
    proba = BinaryLogLoss().predict(np, raw[:, :1])
    np.testing.assert_allclose(proba[:, 1], 1 / (1 + np.exp(-raw[:, 0])))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    soft = MultinomialLoss(3).predict(np, raw)
    np.testing.assert_allclose(soft.sum(axis=1), 1.0)
    np.testing.assert_allclose(MultinomialLoss(3).predict(np, raw + 5.0), soft)
    np.testing.assert_allclose(PoissonLoss().predict(np, raw[:, :1]), np.exp(raw[:, :1]))
    assert np.all(np.isfinite(BinaryLogLoss().pointwise(np, np.ones((2, 1)),
                                                        np.array([[800.0], [-800.0]]))))


def test_make_loss_picks_the_loss():
    assert isinstance(make_loss("log_loss", 2), BinaryLogLoss)
    multinomial = make_loss("log_loss", 4)
    assert isinstance(multinomial, MultinomialLoss) and multinomial.n_outputs == 4
    assert isinstance(make_loss("poisson"), PoissonLoss)
    assert isinstance(make_loss("absolute_error"), AbsoluteError)


def test_grouped_weighted_median_does_not_depend_on_row_order_or_weight_scale():
    """Heavy ties with unequal weights: any row order, and weights scaled by
    any power of two, pick the same medians (the cumulative weights are
    compared exactly, as a device's parallel scan must agree with the host's)."""
    rng = np.random.RandomState(5)
    values = rng.randint(0, 4, size=500).astype(float)
    weights = rng.uniform(0.1, 10.0, size=500)
    groups = rng.randint(0, 6, size=500)
    expected = grouped_weighted_median(np, values, weights, groups, 6)
    for seed in range(5):
        perm = np.random.RandomState(seed).permutation(500)
        scale = 2.0 ** (40 * seed - 80)
        got = grouped_weighted_median(np, values[perm], weights[perm] * scale, groups[perm], 6)
        assert np.array_equal(got, expected)


class _DeviceLikeNumpy:
    """numpy under another name: the losses take their array-formula (device)
    path, which a GPU runs with cupy, instead of the host's fused kernels."""

    def __getattr__(self, name):
        return getattr(np, name)


def test_gradients_refilled_into_an_earlier_result_equal_fresh_ones():
    """Boosting hands a round's (g, h, pointwise) back to the next: the
    log-loss refills them (same values as fresh arrays), a mis-shaped one
    is not used, and losses that cannot refill ignore it."""
    from gputree.estimators.losses import make_loss
    rng = np.random.RandomState(4)
    raw, y = rng.normal(size=(500, 1)), (rng.uniform(size=(500, 1)) < 0.5).astype(float)
    loss = BinaryLogLoss()
    fresh = loss.gradients_and_pointwise(np, y, raw, None)
    spare = tuple(np.full_like(a, np.nan) for a in fresh)
    again = loss.gradients_and_pointwise(np, y, raw, None, out=spare)
    assert all(a is b for a, b in zip(again, spare))
    for a, b in zip(again, fresh):
        assert np.array_equal(a, b)
    short = tuple(a[:-1] for a in spare)
    assert all(a is not b for a, b in zip(loss.gradients_and_pointwise(np, y, raw, None,
                                                                       out=short), short))
    huber = make_loss("huber", None, 0.9)
    for a, b in zip(huber.gradients_and_pointwise(np, y, raw, None, out=spare),
                    make_loss("huber", None, 0.9).gradients_and_pointwise(np, y, raw, None)):
        assert np.array_equal(a, b)


def test_binary_log_loss_host_kernel_equals_the_device_formulas_bit_for_bit():
    rng = np.random.RandomState(11)
    raw = np.concatenate([rng.normal(scale=4, size=2000), [0.0, -0.0, 40.0, -40.0, 800.0,
                                                           -800.0]])[:, None]
    y = (rng.uniform(size=raw.shape) < 0.5).astype(float)
    loss = BinaryLogLoss()
    host = loss.gradients_and_pointwise(np, y, raw, None)
    device = loss.gradients_and_pointwise(_DeviceLikeNumpy(), y, raw, None)
    for a, b in zip(host, device):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("n_outputs", [1, 3])
def test_newton_statistics_totals_are_the_column_sums_and_ldexp_scaling(n_outputs):
    """The host pass that builds boosting's fixed-point rows also sums them
    (the root's totals): equal to numpy's column sums of those rows, and every
    row equal to rint(ldexp(value, exponent)) (the pass multiplies by 2**k);
    rows cross the pass's chunks, weights of zero give count 0."""
    from gputree.fixed_point import fixed_point_exponent
    from gputree.criteria import newton_statistics
    rng = np.random.RandomState(n_outputs)
    n = 40_000
    g = rng.standard_normal((n, n_outputs)) * 1e-3
    h = rng.uniform(0.0, 0.25, (n, n_outputs))
    w = np.where(rng.rand(n) < 0.2, 0.0, 1.0)
    stats = newton_statistics(g, h, w)
    np.testing.assert_array_equal(stats.totals, stats.stats.sum(axis=0)[None, :])
    for o in range(n_outputs):
        for c, column in ((2 * o, g[:, o]), (2 * o + 1, h[:, o])):
            expected = np.rint(np.ldexp(column, fixed_point_exponent(column))).astype(np.int64)
            np.testing.assert_array_equal(stats.stats[:, c], expected)
    np.testing.assert_array_equal(stats.stats[:, -1], (w > 0).astype(np.int64))
    assert not stats.ones_last      # some weights are zero: counts 0 there
    assert newton_statistics(g, h, np.ones(n)).ones_last
    # refilled into an earlier array (boosting's next round), the same rows and sums
    spare = np.full_like(stats.stats, -7)
    again = newton_statistics(g, h, w, out=spare)
    assert again.stats is spare
    np.testing.assert_array_equal(spare, stats.stats)
    np.testing.assert_array_equal(again.totals, stats.totals)
    assert newton_statistics(g, h, w, out=spare[:-1]).stats is not spare   # wrong shape


@pytest.mark.parametrize("n_outputs", [1, 2])
def test_newton_statistics_in_blocks_equal_the_whole_arrays(n_outputs):
    """Statistics built a block of rows at a time (blocks of 1,000 rows, the
    last one shorter; the largest |g| in the last block, the largest h in
    the first) are those of the whole arrays: every row, the scale, the
    totals, ones_last; each block's gradients are asked for twice."""
    from gputree.criteria import newton_statistics, newton_statistics_in_blocks
    rng = np.random.RandomState(n_outputs)
    n = 10_500
    g = rng.standard_normal((n, n_outputs)) * 1e-3
    g[-3] = 0.5
    h = rng.uniform(0.0, 0.25, (n, n_outputs))
    h[5] = 3.0
    for w in (np.where(rng.rand(n) < 0.2, 0.0, 1.0), np.ones(n)):
        whole = newton_statistics(g, h, w)
        calls = []

        def block(start, stop, first):
            calls.append((start, stop, first))
            return g[start:stop], h[start:stop], w[start:stop]

        spare = np.full_like(whole.stats, -7)
        blocks = newton_statistics_in_blocks(block, n, n_outputs, out=spare, block_rows=1000)
        assert blocks.stats is spare
        np.testing.assert_array_equal(blocks.stats, whole.stats)
        np.testing.assert_array_equal(blocks.inv_scale, whole.inv_scale)
        np.testing.assert_array_equal(blocks.layout, whole.layout)
        np.testing.assert_array_equal(blocks.totals, whole.totals)
        assert blocks.ones_last == whole.ones_last == bool(np.all(w == 1))
        assert sorted(calls) == sorted((s, min(n, s + 1000), f) for s in range(0, n, 1000)
                                       for f in (True, False))


def test_order_free_sum_in_blocks_equals_the_whole():
    """BlockOrderFreeSum over blocks of 1,000 values (the last shorter, one
    empty) is order_free_sum of all of them, bit for bit: ordinary values,
    zeros (-0.0 stays -0.0), an inf, a NaN."""
    from gputree.fixed_point import BlockOrderFreeSum, order_free_sum
    rng = np.random.RandomState(0)
    n = 4_500
    cases = [rng.standard_normal(n) * 1e3, np.full(n, -0.0), np.zeros(n)]
    for special in (np.inf, np.nan):
        values = rng.standard_normal(n)
        values[4_321] = special
        cases.append(values)
    for values in cases:
        total = BlockOrderFreeSum(n)
        bounds = [(0, 0)] + [(s, min(n, s + 1000)) for s in range(0, n, 1000)]
        for step in (total.see, total.add):
            for start, stop in bounds:
                step(values[start:stop])
        whole = order_free_sum(np, values)
        assert np.array_equal(np.float64(total.value()), np.float64(whole), equal_nan=True)
        assert np.signbit(total.value()) == np.signbit(whole)


def test_host_sums_equal_numpy_and_the_device_path():
    """largest_magnitudes (a maximum over bit patterns) equals numpy's
    max |value|, NaN for a column with a NaN (whatever its sign), with
    -0.0, subnormals and infinities; order_free_sum's host pass equals the
    array-formula (device) path bit for bit, over many chunks."""
    from gputree.fixed_point import largest_magnitudes
    from gputree.fixed_point import order_free_sum
    rng = np.random.RandomState(5)
    values = rng.standard_normal((70_000, 4)) * np.array([1e-310, 1.0, 1e300, 3.0])
    values[17, 0] = -0.0
    values[40_000, 2] = -np.inf
    np.testing.assert_array_equal(largest_magnitudes(values), np.abs(values).max(axis=0))
    for nan in (np.nan, -np.nan):
        column = values[:, 1].copy()
        column[69_999] = nan
        assert np.isnan(largest_magnitudes(column[:, None])[0])
    assert largest_magnitudes(np.zeros((0, 2))).tolist() == [0.0, 0.0]
    assert largest_magnitudes(-np.zeros((5, 1))).tolist() == [0.0]
    for column in (values[:, 1], values[:, 3] * 1e-5, np.abs(values[:, 1])):
        assert order_free_sum(np, column) == order_free_sum(_DeviceLikeNumpy(), column)
        assert order_free_sum(np, column) == order_free_sum(np, column[::-1].copy())


def _huber_problem(n=3000, n_nodes=9, seed=0):
    """Residuals over 6 decades (float sums of them depend on the order),
    uneven weights with zeros, rows in 7 of 9 nodes (node 0 is not a leaf,
    node 5 has no rows)."""
    rng = np.random.RandomState(seed)
    y = (rng.normal(size=n) * 10.0 ** rng.uniform(-3, 3, n))[:, None]
    raw = rng.normal(scale=0.5, size=(n, 1))
    w = rng.uniform(0.01, 5.0, n) * (rng.rand(n) > 0.1)
    positions = rng.choice([1, 2, 3, 4, 6, 7, 8], size=n)
    return y, raw, w, positions, n_nodes


def _huber_leaves(y, raw, w, positions, n_nodes, delta, xp=np):
    """The leaf values HuberLoss.refit_leaves writes (node 0 an inner node)."""
    from types import SimpleNamespace

    from gputree.estimators.losses import HuberLoss
    loss = HuberLoss(0.9)
    loss.delta = delta
    tree = SimpleNamespace(node_count=n_nodes, is_leaf=np.arange(n_nodes) > 0,
                           value=np.full((n_nodes, 1, 1), -7.0))
    loss.refit_leaves(xp, tree, positions, y, raw, w)
    return tree.value[:, 0, 0]


def _huber_reference(y, raw, w, positions, n_nodes, delta):
    """Friedman's Huber leaf step, brute force in Python numbers: the lower
    weighted median per leaf from exact cumulative weights, then the mean of
    the clipped steps from per-row fixed-point integers (w scaled by 2**s,
    w * step by 2**t, both from the largest positive weight W and the
    number m of positive weights: W m 2**s < 2**61 <= 2 W m 2**s, the same
    for W delta and t) as an exact fraction, correctly rounded."""
    import math
    from fractions import Fraction
    kept = [i for i in range(len(w)) if w[i] > 0]
    W, m = max(w[i] for i in kept), len(kept)
    s, t = (61 - math.frexp(bound * m)[1] for bound in (W, W * delta))
    out = np.full(n_nodes, -7.0)
    for node in range(1, n_nodes):
        rows = sorted((i for i in kept if positions[i] == node), key=lambda i: y[i, 0] - raw[i, 0])
        if not rows:
            continue
        residual = [y[i, 0] - raw[i, 0] for i in rows]
        fixed_w = [round(math.ldexp(w[i], s)) for i in rows]
        total, below = sum(fixed_w), 0
        for r, fw in zip(residual, fixed_w):
            below += fw
            if 2 * below >= total:
                median = r
                break
        steps = [math.copysign(min(delta, abs(r - median)), r - median) for r in residual]
        fixed_step = sum(round(math.ldexp(w[i] * st, t)) for i, st in zip(rows, steps))
        out[node] = median + float(Fraction(fixed_step, total) * Fraction(2) ** (s - t))
    return out


@pytest.mark.parametrize("delta", [0.7, 40.0, 0.0])
def test_huber_refit_is_the_brute_force_fixed_point_step(delta):
    problem = _huber_problem()
    got = _huber_leaves(*problem, delta)
    expected = _huber_reference(*problem, delta)
    assert np.array_equal(got, expected)
    assert got[0] == got[5] == -7.0       # an inner node and a leaf without rows kept


def test_huber_refit_does_not_depend_on_row_order():
    """The leaf values are bit for bit the same for the rows in any order
    (rows and positions permuted together): float sums in row order of
    these residuals differ between orders, the fixed-point sums do not.
    On the device path (array formulas) too."""
    y, raw, w, positions, n_nodes = _huber_problem(seed=1)
    expected = _huber_leaves(y, raw, w, positions, n_nodes, 25.0)
    for seed in range(4):
        perm = np.random.RandomState(seed).permutation(y.shape[0])
        got = _huber_leaves(y[perm], raw[perm], w[perm], positions[perm], n_nodes, 25.0,
                            np if seed % 2 else _DeviceLikeNumpy())
        assert np.array_equal(got, expected)


def test_huber_leaf_sums_of_shards_add_up_to_the_whole():
    """The per-leaf int64 sums of any split of the rows, on the scale of all
    the rows' weights, add up to those of the rows together (the workers'
    parts on Dask)."""
    from gputree.estimators.losses import HuberLoss
    from gputree.fixed_point import positive_weight_scale
    y, raw, w, positions, n_nodes = _huber_problem(seed=2)
    loss = HuberLoss(0.9)
    loss.delta = 3.0
    quantiles = np.random.RandomState(0).normal(size=n_nodes)
    scale = positive_weight_scale(np, w)
    whole = loss.leaf_sums(np, quantiles, positions, y, raw, w, scale)
    for cut in (1, 1000, 2999):
        parts = [loss.leaf_sums(np, quantiles, positions[s], y[s], raw[s], w[s], scale)
                 for s in (slice(0, cut), slice(cut, None))]
        assert whole.dtype == np.int64
        assert np.array_equal(parts[0] + parts[1], whole)


def test_grouped_int_sums_are_exact_in_any_order():
    """The chunked float bincounts of grouped_int_sums give Python's exact
    integer sums per group, for values up to the fixed-point bound (totals
    near 2**61, beyond float64's 53 bits) of either sign, in any row order."""
    from gputree.fixed_point import grouped_int_sums
    rng = np.random.RandomState(3)
    for n in (1, 37, 20000):
        bound = 2 ** 61 // n
        fixed = rng.randint(-bound, bound, size=(n, 2), dtype=np.int64)
        fixed[: n // 2, 1] = bound - 1                # a column of large same-sign values
        groups = rng.randint(0, 5, n)
        expected = np.array([[sum(int(v) for v in fixed[groups == g, c]) for c in range(2)]
                             for g in range(5)], dtype=np.int64)
        for seed in range(3):
            perm = np.random.RandomState(seed).permutation(n)
            got = grouped_int_sums(np, fixed[perm], groups[perm], 5)
            assert got.dtype == np.int64 and np.array_equal(got, expected)
        assert np.array_equal(grouped_int_sums(np, fixed[:, 0], groups, 5), expected[:, 0])
