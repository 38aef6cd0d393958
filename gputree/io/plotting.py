"""Drawing one tree of any fitted gputree estimator: ``export_graphviz``
(DOT text, scikit-learn's layout and arguments) and ``plot_tree``
(matplotlib, imported only when called). A tree of a forest or boosting
model is chosen with ``tree_index``. Split lines show the real threshold
(``x <= t``) or the categories going left (``x in {a, b}``), and
``(missing)`` marks the side missing values take; a tree with surrogate
splits shows them instead, on a ``surrogates: ...`` line under the split.
"""
import numpy as np

from .text import _class_names, _feature_names, _split_text, _Style, surrogate_text


def _tree_of(model, tree_index):
    """TreeArrays ``tree_index`` of a fitted estimator, with a clear error."""
    trees = model.model_.trees
    if not isinstance(tree_index, (int, np.integer)) or not -len(trees) <= tree_index < len(trees):
        raise ValueError(f"tree_index must be an int in [0, {len(trees)}) for this "
                         f"{type(model).__name__}, got {tree_index!r}.")
    return trees[tree_index]


def _labels(model, tree, feature_names, class_names, impurity, node_ids, precision,
            proportion):
    """One label (list of lines) per node, as scikit-learn's exporters write them."""
    classes = _class_names(model, class_names) if hasattr(model, "predict_proba") and \
        tree.value.shape[2] > 1 else None
    fitted = model.model_
    style = _Style(_feature_names(model, feature_names), classes, 0, 1, precision, False,
                   fitted.surrogates and fitted.surrogates[0])   # single trees only
    total = tree.weighted_n_node_samples[0]
    labels = []
    for node in range(tree.node_count):
        lines = [f"node #{node}"] if node_ids else []
        if tree.feature[node] >= 0:
            lines.append(_split_text(fitted, tree, node, style)[0])
            if style.surrogates is not None:
                lines.append(surrogate_text(fitted, node, style))
        if impurity:
            lines.append(f"impurity = {round(float(tree.impurity[node]), precision)}")
        samples = tree.weighted_n_node_samples[node]
        lines.append(f"samples = {round(100 * samples / total, 1)}%" if proportion
                     else f"samples = {int(tree.n_node_samples[node])}")
        value = np.round(tree.value[node][0] if tree.value.shape[1] == 1
                         else tree.value[node][:, 0], precision)
        lines.append(f"value = {value.tolist() if value.size > 1 else value.item()}")
        if classes is not None:
            lines.append(f"class = {classes[0][int(np.argmax(tree.value[node][0]))]}")
        labels.append(lines)
    return labels


def export_graphviz(model, out_file=None, *, tree_index=0, max_depth=None, feature_names=None,
                    class_names=None, filled=False, impurity=True, node_ids=False,
                    proportion=False, rounded=False, precision=3):
    """DOT source (str) of tree ``tree_index`` of a fitted gputree estimator;
    also written to ``out_file`` (a path) when given. Render it with
    ``graphviz.Source(dot)`` or the ``dot`` program."""
    tree = _tree_of(model, tree_index)
    labels = _labels(model, tree, feature_names, class_names, impurity, node_ids, precision,
                     proportion)
    style = ", ".join(s for s in ("filled" if filled else "", "rounded" if rounded else "") if s)
    lines = ["digraph Tree {",
             f'node [shape=box{", style=" + chr(34) + style + chr(34) if style else ""}, '
             'color="black", fontname="helvetica"] ;', 'edge [fontname="helvetica"] ;']
    for node in _visible_nodes(tree, max_depth):
        text = "\\n".join(line.replace('"', '\\"') for line in labels[node])
        lines.append(f'{node} [label="{text}"] ;')
        if tree.parent[node] >= 0:
            edge = f"{tree.parent[node]} -> {node}"
            if tree.parent[node] == 0:
                left = node == tree.left_child[0]
                edge += (f' [labeldistance=2.5, labelangle={45 if left else -45}, '
                         f'headlabel="{left}"]')
            lines.append(edge + " ;")
    lines.append("}")
    dot = "\n".join(lines)
    if out_file is not None:
        with open(out_file, "w", encoding="utf-8") as stream:
            stream.write(dot)
    return dot


def _visible_nodes(tree, max_depth):
    """Node ids (breadth-first) at depth <= max_depth (all when None)."""
    keep = np.ones(tree.node_count, dtype=bool) if max_depth is None else tree.depth <= max_depth
    return np.flatnonzero(keep)


def _positions(tree, nodes):
    """(x, y) float64 (n_nodes,) each: leaves of the shown tree spread
    evenly, parents centred over their children, one row per depth."""
    shown = np.zeros(tree.node_count, dtype=bool)
    shown[nodes] = True
    is_end = shown & ((tree.left_child < 0) | ~shown[np.maximum(tree.left_child, 0)])
    order = _depth_first(tree, shown)
    x = np.zeros(tree.node_count)
    ends = [n for n in order if is_end[n]]
    x[ends] = np.arange(len(ends))
    for node in sorted(np.flatnonzero(shown & ~is_end), key=lambda n: -tree.depth[n]):
        left = tree.left_child[node]
        x[node] = (x[left] + x[left + 1]) / 2
    width = max(len(ends) - 1, 1)
    height = max(int(tree.depth[nodes].max()), 1)
    return (x + 0.5) / (width + 1), 1.0 - tree.depth / (height + 1) - 0.5 / (height + 1)


def _depth_first(tree, shown):
    """Shown node ids in depth-first, left-first order (loops over nodes)."""
    order, stack = [], [0]
    while stack:
        node = stack.pop()
        order.append(node)
        left = tree.left_child[node]
        if left >= 0 and shown[left]:
            stack.extend((left + 1, left))
    return order


def plot_tree(model, *, tree_index=0, max_depth=None, feature_names=None, class_names=None,
              filled=False, impurity=True, node_ids=False, proportion=False,
              rounded=False, precision=3, ax=None, fontsize=None):
    """Draw tree ``tree_index`` of a fitted gputree estimator with matplotlib,
    as ``sklearn.tree.plot_tree`` draws scikit-learn's trees. Returns the
    list of the boxes' ``matplotlib.text.Annotation`` objects."""
    import matplotlib.pyplot as plt
    tree = _tree_of(model, tree_index)
    labels = _labels(model, tree, feature_names, class_names, impurity, node_ids, precision,
                     proportion)
    nodes = _visible_nodes(tree, max_depth)
    x, y = _positions(tree, nodes)
    ax = ax or plt.gca()
    ax.clear()
    ax.set_axis_off()
    box = dict(boxstyle="round" if rounded else "square", fc="white", ec="black")
    annotations = []
    for node in nodes:
        kwargs = dict(ha="center", va="center", bbox=dict(box), fontsize=fontsize,
                      xycoords="axes fraction")
        if filled:
            kwargs["bbox"]["fc"] = plt.cm.Blues(0.15 + 0.6 * float(np.max(tree.value[node])))
        parent = tree.parent[node]
        if parent >= 0:
            kwargs.update(xytext=(x[node], y[node]), textcoords="axes fraction",
                          xy=(x[parent], y[parent]), arrowprops=dict(arrowstyle="<-"))
            annotations.append(ax.annotate("\n".join(labels[node]), **kwargs))
        else:
            annotations.append(ax.annotate("\n".join(labels[node]), (x[node], y[node]),
                                           **kwargs))
    return annotations
