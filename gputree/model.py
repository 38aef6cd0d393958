"""``FittedModel``: the one description of a fitted gputree model that every
export format reads (JSON files, Treelite, text export, plotting, TreeSHAP):
the estimator's class and parameters, the feature layout (names, categorical
columns and their category tables), the bin thresholds, the trees
(:class:`gputree.tree.TreeArrays`) and the estimator's other fitted
attributes (classes, baseline raw score, tree groups, ...).

Estimator classes that a model can hold register themselves here
(:func:`register_estimator`): this module and the formats that read it never
import the estimators.

``FittedModel.of(estimator)`` reads a fitted estimator;
``FittedModel.to_estimator()`` builds a fitted estimator back;
``to_dict`` / ``from_dict`` convert to and from plain containers (numpy
arrays, lists, str, numbers) and check every array's dtype and shape and the
trees' structure, so that a malformed description is rejected before any
kernel reads it.
"""
import numbers
from dataclasses import dataclass, fields

import numpy as np

from ._dtypes import (BITMAP_WORDS, BITSET_DTYPE, BITSET_WORDS, FEATURE_DTYPE, FLOAT_DTYPE,
                      MAX_NON_MISSING_BINS, NODE_DTYPE)
from .backends import get_backend
from .data.binning import BinMapper
from .data.encoder import FeatureEncoder
from .growth.surrogates import Surrogates
from .tree import TreeArrays

#: version of the layout of ``to_dict`` (and of the JSON files written from it);
#: 2: split bitsets have BITSET_WORDS (10) words, bins beyond 255 allowed;
#: 3 adds the optional tree field ``chain_link`` (multiway splits). A model
#: is written with the lowest version that describes it (3 only with multiway
#: splits); 4 adds the optional tree object ``surrogates`` (CART surrogate
#: splits of a single tree, written only when present); version 1 files (8-word
#: bitsets, at most 255 bins) load unchanged
SCHEMA_VERSION = 4

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
#: dtype and number of axes of every array of a tree's ``surrogates`` object
#: (schema version 4; :class:`gputree.growth.surrogates.Surrogates`)
SURROGATE_FIELDS = {"feature": (FEATURE_DTYPE, 2), "bin": (np.int32, 2), "left_le": (np.uint8, 2),
                    "agreement": (FLOAT_DTYPE, 2), "majority_left": (np.uint8, 1),
                    "sides": (BITSET_DTYPE, 4)}


class ModelFormatError(ValueError):
    """A model description (dict or file) that gputree cannot load."""


#: class name -> estimator class, filled by :func:`register_estimator`
_ESTIMATORS = {}


def register_estimator(cls):
    """Class decorator: models of ``cls`` can be described, saved and loaded
    (by its class name)."""
    _ESTIMATORS[cls.__name__] = cls
    return cls


def estimator_classes():
    """Class name -> estimator class, for every estimator a model can hold."""
    return dict(_ESTIMATORS)


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
        mapper = BinMapper(self.thresholds.shape[1], self.is_categorical.copy())
        mapper.bin_thresholds_ = self.thresholds
        mapper.n_bins_non_missing_ = self.n_bins_non_missing
        mapper.is_categorical_ = self.is_categorical.copy()
        mapper.missing_bin_ = mapper.max_bins
        mapper.n_bins_ = mapper.max_bins + 1
        return mapper

    def to_dict(self):
        """Plain containers: numpy arrays, lists, dicts, str, numbers, None."""
        multiway = any(t.is_multiway for t in self.trees)
        version = 4 if self.surrogates is not None else 3 if multiway else 2
        return {"format": "gputree-model", "schema_version": version,
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
                if f.name in TREE_FIELDS or tree.is_multiway}
        if self.surrogates is not None and self.surrogates[i] is not None:
            data["surrogates"] = {name: getattr(self.surrogates[i], name)
                                  for name in SURROGATE_FIELDS}
        return data

    @classmethod
    def from_dict(cls, data):
        """Inverse of :meth:`to_dict`; raises ModelFormatError naming what is wrong."""
        _check_header(data)
        features, bins = _section(data, "features"), _section(data, "bins")
        is_cat = _array(features.get("is_categorical"), "features.is_categorical", np.bool_, 1)
        n_features = is_cat.shape[0]
        thresholds = _array(bins.get("thresholds"), "bins.thresholds", FLOAT_DTYPE, 2)
        n_non_missing = _array(bins.get("n_bins_non_missing"), "bins.n_bins_non_missing",
                               np.int32, 1)
        if thresholds.shape[0] != n_features or n_non_missing.shape != (n_features,):
            raise ModelFormatError(f"bins describe {thresholds.shape[0]} features but "
                                   f"features.is_categorical has {n_features}.")
        max_bins = 255 if data["schema_version"] == 1 else MAX_NON_MISSING_BINS
        if not 2 <= thresholds.shape[1] <= max_bins:
            raise ModelFormatError(f"bins.thresholds has {thresholds.shape[1]} columns; "
                                   f"max_bins must be in [2, {max_bins}].")
        names = _feature_names(features.get("names"), n_features)
        categories = _categories(features.get("categories", []), n_features)
        trees = data.get("trees")
        if not isinstance(trees, list) or not trees:
            raise ModelFormatError("'trees' must be a non-empty list of trees.")
        raw_trees = trees
        trees = [_tree(_upgrade_tree(_without_surrogates(t), data["schema_version"]),
                       f"trees[{i}]", n_features) for i, t in enumerate(trees)]
        surrogates = _all_surrogates(data, raw_trees, trees[0].node_count, n_features,
                                     thresholds.shape[1])
        params, attributes = data.get("params"), data.get("attributes")
        if not isinstance(params, dict) or not isinstance(attributes, dict):
            raise ModelFormatError("'params' and 'attributes' must be objects.")
        _check_value_shapes(data["estimator"], attributes, trees)
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


def _all_surrogates(data, trees, n_nodes, n_features, max_bins):
    """[Surrogates] read from the trees' ``surrogates`` objects (schema 4;
    single trees only, ``n_nodes`` nodes), or None when no tree has one."""
    present = [isinstance(t, dict) and "surrogates" in t for t in trees]
    if not any(present):
        return None
    if data["schema_version"] < 4:
        raise ModelFormatError(f"trees[{present.index(True)}].surrogates needs schema_version "
                               f">= 4, the file says {data['schema_version']}.")
    if not data["estimator"].startswith("DecisionTree") or len(trees) != 1:
        raise ModelFormatError(f"surrogates are saved only for single trees; a "
                               f"{data['estimator']} with {len(trees)} trees cannot hold them.")
    return [_surrogates(trees[0]["surrogates"], "trees[0].surrogates", n_nodes, n_features,
                        max_bins)]


def _surrogates(data, where, n_nodes, n_features, max_bins):
    """A Surrogates from a dict of its arrays, checked for dtypes, shapes and
    values that prediction can index: (n_nodes, k) per surrogate, sides
    (n_nodes, k, 2, max_bins // 32 + 1), features in [-1, n_features)."""
    if not isinstance(data, dict) or set(data) != set(SURROGATE_FIELDS):
        raise ModelFormatError(f"{where} must have exactly the fields "
                               f"{sorted(SURROGATE_FIELDS)}.")
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


def _check_header(data):
    if not isinstance(data, dict) or data.get("format") != "gputree-model":
        raise ModelFormatError("not a gputree model: the 'format' field must be "
                               "'gputree-model'.")
    version = data.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise ModelFormatError(f"schema_version must be an int, got {version!r}.")
    if version > SCHEMA_VERSION or version < 1:
        raise ModelFormatError(f"schema_version {version} is not supported by this gputree "
                               f"(it reads versions 1 to {SCHEMA_VERSION}); upgrade gputree.")
    if data.get("estimator") not in estimator_classes():
        raise ModelFormatError(f"unknown estimator {data.get('estimator')!r}; expected one "
                               f"of {sorted(estimator_classes())}.")


def _section(data, name):
    section = data.get(name)
    if not isinstance(section, dict):
        raise ModelFormatError(f"'{name}' must be an object.")
    return section


def _array(value, where, dtype, ndim):
    """``value`` checked to be a numpy array of ``dtype`` with ``ndim`` axes."""
    if not isinstance(value, np.ndarray):
        raise ModelFormatError(f"{where} must be an array, got {type(value).__name__}.")
    if value.dtype != np.dtype(dtype) or value.ndim != ndim:
        raise ModelFormatError(f"{where} must be a {ndim}-D {np.dtype(dtype)} array, got "
                               f"{value.ndim}-D {value.dtype}.")
    return value


def _feature_names(names, n_features):
    if names is None:
        return None
    names = np.asarray(names, dtype=object)
    if names.shape != (n_features,) or not all(isinstance(n, str) for n in names):
        raise ModelFormatError(f"features.names must be {n_features} strings.")
    return names


def _categories(pairs, n_features):
    if not isinstance(pairs, list):
        raise ModelFormatError("features.categories must be a list of [index, values].")
    categories = {}
    for pair in pairs:
        ok = isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], int)
        if not ok or not 0 <= pair[0] < n_features or not isinstance(pair[1], np.ndarray) \
                or pair[1].ndim != 1:
            raise ModelFormatError(f"features.categories entry {pair!r:.80} must be "
                                   f"[feature index < {n_features}, 1-D array of values].")
        categories[pair[0]] = pair[1]
    return categories


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


def _tree(data, where, n_features):
    """A TreeArrays from a dict of its fields, checked for dtypes, shapes and a
    structure that prediction can walk (children after their parent, inside
    the tree; features inside X)."""
    if not isinstance(data, dict) or not (set(TREE_FIELDS) <= set(data)
                                          <= set(TREE_FIELDS) | set(OPTIONAL_TREE_FIELDS)):
        raise ModelFormatError(f"{where} must have exactly the fields {sorted(TREE_FIELDS)} "
                               f"(and optionally {sorted(OPTIONAL_TREE_FIELDS)}).")
    n_nodes = None
    for name, (dtype, trailing) in {**TREE_FIELDS, **OPTIONAL_TREE_FIELDS}.items():
        if name not in data:
            continue
        value = data[name]
        ndim = 3 if trailing is None else 1 + len(trailing)
        _array(value, f"{where}.{name}", dtype, ndim)
        n_nodes = value.shape[0] if n_nodes is None else n_nodes
        if value.shape[0] != n_nodes or (trailing is not None and value.shape[1:] != trailing):
            raise ModelFormatError(f"{where}.{name} has shape {value.shape}; expected "
                                   f"({n_nodes}{''.join(f', {t}' for t in trailing or ())}"
                                   f"{', ...' if trailing is None else ''}).")
    tree = TreeArrays(**data)
    _check_structure(tree, where, n_features)
    return tree


def _check_value_shapes(estimator, attributes, trees):
    """Every tree's value shape agrees with the attributes that predictions
    use to place it (boosting: baseline and column groups; others: outputs
    and classes), so no prediction writes outside its output."""
    if estimator.startswith("GradientBoosting"):
        baseline, groups = attributes.get("_baseline"), attributes.get("_groups")
        ok = isinstance(baseline, np.ndarray) and baseline.dtype == FLOAT_DTYPE and \
            baseline.ndim == 1 and isinstance(groups, list) and groups and all(
                isinstance(g, (list, tuple)) and len(g) == 2
                and all(isinstance(v, numbers.Integral) for v in g)
                and 0 <= g[0] < g[1] <= baseline.shape[0] for g in groups)
        # the groups tile the raw-score columns 0 .. K exactly
        ok = ok and [g[0] for g in groups] + [baseline.shape[0]] == [0] + [g[1] for g in groups]
        expected = [(g[1] - g[0], 1) for g in groups] if ok else []
        ok = ok and all(t.value.shape[1:] == expected[i % len(expected)]
                        for i, t in enumerate(trees))
    else:
        n_classes = attributes.get("n_classes_", 1)
        width = max(n_classes) if isinstance(n_classes, list) else n_classes
        expected = (attributes.get("n_outputs_"), width)
        ok = all(t.value.shape[1:] == expected for t in trees) and (
            "_value_shape" not in attributes or attributes["_value_shape"] == expected)
    if not ok:
        raise ModelFormatError(f"the trees' value shapes do not match the {estimator}'s "
                               "outputs (attributes n_outputs_, n_classes_, _baseline, "
                               "_groups).")


def _check_structure(tree, where, n_features):
    n = tree.node_count
    if n == 0:
        raise ModelFormatError(f"{where} has no nodes.")
    internal = tree.feature >= 0
    left = tree.left_child
    bad = ((tree.feature < -1) | (tree.feature >= n_features) | (internal != (left >= 0))
           | (internal & ((left <= np.arange(n)) | (left + 1 >= n)))
           | (left < -1) | (tree.parent < -1) | (tree.parent >= n) | (tree.depth < 0))
    if np.any(bad):
        node = int(np.flatnonzero(bad)[0])
        raise ModelFormatError(f"{where}: node {node} has an invalid feature ({tree.feature[node]}) "
                               f"or child ({left[node]}) for a tree of {n} nodes and "
                               f"{n_features} features.")
