"""Fuzzing campaign: no silent wrong models at any scale.

Hypothesis draws small data sets (random shapes; X, y and weights at scales
from 1e-300 to 1e300; mixed signs, duplicated rows, constant, all-NaN and
heavily tied columns, categorical columns with 1 to 40 categories, one class
or one row; numpy, list or pandas input) for every estimator and every
criterion or loss, and checks each against differential oracles:

* invariances: weights times a power of two give the identical model;
  targets times a power of two give exactly scaled predictions (not for
  poisson, whose y*log(y) terms cancel log(2**j) only to rounding);
  permuted rows give the identical tree, and so does every row duplicated
  with half its weight for classification with unit weights (for real
  targets half-weight rows round at half the fixed-point unit, so
  near-tied gains can order differently: not checked); numpy, list and
  pandas inputs give the identical model;
* scikit-learn's exact tree, where the algorithms coincide, at target
  scales where scikit-learn itself is right (1) against gputree at 2**-300
  to 2**300;
* the same model on every backend available;
* values float64 cannot hold raise a ValueError naming the argument and a
  power-of-two fix, never an internal error or a silent NaN.

Budget: the ``ci`` profile (default) runs a few examples per test,
derandomized, within the suite's time budget; ``GPUTREE_FUZZ=long`` runs
hundreds per test (by hand: ``GPUTREE_FUZZ=long python -m pytest
tests/test_fuzz_scales.py``). A failure prints the shrunk case.
"""
import os
import warnings

import numpy as np
import pandas as pd
import pytest
import sklearn.tree
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gputree
import reference
from gputree.backends import get_backend
from gputree.fixed_point import PrecisionWarning

_PROFILES = {
    "ci": settings(max_examples=6, deadline=None, derandomize=True, print_blob=True,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]),
    "long": settings(max_examples=300, deadline=None, print_blob=True,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]),
}
if os.environ.get("GPUTREE_FUZZ", "ci") not in _PROFILES:
    raise ValueError(f"GPUTREE_FUZZ must be one of {sorted(_PROFILES)}, "
                     f"got {os.environ['GPUTREE_FUZZ']!r}.")
FUZZ = _PROFILES[os.environ.get("GPUTREE_FUZZ", "ci")]

# (estimator class, criterion or loss parameter, its values, is a regressor)
_SMALL = dict(random_state=0, device="cpu")
ESTIMATORS = {
    "tree_classifier": (gputree.DecisionTreeClassifier, "criterion",
                        ("gini", "entropy", "log_loss", "gain_ratio"), dict(max_depth=4)),
    "tree_regressor": (gputree.DecisionTreeRegressor, "criterion",
                       ("squared_error", "poisson"), dict(max_depth=4)),
    "forest_classifier": (gputree.RandomForestClassifier, "criterion",
                          ("gini", "entropy", "gain_ratio"), dict(n_estimators=3, max_depth=3)),
    "forest_regressor": (gputree.RandomForestRegressor, "criterion",
                         ("squared_error", "poisson"), dict(n_estimators=3, max_depth=3)),
    # reg_lambda and min_child_weight are in hessian units, which scale with
    # the weights: the weight test scales them too (_UNITS_OF_WEIGHT)
    "boosting_classifier": (gputree.GradientBoostingClassifier, "loss", ("log_loss",),
                            dict(n_estimators=4, max_depth=3, min_samples_leaf=1,
                                 early_stopping=False)),
    "boosting_regressor": (gputree.GradientBoostingRegressor, "loss",
                           ("squared_error", "absolute_error", "poisson"),
                           dict(n_estimators=4, max_depth=3, min_samples_leaf=1,
                                early_stopping=False)),
}
TREES = ("tree_classifier", "tree_regressor")
#: boosting parameters in units of the (hessian) weights
_UNITS_OF_WEIGHT = ("reg_lambda", "min_child_weight")


def _is_regressor(kind):
    return kind.endswith("regressor")


# ------------------------------------------------------------ generators

@st.composite
def features(draw, n):
    """X float64 (n, F) and its categorical mask: normal columns at a scale
    from 1e-300 to 1e300 with mixed signs, constant, all-NaN, heavily tied
    and categorical (1 to 40 categories) columns, some NaN."""
    rng = np.random.RandomState(draw(st.integers(0, 2**31 - 1)))
    n_features = draw(st.integers(1, 4))
    kinds = draw(st.lists(st.sampled_from(["normal", "constant", "nan", "ties", "categorical"]),
                          min_size=n_features, max_size=n_features))
    X = np.empty((n, n_features))
    for f, kind in enumerate(kinds):
        scale = 10.0 ** draw(st.integers(-300, 300))
        if kind == "normal":
            X[:, f] = rng.normal(size=n) * scale
        elif kind == "constant":
            X[:, f] = scale
        elif kind == "nan":
            X[:, f] = np.nan
        elif kind == "ties":
            X[:, f] = rng.randint(-1, 2, n) * scale
        else:
            X[:, f] = rng.randint(0, draw(st.integers(1, 40)), n)
    X[rng.rand(n, n_features) < draw(st.sampled_from([0.0, 0.1]))] = np.nan
    return X, np.array([k == "categorical" for k in kinds])


@st.composite
def targets(draw, kind, parameter, n, rng):
    """y for the estimator kind: 1 to 4 classes (ints or strings), or real
    targets at a scale from 1e-100 to 1e100 (mixed signs; non-negative for
    poisson)."""
    if not _is_regressor(kind):
        # one class is fine for trees and forests; boosting needs two
        y = rng.randint(0, draw(st.integers(1, 4)), n)
        if kind.startswith("boosting"):
            y[:2] = [0, 1]
        return y.astype(str) if draw(st.booleans()) else y
    scale = 10.0 ** draw(st.integers(-100, 100))
    if parameter == "poisson":
        y = rng.poisson(1.5, n) * scale
        y[0] = scale
        return y
    return rng.normal(size=n) * scale


@st.composite
def weights(draw, n, rng):
    """None, all equal at a scale from 1e-300 to 1e300, or per-row weights
    whose magnitudes span up to 24 orders of magnitude (zeros included)."""
    kind = draw(st.sampled_from(["none", "equal", "spread"]))
    if kind == "none":
        return None
    scale = 10.0 ** draw(st.integers(-300, 300))
    if kind == "equal":
        return np.full(n, scale)
    w = 10.0 ** rng.uniform(-12, 12, n) * (scale / 1e12)
    w[rng.rand(n) < 0.1] = 0.0
    w[0] = scale
    return w


@st.composite
def cases(draw, kind):
    """One fuzz case: (kind, params, X, categorical mask, y, w or None)."""
    _, parameter, values, params = ESTIMATORS[kind]
    n = draw(st.integers(2 if kind == "boosting_classifier" else 1, 40))
    X, categorical = draw(features(n))
    if draw(st.booleans()):       # duplicated rows
        X = np.concatenate([X, X[: n // 2]])
    rng = np.random.RandomState(draw(st.integers(0, 2**31 - 1)))
    choice = draw(st.sampled_from(values))
    y = draw(targets(kind, choice, X.shape[0], rng))
    w = draw(weights(X.shape[0], rng))
    params = dict(params, **{parameter: choice}, **_SMALL)
    if categorical.any():
        params["categorical_features"] = np.flatnonzero(categorical)
    return kind, params, X, y, w


# --------------------------------------------------------------- helpers

def _fit(kind, params, X, y, w, device="cpu"):
    """The fitted estimator, or None when the case is out of float64's range
    (README, "Scales"), which must raise a ValueError naming the argument.
    A PrecisionWarning (weights spanning more than int64) is allowed, any
    other warning fails."""
    cls = ESTIMATORS[kind][0]
    expected = _out_of_range(kind, params.get("loss"), np.asarray(y), w)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", PrecisionWarning)
        if expected is None:
            return cls(**dict(params, device=device)).fit(X, y, sample_weight=w)
        with pytest.raises(ValueError, match=rf"{expected}.*power of two"):
            cls(**dict(params, device=device)).fit(X, y, sample_weight=w)
    return None


def _out_of_range(kind, loss, y, w):
    """The argument a fit must name in its ValueError, or None: the ranges
    the README promises, written out independently of the library."""
    n = y.shape[0]
    w = np.ones(n) if w is None else w
    huge, tiny = np.finfo(np.float64).max, np.finfo(np.float64).tiny
    if n * w.max() > huge or w.max() < tiny:
        return "sample_weight"
    y_max = float(np.abs(y).max()) if _is_regressor(kind) else 1.0
    if kind.startswith("boosting"):
        # gradients: w times residuals (signs for absolute error); poisson's
        # baseline mean is clipped at float64's eps
        floor = np.finfo(np.float64).eps if loss == "poisson" else 0.0
        gradient = w.max() * (1.0 if loss == "absolute_error" else max(y_max or 1.0, floor))
        return "(y|sample_weight)" if gradient < 2.0 ** -500 or n * gradient > 2.0 ** 500 else None
    if not _is_regressor(kind) or y_max == 0.0:
        return None
    with np.errstate(over="ignore", under="ignore"):
        second = w.max() * y_max * y_max
    return "y" if n * y_max > huge or not tiny <= second <= huge / n else None


def _outputs(model, X):
    """Everything a model predicts for X, as a list of arrays."""
    out = [model.predict(X)]
    if hasattr(model, "predict_proba"):
        out.append(model.predict_proba(X))
    if hasattr(model, "apply") and not hasattr(model, "estimators_"):
        out.append(model.apply(X))
    return out


def _assert_identical(a, b, X):
    for p, q in zip(_outputs(a, X), _outputs(b, X)):
        np.testing.assert_array_equal(p, q)


def _power(draw_int):
    return 2.0 ** draw_int


def _scaled_weights(w, n, factor):
    return np.full(n, factor) if w is None else w * factor


# ------------------------------------------------------------------ tests

@pytest.mark.parametrize("kind", sorted(ESTIMATORS))
@FUZZ
@given(data=st.data())
def test_weights_times_a_power_of_two_give_the_identical_model(kind, data):
    kind, params, X, y, w = data.draw(cases(kind))
    factor = _power(data.draw(st.integers(-200, 200)))
    w2 = _scaled_weights(w, X.shape[0], factor)
    w1 = np.ones(X.shape[0]) if w is None else w
    if np.any((w1 > 0) & (w2 < np.finfo(np.float64).tiny)) or not np.all(np.isfinite(w2)):
        return      # a weight scaled out of float64's normal range is other data
    params2 = dict(params)
    if kind.startswith("boosting"):
        cls = ESTIMATORS[kind][0]
        defaults = cls().get_params()
        params2.update({p: defaults[p] * factor for p in _UNITS_OF_WEIGHT})
    base, scaled = _fit(kind, params, X, y, w), _fit(kind, params2, X, y, w2)
    if base is None or scaled is None:
        return
    _assert_identical(base, scaled, X)
    for p in _outputs(base, X)[:2]:
        assert p.dtype.kind != "f" or np.all(np.isfinite(p))


@pytest.mark.parametrize("kind", ["tree_regressor", "forest_regressor", "boosting_regressor"])
@FUZZ
@given(data=st.data())
def test_targets_times_a_power_of_two_scale_predictions_exactly(kind, data):
    kind, params, X, y, w = data.draw(cases(kind))
    if params.get("loss", params.get("criterion")) == "poisson":
        # its gains hold y*log(y) terms, where log(2**j) cancels only up to
        # rounding (and boosting's log link shifts raw scores instead)
        return
    factor = _power(data.draw(st.integers(-150, 150)))
    base, scaled = _fit(kind, params, X, y, w), _fit(kind, params, X, y * factor, w)
    if base is None or scaled is None:
        return
    assert np.all(np.isfinite(base.predict(X)))
    np.testing.assert_array_equal(scaled.predict(X), base.predict(X) * factor)


@pytest.mark.parametrize("kind", TREES)
@FUZZ
@given(data=st.data())
def test_permuted_and_duplicated_rows_give_the_identical_tree(kind, data):
    kind, params, X, y, w = data.draw(cases(kind))
    base = _fit(kind, params, X, y, w)
    if base is None:
        return
    order = np.random.RandomState(data.draw(st.integers(0, 2**31 - 1))).permutation(X.shape[0])
    wp = None if w is None else w[order]
    _assert_identical(base, _fit(kind, params, X[order], y[order], wp), X)
    if _is_regressor(kind) or w is not None:
        # y*w (and non-dyadic weights) of half-weight rows round at half
        # the fixed-point unit: near-tied gains may then order differently
        return
    half = np.full(2 * X.shape[0], 0.5)
    doubled = _fit(kind, params, np.concatenate([X, X]), np.concatenate([y, y]), half)
    # unit weights are their own fixed point and halves are exact: the very
    # same class sums up to a power of two, so the very same tree
    for p, q in zip(_outputs(base, X)[:2], _outputs(doubled, X)[:2]):
        np.testing.assert_array_equal(p, q)
    assert reference.same_grouping(base.apply(X), doubled.apply(X))


@pytest.mark.parametrize("kind", sorted(ESTIMATORS))
@FUZZ
@given(data=st.data(), container=st.sampled_from(["list", "pandas"]))
def test_list_and_pandas_inputs_give_the_identical_model(kind, data, container):
    kind, params, X, y, w = data.draw(cases(kind))
    base = _fit(kind, params, X, y, w)
    if base is None:
        return
    X2 = X.tolist() if container == "list" else pd.DataFrame(X)
    y2 = y.tolist() if container == "list" else pd.Series(y)
    _assert_identical(base, _fit(kind, params, X2, y2, w), X)


@FUZZ
@given(seed=st.integers(0, 2**31 - 1), power=st.integers(-300, 300),
       criterion=st.sampled_from(["squared_error", "gini", "entropy"]),
       n=st.integers(2, 60), n_values=st.integers(2, 8))
def test_scaled_data_grows_scikit_learns_tree_at_scale_one(seed, power, criterion, n, n_values):
    """scikit-learn's exact tree at scale 1 (its absolute epsilons are right
    there) is gputree's tree at scale 2**power: for regression the targets,
    for classification the weights, are scaled. Grid features with fewer
    values than bins and dyadic weights, so that the algorithms coincide."""
    rng = np.random.RandomState(seed)
    X = rng.randint(0, n_values, (n, 3)) * rng.uniform(0.5, 3, 3)
    w = rng.randint(16, 64, n) / 16.0
    factor = 2.0 ** power
    if criterion == "squared_error":
        power = min(max(power, -450), 450)     # y**2 stays in float64's normal range
        factor = 2.0 ** power
        y = rng.normal(size=n)
        theirs = sklearn.tree.DecisionTreeRegressor(max_depth=3).fit(X, y, sample_weight=w)
        ours = gputree.DecisionTreeRegressor(max_depth=3, device="cpu").fit(
            X, y * factor, sample_weight=w)
        np.testing.assert_allclose(ours.predict(X) / factor, theirs.predict(X),
                                   rtol=1e-12, atol=1e-12)
    else:
        y = rng.randint(0, 3, n)
        theirs = sklearn.tree.DecisionTreeClassifier(criterion=criterion, max_depth=3).fit(
            X, y, sample_weight=w)
        ours = gputree.DecisionTreeClassifier(criterion=criterion, max_depth=3,
                                              device="cpu").fit(X, y, sample_weight=w * factor)
        np.testing.assert_allclose(ours.predict_proba(X), theirs.predict_proba(X), atol=1e-12)
    assert ours.tree_.node_count == theirs.tree_.node_count
    leaves_ours, leaves_theirs = ours.apply(X), theirs.apply(X)
    assert len(set(zip(leaves_ours, leaves_theirs))) == len(set(leaves_theirs))


def _other_device():
    """The device to compare with the CPU: GPUTREE_TEST_DEVICE (as in
    test_device_parity.py), else "cuda"; None when it is not usable here."""
    device = os.environ.get("GPUTREE_TEST_DEVICE", "cuda")
    try:
        get_backend(device)
    except Exception:  # noqa: BLE001 - not available in this process
        return None
    return device


@pytest.mark.skipif(_other_device() is None, reason="no device other than the CPU here")
@pytest.mark.parametrize("kind", sorted(ESTIMATORS))
@FUZZ
@given(data=st.data())
def test_every_backend_grows_the_same_model(kind, data):
    kind, params, X, y, w = data.draw(cases(kind))
    base = _fit(kind, params, X, y, w)
    if base is not None:
        _assert_identical(base, _fit(kind, params, X, y, w, _other_device()), X)


@FUZZ
@given(power=st.sampled_from([-1070, -1000, -600, 600, 1000]),
       kind=st.sampled_from(["tree_regressor", "boosting_regressor", "tree_classifier"]),
       n=st.integers(1, 30))
def test_out_of_range_values_raise_naming_the_argument_and_a_fix(power, kind, n):
    """Targets whose squares, or weights whose sums, leave float64's normal
    range: a ValueError naming y or sample_weight and a power of two."""
    rng = np.random.RandomState(n)
    X = rng.normal(size=(n, 2))
    cls, _, _, params = ESTIMATORS[kind]
    if kind == "tree_classifier":
        if -1000 < power < 1000:
            return     # weights in range: the weight invariance test covers them
        power = -1070 if power < 0 else 1023     # subnormal, or a sum past float64's max
        n = max(n, 2)
        X = rng.normal(size=(n, 2))
        y, w, name = rng.randint(0, 2, n), np.full(n, 2.0 ** power), "sample_weight"
    else:
        y, w, name = rng.normal(size=n) * 2.0 ** power, None, "y"
    with pytest.raises(ValueError, match=rf"{name}.*power of two"):
        cls(**dict(params, **_SMALL)).fit(X, y, sample_weight=w)


# ------------------------------------------- the cases of the table

def _table_data():
    X = np.random.RandomState(0).normal(size=(2000, 5))
    return X, X[:, 0]


@pytest.mark.parametrize("scale", [1e-9, 1e-20, 1e-100, 1e100])
def test_targets_at_any_decimal_scale_grow_the_tree_of_scale_one(scale):
    """Decimal factors are not exact, so the leaves agree to rounding; the
    data have no near-tied gains, so the splits are the same."""
    X, y = _table_data()
    base = gputree.DecisionTreeRegressor(max_depth=3, device="cpu").fit(X, y)
    scaled = gputree.DecisionTreeRegressor(max_depth=3, device="cpu").fit(X, y * scale)
    np.testing.assert_array_equal(scaled.apply(X), base.apply(X))
    np.testing.assert_allclose(scaled.predict(X), base.predict(X) * scale, rtol=1e-12)


@pytest.mark.parametrize("weight", [1e18, 1e20, 1e100, 1e-300])
def test_equal_weights_at_any_scale_grow_the_unweighted_tree(weight):
    """Same splits; class probabilities are exact (integer ratios), means to
    rounding (w * y rounds differently for a decimal w)."""
    X, y = _table_data()
    labels = (y > 0).astype(int)
    w = np.full(X.shape[0], weight)
    for cls, target in ((gputree.DecisionTreeClassifier, labels),
                        (gputree.DecisionTreeRegressor, y)):
        base = cls(max_depth=3, device="cpu").fit(X, target)
        weighted = cls(max_depth=3, device="cpu").fit(X, target, sample_weight=w)
        np.testing.assert_array_equal(weighted.apply(X), base.apply(X))
        np.testing.assert_allclose(weighted.predict(X), base.predict(X), rtol=1e-12)


def test_weights_wider_than_int64_warn_naming_the_rows_lost():
    X, y = _table_data()
    w = np.ones(X.shape[0])
    w[[3, 7]] = 1e-30
    w[0] = 1e12
    with pytest.warns(PrecisionWarning, match=r"sample_weight: 2 row\(s\) \[3, 7\]"):
        gputree.DecisionTreeClassifier(max_depth=2, device="cpu").fit(X, y > 0, sample_weight=w)


@pytest.mark.parametrize("categorical", [False, True])
def test_boosting_without_curvature_in_a_node_does_not_divide_by_zero(categorical):
    """Found by the long campaign: with reg_lambda=0, rows whose hessians
    round to zero beside far heavier rows leave a node or category with no
    curvature; the fit must go on (such nodes score nothing) and predict."""
    X = np.array([[-0.4, -1.8, 1.0], [-0.06, -0.8, 1.0], [-2.1, 0.5, 0.0], [1.6, -1.2, 0.0]])
    y = np.array([0, 1, 0, 0])
    w = np.array([0.1, 1.46e-08, 2.9e-11, 1.2e-12])
    model = gputree.GradientBoostingClassifier(
        n_estimators=4, max_depth=3, min_samples_leaf=1, reg_lambda=0.0, min_child_weight=0.0,
        early_stopping=False, device="cpu",
        categorical_features=[2] if categorical else None).fit(X, y, sample_weight=w)
    assert np.all(np.isfinite(model.predict_proba(X)))
