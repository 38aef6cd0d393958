"""Random forests (gputree.estimators.forest): bootstrap counts as sample weights, the
per-node feature subset, out-of-bag estimates against held-out scores,
agreement with scikit-learn's forest without randomness, warm start, class
weights and backend independence."""
import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.ensemble import RandomForestRegressor as SkForestRegressor

from gputree import DecisionTreeClassifier, RandomForestClassifier, RandomForestRegressor
from gputree.backends import get_backend

FAST = dict(device="cpu", random_state=0)


def _trees(model):
    return model._trees


def _classification(n, seed=0):
    return make_classification(n_samples=n, n_features=8, n_informative=4, flip_y=0.05,
                               random_state=seed)


def test_bootstrap_counts_are_the_tree_weights():
    """Root weight = rows drawn (with replacement); root count = distinct
    rows drawn, about 1 - 1/e of them for n draws from n rows."""
    X, y = _classification(400)
    half = RandomForestClassifier(n_estimators=10, max_depth=1, max_samples=0.5,
                                  **FAST).fit(X, y)
    assert all(t.weighted_n_node_samples[0] == 200 for t in _trees(half))
    assert all(t.n_node_samples[0] < 200 for t in _trees(half))
    full = RandomForestClassifier(n_estimators=20, max_depth=1, **FAST).fit(X, y)
    distinct = np.array([t.n_node_samples[0] for t in _trees(full)]) / 400
    assert abs(distinct.mean() - (1 - np.exp(-1))) < 0.03
    assert len(set(distinct)) > 1                      # every tree draws its own sample


def test_single_tree_oob_predictions_come_from_out_of_bag_rows_only():
    X, y = _classification(300)
    with pytest.warns(UserWarning, match="OOB"):
        model = RandomForestClassifier(n_estimators=1, oob_score=True, **FAST).fit(X, y)
    oob = model.oob_decision_function_
    out_of_bag = oob.sum(axis=1) > 0
    # rows in the bag get no OOB prediction; the others get the tree's own
    assert abs(out_of_bag.mean() - np.exp(-1)) < 0.08
    np.testing.assert_allclose(oob[out_of_bag], model.predict_proba(X)[out_of_bag])
    # the tree fits its bag perfectly (no depth limit), so its OOB rows are
    # exactly the rows it may get wrong
    assert model.score(X[~out_of_bag], y[~out_of_bag]) == 1.0


def test_oob_score_is_close_to_a_held_out_score():
    X, y = _classification(3000, seed=1)
    model = RandomForestClassifier(n_estimators=40, oob_score=True, **FAST).fit(X[:1500], y[:1500])
    assert abs(model.oob_score_ - model.score(X[1500:], y[1500:])) < 0.04
    rng = np.random.RandomState(0)
    Xr = rng.uniform(size=(2000, 5))
    yr = 10 * Xr[:, 0] + 5 * np.sin(6 * Xr[:, 1]) + rng.normal(size=2000)
    reg = RandomForestRegressor(n_estimators=40, oob_score=True, max_features=0.6,
                                **FAST).fit(Xr[:1000], yr[:1000])
    assert abs(reg.oob_score_ - reg.score(Xr[1000:], yr[1000:])) < 0.05
    assert reg.oob_prediction_.shape == (1000,)


def test_without_randomness_equals_sklearn_forest():
    """bootstrap=False and all features: every tree is the exact CART tree,
    and gputree's tree equals scikit-learn's on integer features."""
    rng = np.random.RandomState(0)
    X = rng.randint(0, 15, size=(300, 4)).astype(float)
    y = X[:, 0] * 2 - X[:, 1] + rng.normal(size=300)
    params = dict(n_estimators=3, bootstrap=False, max_features=1.0, max_depth=5,
                  min_samples_leaf=3)
    ours = RandomForestRegressor(**params, **FAST).fit(X, y)
    sk = SkForestRegressor(**params, random_state=0).fit(X, y)
    np.testing.assert_allclose(ours.predict(X), sk.predict(X), rtol=1e-10)


def test_forest_of_one_unsampled_tree_is_the_decision_tree():
    X, y = _classification(300)
    forest = RandomForestClassifier(n_estimators=1, bootstrap=False, max_features=None,
                                    **FAST).fit(X, y)
    tree = DecisionTreeClassifier(**FAST).fit(X, y)
    np.testing.assert_array_equal(forest.predict_proba(X), tree.predict_proba(X))


def test_max_features_draws_a_subset_per_node():
    """x0 in {0..3} sets the class, x1 is noise, x2 constant. With
    max_features=1 every node draws its features in a random order,
    independently, and takes the first that is not constant there
    (scikit-learn's soft limit): every root splits, on x0 about half the time
    (1/3 + 1/3 * 1/2), and some trees split the root's two children (both
    impure after a split on x1) on different features (impossible with one
    draw per tree)."""
    rng = np.random.RandomState(0)
    x0 = rng.randint(0, 4, 400)
    X = np.c_[x0, rng.normal(size=400), np.zeros(400)]
    model = RandomForestClassifier(n_estimators=120, max_features=1, max_depth=2,
                                   bootstrap=False, **FAST).fit(X, x0)
    trees = _trees(model)
    assert all(t.feature[0] >= 0 for t in trees)
    root_x0 = np.array([t.feature[0] == 0 for t in trees])
    assert 0.35 < root_x0.mean() < 0.65
    mixed = [t for t in trees if t.feature[1] >= 0 and t.feature[2] >= 0
             and t.feature[1] != t.feature[2]]
    assert len(mixed) > 10


@pytest.mark.filterwarnings("ignore:Some inputs do not have OOB scores")
def test_warm_start_equals_one_long_fit():
    X, y = _classification(300)
    params = dict(max_features="sqrt", oob_score=True, max_samples=0.8, **FAST)
    long = RandomForestClassifier(n_estimators=8, **params).fit(X, y)
    warm = RandomForestClassifier(n_estimators=4, warm_start=True, **params).fit(X, y)
    warm.set_params(n_estimators=8).fit(X, y)
    np.testing.assert_array_equal(warm.predict_proba(X), long.predict_proba(X))
    assert warm.oob_score_ == long.oob_score_
    np.testing.assert_array_equal(warm.oob_decision_function_, long.oob_decision_function_)
    with pytest.raises(ValueError, match="n_estimators"):
        warm.set_params(n_estimators=3).fit(X, y)


def test_class_weight_equals_the_matching_sample_weights():
    X, y = _classification(300)
    y = np.where(np.arange(300) % 5 == 0, 1, 0) | y * (np.arange(300) % 3 == 0)
    counts = np.bincount(y)
    balanced = 300 / (2 * counts[y])
    a = RandomForestClassifier(n_estimators=5, class_weight="balanced", **FAST).fit(X, y)
    b = RandomForestClassifier(n_estimators=5, **FAST).fit(X, y, sample_weight=balanced)
    np.testing.assert_allclose(a.predict_proba(X), b.predict_proba(X), rtol=1e-12)
    subsample = RandomForestClassifier(n_estimators=5, class_weight="balanced_subsample",
                                       max_depth=1, **FAST).fit(X, y)
    # in every bootstrap the two classes weigh the same at the root
    for tree in _trees(subsample):
        np.testing.assert_allclose(tree.value[0, 0], [0.5, 0.5])


def test_multi_output_classification_and_regression():
    X, y = _classification(300)
    Y = np.c_[y, (X[:, 0] > 0).astype(int) + 2 * (X[:, 1] > 1)]
    clf = RandomForestClassifier(n_estimators=10, **FAST).fit(X, Y)
    assert clf.predict(X).shape == (300, 2)
    assert [p.shape for p in clf.predict_proba(X)] == [(300, 2), (300, 4)]
    assert np.mean(clf.predict(X) == Y) > 0.95
    reg = RandomForestRegressor(n_estimators=5, **FAST).fit(X, np.c_[X[:, 0], -X[:, 1]])
    assert reg.predict(X).shape == (300, 2)
    assert reg.score(X, np.c_[X[:, 0], -X[:, 1]]) > 0.8


@pytest.mark.parametrize("criterion", ["entropy", "gain_ratio"])
def test_other_classification_criteria_learn_as_well_as_gini(criterion):
    # 500 held-out rows and 20 trees: over random_state 0..7 the criteria's
    # scores were within 0.02 of gini's (10 trees on 200 rows: within 0.07)
    X, y = _classification(1500, seed=2)
    gini = RandomForestClassifier(n_estimators=20, **FAST).fit(X[:1000], y[:1000])
    model = RandomForestClassifier(n_estimators=20, criterion=criterion, **FAST).fit(X[:1000],
                                                                                    y[:1000])
    assert model.score(X[1000:], y[1000:]) > max(0.8, gini.score(X[1000:], y[1000:]) - 0.04)


def test_poisson_forest_predicts_positive_means():
    rng = np.random.RandomState(0)
    X = rng.uniform(size=(500, 3))
    y = rng.poisson(np.exp(2 * X[:, 0]))
    model = RandomForestRegressor(n_estimators=10, criterion="poisson", min_samples_leaf=5,
                                  **FAST).fit(X, y)
    assert np.all(model.predict(X) > 0)
    assert np.corrcoef(model.predict(X), np.exp(2 * X[:, 0]))[0, 1] > 0.8


def test_feature_importances_single_out_the_informative_feature():
    rng = np.random.RandomState(0)
    X = rng.uniform(size=(400, 4))
    y = (X[:, 1] > 0.5).astype(int)
    model = RandomForestClassifier(n_estimators=10, max_features=None, max_depth=3,
                                   **FAST).fit(X, y)
    assert model.feature_importances_.sum() == pytest.approx(1.0)
    assert np.argmax(model.feature_importances_) == 1
    assert model.apply(X).shape == (400, 10)


def test_invalid_combinations_are_rejected():
    X, y = _classification(50)
    with pytest.raises(ValueError, match="bootstrap"):
        RandomForestClassifier(bootstrap=False, oob_score=True, **FAST).fit(X, y)
    with pytest.raises(ValueError, match="max_sample"):
        RandomForestClassifier(bootstrap=False, max_samples=0.5, **FAST).fit(X, y)
    with pytest.raises(ValueError, match="criterion"):
        RandomForestRegressor(criterion="gini", **FAST).fit(X, y)


@pytest.mark.filterwarnings("ignore:Some inputs do not have OOB scores")
@pytest.mark.parametrize("device", ["cuda-sim", "cuda"])
def test_backends_grow_the_same_forest(device):
    try:
        get_backend(device)
    except Exception:
        pytest.skip(f"backend {device!r} is not available here")
    X, y = _classification(150)
    params = dict(n_estimators=3, max_depth=3, oob_score=True, random_state=0)
    cpu = RandomForestClassifier(device="cpu", **params).fit(X, y)
    other = RandomForestClassifier(device=device, **params).fit(X, y)
    for a, b in zip(_trees(cpu), _trees(other)):
        np.testing.assert_array_equal(a.feature, b.feature)
        np.testing.assert_array_equal(a.bitset, b.bitset)
    np.testing.assert_array_equal(cpu.predict_proba(X), other.predict_proba(X))
    assert cpu.oob_score_ == other.oob_score_


@pytest.mark.parametrize("criterion", ["gini", "entropy"])
def test_statistics_from_bootstrap_counts_equal_those_of_the_counts_as_weights(criterion):
    """counted_statistics (the statistics of weight one times the counts, on
    the backend) is classification_statistics with the counts as weights,
    bit for bit, with and without a bootstrap (all counts one)."""
    from gputree.criteria import CLASSIFICATION_CRITERIA, classification_statistics
    from gputree.estimators.bagging import counted_statistics
    rng = np.random.RandomState(4)
    y = np.column_stack([rng.randint(0, 3, 500), rng.randint(0, 2, 500)])
    code = CLASSIFICATION_CRITERIA[criterion]
    unit = classification_statistics(y, 3, np.ones(500), code)
    drawn = np.bincount(rng.randint(0, 500, 500), minlength=500).astype(np.float64)
    for counts in (drawn, np.ones(500)):
        got = counted_statistics(get_backend("cpu"), unit, counts)
        want = classification_statistics(y, 3, counts, code)
        for name in ("stats", "inv_scale", "layout"):
            assert getattr(got, name).dtype == getattr(want, name).dtype, name
            np.testing.assert_array_equal(getattr(got, name), getattr(want, name), err_msg=name)
        assert got.n_classes == want.n_classes


def test_forest_from_bootstrap_counts_equals_forest_from_host_statistics(monkeypatch):
    """Statistics built from the counts on the backend grow the very trees
    that statistics built on the host from the counts as weights grow."""
    from gputree.estimators import forest as forest_module
    X, y = _classification(300, seed=2)
    params = dict(n_estimators=3, max_depth=4, oob_score=True, **FAST)
    counted = RandomForestClassifier(**params).fit(X, y)
    monkeypatch.setattr(forest_module, "device_statistics",
                        lambda backend, targets, weight, counts, cache: None)
    host = RandomForestClassifier(**params).fit(X, y)
    for a, b in zip(_trees(counted), _trees(host)):
        for name, value in vars(b).items():
            np.testing.assert_array_equal(getattr(a, name), value, err_msg=name)
    assert counted.oob_score_ == host.oob_score_
