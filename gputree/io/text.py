"""Text export of a fitted tree: ``export_text`` prints its rules with feature
names, real thresholds, category names and the side missing values take, in
scikit-learn's ``export_text`` layout (same indentation, leaf and truncation
lines), so that where the trees coincide the texts differ only by gputree's
``(missing)`` marks and categorical ``in {...}`` splits. A multiway split
(ID3 / C4.5) shows one line per child at the same depth, ``x = a`` ..., the
last ``x not in {...}`` (the heaviest child's, where missing values and
other categories go). A tree fitted with surrogate splits
(``missing_strategy="surrogate"``) shows, before each split's branches, the
line ``(surrogates: x1 <= 4.50 (agree 0.93), c in {a, b} (agree 0.81);
majority: left)``: in order, each surrogate's condition for going left with its
agreement, then the side taken when no surrogate feature is present; the
split lines then carry no ``(missing)`` mark."""
from dataclasses import dataclass

import numpy as np

from ..backends.splitset import node_left_bins
from ..growth.surrogates import sent_bins


@dataclass
class _Style:
    names: list
    class_names: object
    max_depth: int
    spacing: int
    decimals: int
    show_weights: bool
    surrogates: object = None      # gputree.growth.surrogates.Surrogates of the tree, or None


def export_text(estimator, feature_names=None, max_depth=10, decimals=2,
                show_weights=False, *, class_names=None, spacing=3):
    """Rules of a fitted DecisionTreeClassifier / DecisionTreeRegressor as
    text, one line per node, like scikit-learn's ``export_text``.

    Splits show the real threshold (``x <= t``) or the categories that go
    left (``x in {a, b}``); ``(missing)`` marks the side missing values take.
    Nodes deeper than ``max_depth`` are summarised as a truncated branch.
    """
    tree = getattr(estimator, "tree_", None)
    if tree is None:
        raise ValueError("export_text needs a fitted DecisionTreeClassifier or "
                         "DecisionTreeRegressor (no tree_ attribute found).")
    if spacing < 1:
        raise ValueError(f"spacing must be >= 1, got {spacing}.")
    model = estimator.model_
    style = _Style(_feature_names(estimator, feature_names),
                   _class_names(estimator, class_names), max_depth, spacing, decimals,
                   show_weights, model.surrogates and model.surrogates[0])
    lines = []
    _describe(model, tree, 0, 0, style, lines)
    return "".join(lines)


def _feature_names(estimator, feature_names):
    n = estimator.n_features_in_
    if feature_names is not None:
        if len(feature_names) != n:
            raise ValueError(f"feature_names has {len(feature_names)} names but the tree "
                             f"has {n} features.")
        return [str(f) for f in feature_names]
    if getattr(estimator, "feature_names_in_", None) is not None:
        return [str(f) for f in estimator.feature_names_in_]
    return [f"feature_{i}" for i in range(n)]


def _class_names(estimator, class_names):
    """Per output, the names of the classes (None for regressors)."""
    if not hasattr(estimator, "classes_"):
        return None
    classes = estimator.classes_ if estimator.n_outputs_ > 1 else [estimator.classes_]
    if class_names is None:
        return [list(c) for c in classes]
    if len(class_names) != len(classes[0]):
        raise ValueError(f"class_names has {len(class_names)} names but the tree was "
                         f"fitted with {len(classes[0])} classes.")
    return [list(class_names)] + [list(c) for c in classes[1:]]


def _describe(model, tree, node, depth, style, lines):
    indent = ("|" + " " * style.spacing) * depth + "|" + "-" * style.spacing + " "
    if tree.feature[node] < 0:
        lines.append(indent + _leaf_text(tree, node, style) + "\n")
        return
    if depth > style.max_depth:
        lines.append(indent + f"truncated branch of depth {_subtree_depth(tree, node)}\n")
        return
    if style.surrogates is not None:
        bar = ("|" + " " * style.spacing) * (depth + 1)
        lines.append(f"{bar}({surrogate_text(model, node, style)})\n")
    for child, text in _branches(model, tree, node, style):
        lines.append(indent + text + "\n")
        _describe(model, tree, child, depth + 1, style, lines)


def _branches(model, tree, node, style):
    """[(child, text)] of split ``node``: its two children, or for the head
    of a multiway chain every child of the multiway split."""
    left_text, right_text = _split_text(model, tree, node, style)
    right = tree.left_child[node] + 1
    if not tree.chain_link[right]:
        return [(tree.left_child[node], left_text), (right, right_text)]
    name = style.names[tree.feature[node]]
    branches, categories = [], []
    while True:
        labels = _category_labels(model, tree.feature[node],
                                  node_left_bins(tree, node, model.thresholds.shape[1]))
        categories += labels
        branches.append((tree.left_child[node], f"{name} = {labels[0]}"))
        right = tree.left_child[node] + 1
        if not tree.chain_link[right]:
            break
        node = right
    branches.append((right, f"{name} not in {{{', '.join(categories)}}} (missing)"))
    return branches


def _subtree_depth(tree, node):
    """Levels of the subtree under ``node`` (a leaf counts 1); loops over depth."""
    levels, frontier = 0, np.array([node])
    while frontier.size:
        levels += 1
        frontier = tree.left_child[frontier]
        frontier = frontier[frontier >= 0]
        frontier = np.concatenate([frontier, frontier + 1])
    return levels


def surrogate_text(model, node, style):
    """``surrogates: x1 <= 4.50 (agree 0.93), ...; majority: left`` for split
    ``node`` of the tree whose surrogates are ``style.surrogates``: each
    surrogate's condition for going left (categorical: the categories sent
    left; those without rows in the node give no direction) and agreement."""
    sur, d = style.surrogates, style.decimals
    parts = []
    for s in np.flatnonzero(sur.feature[node] >= 0):
        f = sur.feature[node, s]
        name = style.names[f]
        if model.is_categorical[f]:
            bins = sent_bins(sur.sides[node, s, 0], model.n_bins_non_missing[f])
            rule = f"{name} in {{{', '.join(_category_labels(model, f, bins))}}}"
        else:
            t = f"{model.thresholds[f, sur.bin[node, s]]:.{d}f}"
            rule = f"{name} <= {t}" if sur.left_le[node, s] else f"{name} >  {t}"
        parts.append(f"{rule} (agree {sur.agreement[node, s]:.{d}f})")
    side = "left" if sur.majority_left[node] else "right"
    return f"surrogates: {', '.join(parts) or 'none'}; majority: {side}"


def _split_text(model, tree, node, style):
    """(left, right) texts of split ``node``; ``model`` is the FittedModel.
    ``(missing)`` marks the missing side, unless surrogates decide it."""
    f = tree.feature[node]
    name = style.names[f]
    marked = style.surrogates is None
    missing_left = " (missing)" if marked and tree.missing_left[node] else ""
    missing_right = " (missing)" if marked and not tree.missing_left[node] else ""
    if not tree.is_categorical[node]:
        t = f"{tree.threshold[node]:.{style.decimals}f}"
        return f"{name} <= {t}{missing_left}", f"{name} >  {t}{missing_right}"
    bins = node_left_bins(tree, node, model.thresholds.shape[1])
    left = ", ".join(_category_labels(model, f, bins))
    return f"{name} in {{{left}}}{missing_left}", f"{name} not in {{{left}}}{missing_right}"


def _category_labels(model, feature, bins):
    codes = model.thresholds[feature, bins].astype(np.int64)
    categories = model.categories.get(feature)
    if categories is None:
        return [str(c) for c in codes]
    return [str(categories[c]) for c in codes]


def _numbers(values, decimals):
    return "[" + ", ".join(f"{v:.{decimals}f}" for v in values) + "]"


def _leaf_text(tree, node, style):
    value = tree.value[node]
    if style.class_names is None:
        return f"value: {_numbers(value[:, 0], style.decimals)}"
    labels = [str(names[int(np.argmax(value[o, :len(names)]))])
              for o, names in enumerate(style.class_names)]
    text = f"class: {labels[0] if len(labels) == 1 else '[' + ', '.join(labels) + ']'}"
    if style.show_weights:
        weights = value[0, :len(style.class_names[0])] * tree.weighted_n_node_samples[node]
        text = f"weights: {_numbers(weights, style.decimals)} {text}"
    return text
