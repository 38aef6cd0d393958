"""Constraints on what a boosting tree may learn: monotonic constraints per
feature and interaction constraints between features (scikit-learn's
``monotonic_cst`` and ``interaction_cst``, with its formats and signs).

* **Monotonic** (sign +1: the prediction never decreases as the feature
  grows; -1: never increases; 0: free). Enforced as LightGBM's basic method
  and scikit-learn's HistGradientBoosting do: a split on a constrained
  feature whose children's values break the sign is rejected, and every node
  carries value bounds ``[lower, upper]``: its children's values are clipped
  to them, and a split on a constrained feature gives its children the bounds
  ``[lower, mid]`` and ``[mid, upper]`` (in the sign's order), ``mid`` the
  mean of the two children's values. So every leaf of the lower branch is at
  most ``mid`` and every leaf of the upper branch at least ``mid``, and the
  model is monotone. The scan reads signs and bounds from the tail of its
  ``params`` array (``PARAM_CONSTRAINTS``, :mod:`gputree.backends.formulas`).
* **Interaction**: a list of feature groups; a node may split on a feature
  only if some group holds that feature and every feature used on the path
  from the root. Features in no group form one more group (scikit-learn's
  rule). Enforced through the scan's ``feature_allowed`` mask, on the host.

:class:`TreeConstraints` holds the validated constraints of a fit;
:class:`ConstraintState` follows one tree as it grows (per node: bounds and
path features). Loops run over nodes and groups, never over samples.
"""
import numbers

import numpy as np

from .._dtypes import FLOAT_DTYPE
from ..criteria import PARAM_CONSTRAINTS


def check_monotonic_cst(monotonic_cst, n_features, feature_names=None, is_categorical=None):
    """int8 (n_features,) signs from scikit-learn's ``monotonic_cst``: None,
    an array-like of -1/0/1 per feature, or a dict {feature index or name:
    sign}. Returns None when no feature is constrained."""
    if monotonic_cst is None:
        return None
    signs = np.zeros(n_features, dtype=np.int8)
    if isinstance(monotonic_cst, dict):
        names = list(feature_names) if feature_names is not None else []
        for key, sign in monotonic_cst.items():
            if isinstance(key, str):
                if key not in names:
                    raise ValueError(f"monotonic_cst names feature {key!r}, which is not a "
                                     f"column of X; use one of {names[:10]} or an index.")
                key = names.index(key)
            if not isinstance(key, numbers.Integral) or not 0 <= key < n_features:
                raise ValueError(f"monotonic_cst key {key!r} is not a feature index in "
                                 f"[0, {n_features}).")
            signs[key] = _sign(sign)
    else:
        values = np.asarray(monotonic_cst)
        if values.shape != (n_features,):
            raise ValueError(f"monotonic_cst has shape {values.shape}; it needs one sign per "
                             f"feature, shape ({n_features},), or a dict {{feature: sign}}.")
        signs[:] = [_sign(v) for v in values]
    if is_categorical is not None and np.any((signs != 0) & (np.asarray(is_categorical) != 0)):
        bad = np.flatnonzero((signs != 0) & (np.asarray(is_categorical) != 0)).tolist()
        raise ValueError(f"monotonic_cst constrains categorical feature(s) {bad}; categories "
                         "have no order. Set their sign to 0.")
    return signs if np.any(signs) else None


def _sign(value):
    if value not in (-1, 0, 1):
        raise ValueError(f"monotonic_cst values must be -1, 0 or 1; got {value!r}.")
    return int(value)


def check_interaction_cst(interaction_cst, n_features):
    """bool (n_groups, n_features) from scikit-learn's ``interaction_cst``:
    None, "pairwise", "no_interactions" or a sequence of sets of feature
    indices. Features in no group are one more group. None when unset."""
    if interaction_cst is None:
        return None
    if isinstance(interaction_cst, str):
        if interaction_cst == "no_interactions":
            return np.eye(n_features, dtype=bool)
        if interaction_cst == "pairwise":
            i, j = np.triu_indices(n_features, 1)
            groups = np.zeros((i.size, n_features), dtype=bool)
            groups[np.arange(i.size), i] = True
            groups[np.arange(i.size), j] = True
            return groups if i.size else np.ones((1, n_features), dtype=bool)
        raise ValueError(f"interaction_cst must be None, 'pairwise', 'no_interactions' or a "
                         f"list of sets of feature indices; got {interaction_cst!r}.")
    try:
        groups_list = [list(group) for group in interaction_cst]
    except TypeError as exc:
        raise ValueError("interaction_cst must be a list of lists/tuples/sets of feature "
                         f"indices, like [{{0, 1}}, {{2}}]; got {interaction_cst!r}.") from exc
    groups = np.zeros((len(groups_list) + 1, n_features), dtype=bool)
    for g, group in enumerate(groups_list):
        for feature in group:
            if (not isinstance(feature, numbers.Integral) or isinstance(feature, bool)
                    or not 0 <= feature < n_features):
                raise ValueError(f"interaction_cst holds {feature!r}, which is not a feature "
                                 f"index in [0, {n_features}).")
            groups[g, feature] = True
    groups[-1] = ~groups[:-1].any(axis=0)
    return groups[groups.any(axis=1)]


class TreeConstraints:
    """The constraints of a fit. monotonic: int8 (n_features,) or None;
    groups: bool (n_groups, n_features) or None."""

    def __init__(self, monotonic=None, groups=None):
        self.monotonic = monotonic
        self.groups = groups

    def restrict(self, columns):
        """The constraints on a subset of the features (sorted int indices)."""
        return TreeConstraints(None if self.monotonic is None else self.monotonic[columns],
                               None if self.groups is None else self.groups[:, columns])

    def start_tree(self):
        return ConstraintState(self)


class ConstraintState:
    """Per-node bounds and path features of one growing tree (host arrays,
    indexed by the grower's breadth-first node ids)."""

    def __init__(self, constraints):
        self.c = constraints
        n_features = (constraints.monotonic if constraints.monotonic is not None
                      else constraints.groups[0]).shape[0]
        self.lower = np.array([-np.inf])
        self.upper = np.array([np.inf])
        self.path = np.zeros((1, n_features), dtype=bool)

    def allowed(self, nodes):
        """uint8 (len(nodes), n_features): features each node may split on."""
        if self.c.groups is None:
            return np.ones((len(nodes), self.path.shape[1]), dtype=np.uint8)
        path = self.path[nodes]
        fits = ~(path[:, None, :] & ~self.c.groups[None]).any(axis=2)
        return (fits[:, :, None] & self.c.groups[None]).any(axis=1).astype(np.uint8)

    def level_params(self, params, nodes, rows, n_rows):
        """``params`` with the value-constraint tail for a scan of ``n_rows``
        histogram rows, node ``nodes[i]`` in row ``rows[i]``; ``params``
        unchanged without monotonic constraints."""
        if self.c.monotonic is None:
            return params
        bounds = np.tile(np.array([-np.inf, np.inf]), (n_rows, 1))
        bounds[rows, 0] = self.lower[nodes]
        bounds[rows, 1] = self.upper[nodes]
        out = np.concatenate([params, self.c.monotonic.astype(FLOAT_DTYPE), bounds.ravel()])
        out[PARAM_CONSTRAINTS] = params.size
        return out

    def add_children(self, parents, feature, child_values):
        """Record the children (appended in order, left then right) of
        ``parents`` (node ids) split on ``feature`` (int (n,)); child_values
        float64 (n, 2) their unclipped values."""
        lo, hi = self.lower[parents], self.upper[parents]
        values = np.clip(child_values, lo[:, None], hi[:, None])
        mid = (values[:, 0] + values[:, 1]) * 0.5
        lower = np.stack([lo, lo], axis=1)
        upper = np.stack([hi, hi], axis=1)
        if self.c.monotonic is not None:
            sign = self.c.monotonic[feature]
            upper[:, 0] = np.where(sign > 0, mid, upper[:, 0])
            lower[:, 1] = np.where(sign > 0, mid, lower[:, 1])
            lower[:, 0] = np.where(sign < 0, mid, lower[:, 0])
            upper[:, 1] = np.where(sign < 0, mid, upper[:, 1])
        path = self.path[parents].copy()
        path[np.arange(parents.size), feature] = True
        self.lower = np.concatenate([self.lower, lower.ravel()])
        self.upper = np.concatenate([self.upper, upper.ravel()])
        self.path = np.concatenate([self.path, np.repeat(path, 2, axis=0)])

    def clip_values(self, values):
        """Leaf values (n_nodes, 1, 1) clipped to every node's bounds, in place."""
        values[:, 0, 0] = np.clip(values[:, 0, 0], self.lower, self.upper)
        return values
