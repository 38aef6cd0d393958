"""Text export of a fitted tree: ``export_text`` prints its rules with feature
names, real thresholds, category names and the side missing values take."""
import numpy as np



def export_text(estimator, feature_names=None, max_depth=10, decimals=2,
                show_weights=False):
    """Rules of a fitted single tree (or ``tree_index`` of an ensemble's
    ``estimators_``) as text, one line per node, like scikit-learn's."""
    tree = getattr(estimator, "tree_", None)
    if tree is None:
        raise ValueError("export_text needs a fitted DecisionTreeClassifier or "
                         "DecisionTreeRegressor (no tree_ attribute found).")
    names = _feature_names(estimator, feature_names)
    lines = []
    _describe(estimator, tree, 0, 0, names, max_depth, decimals, show_weights, lines)
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


def _describe(est, tree, node, depth, names, max_depth, decimals, show_weights, lines):
    indent = "|   " * depth + "|--- "
    if tree.feature[node] < 0:
        lines.append(indent + _leaf_text(est, tree, node, decimals, show_weights) + "\n")
        return
    if depth >= max_depth:
        lines.append(indent + "truncated branch\n")
        return
    left_text, right_text = _split_text(est, tree, node, names, decimals)
    for child, text in ((tree.left_child[node], left_text),
                        (tree.left_child[node] + 1, right_text)):
        lines.append(indent + text + "\n")
        _describe(est, tree, child, depth + 1, names, max_depth, decimals, show_weights, lines)


def _split_text(est, tree, node, names, decimals):
    f = tree.feature[node]
    missing = " (missing)" if tree.missing_left[node] else ""
    missing_right = "" if tree.missing_left[node] else " (missing)"
    if not tree.is_categorical[node]:
        t = f"{tree.threshold[node]:.{decimals}f}"
        return (f"{names[f]} <= {t}{missing}", f"{names[f]} >  {t}{missing_right}")
    left = ", ".join(_category_labels(est, f, _left_bins(tree, node, est._bin_mapper.missing_bin_)))
    return (f"{names[f]} in {{{left}}}{missing}", f"{names[f]} not in {{{left}}}{missing_right}")


def _left_bins(tree, node, missing_bin):
    bits = np.unpackbits(tree.bitset[node].view(np.uint8), bitorder="little")
    return np.flatnonzero(bits[:missing_bin])


def _category_labels(est, feature, bins):
    codes = est._bin_mapper.bin_thresholds_[feature, bins].astype(np.int64)
    categories = est._encoder.categories_.get(feature)
    if categories is None:
        return [str(c) for c in codes]
    return [str(categories[c]) for c in codes]


def _leaf_text(est, tree, node, decimals, show_weights):
    value = tree.value[node]
    if hasattr(est, "classes_"):
        classes = est.classes_ if est.n_outputs_ == 1 else est.classes_[0]
        label = classes[int(np.argmax(value[0, :len(classes)]))]
        text = f"class: {label}"
        if show_weights:
            weights = value[0, :len(classes)] * tree.weighted_n_node_samples[node]
            text = f"weights: {np.round(weights, decimals).tolist()} " + text
        return text
    shown = value[:, 0]
    shown = shown[0] if shown.size == 1 else shown
    return f"value: {np.round(shown, decimals)}"


