"""save_model / load_model: bit-identical round trips for every estimator,
kept files of earlier versions still load, malformed files are rejected."""
import errno
import json
import os
import pickle
import stat
import warnings

import numpy as np
import pytest

import gputree
from gputree._compat import NotFittedError
import gputree.io.json as model_json
from gputree.io.json import content_digest
from gputree.model import SCHEMA_VERSION, FittedModel, ModelFormatError, UnverifiedModelWarning
from model_cases import cases, fitted, predictions, surrogate_tree

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


@pytest.mark.parametrize("version", [1, 2, 5])
@pytest.mark.parametrize("name", ["tree_classifier", "forest_regressor", "boosting_multiclass"])
def test_kept_file_loads_and_predicts_as_a_refit(name, version):
    """Version 1: 8-word split bitsets; version 2: 10 words (bins beyond 255);
    both without a digest, so they load with a warning; version 5: with one."""
    path = os.path.join(DATA, f"model_v{version}_{name}.json")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kept = gputree.load_model(path)
    unverified = [w for w in caught if issubclass(w.category, UnverifiedModelWarning)]
    assert len(unverified) == (version < 5)
    assert all("cannot be verified" in str(w.message) for w in unverified)
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
    # the lowest version that describes it: surrogates need 4, digests 5
    assert json.loads((tmp_path / "m.json").read_text())["schema_version"] == 5
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


# ------------------------------------------------------- the file's integrity
def _raw(tmp_path, name="tree_classifier"):
    model, X = fitted(name)
    path = tmp_path / "model.json"
    model.save_model(path)
    return model, X, path, path.read_bytes()


def _payload_at(raw, byte, field="value"):
    """Index in ``raw`` of the base64 character holding byte ``byte`` of the
    first tree's ``field`` array."""
    start = raw.index(b'"base64":"', raw.index(f'"{field}":'.encode())) + len(b'"base64":"')
    return start + byte * 4 // 3


def test_a_changed_array_byte_is_caught_by_the_digest(tmp_path):
    """The silent failure: a leaf value's bytes changed, the base64 still valid."""
    model, X, path, raw = _raw(tmp_path)
    tree = model.tree_
    leaf = int(np.flatnonzero(tree.left_child < 0)[0])
    at = _payload_at(raw, leaf * tree.value[0].size * 8 + 6)   # a high byte of its value
    damaged = raw[:at] + (b"B" if raw[at:at + 1] != b"B" else b"C") + raw[at + 1:]
    path.write_bytes(damaged)
    edited = json.loads(damaged)
    edited.pop("digest")   # without the digest, this file loads and predicts otherwise
    path.with_name("no_check.json").write_text(json.dumps(
        {**edited, "schema_version": 4}))
    with pytest.warns(UnverifiedModelWarning):
        unchecked = gputree.load_model(path.with_name("no_check.json"))
    assert np.any(unchecked.predict_proba(X) != model.predict_proba(X))
    with pytest.raises(ModelFormatError, match="is damaged: its content does not match its "
                                               "digest"):
        gputree.load_model(path)


def test_the_digest_covers_content_not_formatting(tmp_path):
    """Reindented, keys reordered, numbers and strings spelt otherwise: same content."""
    model, X, path, raw = _raw(tmp_path)
    data = json.loads(raw)
    text = json.dumps(dict(reversed(list(data.items()))), indent=2, ensure_ascii=False)
    text = text.replace('"gini"', '"\\u0067ini"').replace(': 0.0,', ': 0e0,')
    assert "\\u0067ini" in text and "0e0" in text
    path.write_text(text)
    _same_bits(predictions(gputree.load_model(path), X), predictions(model, X))


@pytest.mark.parametrize("edit,message", [
    (lambda d: d.pop("digest"), "has no 'digest', which schema_version 5 requires"),
    (lambda d: d.update(digest="md5:0123"), "'digest' must be 'sha256:'"),
    (lambda d: d.update(schema_version=SCHEMA_VERSION + 1), "upgrade gputree"),
    (lambda d: d["params"].update(max_depth=3), "is damaged"),
    (lambda d: d.update(format="other"), "not a gputree model"),
])
def test_digest_and_version_are_checked_before_the_content(tmp_path, edit, message):
    _, _, path, raw = _raw(tmp_path)
    data = json.loads(raw)
    edit(data)
    path.write_text(json.dumps(data))
    with pytest.raises(ModelFormatError, match=message):
        gputree.load_model(path)


@pytest.mark.parametrize("change,message", [
    (lambda raw: raw[:40] + b"\xff" + raw[41:], "byte 40 is not UTF-8 text"),
    (lambda raw: raw[:-1], "invalid or truncated JSON"),
    (lambda raw: raw.replace(b'"max_depth":4,', b'"max_depth":4,"max_depth":4,'),
     "the key 'max_depth' twice"),
    (lambda raw: raw.replace(b'"ccp_alpha":0.0', b'"ccp_alpha":NaN'), "NaN is not JSON"),
    (lambda raw: raw.replace(b'"ccp_alpha":0.0', b'"ccp_alpha":1e999'),
     "out of float64's range"),
    (lambda raw: raw.replace(b'"max_depth":4', b'"max_depth":' + b"4" * 5000),
     "invalid or truncated JSON"),
    (lambda raw: b"[" * 100_000 + b"]" * 100_000, "invalid or truncated JSON"),
    (lambda raw: b"[]", "not a gputree model"),
])
def test_bytes_that_are_not_a_model_file_are_refused(tmp_path, change, message):
    _, _, path, raw = _raw(tmp_path)
    path.write_bytes(change(raw))
    with pytest.raises(ModelFormatError, match=message):
        gputree.load_model(path)


# --------------------------------------------------- the description's checks
def _shared_child(d):
    """The last internal node's children made the root's too (the root's own
    children then have no parent)."""
    tree = d["trees"][0]
    internal = np.flatnonzero(tree["left_child"] > 0)
    tree["left_child"][0] = tree["left_child"][internal[-1]]


def _tree_edit(field, change):
    def edit(d):
        d["trees"][0][field] = change(d["trees"][0][field].copy())
    return edit


def _set_at(index, value):
    def change(array):
        array[np.flatnonzero(array >= 0)[0] if index == "internal" else index] = value
        return array
    return change


def _first_categorical_split(d):
    tree = d["trees"][0]
    return int(np.flatnonzero((tree["is_categorical"] == 1) & (tree["left_child"] > 0))[0])


def _bit_beyond_categories(d):
    node = _first_categorical_split(d)
    d["trees"][0]["bitset"] = d["trees"][0]["bitset"].copy()
    d["trees"][0]["bitset"][node, 0] |= 1 << 30      # bin 30: beyond the 4 categories


@pytest.mark.parametrize("name,edit,message", [
    ("tree_classifier", lambda d: d.pop("bins"), "the model lacks the key 'bins'"),
    ("tree_classifier", lambda d: d.update(extra=1), "unknown key 'extra'"),
    ("tree_classifier", lambda d: d.update(atributes=d.pop("attributes")),
     "unknown key 'atributes' \\(a misspelt 'attributes'\\?\\)"),
    ("tree_classifier", lambda d: d["features"].update(name=d["features"].pop("names")),
     "'features' has the unknown key 'name' \\(a misspelt 'names'\\?\\)"),
    ("tree_classifier", lambda d: d["params"].update(max_dept=d["params"].pop("max_depth")),
     "the unknown key 'max_dept' \\(a misspelt 'max_depth'\\?\\)"),
    ("boosting_binary", lambda d: d["params"].update(loss="squared_error"),
     "params of GradientBoostingClassifier: loss must be one of"),
    ("forest_regressor", lambda d: d["params"].update(criterion="gini"),
     "params of RandomForestRegressor: criterion must be one of"),
    ("tree_classifier", lambda d: d["params"].update(n_jobs=0), "n_jobs must be None or"),
    ("tree_classifier", lambda d: d["params"].update(device="tpu"),
     "params.device must be one of"),
    ("tree_classifier", lambda d: d["params"].update(max_bins=64), "params.max_bins is 64"),
    ("boosting_binary", lambda d: d["attributes"].pop("train_score_"),
     "attributes of GradientBoostingClassifier lacks the key 'train_score_'"),
    ("boosting_binary", lambda d: d["attributes"].update(train_score_=3),
     "attributes.train_score_ must be a 1-D float64 array, got an int"),
    ("forest_regressor", lambda d: d["attributes"].update(_seed="0"),
     "attributes._seed must be an int >= 0, got a string"),
    ("tree_classifier", lambda d: d["attributes"].update(classes_=[1, 2]),
     "attributes.classes_ must be a non-empty 1-D array of labels"),
    ("tree_classifier", lambda d: d["features"].update(is_categorical=[0, 1, 0]),
     "features.is_categorical must be a 1-D bool array, got a list"),
    ("tree_classifier", _tree_edit("gain", lambda a: a[:-1]),
     r"trees\[0\]\.gain has shape \(\d+,\); expected \(\d+,\) \(one row per node\)"),
    ("tree_classifier", _tree_edit("feature", _set_at("internal", 3)),
     r"trees\[0\]\.feature\[0\] is not a feature index in \[0, 3\)"),
    ("forest_regressor", lambda d: _tree_edit("left_child", _set_at(-1, 99))(d),
     r"trees\[0\]\.left_child\[\d+\] disagrees with feature"),
    ("tree_classifier", _tree_edit("left_child", _set_at(1, 0)),
     r"trees\[0\]\.left_child\[1\] is not a node after its own .* no cycles"),
    ("tree_classifier", _shared_child, r"trees\[0\]\.left_child makes node 1 the child of "
                                       "0 nodes"),
    ("tree_classifier", _tree_edit("parent", _set_at(0, 0)),
     r"trees\[0\]\.parent\[0\] disagrees with left_child"),
    ("tree_classifier", _tree_edit("depth", _set_at(-1, 40)),
     r"trees\[0\]\.depth\[\d+\] disagrees with left_child"),
    ("tree_classifier", _tree_edit("missing_left", _set_at(-1, 1)),
     r"trees\[0\]\.missing_left\[\d+\] is set on a leaf"),
    ("tree_classifier", _tree_edit("value", _set_at((-1, 0, 0), np.nan)),
     r"trees\[0\]\.value\[\d+, 0, 0\] is not a finite number"),
    ("tree_classifier", _bit_beyond_categories,
     r"trees\[0\]\.bitset\[\d+\] sends left a bin that no value of its feature falls in"),
    ("tree_classifier", _tree_edit("threshold", lambda a: a + 1.0),
     r"trees\[0\]\.threshold\[0\] is not bins.thresholds of its feature"),
    ("boosting_binary", _tree_edit("is_categorical", lambda a: 1 - a * (a > 5)),
     r"trees\[0\]\.is_categorical\[\d+\] (disagrees with features|is set on a leaf)"),
    ("tree_classifier", lambda d: d["bins"]["thresholds"].__setitem__((0, 0), 1e9),
     r"bins\.thresholds\[0, 0\] is above the next threshold"),
    ("tree_classifier", lambda d: d["features"]["categories"][0].__setitem__(
        1, np.array(["red", "red", "blue", "grey"], dtype=object)), "distinct values"),
    ("tree_classifier", lambda d: d["features"]["categories"][0].__setitem__(0, 2),
     r"categories\[0\] must be \[index of a categorical feature"),
    ("tree_classifier", lambda d: d["trees"].append(d["trees"][0]),
     "a DecisionTreeClassifier holds one tree; 'trees' has 2"),
])
def test_malformed_description_is_refused_naming_what_is_wrong(name, edit, message):
    model, _ = fitted(name)
    description = model.model_.to_dict()
    description = json.loads(json.dumps(model_json.encode(description)))   # a deep copy
    description = model_json.decode(description)
    edit(description)
    with pytest.raises(ModelFormatError, match=message):
        FittedModel.from_dict(description)


def test_load_model_names_the_file_in_its_errors(tmp_path):
    _, data = _saved(tmp_path)
    data["attributes"].pop("n_outputs_")
    with pytest.raises(ModelFormatError, match=r"edited\.json: attributes of "
                                               r"DecisionTreeClassifier lacks the key"):
        _load_dict(tmp_path, data)


# ------------------------------------------------------------- atomic saves
class _FailingStream:
    """A binary stream that writes half of what it is given, then fails."""

    def __init__(self, stream, error):
        self.stream, self.error = stream, error

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stream.close()

    def write(self, data):
        self.stream.write(data[:len(data) // 2])
        self.stream.flush()
        raise self.error

    def __getattr__(self, name):
        return getattr(self.stream, name)


@pytest.mark.parametrize("error", [OSError(errno.ENOSPC, "No space left on device"),
                                   KeyboardInterrupt()])
def test_interrupted_save_leaves_the_old_file(tmp_path, monkeypatch, error):
    old, X = fitted("tree_classifier")
    path = tmp_path / "model.json"
    old.save_model(path)
    before = path.read_bytes()
    create = model_json._create_new
    written = []

    def failing(name):
        written.append(name)
        return _FailingStream(create(name), error)

    monkeypatch.setattr(model_json, "_create_new", failing)
    new, _ = fitted("forest_classifier")
    with pytest.raises(type(error)):
        new.save_model(path)
    # the new file was half written, next to the target, and is gone
    assert written and os.path.dirname(written[0]) == str(tmp_path)
    assert os.listdir(tmp_path) == ["model.json"]
    assert path.read_bytes() == before
    _same_bits(predictions(gputree.load_model(path), X), predictions(old, X))


def test_save_that_fails_before_the_rename_leaves_the_old_file(tmp_path, monkeypatch):
    old, X = fitted("tree_classifier")
    path = tmp_path / "model.json"
    old.save_model(path)
    before = path.read_bytes()

    def failing_fsync(handle):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(OSError, match="Input/output"):
        fitted("forest_classifier")[0].save_model(path)
    assert os.listdir(tmp_path) == ["model.json"] and path.read_bytes() == before


def test_save_replaces_the_file_keeping_its_permissions_and_links(tmp_path):
    tree, X = fitted("tree_classifier")
    forest, _ = fitted("forest_classifier")
    target = tmp_path / "target.json"
    tree.save_model(target)
    os.chmod(target, 0o640)
    link = tmp_path / "link.json"
    link.symlink_to(target)
    forest.save_model(link)
    assert link.is_symlink() and stat.S_IMODE(os.stat(target).st_mode) == 0o640
    _same_bits(predictions(gputree.load_model(target), X), predictions(forest, X))
    # a new file gets the permissions open() gives one
    open(tmp_path / "plain", "w").close()
    tree.save_model(tmp_path / "new.json")
    assert os.stat(tmp_path / "new.json").st_mode == os.stat(tmp_path / "plain").st_mode
    assert sorted(os.listdir(tmp_path)) == ["link.json", "new.json", "plain", "target.json"]


def test_a_list_where_a_tuple_was_saved_is_refused():
    model, X = fitted("forest_classifier")
    description = model.model_.to_dict()
    description["attributes"]["_value_shape"] = list(description["attributes"]["_value_shape"])
    with pytest.raises(ModelFormatError, match="_value_shape must be a tuple of 2 ints"):
        FittedModel.from_dict(description)


def test_a_category_table_shorter_than_the_codes_is_refused():
    model, _ = fitted("tree_classifier")
    description = model.model_.to_dict()
    description["features"]["categories"][0][1] = description["features"]["categories"][0][1][:3]
    with pytest.raises(ModelFormatError, match=r"bins.thresholds\[1, 3\] is not a category "
                                               r"code of features.categories\[0\] \(its 3"):
        FittedModel.from_dict(description)
