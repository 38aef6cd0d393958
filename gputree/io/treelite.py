"""Export to Treelite: ``to_treelite(estimator)`` builds a ``treelite.Model``
(treelite >= 4, imported only here) from the estimator's FittedModel, for
``treelite.gtil.predict`` or compilation with TL2cgen.

Numerical splits become ``x <= threshold`` tests and categorical splits
category-list tests on the category codes (pandas ``category`` columns:
pass ``X[col].cat.codes`` with -1 replaced by NaN). A category unseen at fit
goes where gputree sends it, the missing side: the listed categories are the
ones going away from the missing side. Missing values (NaN) follow
``missing_left``. Outputs: probabilities (trees and forests averaged;
boosting through sigmoid / softmax), regression means (poisson boosting
through exp). Trees with surrogate splits are refused (Treelite has none).
"""
import numpy as np

from ..backends.splitset import node_left_bins
from ..model import FittedModel
from ..growth.surrogates import refuse_surrogates


def to_treelite(estimator):
    """A ``treelite.Model`` predicting as ``estimator`` does."""
    refuse_surrogates(estimator, "to_treelite")
    try:
        import treelite
    except ImportError as exc:
        raise ImportError("to_treelite needs treelite: pip install 'gputree[treelite]'.") from exc
    model = FittedModel.of(estimator)
    task = _task(model, getattr(estimator, "_loss", None))
    builder = treelite.model_builder.ModelBuilder(
        threshold_type="float64", leaf_output_type="float64",
        metadata=treelite.model_builder.Metadata(
            num_feature=model.n_features, task_type=task["task_type"],
            average_tree_output=task["average"], num_target=1,
            num_class=[task["num_class"]], leaf_vector_shape=(1, task["leaf_width"])),
        tree_annotation=treelite.model_builder.TreeAnnotation(
            num_tree=len(model.trees), target_id=[0] * len(model.trees),
            class_id=task["class_id"]),
        postprocessor=treelite.model_builder.PostProcessorFunc(name=task["postprocessor"]),
        base_scores=list(task["base_scores"]))
    for tree in model.trees:
        _add_tree(builder, tree, model)
    return builder.commit()


def _task(model, loss):
    """Treelite metadata of the estimator's kind (dict); ``loss``: a boosting
    estimator's loss (its ``link`` is the postprocessor), else None."""
    attributes, n_trees = model.attributes, len(model.trees)
    if loss is not None:
        baseline = np.asarray(attributes["_baseline"], dtype=np.float64)
        width = model.trees[0].value.shape[1]
        k = baseline.shape[0]
        post = loss.link
        groups = attributes["_groups"]
        class_id = [-1 if width > 1 else groups[t % len(groups)][0] for t in range(n_trees)]
        return dict(task_type="kBinaryClf" if post == "sigmoid" else
                    "kMultiClf" if post == "softmax" else "kRegressor",
                    average=False, num_class=k, leaf_width=width, class_id=class_id,
                    postprocessor=post, base_scores=baseline)
    if attributes.get("n_outputs_", 1) != 1:
        raise ValueError("to_treelite supports single-output models; this one has "
                         f"{attributes['n_outputs_']} outputs. Fit one model per output.")
    k = int(attributes.get("n_classes_", 1))
    return dict(task_type="kMultiClf" if k > 1 else "kRegressor", average=True, num_class=k,
                leaf_width=k, class_id=[-1 if k > 1 else 0] * n_trees,
                postprocessor="identity", base_scores=np.zeros(k))


def _add_tree(builder, tree, model):
    """Declare every node of ``tree`` (TreeArrays of FittedModel ``model``)
    with the builder (loops over nodes)."""
    builder.start_tree()
    for node in range(tree.node_count):
        builder.start_node(node)
        left, feature = int(tree.left_child[node]), int(tree.feature[node])
        missing_left = bool(tree.missing_left[node])
        if left < 0:
            value = tree.value[node].ravel()
            builder.leaf(float(value[0]) if value.size == 1 else value.tolist())
        elif tree.is_categorical[node]:
            seen = model.thresholds[feature, :model.n_bins_non_missing[feature]]
            going_left = seen[node_left_bins(tree, node, seen.shape[0])]
            listed = np.setdiff1d(seen, going_left) if missing_left else going_left
            builder.categorical_test(feature, default_left=missing_left,
                                     category_list=[int(c) for c in listed],
                                     category_list_right_child=missing_left,
                                     left_child_key=left, right_child_key=left + 1)
        else:
            builder.numerical_test(feature, float(tree.threshold[node]),
                                   default_left=missing_left, opname="<=",
                                   left_child_key=left, right_child_key=left + 1)
        builder.end_node()
    builder.end_tree()
