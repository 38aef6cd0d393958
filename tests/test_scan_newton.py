"""The CPU's boosting scan (one output, no value constraints: the block scan
of scan.py) against a plain-Python scan of every candidate, bit for bit:
every threshold after bins 0 .. n-2 with the missing rows right, then left,
then "every non-missing bin left", each gain from the children's integer
sums by the Newton formula, the first strictly best kept. The reference
skips nothing (empty bins, children below min_samples_leaf or
min_child_weight are scored: -inf or a repeated gain), so whatever the scan
leaves out must be what can never win. Histograms: sparse features (most
rows in one bin), empty bins, one-bin features, missing rows or none, and
more bins than one block of the scan."""
import math

import numpy as np
import pytest

from gputree.backends import get_backend
from gputree.criteria import newton_statistics
from gputree.growth.params import GrowthParams

INV = 1 / 16        # the gradient and hessian sums' scale


def newton_term(g_sum, h_sum, reg_lambda, reg_alpha, inv=(INV, INV)):
    """T(G)**2 / (H + lambda) in Python floats (IEEE double, no fused ops),
    the sums scaled by ``inv`` (gradient, hessian)."""
    g = g_sum * inv[0]
    g = g - reg_alpha if g > reg_alpha else (g + reg_alpha if g < -reg_alpha else 0.0)
    h = h_sum * inv[1]
    return g * g / (h + reg_lambda) if h + reg_lambda > 0.0 else 0.0


def candidate_gain(left, total, parent, p, inv=(INV, INV)):
    """The gain of a split whose left child sums to ``left`` (g, h, n ints)."""
    right = [t - x for t, x in zip(total, left)]
    wl, wr = left[1] * inv[1], right[1] * inv[1]
    if not (float(left[2]) >= p.min_samples_leaf and float(right[2]) >= p.min_samples_leaf
            and wl >= p.min_weight_leaf and wr >= p.min_weight_leaf and wl > 0.0 and wr > 0.0):
        return -math.inf
    return 0.5 * (newton_term(left[0], left[1], p.reg_lambda, p.reg_alpha, inv)
                  + newton_term(right[0], right[1], p.reg_lambda, p.reg_alpha, inv) - parent)


def reference_scan(H, n, missing, p, inv=(INV, INV)):
    """(gain, last non-missing bin left, missing left, left sums) of the best
    candidate of one (node, feature) histogram H int64 (bins, 3), -inf and
    None when none is valid."""
    M = [int(x) for x in H[missing]]
    T = [int(x) for x in H[:n].sum(axis=0)]
    T = [t + x for t, x in zip(T, M)]
    parent = newton_term(T[0], T[1], p.reg_lambda, p.reg_alpha, inv)
    has_missing = M[2] > 0
    candidates = []
    running = [0, 0, 0]
    for b in range(n - 1):
        running = [r + int(x) for r, x in zip(running, H[b])]
        for ml in (0, 1) if has_missing else (0,):
            candidates.append(([r + ml * x for r, x in zip(running, M)], b, ml))
    if has_missing:
        candidates.append(([t - x for t, x in zip(T, M)], n - 1, 0))
    best = (-math.inf, None, None, None)
    for left, b, ml in candidates:
        gain = candidate_gain(left, T, parent, p, inv)
        if gain > best[0]:
            best = (gain, b, ml, left)
    return best


def newton_histograms(rng, n_nodes, n_features, n_bins):
    """int64 (n_nodes, F, n_bins, 3) histograms (gradient, hessian, count;
    the last bin missing), non-missing bins per feature int32 (F,): most of a
    feature's rows in one bin (a sparse feature's zero) at a random place,
    the rest spread over a few bins; features of one bin; missing rows in
    some (node, feature)s only. The cells between a feature's bins and the
    missing bin hold garbage (the scan must not read them)."""
    n_non_missing = rng.randint(2, n_bins, n_features).astype(np.int32)
    n_non_missing[:3] = (1, n_bins - 1, n_bins - 1)
    count = np.zeros((n_nodes, n_features, n_bins), np.int64)
    for node in range(n_nodes):
        rows = rng.choice([8, 30, 60, 400])
        for f in range(n_features):
            n = n_non_missing[f]
            heavy = rng.randint(n)
            spread = rng.randint(0, n, rng.randint(0, max(1, rows // 3)))
            np.add.at(count[node, f], spread, 1)
            count[node, f, heavy] += rows - spread.size
            if rng.rand() < 0.5:
                count[node, f, -1] = rng.randint(1, 12)
    gradient = rng.randint(-60, 60, count.shape) * count + rng.randint(-5, 5, count.shape)
    gradient *= count > 0
    hessian = rng.randint(1, 20, count.shape) * count
    hist = np.stack([gradient, hessian, count], axis=-1).astype(np.int64)
    for f in range(n_features):
        hist[:, f, n_non_missing[f]:-1] = rng.randint(-99, 99, (n_nodes, 1, 3))
    return hist, n_non_missing


def left_bins(bitset_row, n):
    """The non-missing bins a split's bitset row (uint32 (BITSET_WORDS,))
    sends left."""
    return [b for b in range(min(n, 256)) if (int(bitset_row[b // 32]) >> (b % 32)) & 1]


@pytest.mark.parametrize("n_bins,params", [
    (40, GrowthParams(min_samples_leaf=1)),
    (40, GrowthParams(min_samples_leaf=20, reg_lambda=1.0, min_weight_leaf=1e-3)),
    (300, GrowthParams(min_samples_leaf=5, reg_alpha=0.5, min_weight_leaf=2.0)),
    (300, GrowthParams(min_samples_leaf=20, reg_lambda=1.0)),
])
def test_boosting_scan_equals_every_candidate_scored(n_bins, params):
    rng = np.random.RandomState(n_bins + params.min_samples_leaf)
    hist, n_non_missing = newton_histograms(rng, 6, 24, n_bins)
    stats = newton_statistics(rng.normal(size=(8, 1)), np.full((8, 1), 0.25), np.ones(8))
    inv = np.ones(3)
    inv[:2] = INV
    allowed = np.ones(hist.shape[:2], np.uint8)
    gain, missing_left, bitset, left, _, _ = get_backend("cpu").scan_splits(
        hist, n_non_missing, np.zeros(hist.shape[1], np.uint8), allowed, n_bins - 1,
        stats.layout, inv, params.criterion_params())
    n_found = 0
    for node in range(hist.shape[0]):
        for f in range(hist.shape[1]):
            n = n_non_missing[f]
            best, b, ml, sums = reference_scan(hist[node, f], n, n_bins - 1, params)
            assert gain[node, f].tobytes() == np.float64(best).tobytes(), (node, f)
            if best == -math.inf:
                continue
            n_found += 1
            assert left[node, f].tolist() == sums
            if n <= 256:
                assert left_bins(bitset[node, f], n) == list(range(b + 1))
            if hist[node, f, -1, 2] > 0:
                assert missing_left[node, f] == ml
    assert n_found >= 20, "few valid splits: a weak test"


@pytest.mark.parametrize("order", [(0, 1), (1, 0), (2, 0, 1)])
def test_scan_parts_claiming_the_slots_in_any_order_give_one_parts_outputs(monkeypatch, order):
    """The split scan's parts claim its slots as they come
    (split_scan._find_splits): parts run one after the other in any order
    (the first then takes every slot, the others none) write what one
    part writes."""
    from gputree.backends.cpu import claims, threaded
    rng = np.random.RandomState(7)
    hist, n_non_missing = newton_histograms(rng, 5, 40, 40)
    stats = newton_statistics(rng.normal(size=(8, 1)), np.full((8, 1), 0.25), np.ones(8))
    inv = np.ones(3)
    inv[:2] = INV
    allowed = np.ones(hist.shape[:2], np.uint8)
    params = GrowthParams(min_samples_leaf=1).criterion_params()

    def scan():
        outputs = get_backend("cpu").scan_splits(
            hist, n_non_missing, np.zeros(hist.shape[1], np.uint8), allowed, 39,
            stats.layout, inv, params)
        return [a.copy() for a in outputs]

    with monkeypatch.context() as patch:
        patch.setattr(threaded, "parts_for", lambda work: 1)
        one = scan()
    counts = []

    def in_turn(kernel, n_parts, *args, claimed=False):
        assert claimed                              # a late part may be cancelled
        for part in order:
            kernel(*args, part, len(order))
            counts.append(args[-1][[claims.NEXT, claims.DONE]].tolist())
    monkeypatch.setattr(threaded, "run_parts", in_turn)
    turns = scan()
    # the first part took and did every slot, none past them; the others none
    n_slots = counts[0][0]
    assert counts == [[n_slots, n_slots]] * len(order) and n_slots > 2
    for a, b in zip(one, turns):
        np.testing.assert_array_equal(a, b)


def tied_histograms(n_features, n_bins):
    """int64 (1, F, n_bins, 3) histograms whose gains tie exactly: each
    feature's gradients are mirror images about the middle of its
    non-missing bins (so the threshold after bin b and the one after bin n -
    2 - b score the same), with hessians and counts alike in every bin;
    feature 0 has zero gradients (every candidate scores +0.0), some
    features empty bins between the rows (repeated candidates) and missing
    rows (mirror images with the missing rows left and right)."""
    rng = np.random.RandomState(3)
    n_non_missing = np.full(n_features, n_bins - 1, np.int32)
    n_non_missing[1::3] = rng.randint(2, 12, n_non_missing[1::3].size)
    hist = np.zeros((1, n_features, n_bins, 3), np.int64)
    for f in range(n_features):
        n = n_non_missing[f]
        half = rng.randint(-40, 40, (n + 1) // 2) * (f > 0)
        gradient = np.concatenate([half, -half[::-1][n % 2:]])
        count = np.full(n, 6)
        if f % 4 == 2:
            count[1:-1:2] = 0   # empty bins, symmetric for odd n
            gradient *= count > 0
        hist[0, f, :n] = np.stack([gradient, 3 * count, count], axis=-1)
        if f % 5 == 3:
            hist[0, f, -1] = (0, 3 * 4, 4)
    return hist, n_non_missing


@pytest.mark.parametrize("categorical", [False, True])
@pytest.mark.parametrize("n_bins", [12, 40, 300])
def test_boosting_scan_breaks_exact_ties_by_the_first_candidate(n_bins, categorical):
    """Equal gains (mirror-image thresholds, zero gradients, empty bins):
    the scan keeps the first in its order (the lowest bin, missing rows
    right before left), as the reference does, in one block and in many;
    also in the scan compiled with the categorical one (data with a
    categorical feature, the last: not checked here)."""
    hist, n_non_missing = tied_histograms(31, n_bins)
    is_categorical = np.zeros(hist.shape[1], np.uint8)
    is_categorical[-1] = categorical
    params = GrowthParams(min_samples_leaf=1)
    inv = np.ones(3)
    inv[:2] = INV
    stats = newton_statistics(np.zeros((8, 1)), np.full((8, 1), 0.25), np.ones(8))
    gain, missing_left, bitset, left, _, _ = get_backend("cpu").scan_splits(
        hist, n_non_missing, is_categorical, np.ones((1, 31), np.uint8), n_bins - 1,
        stats.layout, inv, params.criterion_params())
    n_tied = 0
    for f in range(hist.shape[1] - 1):
        n = n_non_missing[f]
        best, b, ml, sums = reference_scan(hist[0, f], n, n_bins - 1, params)
        assert gain[0, f].tobytes() == np.float64(best).tobytes(), f
        assert left[0, f].tolist() == sums, f
        if n <= 256:
            assert left_bins(bitset[0, f], n) == list(range(b + 1)), f
        # a later candidate of the same gain exists: the tie rule decided
        gains = [candidate_gain([int(x) for x in hist[0, f, :k + 1].sum(axis=0)],
                                [int(x) for x in hist[0, f].sum(axis=0)],
                                newton_term(*[int(x) for x in hist[0, f, :, :2].sum(axis=0)],
                                            params.reg_lambda, params.reg_alpha), params)
                 for k in range(b + 1, n - 1)]
        n_tied += best in gains
    assert n_tied >= 5, "few ties: a weak test"


def test_boosting_scans_of_a_fit_equal_every_candidate_scored(monkeypatch):
    """Every numerical (node, feature) scan of a boosting fit (300 bins:
    more than a block; categorical features: the scan compiled with the
    categorical one; histograms derived in the scan) against the reference,
    from the fit's own inputs and scales (a tie rule broken in that
    compilation alone fails here, not in the other tests)."""
    import inspect
    import types
    from gputree import GradientBoostingRegressor
    from gputree.backends.cpu import claims, threaded
    from gputree.backends.cpu.split_scan import _find_splits
    from gputree.growth import level_order
    from gputree.backends.formulas import (PARAM_MIN_SAMPLES_LEAF, PARAM_MIN_WEIGHT_LEAF,
                                           PARAM_REG_ALPHA, PARAM_REG_LAMBDA)
    from simulated.datasets import regression
    names = list(inspect.signature(_find_splits).parameters)
    run, calls = threaded.ThreadedKernel.run, []

    def keep(kernel, work, *args):
        result = run(kernel, work, *args)
        if kernel.function.__name__.startswith("_find_splits"):
            calls.append(dict(zip(names, [np.copy(a) for a in args])))
        return result
    monkeypatch.setattr(threaded.ThreadedKernel, "run", keep)
    # the level-wise scans, one call a level (small data grows its level-wise
    # trees best first, the scans inside one compiled call: level_order)
    monkeypatch.setattr(level_order, "applies", lambda *args: False)
    X, y = regression(n_samples=240, seed=3)
    GradientBoostingRegressor(device="cpu", n_estimators=3, max_depth=4, max_bins=300,
                              random_state=0).fit(X, y)
    n_checked = 0
    for a in calls:
        assert a["cells"].size == 0 and a["is_categorical"].any()
        params, inv = a["params"], (a["inv"][0], a["inv"][1])
        p = types.SimpleNamespace(min_samples_leaf=params[PARAM_MIN_SAMPLES_LEAF],
                                  min_weight_leaf=params[PARAM_MIN_WEIGHT_LEAF],
                                  reg_lambda=params[PARAM_REG_LAMBDA],
                                  reg_alpha=params[PARAM_REG_ALPHA])
        for node in a["scan_rows"][:a["claims"][claims.ROWS]]:
            for f in np.flatnonzero(a["is_categorical"] == 0):
                n = a["n_bins_non_missing"][f]
                best, b, ml, sums = reference_scan(a["hist"][node, f], n, a["missing_bin"], p,
                                                   inv)
                assert a["out_gain"][node, f].tobytes() == np.float64(best).tobytes()
                if best > -math.inf:
                    assert a["out_left"][node, f].tolist() == sums
                    assert left_bins(a["out_bitset"][node, f], n) == list(range(b + 1))
                    n_checked += 1
    assert n_checked >= 30, "few scans checked: a weak test"
