"""``SklearnTree``: a fitted gputree tree seen through scikit-learn's
``sklearn.tree._tree.Tree`` interface, so that tools written against it
(``sklearn.tree.export_graphviz``, ``export_text``, ...) read gputree trees.

scikit-learn's meanings: ``children_left`` / ``children_right`` are -1
(scikit-learn's ``TREE_LEAF``) for leaves; ``feature`` is -2 (``TREE_UNDEFINED``) and
``threshold`` -2.0 for leaves; ``value`` is ``(node_count, n_outputs,
max_n_classes)`` with class fractions for classification and means for
regression (as scikit-learn >= 1.4 stores them); ``apply``, ``decision_path``
and ``predict`` take raw ``X`` (category codes for categorical columns).

Categorical splits have no scikit-learn representation: their ``threshold``
is NaN, and the categories going left are ``left_categories(node)`` (the
codes whose bit is set in ``bitset``). Missing values go left where
``missing_go_to_left`` is 1 (scikit-learn's name for gputree's
``missing_left``). Every gputree field (``bitset``, ``left_child``,
``missing_left``, ``is_categorical``, ``gain``, ``depth``, ``parent``) stays
readable under its own name.

A multiway split (ID3 / C4.5, ``multiway=True``) appears as its chain of
binary categorical nodes (:mod:`gputree.tree`): each sends one category left,
the nodes after the first have ``chain_link`` 1, and ``max_depth`` /
``depth`` count the chain's nodes, so a tree with multiway splits reads as an
equivalent binary tree (same predictions, same leaves).
"""
import numpy as np

from ..backends import get_backend
from ..data.adapters import as_float_2d
from ..data.binned import bin_with
from ..tree import concatenate_trees, decision_path_indicator
from ..backends.splitset import node_left_bins

TREE_UNDEFINED = -2


class SklearnTree:
    """scikit-learn's Tree interface over ``arrays`` (TreeArrays).

    arrays      TreeArrays of the tree
    bin_mapper  the fitted BinMapper that binned its training data
    n_classes   int array (n_outputs,): classes per output, ones for regression
    """

    def __init__(self, arrays, bin_mapper, n_classes):
        self.arrays = arrays
        self.bin_mapper = bin_mapper
        self.n_classes = np.asarray(n_classes, dtype=np.intp).reshape(-1)

    def __getattr__(self, name):
        # gputree's own fields; guarded so that unpickling (no ``arrays`` yet) works
        if name == "arrays" or (name.startswith("__") and name != "__dataclass_fields__"):
            raise AttributeError(name)
        return getattr(self.arrays, name)

    # ------------------------------------------------- scikit-learn's arrays
    @property
    def children_left(self):
        return self.arrays.left_child.astype(np.intp)

    @property
    def children_right(self):
        return self.arrays.right_child.astype(np.intp)

    @property
    def feature(self):
        f = self.arrays.feature
        return np.where(f < 0, TREE_UNDEFINED, f).astype(np.intp)

    @property
    def threshold(self):
        return np.where(self.arrays.feature < 0, float(TREE_UNDEFINED), self.arrays.threshold)

    @property
    def missing_go_to_left(self):
        return self.arrays.missing_left

    @property
    def n_features(self):
        return int(self.bin_mapper.bin_thresholds_.shape[0])

    @property
    def n_outputs(self):
        return int(self.arrays.value.shape[1])

    @property
    def max_n_classes(self):
        return int(self.arrays.value.shape[2])

    @property
    def capacity(self):
        return self.arrays.node_count

    def left_categories(self, node):
        """Category codes (float64) that go left at categorical split ``node``."""
        if not self.arrays.is_categorical[node]:
            raise ValueError(f"node {node} is not a categorical split.")
        bins = node_left_bins(self.arrays, node, self.bin_mapper.missing_bin_)
        feature = self.arrays.feature[node]
        return self.bin_mapper.bin_thresholds_[feature, bins[
            bins < self.bin_mapper.n_bins_non_missing_[feature]]]

    # ------------------------------------------------ scikit-learn's methods
    def apply(self, X):
        """Leaf id, intp (n_samples,), of raw X (n_samples, n_features)."""
        backend = get_backend("cpu")
        X = as_float_2d(X)
        if X.shape[1] != self.n_features:
            raise ValueError(f"X has {X.shape[1]} features but the tree was fitted with "
                             f"{self.n_features}; pass the same columns.")
        binned = bin_with(backend, self.bin_mapper, X).X_binned
        feature, sets, left, roots = concatenate_trees([self.arrays])
        return backend.predict_leaves(binned, feature, sets, left, roots)[:, 0].astype(np.intp)

    def decision_path(self, X):
        """CSR indicator (n_samples, node_count) of the nodes each row visits."""
        return decision_path_indicator(self.arrays, self.apply(X))

    def predict(self, X):
        """Leaf values of raw X, float64 (n_samples, n_outputs, max_n_classes);
        (n_samples, max_n_classes) for one output, as scikit-learn returns."""
        out = self.arrays.value[self.apply(X)]
        return out[:, 0, :] if self.n_outputs == 1 else out
