"""What a fitted model computes from new rows, without its estimator class
(and so without scikit-learn): the raw values of each kind of model
(:class:`TreeValues`, :class:`ForestValues`, :class:`BoostedScores`), each
prediction method's answer from them (:class:`ClassOutputs`,
:class:`ValueOutputs`, :class:`BoostedClassOutputs`,
:class:`BoostedValueOutputs`), and :class:`Predictor`, a fitted model's
encoder, bins, raw values and outputs together.

The estimators' predict methods are these objects (each estimator builds
them from its fitted attributes: ``_raw_model()``, ``_outputs()``,
``_predictor()``), so a process that never loads the estimators (a Dask
worker predicting its partitions, :mod:`gputree.dask.estimators`) gives
the estimator's answer, byte for byte, from a pickled :class:`Predictor`.
"""
import numpy as np

from ..data.binned import bin_with
from ..growth.surrogates import apply_surrogates
from ..tree import tree_roots
from .ensemble import add_tree_values, device_leaves


def leaf_ids(backend, X_binned, trees):
    """Leaf of every row (binned X (n, n_features) on ``backend``) in each
    of ``trees`` (TreeArrays), as node ids of its tree: host int32 (n,
    n_trees)."""
    return backend.to_host(device_leaves(backend, X_binned, trees)) - tree_roots(trees)[None, :]


class TreeValues:
    """One tree's leaf values of binned rows (a row missing a split's
    feature follows the tree's ``surrogates``, when it has them)."""

    def __init__(self, tree, surrogates=None):
        self.tree, self.surrogates = tree, surrogates

    def leaves(self, backend, data):
        """int64 (n,): the leaf of each row of ``data`` (BinnedData)."""
        if self.surrogates is not None:
            return apply_surrogates(self.tree, self.surrogates,
                                    np.asarray(backend.to_host(data.X_binned)), data.missing_bin)
        return leaf_ids(backend, data.X_binned, [self.tree])[:, 0].astype(np.int64)

    def __call__(self, backend, data):
        """Host float64 (n, n_outputs, n_classes): each row's leaf values."""
        return self.tree.value[self.leaves(backend, data)]


class ForestValues:
    """The mean over a forest's trees of their leaf values (class fractions
    or regression means), each of ``value_shape`` (n_outputs, n_classes)."""

    def __init__(self, trees, value_shape):
        self.trees, self.value_shape = trees, tuple(value_shape)

    def __call__(self, backend, data):
        """Host float64 (n, n_outputs, n_classes) of binned rows ``data``."""
        n_samples = data.X_binned.shape[0]
        total = backend.xp.zeros((n_samples, int(np.prod(self.value_shape))))
        add_tree_values(backend, data.X_binned, self.trees, np.zeros(len(self.trees)), total)
        total = total.reshape((n_samples,) + self.value_shape)
        return backend.to_host(total / len(self.trees))


class BoostedScores:
    """Boosting's raw scores: ``baseline`` float64 (K,) plus each tree's
    leaf values, tree t added to the columns from ``columns[t]`` (host
    ints), in tree order."""

    def __init__(self, trees, columns, baseline):
        self.trees, self.columns, self.baseline = trees, columns, baseline

    def on_device(self, backend, X_binned):
        """Raw scores (n, K) on ``backend`` of binned X (n, n_features)."""
        raw = backend.xp.tile(backend.asarray(self.baseline), (X_binned.shape[0], 1))
        add_tree_values(backend, X_binned, self.trees, self.columns, raw)
        return raw

    def __call__(self, backend, data):
        """Host float64 (n, K) of binned rows ``data`` (a copy)."""
        return np.array(backend.to_host(self.on_device(backend, data.X_binned)), copy=True)


class ClassOutputs:
    """A classification tree's or forest's answers from leaf values float64
    (n, n_outputs, max classes): ``classes`` (one array, or a list per
    output), ``n_classes`` (an int, or a list per output)."""

    def __init__(self, classes, n_classes, n_outputs):
        self.classes, self.n_classes, self.n_outputs = classes, n_classes, n_outputs

    def predict_proba(self, values):
        """float64 (n, n_classes), or a list of them (one per output)."""
        if self.n_outputs == 1:
            return values[:, 0, :self.n_classes]
        return [values[:, o, :k] for o, k in enumerate(self.n_classes)]

    def predict(self, values):
        """The most probable class: (n,), or (n, n_outputs)."""
        if self.n_outputs == 1:
            return self.classes[np.argmax(values[:, 0, :self.n_classes], axis=1)]
        return np.stack([self.classes[o][np.argmax(values[:, o, :k], axis=1)]
                         for o, k in enumerate(self.n_classes)], axis=1)


class ValueOutputs:
    """A regression tree's or forest's answer from leaf values float64 (n,
    n_outputs, 1)."""

    def __init__(self, n_outputs):
        self.n_outputs = n_outputs

    def predict(self, values):
        """float64 (n,), or (n, n_outputs)."""
        return values[:, 0, 0] if self.n_outputs == 1 else values[:, :, 0]


class BoostedClassOutputs:
    """A boosted classifier's answers from raw scores float64 (n, K) through
    its ``loss`` (:mod:`gputree.estimators.losses`), ``classes`` (k,)."""

    def __init__(self, loss, classes):
        self.loss, self.classes = loss, classes

    def decision_function(self, raw):
        """Log-odds (n,) for two classes, else logits (n, k)."""
        return raw[:, 0] if raw.shape[1] == 1 else raw

    def predict_proba(self, raw):
        """float64 (n, k)."""
        return self.loss.predict(np, raw)

    def predict(self, raw):
        """The most probable class (n,)."""
        return self.classes[np.argmax(self.predict_proba(raw), axis=1)]


class BoostedValueOutputs:
    """A boosted regressor's mean, or a ranker's score: float64 (n,), the
    ``loss``'s inverse link of raw scores (n, 1)."""

    def __init__(self, loss):
        self.loss = loss

    def predict(self, raw):
        return self.loss.predict(np, raw)[:, 0]


class Predictor:
    """A fitted model's predictions of new X (host numpy or pandas (n,
    n_features)): ``encoder`` (FeatureEncoder) and ``bin_mapper`` as fitted,
    ``values`` (one of the raw-value objects above), ``outputs`` (one of the
    output objects above); ``name`` (the estimator's class name, for the
    errors) and ``device`` (its parameter). Picklable; loads no estimator."""

    def __init__(self, name, device, encoder, bin_mapper, values, outputs):
        self.name, self.device = name, device
        self.encoder, self.bin_mapper = encoder, bin_mapper
        self.values, self.outputs = values, outputs

    def __call__(self, backend, method, X):
        """Host answer of ``method`` ("predict", "predict_proba",
        "decision_function") for X, computed on ``backend`` (the raw values
        come to the host, where the outputs are made, as the estimator's)."""
        data = bin_with(backend, self.bin_mapper,
                        self.encoder.transform(X, self.name, backend.device_xp))
        return getattr(self.outputs, method)(self.values(backend, data))
