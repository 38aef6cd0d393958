"""Damaged and malformed model files, for every kind of model: loading one
either raises ModelFormatError or gives a model that works.

* Bytes damaged (replaced, inserted, deleted, the file cut short): the
  outcome is a ModelFormatError or a model predicting bit for bit as the
  saved one (the digest catches every change of content).
* Content changed and the digest made to match (a file written by hand or by
  another program): the outcome is a ModelFormatError or a model whose every
  use (predictions, leaves, decision paths, TreeSHAP, importances, text and
  graphviz export, saving again) works: nothing read from a file fails later.

Seeded loops, a few seconds in all."""
import json
import warnings

import numpy as np
import pytest

import gputree
from gputree.io.json import content_digest, decode, encode
from gputree.io.plotting import export_graphviz
from gputree.io.text import export_text
from gputree.model import ModelFormatError
from model_cases import fitted, mixed_data, surrogate_tree
from model_file_damage import DAMAGES, SAFE, tabulate


def _multiway_tree():
    X, _, y_three, _ = mixed_data()
    model = gputree.DecisionTreeClassifier(criterion="entropy", multiway=True, max_depth=3,
                                           device="cpu", random_state=0)
    return model.fit(X, y_three), X


#: name -> () -> (fitted model, X to predict): every kind of model a file holds
KINDS = {"tree": lambda: fitted("tree_classifier"),
         "forest": lambda: fitted("forest_regressor"),
         "boosting_binary": lambda: fitted("boosting_binary"),
         "boosting_multiclass": lambda: fitted("boosting_multiclass"),
         "boosting_regressor": lambda: fitted("boosting_regressor"),
         "surrogate_tree": surrogate_tree,
         "multiway_tree": _multiway_tree}


@pytest.fixture(scope="module")
def models():
    return {name: make() for name, make in KINDS.items()}


@pytest.mark.parametrize("name", sorted(KINDS))
def test_damaged_bytes_are_refused_or_harmless(name, models):
    model, X = models[name]
    for seed, kind in enumerate(DAMAGES):
        counts, _ = tabulate(model, X, 25, kind, seed=seed, ascii_only=seed % 2 == 1,
                             detail=True)
        assert set(counts) <= set(SAFE), (kind, counts)
        assert counts[SAFE[0]] >= 20, (kind, counts)    # the damage does reach the reader


# ------------------------------------------------------------ content changed
def _places(value, path=()):
    """Every place in a parsed model file: (path of keys and indices, value);
    tagged values (arrays, tuples, ...) are one place each."""
    yield path, value
    if isinstance(value, dict) and not any(k.startswith("__") for k in value):
        for key, item in value.items():
            yield from _places(item, path + (key,))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _places(item, path + (i,))


def _set(data, path, value):
    """Copy of ``data`` with the value at ``path`` replaced (_REMOVE: removed)."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(data, dict):
        copy = dict(data)
    else:
        copy = list(data)
    if not rest and value is _REMOVE:
        del copy[head]
    else:
        copy[head] = _set(data[head], rest, value)
    return copy


_REMOVE = object()
_SCALARS = (None, True, False, 0, 1, 2, -1, 3, 10 ** 9, 0.5, -0.5, 1e300, "x", "", [], {},
            [1, 2], {"__float__": "nan"}, {"__float__": "inf"})


def _changed_array(array, rng):
    """``array`` with one value, its shape or its dtype changed."""
    choice = rng.randint(6)
    if array.size and choice < 3:
        array = array.copy()
        index = tuple(rng.randint(n) for n in array.shape)
        if array.dtype.kind == "f":
            palette = [np.nan, np.inf, -np.inf, -1.0, 0.0, 2.0, 1e300, rng.normal()]
        elif array.dtype.kind in "iu":
            info = np.iinfo(array.dtype)
            palette = [0, 1, -1, 2, array.shape[0], array.shape[0] - 1, info.max,
                       rng.randint(-5, 300)]
        else:
            palette = [not array[index]] if array.dtype.kind == "b" else [array[index]]
        value = palette[rng.randint(len(palette))]
        if array.dtype.kind in "iu":
            value = min(max(value, info.min), info.max)
        array[index] = value
        return array
    if choice == 3 and array.ndim:
        return array[:-1] if rng.rand() < 0.5 else np.concatenate([array, array[-1:]])
    if choice == 4:
        return array.ravel()
    kinds = {"f": [np.float32, np.int64], "i": [np.int64, np.float64, np.uint32],
             "u": [np.int32, np.uint32, np.bool_], "b": [np.uint8]}
    options = kinds.get(array.dtype.kind, [np.float64])
    try:
        return array.astype(options[rng.randint(len(options))])
    except (TypeError, ValueError):
        return array[:0]


def _changed(value, rng):
    """A changed copy of one place's value, or _REMOVE."""
    if isinstance(value, dict) and "__ndarray__" in value:
        return encode(_changed_array(decode(value), rng))
    if isinstance(value, dict) and ("__tuple__" in value or "__strings__" in value):
        plain = value.get("__tuple__") or value["__strings__"].get("values")
        return plain if rng.rand() < 0.5 else encode(decode(value)[:-1])
    if isinstance(value, dict) and value and rng.rand() < 0.5:
        keys = list(value)
        key = keys[rng.randint(len(keys))]
        edit = rng.randint(3)
        if edit == 0:
            return {k: v for k, v in value.items() if k != key}
        renamed = key + "s" if edit == 1 else key[:-1]
        return {(renamed if k == key else k): v for k, v in value.items()}
    if isinstance(value, list) and value and rng.rand() < 0.5:
        i = rng.randint(len(value))
        return value[:i] + value[i + 1:] if rng.rand() < 0.5 else value + [value[i]]
    if rng.rand() < 0.15:
        return _REMOVE
    if isinstance(value, (int, float)) and not isinstance(value, bool) and rng.rand() < 0.5:
        return value + (1 if rng.rand() < 0.5 else -1)
    return _SCALARS[rng.randint(len(_SCALARS))]


def _mutants(data, rng, count):
    """``count`` (description, data) with one place of ``data`` changed."""
    places = [(path, value) for path, value in _places(data) if path and path[0] != "digest"]
    for _ in range(count):
        path, value = places[rng.randint(len(places))]
        new = _changed(value, rng)
        yield f"{'.'.join(map(str, path))} -> {str(new)[:60]}", _set(data, path, new)


def _as_model_reads(model, X):
    """X with the loaded model's feature names, and its category codes in
    the columns the model holds no category table for (as a user passes
    them to a model fitted on codes)."""
    X = X.copy()
    for i, column in enumerate(X.columns):
        if X[column].dtype.name == "category" and i not in model._encoder.categories_:
            X[column] = X[column].cat.codes.astype(float).replace(-1.0, np.nan)
    names = getattr(model, "feature_names_in_", None)
    return X if names is None else X.set_axis(list(names), axis=1)


def _use(model, X):
    """Every use of a loaded model that reads what its file held."""
    X = _as_model_reads(model, X)
    model.predict(X)
    for method in ("predict_proba", "decision_function", "apply", "decision_path"):
        if hasattr(model, method):
            getattr(model, method)(X)
    if hasattr(model, "staged_predict"):
        list(model.staged_predict(X))
    if getattr(model, "surrogates_", None) is None:
        model.predict(X, pred_contrib=True)
    model.feature_importances_
    if hasattr(model, "tree_"):
        export_text(model)
    export_graphviz(model)


@pytest.mark.parametrize("name", sorted(KINDS))
def test_changed_content_is_refused_or_works(name, models, tmp_path):
    model, X = models[name]
    path = tmp_path / "model.json"
    model.save_model(path)
    data = json.loads(path.read_text())
    _use(model, X)
    rng = np.random.RandomState(sorted(KINDS).index(name))
    failures, refused = [], 0
    for description, mutant in _mutants(data, rng, 30):
        content = {k: v for k, v in mutant.items() if k != "digest"}
        path.write_text(json.dumps({**content, "digest": content_digest(content)}))
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                loaded = gputree.load_model(path, device="cpu")
        except ModelFormatError:
            refused += 1
            continue
        except Exception as exc:  # noqa: BLE001 - collected, reported below
            failures.append(f"{description}: {type(exc).__name__} at load: {exc!s:.150}")
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                _use(loaded, X)
        except Exception as exc:  # noqa: BLE001 - collected, reported below
            failures.append(f"{description}: {type(exc).__name__} after loading: {exc!s:.150}")
    assert not failures, "\n".join(failures)
    assert 10 <= refused <= 27      # both outcomes are exercised
