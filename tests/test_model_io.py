"""save_model / load_model: bit-identical round trips for every estimator,
kept files of earlier versions still load, malformed files are rejected."""
import json
import os
import pickle

import numpy as np
import pytest

import gputree
from gputree._compat import NotFittedError
from gputree.io.json import content_digest
from gputree.model import SCHEMA_VERSION, FittedModel, ModelFormatError
from model_cases import cases, fitted, mixed_data, predictions, surrogate_tree

DATA = os.path.join(os.path.dirname(__file__), "data")


def _same_bits(a, b):
    for x, y in zip(a, b):
        assert x.dtype == y.dtype and x.shape == y.shape
        assert np.asarray(x).tobytes() == np.asarray(y).tobytes()


@pytest.mark.parametrize("name", sorted(cases()))
def test_round_trip_predicts_bit_identically(name, tmp_path):
    model, X = fitted(name)
    path = tmp_path / "model.json"
    model.save_model(path)
    loaded = gputree.load_model(path)
    assert type(loaded) is type(model) and loaded.get_params() == model.get_params()
    _same_bits(predictions(model, X), predictions(loaded, X))
    np.testing.assert_array_equal(model._leaves(X), loaded._leaves(X))
    assert list(loaded.feature_names_in_) == list(X.columns)
    # the loaded model saves to the same file, and pickles like a fitted one
    loaded.save_model(tmp_path / "again.json")
    assert (tmp_path / "again.json").read_bytes() == path.read_bytes()
    _same_bits(predictions(pickle.loads(pickle.dumps(loaded)), X), predictions(model, X))


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("name", ["tree_classifier", "forest_regressor", "boosting_multiclass"])
def test_kept_file_of_schema_v1_loads_and_predicts_as_a_refit(name, version):
    """Version 1: 8-word split bitsets; version 2: 10 words (bins beyond 255)."""
    kept = gputree.load_model(os.path.join(DATA, f"model_v{version}_{name}.json"))
    refit, X = fitted(name)
    X2 = X.copy()           # unseen categories and missing values take the same paths too
    X2.loc[::3, "b"] = np.nan
    X2.loc[::4, "a"] = np.nan
    for data in (X, X2):
        # the same trees; float outputs to 1e-12, so that a last-bit change of the
        # library's exp/log (refit side) does not read as a loading failure
        for a, b in zip(predictions(kept, data), predictions(refit, data)):
            if a.dtype.kind == "f":
                np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)
            else:
                np.testing.assert_array_equal(a, b)


def _saved(tmp_path, name="tree_classifier"):
    model, _ = fitted(name)
    path = tmp_path / "model.json"
    model.save_model(path)
    return path, json.loads(path.read_text())


def _load_dict(tmp_path, data):
    """Load ``data`` (an edited model file) with its digest made to match,
    so that the reader's checks of the content are what is tested."""
    data = {k: v for k, v in data.items() if k != "digest"}
    path = tmp_path / "edited.json"
    path.write_text(json.dumps({**data, "digest": content_digest(data)}))
    return gputree.load_model(path)


def test_truncated_file_is_rejected_with_a_clear_error(tmp_path):
    path, _ = _saved(tmp_path)
    text = path.read_text()
    path.write_text(text[:len(text) // 2])
    with pytest.raises(ModelFormatError, match="truncated"):
        gputree.load_model(path)


def test_newer_schema_version_is_rejected(tmp_path):
    _, data = _saved(tmp_path)
    data["schema_version"] = SCHEMA_VERSION + 1
    with pytest.raises(ModelFormatError, match="upgrade gputree"):
        _load_dict(tmp_path, data)


def test_array_with_missing_bytes_is_rejected(tmp_path):
    _, data = _saved(tmp_path)
    field = data["trees"][0]["left_child"]["__ndarray__"]
    field["base64"] = field["base64"][:-8]
    with pytest.raises(ModelFormatError, match="bytes"):
        _load_dict(tmp_path, data)


def test_wrong_dtype_is_rejected(tmp_path):
    _, data = _saved(tmp_path)
    data["trees"][0]["threshold"]["__ndarray__"]["dtype"] = "int64"
    with pytest.raises(ModelFormatError, match="threshold must be a 1-D float64"):
        _load_dict(tmp_path, data)


def test_child_outside_the_tree_is_rejected_before_prediction(tmp_path):
    model, _ = fitted("tree_classifier")
    description = model.model_.to_dict()
    tree = description["trees"][0]
    tree["left_child"] = tree["left_child"].copy()
    tree["left_child"][0] = tree["left_child"].shape[0] + 5
    with pytest.raises(ModelFormatError, match=r"trees\[0\]\.left_child\[0\] is not a node after"):
        FittedModel.from_dict(description)


@pytest.mark.parametrize("name,attribute,value,message", [
    ("boosting_multiclass", "_groups", [[0, 1], [1, 2], [2, 4]], "must split the 3 raw-score"),
    ("boosting_binary", "_baseline", np.zeros(2), "must split the 2 raw-score"),
    ("forest_classifier", "n_classes_", 5, "classes_ and n_classes_ must hold"),
    ("boosting_multiclass", "n_iter_", 3, "12 trees do not make n_iter_ = 3 rounds"),
    ("boosting_multiclass", "n_classes_", 2, r"classes_ \(an array of labels\) and n_classes_"),
    ("forest_regressor", "_value_shape", (1, 2), r"_value_shape is \(1, 2\); expected \(1, 1\)"),
    ("forest_classifier", "max_features_", 4, "max_features_ is 4 but the model has 3 features"),
    ("tree_regressor", "classes_", np.arange(2), "unknown key 'classes_'")])
def test_values_that_do_not_fit_the_outputs_are_rejected(name, attribute, value, message):
    model, _ = fitted(name)
    description = model.model_.to_dict()
    description["attributes"][attribute] = value
    with pytest.raises(ModelFormatError, match=message):
        FittedModel.from_dict(description)


@pytest.mark.parametrize("name,width", [("tree_classifier", 2), ("forest_regressor", 2),
                                        ("boosting_binary", 3)])
def test_tree_values_of_another_width_are_rejected(name, width):
    model, _ = fitted(name)
    description = model.model_.to_dict()
    tree = description["trees"][-1]
    tree["value"] = np.zeros(tree["value"].shape[:2] + (width,))
    last = len(description["trees"]) - 1
    with pytest.raises(ModelFormatError, match=rf"trees\[{last}\]\.value has shape "
                                               rf"\(\d+, 1, {width}\);.* need \(nodes, 1, "):
        FittedModel.from_dict(description)


def test_unknown_tag_and_estimator_are_rejected(tmp_path):
    _, data = _saved(tmp_path)
    data["params"]["max_depth"] = {"__pickle__": "gASV"}
    with pytest.raises(ModelFormatError, match="unknown tagged value"):
        _load_dict(tmp_path, data)
    _, data = _saved(tmp_path)
    data["estimator"] = "os.system"
    with pytest.raises(ModelFormatError, match="unknown estimator"):
        _load_dict(tmp_path, data)


def test_unsavable_parameter_names_the_fix(tmp_path):
    model, _ = fitted("boosting_binary")
    model.set_params(scoring=lambda est, X, y: 0.0)
    with pytest.raises(TypeError, match="set that parameter"):
        model.save_model(tmp_path / "m.json")


def test_unfitted_model_cannot_be_saved(tmp_path):
    with pytest.raises(NotFittedError):
        gputree.DecisionTreeClassifier().save_model(tmp_path / "m.json")


def test_surrogate_tree_round_trip_predicts_bit_identically(tmp_path):
    model, X_test = surrogate_tree()
    model.save_model(tmp_path / "m.json")
    assert json.loads((tmp_path / "m.json").read_text())["schema_version"] == SCHEMA_VERSION
    loaded = gputree.load_model(tmp_path / "m.json")
    for name in ("feature", "bin", "left_le", "agreement", "majority_left", "sides"):
        _same_bits([getattr(model.surrogates_, name)], [getattr(loaded.surrogates_, name)])
    _same_bits(predictions(model, X_test), predictions(loaded, X_test))
    np.testing.assert_array_equal(model.apply(X_test), loaded.apply(X_test))
    # the surrogates matter on these rows: default directions predict otherwise
    default = gputree.load_model(tmp_path / "m.json")
    default.surrogates_ = None
    assert np.any(default.predict_proba(X_test) != model.predict_proba(X_test))
    loaded.save_model(tmp_path / "again.json")
    assert (tmp_path / "again.json").read_bytes() == (tmp_path / "m.json").read_bytes()


def _edit_surrogates(description, name, value):
    description["trees"][0]["surrogates"][name] = value
    return description


@pytest.mark.parametrize("edit,message", [
    (lambda d, s: _edit_surrogates(d, "agreement", s["agreement"].astype(np.float32)),
     "surrogates.agreement must be a 2-D float64"),
    (lambda d, s: _edit_surrogates(d, "sides", s["sides"][..., :-1]),
     r"surrogates.sides has shape"),
    (lambda d, s: _edit_surrogates(d, "feature", s["feature"][:-1]),
     r"surrogates.feature has shape"),
    (lambda d, s: _edit_surrogates(d, "majority_left", s["majority_left"][:, None]),
     "surrogates.majority_left must be a 1-D uint8"),
    (lambda d, s: _edit_surrogates(d, "feature", np.full_like(s["feature"], 4)),
     "surrogates.feature holds a value out of range"),
    (lambda d, s: _edit_surrogates(d, "agreement", np.full_like(s["agreement"], np.nan)),
     "surrogates.agreement holds a value out of range"),
    (lambda d, s: (d["trees"][0]["surrogates"].pop("bin"), d)[1], "lacks the key 'bin'"),
    (lambda d, s: dict(d, schema_version=3), "surrogates needs schema_version >= 4"),
    (lambda d, s: (d["trees"][0].pop("surrogates"), d)[1], "holds no surrogates"),
])
def test_malformed_surrogates_are_refused(edit, message):
    model, _ = surrogate_tree()
    description = model.model_.to_dict()
    surrogates = dict(description["trees"][0]["surrogates"])
    with pytest.raises(ModelFormatError, match=message):
        FittedModel.from_dict(edit(description, surrogates))
