"""Choosing ``ccp_alpha`` by k-fold cross-validation, as Breiman et al.'s
CART does (Classification and Regression Trees, 1984, sections 3.4 and 8.5).

:func:`choose_ccp_alpha` grows the estimator's tree on all rows and takes the
alphas ``a_0 = 0 < a_1 < ... < a_K`` of its pruning path (the distinct values
of ``cost_complexity_pruning_path``, pruned with the estimator's ``ccp_risk``).
The subtree ``T_k`` of the full tree is the one for every alpha in
``[a_k, a_{k+1})``, so it is represented in the folds by the geometric midpoint
``b_k = sqrt(a_k a_{k+1})`` (``b_0 = 0``: no pruning; ``b_K = inf``: the root).
For each fold, one unpruned tree is grown on the other folds and pruned at
every ``b_k`` (:func:`gputree.growth.pruning.pruned_leaf_masks`, identical to refitting
with ``ccp_alpha=b_k``); every held-out row gets each subtree's prediction and
its loss. The CV risk of ``T_k`` is the mean loss over all rows, its standard
error ``std(losses) / sqrt(n)`` (CART's; for 0/1 losses ``sqrt(R (1 - R) / n)``).
The choice is ``a_k`` of the smallest risk (ties: the larger alpha) or, with
the one-standard-error rule, the largest ``a_k`` whose risk is at most that
minimum plus its standard error. Folds are stratified by label for
classifiers and drawn from ``random_state``.
"""
import numbers

import numpy as np

from .data.validation import check_random_state
from .growth.pruning import pruned_leaf_masks

RISKS = ("misclassification", "squared_error")


def choose_ccp_alpha(estimator, X, y, cv=5, one_se=True, risk=None, random_state=None):
    """The ``ccp_alpha`` (float) chosen by cross-validation for a
    ``DecisionTreeClassifier`` or ``DecisionTreeRegressor``.

    estimator : unfitted or fitted tree estimator; its parameters are used
        (``ccp_alpha`` ignored) and it is left unchanged.
    X, y : the training data, as for ``fit`` (numpy arrays).
    cv : number of folds (>= 2), or an iterable of (train, test) row-index
        pairs (for instance ``sklearn.model_selection.KFold(...).split(X, y)``).
    one_se : choose by the one-standard-error rule (else the smallest risk).
    risk : the held-out loss per row: ``"misclassification"`` (0/1, the
        default for classifiers: their score is accuracy), ``"squared_error"``
        (the default for regressors: their R^2 score's loss), or a callable
        ``(y_true, y_pred) -> float64 (n_rows,)``; multi-output losses are
        averaged over outputs.
    random_state : seed of the folds; default the estimator's
        ``random_state``, or 0 when that is None (the choice is reproducible).
    """
    if not hasattr(estimator, "cost_complexity_pruning_path"):
        raise TypeError("choose_ccp_alpha needs a DecisionTreeClassifier or "
                        f"DecisionTreeRegressor, got {type(estimator).__name__}.")
    X, y = np.asarray(X), np.asarray(y)
    loss = _loss_function(estimator, risk)
    folds = _folds(estimator, y, cv, random_state)
    base = estimator.__class__(**dict(estimator.get_params(), ccp_alpha=0.0))
    path = base.cost_complexity_pruning_path(X, y).ccp_alphas
    alphas = np.unique(np.maximum.accumulate(path))
    midpoints = np.append(np.sqrt(alphas[:-1] * alphas[1:]), np.inf)
    losses = np.empty((alphas.size, y.shape[0]), dtype=np.float64)
    for train, test in folds:
        fold = base.__class__(**base.get_params()).fit(X[train], y[train])
        losses[:, test] = [loss(y[test], prediction)
                           for prediction in _subtree_predictions(fold, X[test], midpoints)]
    return float(alphas[select(losses, one_se)])


def select(losses, one_se):
    """Index of the chosen subtree from losses float64 (n_subtrees, n_rows),
    subtrees by increasing alpha (ties go to the larger alpha)."""
    risk = losses.mean(axis=1)
    best = risk.size - 1 - int(np.argmin(risk[::-1]))
    if not one_se:
        return best
    bound = risk[best] + losses[best].std() / np.sqrt(losses.shape[1])
    return int(np.flatnonzero(risk <= bound).max())


def _loss_function(estimator, risk):
    """Per-row loss callable (y_true, y_pred) -> float64 (n,)."""
    if callable(risk):
        return lambda y_true, y_pred: np.asarray(risk(y_true, y_pred), dtype=np.float64)
    if risk is None:
        risk = "misclassification" if hasattr(estimator, "predict_proba") else "squared_error"
    if risk not in RISKS:
        raise ValueError(f"risk must be one of {list(RISKS)}, a callable or None, "
                         f"got {risk!r}.")
    if risk == "misclassification":
        return lambda y_true, y_pred: _per_row(y_true != y_pred)
    return lambda y_true, y_pred: _per_row((np.asarray(y_true, dtype=np.float64) - y_pred) ** 2)


def _per_row(values):
    """float64 (n,): values (n,) or their mean over outputs (n, n_outputs)."""
    values = np.asarray(values, dtype=np.float64)
    return values if values.ndim == 1 else values.mean(axis=1)


def _folds(estimator, y, cv, random_state):
    """List of (train, test) int64 index arrays."""
    n = y.shape[0]
    if not isinstance(cv, numbers.Integral) or isinstance(cv, bool):
        return [(np.asarray(train), np.asarray(test)) for train, test in cv]
    if cv < 2 or cv > n:
        raise ValueError(f"cv must be a number of folds in [2, n_samples={n}] or an iterable "
                         f"of (train, test) index pairs, got {cv!r}.")
    seed = getattr(estimator, "random_state", None) if random_state is None else random_state
    rng = check_random_state(0 if seed is None else seed)
    order = rng.permutation(n)
    if hasattr(estimator, "predict_proba"):
        # rows grouped by label (shuffled within), then dealt to folds in turn:
        # every fold's count of each label differs by at most one
        labels = np.unique(y.reshape(n, -1), axis=0, return_inverse=True)[1].ravel()
        order = order[np.argsort(labels[order], kind="stable")]
    fold_of = np.empty(n, dtype=np.int64)
    fold_of[order] = np.arange(n) % cv
    return [(np.flatnonzero(fold_of != k), np.flatnonzero(fold_of == k)) for k in range(cv)]


def _subtree_predictions(model, X, ccp_alphas):
    """Predictions of the fitted ``model``'s tree pruned at each alpha, for
    the rows of X: a list (one per alpha) of (n_rows,) or (n_rows, n_outputs)."""
    tree = model.tree_.arrays
    leaves = model.apply(X)
    path = np.empty((leaves.size, tree.max_depth + 1), dtype=np.int64)   # root .. leaf
    path[:, -1] = leaves
    for d in range(tree.max_depth - 1, -1, -1):
        path[:, d] = np.where(tree.depth[path[:, d + 1]] > d, tree.parent[path[:, d + 1]],
                              path[:, d + 1])
    value = model.tree_.value
    predictions = []
    for is_leaf in pruned_leaf_masks(tree, ccp_alphas, model._ccp_risk()):
        nodes = path[np.arange(leaves.size), np.argmax(is_leaf[path], axis=1)]
        predictions.append(model._predict_values(value[nodes]))
    return predictions

