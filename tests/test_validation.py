"""Bad input gets a clear ValueError / TypeError that names the argument and
the fix, at fit or predict, and never a silently wrong model."""
import numpy as np
import pandas as pd
import pytest
import scipy.sparse
from sklearn.exceptions import NotFittedError

from gputree import DecisionTreeClassifier, DecisionTreeRegressor, export_text

RNG = np.random.RandomState(0)
X = RNG.normal(size=(40, 4))
Y_CLASS = (X[:, 0] > 0).astype(int)
Y_REG = X[:, 1] + RNG.normal(0, 0.1, 40)
ESTIMATORS = [(DecisionTreeClassifier, Y_CLASS), (DecisionTreeRegressor, Y_REG)]
IDS = ["classifier", "regressor"]


def _fit(cls, y, X=X, sample_weight=None, **params):
    return cls(device="cpu", **params).fit(X, y, sample_weight=sample_weight)


@pytest.mark.parametrize("cls,y", ESTIMATORS, ids=IDS)
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_targets(cls, y, bad):
    y = y.astype(float)
    y[[3, 7]] = bad
    with pytest.raises(ValueError, match=r"y contains NaN or infinity.*\[3, 7\].*drop or impute"):
        _fit(cls, y)


@pytest.mark.parametrize("cls,y", ESTIMATORS, ids=IDS)
@pytest.mark.parametrize("X_bad,message", [
    (X[:, 0], r"Expected 2D array for X, got 1D.*reshape\(-1, 1\)"),
    (X[:, :, None], r"Expected 2D array for X, got 3D"),
    (X[:0], r"0 sample\(s\)"),
    (X[:, :0], r"0 feature\(s\)"),
    (X + 1j, r"Complex data not supported in X"),
    (np.array([["a", "b"]] * 40), r"X has non-numeric values.*'category'"),
])
def test_bad_X(cls, y, X_bad, message):
    with pytest.raises(ValueError, match=message):
        _fit(cls, y[:len(X_bad)] if len(X_bad) else y[:0], X=X_bad)


@pytest.mark.parametrize("cls,y", ESTIMATORS, ids=IDS)
def test_length_mismatch_and_bad_y_shape(cls, y):
    with pytest.raises(ValueError, match="inconsistent numbers of samples: X has 40 rows but y has 39"):
        _fit(cls, y[:39])
    with pytest.raises(ValueError, match=r"y must be 1-D .* got shape \(40, 1, 1\)"):
        _fit(cls, y[:, None, None])
    with pytest.raises(ValueError, match="y is required"):
        cls(device="cpu").fit(X, None)


@pytest.mark.parametrize("cls,y", ESTIMATORS, ids=IDS)
def test_sparse_y_is_rejected_with_the_fix(cls, y):
    # sparse X is supported (tests/test_sparse.py); a sparse y is not
    with pytest.raises(TypeError, match=r"sparse matrix.*y.toarray\(\)"):
        _fit(cls, scipy.sparse.csr_matrix(y.reshape(len(y), -1)))


@pytest.mark.parametrize("cls,y", ESTIMATORS, ids=IDS)
@pytest.mark.parametrize("weights,message", [
    (-np.ones(40), r"Negative values in data passed to sample_weight.*>= 0"),
    (np.zeros(40), r"sample_weight is zero for every row.*positive weight"),
    (np.full(40, np.nan), r"sample_weight contains NaN or infinity"),
    (np.ones(39), r"sample_weight.shape == \(39,\), expected \(40,\)"),
])
def test_bad_sample_weight(cls, y, weights, message):
    with pytest.raises(ValueError, match=message):
        _fit(cls, y, sample_weight=weights)


@pytest.mark.parametrize("cls,y", ESTIMATORS, ids=IDS)
def test_a_zero_dimensional_sample_weight_is_a_type_error(cls, y):
    # a 0-d array is neither a weight per row nor a number (scikit-learn's TypeError)
    with pytest.raises(TypeError, match=r"at least 1 dimension.*one weight per row"):
        _fit(cls, y, sample_weight=np.array(0.5))


def test_a_single_negative_weight_is_named_by_row():
    w = np.ones(40)
    w[5] = -0.5
    with pytest.raises(ValueError, match=r"rows \[5\]"):
        _fit(DecisionTreeRegressor, Y_REG, sample_weight=w)


@pytest.mark.parametrize("cls,y", ESTIMATORS, ids=IDS)
def test_wrong_feature_count_at_predict(cls, y):
    model = _fit(cls, y)
    for method in ("predict", "apply", "decision_path"):
        with pytest.raises(ValueError, match=f"X has 3 features, but {cls.__name__} is "
                                             "expecting 4 features as input"):
            getattr(model, method)(X[:, :3])


@pytest.mark.parametrize("cls,y", ESTIMATORS, ids=IDS)
def test_column_names_must_match_at_predict(cls, y):
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    model = _fit(cls, y, X=frame)
    renamed = frame.rename(columns={"d": "e"})
    with pytest.raises(ValueError, match=r"unseen at fit time: \['e'\].*now missing: \['d'\]"):
        model.predict(renamed)
    with pytest.raises(ValueError, match=r"same order.*feature_names_in_"):
        model.predict(frame[["b", "a", "c", "d"]])
    # same columns, same order: same predictions as the array
    np.testing.assert_array_equal(model.predict(frame), model.predict(X))


def test_object_column_is_named():
    frame = pd.DataFrame({"x": X[:, 0], "s": ["u", "v"] * 20})
    with pytest.raises(ValueError, match=r"Column 's' has dtype (object|str), which is neither numeric nor 'category'.*astype\('category'\)"):
        _fit(DecisionTreeClassifier, Y_CLASS, X=frame)


@pytest.mark.parametrize("cls,params,error,message", [
    (DecisionTreeClassifier, dict(criterion="gin"), ValueError, r"criterion must be one of \['entropy', 'gain_ratio', 'gini', 'log_loss', 'misclassification'\], got 'gin'"),
    (DecisionTreeRegressor, dict(criterion="gini"), ValueError, r"criterion must be one of \['absolute_error', 'friedman_mse', 'poisson', 'squared_error'\], got 'gini'"),
    (DecisionTreeClassifier, dict(splitter="rand"), ValueError, r"splitter must be one of \['best', 'random'\], got 'rand'"),
    (DecisionTreeClassifier, dict(max_depth=0), ValueError, r"max_depth must be >= 1, got 0"),
    (DecisionTreeClassifier, dict(max_depth=2.5), TypeError, r"max_depth must be an int"),
    (DecisionTreeClassifier, dict(min_samples_split=1), ValueError, r"'min_samples_split' parameter must be an int in the range \[2, inf\)"),
    (DecisionTreeClassifier, dict(min_samples_split=1.5), ValueError, r"or a float in the range \(0.0, 1.0\], got 1.5"),
    (DecisionTreeClassifier, dict(min_samples_leaf=0), ValueError, r"'min_samples_leaf' parameter must be an int in the range \[1, inf\)"),
    (DecisionTreeClassifier, dict(min_samples_leaf="1"), TypeError, r"'min_samples_leaf' parameter must be an int .* or a float"),
    (DecisionTreeClassifier, dict(min_weight_fraction_leaf=0.6), ValueError, r"min_weight_fraction_leaf must be in \[0.0, 0.5\]"),
    (DecisionTreeClassifier, dict(max_features="auto"), ValueError, r"max_features must be one of \['log2', 'sqrt'\]"),
    (DecisionTreeClassifier, dict(max_features=0), ValueError, r"max_features must be \[1, 4\], got 0"),
    (DecisionTreeClassifier, dict(max_features=5), ValueError, r"max_features must be \[1, 4\], got 5"),
    (DecisionTreeClassifier, dict(max_features=0.0), ValueError, r"max_features must be in \(0.0, 1.0\]"),
    (DecisionTreeClassifier, dict(max_leaf_nodes=1), ValueError, r"max_leaf_nodes must be >= 2"),
    (DecisionTreeClassifier, dict(min_impurity_decrease=-0.1), ValueError, r"min_impurity_decrease must be in \[0.0, inf\]"),
    (DecisionTreeClassifier, dict(ccp_alpha=-1.0), ValueError, r"ccp_alpha must be in \[0.0, inf\]"),
    (DecisionTreeClassifier, dict(max_bins=1), ValueError, r"max_bins must be \[2, 65535\], got 1"),
    (DecisionTreeClassifier, dict(max_bins=65536), ValueError,
     r"max_bins must be \[2, 65535\], got 65536"),
    (DecisionTreeClassifier, dict(device="gpu"), ValueError, r"device must be one of .*'cuda'.*got 'gpu'"),
    (DecisionTreeClassifier, dict(class_weight="balance"), ValueError, r"class_weight must be one of \['balanced'\]"),
    (DecisionTreeClassifier, dict(class_weight={7: 2.0}), ValueError, r"class_weight names class 7, which is not in y"),
    (DecisionTreeClassifier, dict(random_state="seed"), ValueError, r"random_state must be None, an int or a numpy RandomState"),
    (DecisionTreeClassifier, dict(categorical_features=[4]), ValueError, r"categorical_features entry 4 is not a feature index in \[0, 4\)"),
    (DecisionTreeClassifier, dict(categorical_features=["a"]), ValueError, r"categorical_features names 'a'.*DataFrame"),
    (DecisionTreeClassifier, dict(categorical_features=[True, False]), ValueError, r"boolean mask must have shape \(4,\)"),
])
def test_bad_parameters_are_named(cls, params, error, message):
    y = Y_CLASS if cls is DecisionTreeClassifier else Y_REG
    model = cls(**{"device": "cpu", **params})      # no error at construction
    with pytest.raises(error, match=message):
        model.fit(X, y)


def test_continuous_target_for_a_classifier():
    with pytest.raises(ValueError, match="Unknown label type: continuous.*DecisionTreeRegressor"):
        _fit(DecisionTreeClassifier, Y_REG)


def test_poisson_needs_non_negative_targets_with_a_positive_sum():
    with pytest.raises(ValueError, match="negative which is not allowed for Poisson"):
        _fit(DecisionTreeRegressor, Y_REG, criterion="poisson")
    with pytest.raises(ValueError, match="Sum of y is not positive"):
        _fit(DecisionTreeRegressor, np.zeros(40), criterion="poisson")


def test_bad_categorical_codes_are_named():
    Xc = X.copy()
    Xc[:, 2] = np.arange(40) % 3 - 1.0                 # -1, 0, 1
    with pytest.raises(ValueError, match="Categorical feature 2 must hold non-negative integer"):
        _fit(DecisionTreeClassifier, Y_CLASS, X=Xc, categorical_features=[2])
    Xc[:, 2] = np.arange(40)     # more categories than max_bins: one bin per category
    model = _fit(DecisionTreeClassifier, Y_CLASS, X=Xc, categorical_features=[2], max_bins=10)
    assert model.model_.n_bins_non_missing[2] == 40
    assert model.model_.n_bins_non_missing.max(initial=0) == 40


@pytest.mark.parametrize("cls", [DecisionTreeClassifier, DecisionTreeRegressor])
def test_unfitted_model(cls):
    model = cls(device="cpu")
    for call in (lambda: model.predict(X), lambda: model.apply(X),
                 lambda: model.decision_path(X), lambda: model.feature_importances_,
                 lambda: model.get_depth()):
        with pytest.raises(NotFittedError, match="not fitted yet"):
            call()
    with pytest.raises(ValueError, match="export_text needs a fitted"):
        export_text(model)


def test_a_failed_refit_leaves_the_previous_model_whole():
    model = _fit(DecisionTreeClassifier, Y_CLASS)
    before = model.predict(X)
    # the new labels are valid but the class weights are not: nothing may change
    model.set_params(class_weight={"zz": 2.0})
    with pytest.raises(ValueError, match=r"class_weight names class 'zz'.*\['neg', 'pos'\]"):
        model.fit(X, np.array(["neg", "pos"])[Y_CLASS])
    np.testing.assert_array_equal(model.predict(X), before)
    np.testing.assert_array_equal(model.classes_, [0, 1])
    with pytest.raises(ValueError):
        model.set_params(class_weight=None).fit(X[:, :3], Y_CLASS[:39])
    np.testing.assert_array_equal(model.predict(X), before)
