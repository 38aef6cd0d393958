"""``FittedModel``: the one description of a fitted gputree model that every
export format reads (JSON files, Treelite, text export, plotting, TreeSHAP):
the estimator's class and parameters, the feature layout (names, categorical
columns and their category tables), the bin thresholds, the trees
(:class:`gputree.tree.TreeArrays`) and the estimator's other fitted
attributes (classes, baseline raw score, tree groups, ...).

Estimator classes that a model can hold register themselves here
(:func:`register_estimator`), declaring their kind of model and the fitted
attributes a model keeps, with what each must be (:class:`Saved`): this
module and the formats that read it never import the estimators.

``FittedModel.of(estimator)`` reads a fitted estimator;
``FittedModel.to_estimator()`` builds a fitted estimator back;
``to_dict`` / ``from_dict`` convert to and from plain containers (numpy
arrays, lists, str, numbers). ``from_dict`` is where every description read
from a file is checked, and the one place that raises
:class:`ModelFormatError`: its keys, every array's dtype and shape, the
trees' structure (a tree, no cycles, parents and depths that agree), values
that index something (features, children, classes, raw-score columns) or
that predictions add up (finite), the parameters as fit checks them and the
declared attributes; so a model it accepts never fails later because of its
description.
"""
import difflib
import numbers
from dataclasses import dataclass, fields
from typing import Callable, NamedTuple

import numpy as np

from ._dtypes import (BITMAP_BINS, BITMAP_WORDS, BITSET_DTYPE, BITSET_WORDS, FEATURE_DTYPE,
                      FLOAT_DTYPE, MAX_NON_MISSING_BINS, NODE_DTYPE, WORD_COUNT_DTYPE,
                      WORD_START_DTYPE, extension_words)
from ._threads import resolve_n_jobs
from .backends import DEVICES, get_backend
from .data.binning import BinMapper
from .data.encoder import FeatureEncoder
from .growth.surrogates import Surrogates
from .tree import TreeArrays

#: version of the layout of ``to_dict`` (and of the JSON files written from it);
#: 2: split bitsets have BITSET_WORDS (10) words, bins beyond 255 allowed;
#: 3 adds the optional tree field ``chain_link`` (multiway splits); 4 adds the
#: optional tree object ``surrogates`` (CART surrogate splits of a single
#: tree, written only when present); 5: every file carries a ``digest`` of
#: its content (gputree.io.json); 6: categorical features with more
#: categories than max_bins (bins.thresholds wider than params.max_bins) and
#: the optional tree fields ``cat_words``, ``cat_start``, ``cat_n_words``
#: (categorical splits' bins from 256 on). A model is written with the
#: lowest of versions 5 and 6 that describes it. Files of versions 1 to 4
#: load unchanged (version 1: 8-word bitsets, at most 255 bins), with a
#: warning that they cannot be verified
SCHEMA_VERSION = 6
#: the version written for models that need nothing of version 6
BASE_SCHEMA_VERSION = 5

#: keys of a model description, in the order written (the file adds ``digest``)
TOP_KEYS = ("format", "schema_version", "estimator", "params", "features", "bins", "trees",
            "attributes")
FEATURE_KEYS = ("names", "is_categorical", "categories")
BIN_KEYS = ("thresholds", "n_bins_non_missing")

#: dtype and per-node trailing shape of every TreeArrays field (value: checked apart)
TREE_FIELDS = {
    "feature": (FEATURE_DTYPE, ()), "bitset": (BITSET_DTYPE, (BITSET_WORDS,)),
    "left_child": (NODE_DTYPE, ()), "threshold": (FLOAT_DTYPE, ()),
    "missing_left": (np.uint8, ()), "is_categorical": (np.uint8, ()),
    "value": (FLOAT_DTYPE, None), "impurity": (FLOAT_DTYPE, ()),
    "n_node_samples": (np.int64, ()), "weighted_n_node_samples": (FLOAT_DTYPE, ()),
    "gain": (FLOAT_DTYPE, ()), "depth": (NODE_DTYPE, ()), "parent": (NODE_DTYPE, ()),
}
#: fields a tree may omit (schema version 3; absent: all zeros)
OPTIONAL_TREE_FIELDS = {"chain_link": (np.uint8, ())}
#: fields of categorical splits' words beyond their bitsets (schema version
#: 6; written together when a split has some; absent: none). ``cat_words``
#: is one array per tree, not a row per node: its trailing shape is None
WORD_FIELDS = {"cat_words": (BITSET_DTYPE, None), "cat_start": (WORD_START_DTYPE, ()),
               "cat_n_words": (WORD_COUNT_DTYPE, ())}
#: dtype and number of axes of every array of a tree's ``surrogates`` object
#: (schema version 4; :class:`gputree.growth.surrogates.Surrogates`)
SURROGATE_FIELDS = {"feature": (FEATURE_DTYPE, 2), "bin": (np.int32, 2), "left_le": (np.uint8, 2),
                    "agreement": (FLOAT_DTYPE, 2), "majority_left": (np.uint8, 1),
                    "sides": (BITSET_DTYPE, 4)}
#: how the trees of a model make its predictions; every estimator class
#: declares its kind as ``_model_kind``: "tree" (one tree), "forest" (the
#: mean of the trees' values) or "boosting" (a baseline plus the trees'
#: values, each tree adding to its columns of the raw score)
MODEL_KINDS = ("tree", "forest", "boosting")


class ModelFormatError(ValueError):
    """A model description (dict or file) that gputree cannot load."""


class UnverifiedModelWarning(UserWarning):
    """A model file without a digest (written before schema version 5): its
    content cannot be checked against damage."""


#: class name -> estimator class, filled by :func:`register_estimator`
_ESTIMATORS = {}


def register_estimator(cls):
    """Class decorator: models of ``cls`` can be described, saved and loaded
    (by its class name). ``cls`` declares ``_model_kind`` (one of
    MODEL_KINDS) and ``_model_attributes``, a dict: name of each fitted
    attribute a model keeps besides trees and bins -> :class:`Saved`."""
    if cls._model_kind not in MODEL_KINDS or not all(
            isinstance(s, Saved) for s in cls._model_attributes.values()):
        raise TypeError(f"{cls.__name__} must declare _model_kind (one of {MODEL_KINDS}) and "
                        "_model_attributes (name -> Saved).")
    _ESTIMATORS[cls.__name__] = cls
    return cls


def estimator_classes():
    """Class name -> estimator class, for every estimator a model can hold."""
    return dict(_ESTIMATORS)


@dataclass(frozen=True)
class Saved:
    """What a saved fitted attribute must be: ``check(value) -> bool``,
    described as ``what`` in error messages; ``optional``: it may be absent
    (e.g. the out-of-bag attributes of a forest fitted without them)."""

    what: str
    check: Callable
    optional: bool = False

    def __call__(self, value):
        return bool(self.check(value))


def _is_int(value, low=None):
    return (isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))
            and (low is None or value >= low))


def saved_int(low=0, optional=False, nullable=False):
    """An int >= ``low`` (or null, where ``nullable``)."""
    what = f"an int >= {low}" + (" or null" if nullable else "")
    return Saved(what, lambda v: (nullable and v is None) or _is_int(v, low), optional)


def saved_number(optional=False):
    """A float (or int) scalar."""
    return Saved("a number", lambda v: isinstance(v, numbers.Real)
                 and not isinstance(v, (bool, np.bool_)), optional)


def saved_floats(ndim, optional=False):
    """A float64 array with ``ndim`` axes (an int, or a tuple of the allowed ones)."""
    ndims = (ndim,) if isinstance(ndim, int) else tuple(ndim)
    return Saved(f"a {' or '.join(map(str, ndims))}-D float64 array",
                 lambda v: isinstance(v, np.ndarray) and v.dtype == FLOAT_DTYPE
                 and v.ndim in ndims, optional)


def _ints(value, length, low, kinds):
    return isinstance(value, kinds) and len(value) == length and all(
        _is_int(x, low) for x in value)


def saved_ints(length, low=0, optional=False):
    """A tuple of ``length`` ints >= ``low``."""
    return Saved(f"a tuple of {length} ints >= {low}",
                 lambda v: _ints(v, length, low, tuple), optional)


def saved_int_pairs(optional=False):
    """A non-empty list of (int, int) pairs (tuples or lists)."""
    return Saved("a non-empty list of [int, int] pairs", lambda v: isinstance(v, list)
                 and len(v) > 0 and all(_ints(p, 2, 0, (tuple, list)) for p in v), optional)


def _is_labels(value):
    return (isinstance(value, np.ndarray) and value.ndim == 1 and value.size > 0
            and (value.dtype.kind in "biufU"
                 or (value.dtype == object and all(isinstance(x, str) for x in value))))


def saved_labels(optional=False):
    """A non-empty 1-D array of class labels (numbers, bools or str)."""
    return Saved("a non-empty 1-D array of labels", _is_labels, optional)


def per_output(saved):
    """``saved``'s value, or a non-empty list of them (one per output)."""
    return Saved(f"{saved.what}, or a list of them (one per output)",
                 lambda v: saved(v) or (isinstance(v, list) and len(v) > 0
                                        and all(saved(x) for x in v)), saved.optional)


@dataclass
class FittedModel:
    """Everything a fitted estimator needs to predict.

    estimator      str     class name, e.g. "GradientBoostingClassifier"
    params         dict    ``get_params()`` of the estimator
    feature_names  object array (n_features,) of str, or None
    categories     dict    feature index -> array of the category values
                           (pandas ``category`` columns; code i = values[i])
    is_categorical bool    (n_features,) columns treated as categories
    thresholds     float64 (n_features, max_bins) BinMapper.bin_thresholds_
    n_bins_non_missing int32 (n_features,)
    trees          list of TreeArrays (one for a single tree)
    attributes     dict    the estimator's ``_model_attributes`` that it has
    surrogates     list (one per tree) of gputree.growth.surrogates.Surrogates, or
                   None for a model without surrogate splits
    """

    estimator: str
    params: dict
    feature_names: object
    categories: dict
    is_categorical: np.ndarray
    thresholds: np.ndarray
    n_bins_non_missing: np.ndarray
    trees: list
    attributes: dict
    surrogates: list = None

    @property
    def n_features(self):
        return int(self.is_categorical.shape[0])

    @classmethod
    def of(cls, estimator):
        """The FittedModel of a fitted gputree estimator (arrays shared, not copied)."""
        estimator._check_fitted()
        encoder, mapper = estimator._encoder, estimator._bin_mapper
        categories = {int(i): np.asarray(c.to_numpy() if hasattr(c, "to_numpy") else c)
                      for i, c in encoder.categories_.items()}
        attributes = {name: getattr(estimator, name) for name in estimator._model_attributes
                      if hasattr(estimator, name)}
        return cls(type(estimator).__name__, estimator.get_params(deep=False),
                   encoder.feature_names_in_, categories, mapper.is_categorical_,
                   mapper.bin_thresholds_, mapper.n_bins_non_missing_,
                   list(estimator._trees_for_prediction()), attributes,
                   _surrogates_of(estimator))

    def to_estimator(self, device=None):
        """A fitted estimator predicting exactly as the one described;
        ``device`` (default: the saved ``device`` parameter) picks the backend."""
        estimator = _ESTIMATORS[self.estimator](**self.params)
        for name, value in self.attributes.items():
            setattr(estimator, name, value)
        estimator._restore(get_backend(device or self.params.get("device", "auto")),
                           self._encoder(), self._bin_mapper(), list(self.trees))
        if self.surrogates is not None:
            estimator.surrogates_ = self.surrogates[0]
        return estimator

    def _encoder(self):
        """The fitted FeatureEncoder of this model."""
        encoder = FeatureEncoder(self.params.get("categorical_features"))
        encoder.feature_names_in_ = self.feature_names
        encoder.categories_ = {i: _category_index(v) for i, v in self.categories.items()}
        encoder.n_features_in_ = self.n_features
        encoder.is_categorical_ = self.is_categorical.copy()
        return encoder

    def _bin_mapper(self):
        """The fitted BinMapper of this model."""
        missing_bin = self.thresholds.shape[1]
        mapper = BinMapper(self.params.get("max_bins", missing_bin), self.is_categorical.copy())
        mapper.bin_thresholds_ = self.thresholds
        mapper.n_bins_non_missing_ = self.n_bins_non_missing
        mapper.is_categorical_ = self.is_categorical.copy()
        mapper.missing_bin_ = missing_bin
        mapper.n_bins_ = missing_bin + 1
        return mapper

    @property
    def schema_version(self):
        """The lowest schema version that describes this model: 6 with
        categorical splits' words or bins wider than max_bins, else 5."""
        wide = self.thresholds.shape[1] != self.params.get("max_bins", self.thresholds.shape[1])
        if wide or any(t.has_cat_words for t in self.trees):
            return SCHEMA_VERSION
        return BASE_SCHEMA_VERSION

    def to_dict(self):
        """Plain containers: numpy arrays, lists, dicts, str, numbers, None."""
        return {"format": "gputree-model", "schema_version": self.schema_version,
                "estimator": self.estimator, "params": dict(self.params),
                "features": {"names": self.feature_names, "is_categorical": self.is_categorical,
                             "categories": [[i, v] for i, v in sorted(self.categories.items())]},
                "bins": {"thresholds": self.thresholds,
                         "n_bins_non_missing": self.n_bins_non_missing},
                "trees": [self._tree_dict(i) for i in range(len(self.trees))],
                "attributes": dict(self.attributes)}

    def _tree_dict(self, i):
        """Tree ``i`` as a dict of its fields (and its surrogates' arrays)."""
        tree = self.trees[i]
        data = {f.name: getattr(tree, f.name) for f in fields(tree)
                if f.name in TREE_FIELDS or (f.name in OPTIONAL_TREE_FIELDS and tree.is_multiway)
                or (f.name in WORD_FIELDS and tree.has_cat_words)}
        if self.surrogates is not None and self.surrogates[i] is not None:
            data["surrogates"] = {name: getattr(self.surrogates[i], name)
                                  for name in SURROGATE_FIELDS}
        return data

    @classmethod
    def from_dict(cls, data):
        """Inverse of :meth:`to_dict`; raises ModelFormatError naming what is
        wrong (where, and what was expected): a model it returns predicts,
        explains and exports without failing because of its description."""
        version = _check_header(data)
        estimator = _ESTIMATORS[data["estimator"]]
        features = _section(data, "features", FEATURE_KEYS)
        bins = _section(data, "bins", BIN_KEYS)
        is_cat = _array(features["is_categorical"], "features.is_categorical", np.bool_, 1)
        n_features = is_cat.shape[0]
        if n_features == 0:
            raise ModelFormatError("features.is_categorical is empty: a model has at least "
                                   "one feature.")
        thresholds, n_non_missing = _bins(bins, is_cat, version)
        names = _feature_names(features["names"], n_features)
        categories = _categories(features["categories"], is_cat, thresholds)
        raw_trees = data["trees"]
        if not isinstance(raw_trees, list) or not raw_trees:
            raise ModelFormatError("'trees' must be a non-empty list of trees.")
        trees = [_tree(_upgrade_tree(_without_surrogates(t), version), f"trees[{i}]", version)
                 for i, t in enumerate(raw_trees)]
        _check_trees(trees, BinLayout(is_cat, thresholds, n_non_missing))
        surrogates = _all_surrogates(estimator, version, raw_trees, trees[0].node_count,
                                     n_features, thresholds.shape[1])
        params = _params(data["params"], estimator, bin_width(thresholds, n_non_missing, is_cat),
                         version)
        attributes = _attributes(data["attributes"], estimator)
        _check_outputs(estimator, attributes, trees, n_features)
        _check_surrogate_strategy(params, surrogates)
        return cls(data["estimator"], params, names, categories, is_cat, thresholds,
                   n_non_missing, trees, attributes, surrogates)


def _surrogates_of(estimator):
    """[Surrogates] of a single tree fitted with surrogate splits, else None."""
    surrogates = getattr(estimator, "surrogates_", None)
    return None if surrogates is None else [surrogates]


def _without_surrogates(tree):
    if isinstance(tree, dict) and "surrogates" in tree:
        return {k: v for k, v in tree.items() if k != "surrogates"}
    return tree


def _all_surrogates(estimator, version, trees, n_nodes, n_features, max_bins):
    """[Surrogates] read from the trees' ``surrogates`` objects (schema 4;
    single trees only, ``n_nodes`` nodes), or None when no tree has one."""
    present = [isinstance(t, dict) and "surrogates" in t for t in trees]
    if not any(present):
        return None
    if version < 4:
        raise ModelFormatError(f"trees[{present.index(True)}].surrogates needs schema_version "
                               f">= 4, the file says {version}.")
    if estimator._model_kind != "tree" or len(trees) != 1:
        raise ModelFormatError(f"surrogates are saved only for single trees; a "
                               f"{estimator.__name__} with {len(trees)} trees cannot hold them.")
    return [_surrogates(trees[0]["surrogates"], "trees[0].surrogates", n_nodes, n_features,
                        max_bins)]


def _surrogates(data, where, n_nodes, n_features, max_bins):
    """A Surrogates from a dict of its arrays, checked for dtypes, shapes and
    values that prediction can index: (n_nodes, k) per surrogate, sides
    (n_nodes, k, 2, max_bins // 32 + 1), features in [-1, n_features)."""
    if not isinstance(data, dict):
        raise ModelFormatError(f"{where} must be an object, got {_kind(data)}.")
    _exact_keys(data, SURROGATE_FIELDS, where)
    arrays = {name: _array(data[name], f"{where}.{name}", dtype, ndim)
              for name, (dtype, ndim) in SURROGATE_FIELDS.items()}
    k = arrays["feature"].shape[1]
    shapes = {name: (n_nodes, k) for name in ("feature", "bin", "left_le", "agreement")}
    shapes.update(majority_left=(n_nodes,), sides=(n_nodes, k, 2, max_bins // 32 + 1))
    for name, shape in shapes.items():
        if arrays[name].shape != shape:
            raise ModelFormatError(f"{where}.{name} has shape {arrays[name].shape}; expected "
                                   f"{shape} (nodes, surrogates per split).")
    bad = {"feature": (arrays["feature"] < -1) | (arrays["feature"] >= n_features),
           "bin": (arrays["bin"] < -1) | (arrays["bin"] >= max_bins),
           "left_le": arrays["left_le"] > 1, "majority_left": arrays["majority_left"] > 1,
           "agreement": ~((arrays["agreement"] >= 0) & (arrays["agreement"] <= 1))}
    for name, wrong in bad.items():
        if np.any(wrong):
            raise ModelFormatError(f"{where}.{name} holds a value out of range: "
                                   f"{arrays[name][wrong][0]!r}.")
    return Surrogates(**arrays)


def _check_surrogate_strategy(params, surrogates):
    """A tree fitted with surrogate splits must bring them: without, it would
    silently send missing values the default way."""
    if params.get("missing_strategy") == "surrogate" and surrogates is None:
        raise ModelFormatError("the model was fitted with missing_strategy='surrogate' but the "
                               "file holds no surrogates (trees[0].surrogates); it was written "
                               "by a gputree that did not save them: refit and save it again.")


def _category_index(values):
    try:
        import pandas as pd
    except ImportError as exc:  # pragma: no cover
        raise ImportError("this model has pandas 'category' columns; install pandas "
                          "to load it.") from exc
    return pd.Index(values)


# ------------------------------------------------------------ checks: layout
def _kind(value):
    """How an error message names the type of a value read from a file."""
    if isinstance(value, np.ndarray):
        return f"a {value.ndim}-D {value.dtype} array"
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
            int: "an int", float: "a float", tuple: "a tuple", type(None): "null"}.get(
                type(value), f"a {type(value).__name__}")


def _exact_keys(data, keys, where, optional=()):
    """Raise unless dict ``data`` has every key of ``keys`` and no other
    (``optional`` ones may be absent), naming a misspelt key's likely meaning."""
    allowed = set(keys) | set(optional)
    unknown = [k for k in data if k not in allowed]
    missing = [k for k in keys if k not in data]
    if unknown:
        close = difflib.get_close_matches(str(unknown[0]), sorted(allowed), 1)
        hint = f" (a misspelt {close[0]!r}?)" if close else ""
        raise ModelFormatError(f"{where} has the unknown key {unknown[0]!r:.60}{hint}; "
                               f"expected the keys {sorted(allowed)}.")
    if missing:
        raise ModelFormatError(f"{where} lacks the key {missing[0]!r}; expected the keys "
                               f"{sorted(allowed)}.")


def check_schema_version(version):
    """``version`` if this gputree reads that schema version (an int in 1 ..
    SCHEMA_VERSION), else ModelFormatError."""
    if not _is_int(version):
        raise ModelFormatError(f"schema_version must be an int, got {version!r:.40}.")
    if version > SCHEMA_VERSION or version < 1:
        raise ModelFormatError(f"schema_version {version} is not supported by this gputree "
                               f"(it reads versions 1 to {SCHEMA_VERSION}); upgrade gputree.")
    return version


def _check_header(data):
    """The schema version of a model description (an int in 1 ..
    SCHEMA_VERSION), checked with its keys and estimator name."""
    if not isinstance(data, dict) or data.get("format") != "gputree-model":
        raise ModelFormatError("not a gputree model: the 'format' field must be "
                               "'gputree-model'.")
    version = check_schema_version(data.get("schema_version"))
    _exact_keys(data, TOP_KEYS, "the model")
    if not isinstance(data["estimator"], str) or data["estimator"] not in _ESTIMATORS:
        raise ModelFormatError(f"unknown estimator {data['estimator']!r:.60}; expected one "
                               f"of {sorted(_ESTIMATORS)}.")
    return version


def _section(data, name, keys):
    section = data[name]
    if not isinstance(section, dict):
        raise ModelFormatError(f"'{name}' must be an object, got {_kind(section)}.")
    _exact_keys(section, keys, f"'{name}'")
    return section


def _array(value, where, dtype, ndim):
    """``value`` checked to be a numpy array of ``dtype`` with ``ndim`` axes."""
    if not isinstance(value, np.ndarray) or value.dtype != np.dtype(dtype) \
            or value.ndim != ndim:
        raise ModelFormatError(f"{where} must be a {ndim}-D {np.dtype(dtype)} array, got "
                               f"{_kind(value)}.")
    return value


def _first_bad(where, bad, what):
    """Raise naming the first True entry of the bool array ``bad``."""
    if np.any(bad):
        at = ", ".join(str(int(i)) for i in np.argwhere(bad)[0])
        raise ModelFormatError(f"{where}[{at}] {what}.")


# ------------------------------------------------- checks: features and bins
def _bins(bins, is_cat, version):
    """(thresholds, n_bins_non_missing) checked against the features: rows
    that binary search can read (no NaN, non-decreasing; categorical rows
    hold integer codes >= 0, then +inf) and counts in [0, max_bins]."""
    n_features = is_cat.shape[0]
    thresholds = _array(bins["thresholds"], "bins.thresholds", FLOAT_DTYPE, 2)
    n_non_missing = _array(bins["n_bins_non_missing"], "bins.n_bins_non_missing", np.int32, 1)
    if thresholds.shape[0] != n_features or n_non_missing.shape != (n_features,):
        raise ModelFormatError(f"bins describe {thresholds.shape[0]} and "
                               f"{n_non_missing.shape[0]} features but features.is_categorical "
                               f"has {n_features}.")
    max_bins = 255 if version == 1 else MAX_NON_MISSING_BINS
    if not 2 <= thresholds.shape[1] <= max_bins:
        raise ModelFormatError(f"bins.thresholds has {thresholds.shape[1]} columns; "
                               f"max_bins must be in [2, {max_bins}].")
    _first_bad("bins.thresholds", np.isnan(thresholds), "is NaN; thresholds are numbers")
    _first_bad("bins.thresholds", np.c_[thresholds[:, 1:] < thresholds[:, :-1],
                                         np.zeros(n_features, bool)],
               "is above the next threshold; every row must be sorted")
    not_code = (thresholds < 0) | (np.isfinite(thresholds) & (thresholds != np.round(thresholds)))
    _first_bad("bins.thresholds", is_cat[:, None] & not_code, "is not a category code of "
               "its categorical feature (an integer >= 0, or the padding +inf)")
    _first_bad("bins.n_bins_non_missing", (n_non_missing < 0) | (n_non_missing
                                                                 > thresholds.shape[1]),
               f"is out of range [0, {thresholds.shape[1]}]")
    return thresholds, n_non_missing


def _feature_names(names, n_features):
    if names is None:
        return None
    if not isinstance(names, np.ndarray) or names.shape != (n_features,) \
            or not all(isinstance(n, str) for n in names):
        raise ModelFormatError(f"features.names must be null or an array of {n_features} "
                               f"strings, got {_kind(names)}.")
    return names.astype(object)


def _categories(pairs, is_cat, thresholds):
    """feature index -> category values, for categorical features only,
    each a 1-D array of distinct values, one for every code of the feature's
    bins (``thresholds``: the codes, then +inf)."""
    n_features = is_cat.shape[0]
    if not isinstance(pairs, list):
        raise ModelFormatError("features.categories must be a list of [index, values], got "
                               f"{_kind(pairs)}.")
    categories = {}
    for i, pair in enumerate(pairs):
        ok = isinstance(pair, list) and len(pair) == 2 and _is_int(pair[0], 0) \
            and pair[0] < n_features and pair[0] not in categories and is_cat[pair[0]]
        if not ok or not _is_labels(pair[1]) or np.unique(pair[1]).size != pair[1].size:
            raise ModelFormatError(
                f"features.categories[{i}] must be [index of a categorical feature < "
                f"{n_features}, 1-D array of distinct values], each feature once; got "
                f"{pair!r:.80}.")
        beyond = np.zeros(thresholds.shape, dtype=bool)
        beyond[pair[0]] = np.isfinite(thresholds[pair[0]]) & (thresholds[pair[0]] >= pair[1].size)
        _first_bad("bins.thresholds", beyond, f"is not a category code of "
                   f"features.categories[{i}] (its {pair[1].size} values)")
        categories[pair[0]] = pair[1]
    return categories


# ---------------------------------------------------------------- checks: trees
def _upgrade_tree(data, version):
    """A version-1 tree's fields as version 2 has them: 8-word bitsets
    (bins 0..255) get the two words for bins beyond, zero."""
    bitset = data.get("bitset") if isinstance(data, dict) else None
    if version > 1 or not isinstance(bitset, np.ndarray) or bitset.ndim != 2 \
            or bitset.shape[1] != BITMAP_WORDS:
        return data
    wide = np.zeros((bitset.shape[0], BITSET_WORDS), dtype=bitset.dtype)
    wide[:, :BITMAP_WORDS] = bitset
    return {**data, "bitset": wide}


class BinLayout(NamedTuple):
    """The features' bins, as a tree's splits are checked against them."""

    is_categorical: np.ndarray      # bool (n_features,)
    thresholds: np.ndarray          # float64 (n_features, max_bins)
    n_bins_non_missing: np.ndarray  # int32 (n_features,)


def _tree(data, where, version):
    """A TreeArrays from a dict of its fields, checked for dtypes and shapes
    (its structure and values: :func:`_check_trees`, once for all trees)."""
    if not isinstance(data, dict):
        raise ModelFormatError(f"{where} must be an object, got {_kind(data)}.")
    optional = {**OPTIONAL_TREE_FIELDS, **(WORD_FIELDS if version >= 6 else {})}
    _exact_keys(data, TREE_FIELDS, where, optional)
    words = [name for name in WORD_FIELDS if name in data]
    if words and len(words) != len(WORD_FIELDS):
        raise ModelFormatError(f"{where} has {words} but not all of {list(WORD_FIELDS)}: a "
                               "tree's categorical words come with their starts and counts.")
    if words:
        _array(data["cat_words"], f"{where}.cat_words", BITSET_DTYPE, 1)
    n_nodes = None
    for name, (dtype, trailing) in {**TREE_FIELDS, **optional}.items():
        if name not in data or name == "cat_words":
            continue
        value = data[name]
        ndim = 3 if trailing is None else 1 + len(trailing)
        _array(value, f"{where}.{name}", dtype, ndim)
        n_nodes = value.shape[0] if n_nodes is None else n_nodes
        if value.shape[0] != n_nodes or (trailing is not None and value.shape[1:] != trailing):
            expected = (n_nodes,) + (() if trailing is None else trailing)
            raise ModelFormatError(f"{where}.{name} has shape {value.shape}; expected "
                                   f"{expected}{' + (outputs, classes)' * (trailing is None)} "
                                   "(one row per node).")
    if n_nodes == 0:
        raise ModelFormatError(f"{where} has no nodes.")
    return TreeArrays(**data)


class _Nodes:
    """The nodes of all the trees of a model, their fields (but ``value``)
    concatenated, so that each check runs once over the model: ``tree`` and
    ``local`` (int64 (total,)) are each node's tree and index in it,
    ``size`` its tree's node count, ``start`` (per tree) the first node's
    place."""

    def __init__(self, trees):
        counts = np.array([t.node_count for t in trees], dtype=np.int64)
        self.start = np.concatenate([[0], np.cumsum(counts)[:-1]])
        self.tree = np.repeat(np.arange(len(trees)), counts)
        self.local = np.arange(counts.sum()) - self.start[self.tree]
        self.size = counts[self.tree]
        for f in fields(TreeArrays):
            if f.name not in ("value", "cat_words"):
                setattr(self, f.name, np.concatenate([getattr(t, f.name) for t in trees]))
        # every tree's words, one after the other; word_base: each tree's first
        n_words = np.array([t.cat_words.shape[0] for t in trees], dtype=np.int64)
        self.words = np.concatenate([t.cat_words for t in trees])
        self.words_per_tree = n_words
        self.word_base = np.concatenate([[0], np.cumsum(n_words)[:-1]])

    def refuse(self, field, bad, what):
        """Raise naming the first node where ``bad`` (bool (total,)) holds."""
        if np.any(bad):
            node = int(np.argmax(bad))
            raise ModelFormatError(f"trees[{self.tree[node]}].{field}[{self.local[node]}] "
                                   f"{what}.")


def _check_trees(trees, layout):
    """The structure, splits and values that prediction, decision paths,
    explanations and exports read, for all ``trees`` of a model at once."""
    nodes = _Nodes(trees)
    _check_structure(nodes, layout.is_categorical.shape[0])
    _check_splits(nodes, layout)
    _check_words(nodes, layout)
    _check_node_values(nodes, trees)


def _check_structure(nodes, n_features):
    """Trees that prediction walks to a leaf (every child after its parent,
    inside its tree: no cycle), whose nodes each have one parent (``parent``
    and ``depth`` agree with the children: decision paths walk them up)."""
    left, feature = nodes.left_child.astype(np.int64), nodes.feature
    nodes.refuse("feature", (feature < -1) | (feature >= n_features),
                 f"is not a feature index in [0, {n_features}) nor -1 (a leaf)")
    nodes.refuse("left_child", (feature >= 0) != (left >= 0),
                 "disagrees with feature: -1 exactly for leaves (feature -1)")
    nodes.refuse("left_child", (left >= 0) & ((left <= nodes.local) | (left >= nodes.size - 1)),
                 "is not a node after its own and before the last of its tree (a child must "
                 "come after its parent: no cycles)")
    internal = np.flatnonzero(left >= 0)
    first = left[internal] + nodes.start[nodes.tree[internal]]     # left children, globally
    n_parents = np.bincount(np.concatenate([first, first + 1]), minlength=left.shape[0])
    wrong = n_parents != (nodes.local > 0)
    if np.any(wrong):
        node = int(np.argmax(wrong))
        raise ModelFormatError(f"trees[{nodes.tree[node]}].left_child makes node "
                               f"{nodes.local[node]} the child of {n_parents[node]} nodes; "
                               "every node but the root is the child of exactly one.")
    parent = np.full(left.shape[0], -1, dtype=np.int64)
    parent[first] = parent[first + 1] = nodes.local[internal]
    nodes.refuse("parent", nodes.parent != parent,
                 "disagrees with left_child (a root's parent is -1)")
    depth = np.zeros(left.shape[0], dtype=np.int64)
    level = internal[nodes.local[internal] == 0]                   # the internal roots
    while level.size:
        children = np.concatenate([first[np.searchsorted(internal, level)]] * 2)
        children[level.size:] += 1
        depth[children] = np.concatenate([depth[level]] * 2) + 1
        level = children[left[children] >= 0]
    nodes.refuse("depth", nodes.depth != depth,
                 "disagrees with left_child (a root's depth is 0)")


def _check_splits(nodes, layout):
    """Every split as gputree writes them, so that exports (text, Treelite,
    ``tree_``) describe what prediction does: categorical exactly on the
    categorical features; bitsets sending left only bins that values fall in
    (the feature's non-missing bins, and the missing bin exactly when
    ``missing_left``), a numerical split's left bins 0 .. t (t after 255 in
    word 8) with ``threshold`` that bin's upper threshold, NaN for a
    categorical split (its bins from 256 on in its words beyond: :func:`_check_words`)."""
    split = np.flatnonzero(nodes.left_child >= 0)
    f = nodes.feature[split].astype(np.int64)
    max_bins = layout.thresholds.shape[1]
    categorical = layout.is_categorical[f]
    at = np.zeros(nodes.feature.shape[0], dtype=bool)

    def refuse(field, bad, what):
        at[:] = False
        at[split[bad]] = True
        nodes.refuse(field, at, what)

    refuse("is_categorical", nodes.is_categorical[split] != categorical,
           "disagrees with features.is_categorical of the node's feature")
    bitset = nodes.bitset[split].astype(np.int64)
    bits = np.unpackbits(np.ascontiguousarray(nodes.bitset[split, :BITMAP_WORDS])
                         .astype("<u4").view(np.uint8), axis=1, bitorder="little").astype(bool)
    n_real = np.minimum(layout.n_bins_non_missing[f], BITMAP_BINS)
    real = np.arange(BITMAP_BINS)[None, :] < n_real[:, None]
    missing_bit = np.arange(BITMAP_BINS)[None, :] == max_bins
    refuse("bitset", np.any(bits & ~real & ~missing_bit, axis=1),
           "sends left a bin that no value of its feature falls in")
    range_end, extra = bitset[:, BITMAP_WORDS], bitset[:, BITMAP_WORDS + 1]
    refuse("bitset", (extra != 0) & ((extra != max_bins) | (max_bins < BITMAP_BINS)),
           f"word 9 is neither 0 nor the missing bin {max_bins} (>= 256)")
    missing = (bits[:, max_bins] if max_bins < BITMAP_BINS
               else (max_bins <= range_end) | (max_bins == extra))
    refuse("missing_left", missing != nodes.missing_left[split].astype(bool),
           "disagrees with the missing bin's bit in bitset")
    refuse("bitset", categorical & (range_end != 0), "word 8 is not 0 at a categorical split")
    refuse("threshold", categorical & ~np.isnan(nodes.threshold[split]),
           "is not NaN at a categorical split")
    count = np.sum(bits & real, axis=1, dtype=np.int64)
    prefix = np.all((bits & ~missing_bit) == (np.arange(BITMAP_BINS)[None, :] < count[:, None]),
                    axis=1)
    wide = range_end >= BITMAP_BINS
    refuse("bitset", ~categorical & (~prefix | ((range_end != 0) & (
        ~wide | (count < BITMAP_BINS) | (range_end >= layout.n_bins_non_missing[f])))),
        "is not a numerical split's: bins 0 .. t go left (t after 255 in word 8, below the "
        "feature's non-missing bins)")
    last = np.where(wide, range_end, count - 1)
    refuse("threshold", ~categorical & (last >= 0) & (nodes.threshold[split] != layout.thresholds[
        f, np.maximum(last, 0)]), "is not bins.thresholds of its feature at the split's last "
        "left bin")


def _check_words(nodes, layout):
    """Categorical splits' words beyond their bitsets as gputree writes them:
    each tree's ``cat_words`` laid out node after node (``cat_start`` the
    running sum of ``cat_n_words``, 0 where a node has none, every word
    some node's), only at categorical splits of features with more than 256
    categories, at most the words of the feature's categories, the last one
    not 0, sending left only the feature's categories."""
    n_words = nodes.cat_n_words.astype(np.int64)
    nodes.refuse("cat_n_words", n_words < 0, "is negative")
    before = np.cumsum(n_words) - n_words                     # words of earlier nodes
    local = before - before[nodes.start][nodes.tree]          # ... of the node's tree
    nodes.refuse("cat_start", nodes.cat_start != np.where(n_words > 0, local, 0),
                 "is not where the node's words begin (the words of the tree's earlier "
                 "nodes; 0 for a node without words)")
    used = np.bincount(nodes.tree, weights=n_words, minlength=nodes.words_per_tree.size)
    wrong = np.flatnonzero(used != nodes.words_per_tree)
    if wrong.size:
        raise ModelFormatError(f"trees[{wrong[0]}].cat_words has "
                               f"{nodes.words_per_tree[wrong[0]]} words but its nodes' "
                               f"cat_n_words add up to {int(used[wrong[0]])}.")
    f = np.maximum(nodes.feature, 0).astype(np.int64)
    n_real = layout.n_bins_non_missing[f].astype(np.int64)
    room = np.where((nodes.left_child >= 0) & layout.is_categorical[f],
                    extension_words(n_real), 0)
    nodes.refuse("cat_n_words", n_words > room, "is more than the words of its feature's "
                 "categories from bin 256 on (0 but at categorical splits of features with "
                 "more than 256 categories)")
    has = np.flatnonzero(n_words > 0)
    last = nodes.words[nodes.word_base[nodes.tree[has]] + nodes.cat_start[has]
                       + n_words[has] - 1].astype(np.int64)
    at = np.zeros(n_words.shape[0], dtype=bool)
    at[has] = last == 0
    nodes.refuse("cat_n_words", at, "counts words whose last (in cat_words) is 0 (a node "
                 "keeps its words up to its last non-zero one)")
    # bins of the last word from the feature's non-missing bins on
    beyond = 256 + 32 * (n_words[has] - 1) - n_real[has]          # -(bins it may hold)
    allowed = np.where(beyond <= -32, 0xFFFFFFFF,
                       (1 << np.clip(-beyond, 0, 32)) - 1).astype(np.int64)
    at[:] = False
    at[has] = (last & ~allowed) != 0
    nodes.refuse("cat_n_words", at, "counts words (in cat_words) that send left a bin that no "
                 "value of its feature falls in")


def _check_node_values(nodes, trees):
    """Flags in {0, 1} (none on leaves), finite values and statistics:
    what predictions, importances and explanations read."""
    leaf = nodes.left_child < 0
    for name in ("missing_left", "is_categorical", "chain_link"):
        nodes.refuse(name, getattr(nodes, name) > 1, "is neither 0 nor 1")
        nodes.refuse(name, leaf & (getattr(nodes, name) != 0), "is set on a leaf")
    for name in ("impurity", "gain", "weighted_n_node_samples"):
        nodes.refuse(name, ~np.isfinite(getattr(nodes, name)), "is not a finite number")
    for name in ("weighted_n_node_samples", "n_node_samples"):
        nodes.refuse(name, getattr(nodes, name) < 0, "is negative")
    for i, tree in enumerate(trees):
        _first_bad(f"trees[{i}].value", ~np.isfinite(tree.value), "is not a finite number")


# ----------------------------------------------- checks: params and attributes
def bin_width(thresholds, n_non_missing, is_cat):
    """(columns of bins.thresholds, most categories of a categorical feature)."""
    categories = n_non_missing[is_cat]
    return thresholds.shape[1], int(categories.max()) if categories.size else 0


def _params(params, estimator, width, version):
    """The estimator's constructor parameters, checked as its fit checks them
    (``_check_params``), with the threads and device that every prediction
    uses; a parameter the file lacks (added after it was written) takes its
    default. ``width``: (columns of bins.thresholds, most categories), as
    fit makes them: max(max_bins, most categories) columns."""
    if not isinstance(params, dict):
        raise ModelFormatError(f"'params' must be an object, got {_kind(params)}.")
    names = estimator._get_param_names()
    _exact_keys(params, (), f"params of {estimator.__name__}", names)
    columns, categories = width
    saved_max_bins = params.get("max_bins", columns)
    if not _is_int(saved_max_bins) or max(saved_max_bins, categories) != columns \
            or (version < 6 and saved_max_bins != columns):
        raise ModelFormatError(f"params.max_bins is {params['max_bins']!r:.20} and the most "
                               f"categories of a feature {categories}, but bins.thresholds has "
                               f"{columns} columns (the larger of the two"
                               f"{'; schema_version 5 and older: max_bins' * (version < 6)}).")
    device = params.get("device", "auto")
    if not isinstance(device, str) or device not in DEVICES:
        raise ModelFormatError(f"params.device must be one of {DEVICES}, got {device!r:.40}.")
    try:
        resolve_n_jobs(params.get("n_jobs"))
        estimator(**params)._check_params()
    except (TypeError, ValueError) as exc:
        raise ModelFormatError(f"params of {estimator.__name__}: {exc}") from exc
    return params


def _attributes(attributes, estimator):
    """The fitted attributes that ``estimator`` declares (its
    ``_model_attributes``), each of its declared kind."""
    if not isinstance(attributes, dict):
        raise ModelFormatError(f"'attributes' must be an object, got {_kind(attributes)}.")
    declared = estimator._model_attributes
    _exact_keys(attributes, [n for n, s in declared.items() if not s.optional],
                f"attributes of {estimator.__name__}",
                [n for n, s in declared.items() if s.optional])
    for name, value in attributes.items():
        if not declared[name](value):
            raise ModelFormatError(f"attributes.{name} must be {declared[name].what}, got "
                                   f"{_kind(value)}: {value!r:.60}.")
    return attributes


# ------------------------------------------------------------- checks: outputs
def _check_outputs(estimator, attributes, trees, n_features):
    """Every tree's value shape agrees with the attributes that predictions
    use to place and label it, so that no prediction writes outside its
    output or labels with a class that is not there."""
    if estimator._model_kind == "boosting":
        _boosting_columns(estimator, attributes, trees)
        expected = [(stop - start, 1) for start, stop in attributes["_groups"]]
        what = f"(columns of _groups, 1), {expected[:4]}"
    else:
        width = _classes_per_output(estimator, attributes)
        expected = [(attributes["n_outputs_"], width)]
        what = f"(n_outputs_, classes) {expected[0]}"
        if attributes["max_features_"] > n_features:
            raise ModelFormatError(f"attributes.max_features_ is {attributes['max_features_']} "
                                   f"but the model has {n_features} features.")
    if estimator._model_kind == "tree" and len(trees) != 1:
        raise ModelFormatError(f"a {estimator.__name__} holds one tree; 'trees' has "
                               f"{len(trees)}.")
    if estimator._model_kind == "forest" and tuple(attributes["_value_shape"]) != expected[0]:
        raise ModelFormatError(f"attributes._value_shape is {attributes['_value_shape']}; "
                               f"expected {expected[0]}.")
    for i, tree in enumerate(trees):
        if tree.value.shape[1:] != expected[i % len(expected)]:
            raise ModelFormatError(f"trees[{i}].value has shape {tree.value.shape}; the "
                                   f"{estimator.__name__}'s outputs need (nodes, "
                                   f"{', '.join(map(str, expected[i % len(expected)]))}): "
                                   f"{what}.")


def _classes_per_output(estimator, attributes):
    """The classes of the widest output (1 for regression), checked against
    ``classes_`` and ``n_classes_``: one array and one count per output."""
    if "classes_" not in estimator._model_attributes:
        return 1
    n_outputs, classes, counts = (attributes[k] for k in ("n_outputs_", "classes_",
                                                          "n_classes_"))
    if n_outputs == 1:
        classes, counts = [classes], [counts]
    ok = isinstance(classes, list) and isinstance(counts, list) and \
        len(classes) == len(counts) == n_outputs and all(
            isinstance(c, np.ndarray) and _is_int(k) and c.shape == (k,)
            for c, k in zip(classes, counts))
    if not ok:
        raise ModelFormatError(f"attributes classes_ and n_classes_ must hold, for each of "
                               f"the n_outputs_ = {n_outputs} outputs, an array of labels and "
                               "its length (one output: the array and the int themselves).")
    return max(counts)


def _boosting_columns(estimator, attributes, trees):
    """K, the raw-score columns of a boosting model: ``_baseline`` (K,)
    finite, ``_groups`` tiling columns 0 .. K, one tree per group per round
    (``n_iter_`` rounds); K is 1 for regression and two classes, else the
    number of classes."""
    baseline, groups = attributes["_baseline"], attributes["_groups"]
    k = baseline.shape[0]
    if [g[0] for g in groups] + [k] != [0] + [g[1] for g in groups] \
            or any(start >= stop for start, stop in groups):
        raise ModelFormatError(f"attributes._groups {groups!r:.80} must split the {k} "
                               f"raw-score columns of _baseline into [start, stop) ranges, in "
                               "order.")
    _first_bad("attributes._baseline", ~np.isfinite(baseline), "is not a finite number")
    if "classes_" in estimator._model_attributes:
        classes, n_classes = attributes["classes_"], attributes["n_classes_"]
        if not isinstance(classes, np.ndarray) or not _is_int(n_classes, 2) \
                or classes.shape != (n_classes,):
            raise ModelFormatError("attributes classes_ (an array of labels) and n_classes_ "
                                   "(its length, >= 2) disagree.")
        expected = 1 if n_classes == 2 else n_classes
    else:
        expected = 1
    if k != expected:
        raise ModelFormatError(f"attributes._baseline has {k} raw-score columns; a "
                               f"{estimator.__name__} of these classes has {expected}.")
    per_round = attributes["n_trees_per_iteration_"]
    if per_round != len(groups) or len(trees) != per_round * attributes["n_iter_"]:
        raise ModelFormatError(f"{len(trees)} trees do not make n_iter_ = "
                               f"{attributes['n_iter_']} rounds of n_trees_per_iteration_ = "
                               f"{per_round} trees, one per entry of _groups ({len(groups)}).")
    return k
