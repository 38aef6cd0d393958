"""Random forests with the scikit-learn API: ``RandomForestClassifier`` and
``RandomForestRegressor``.

Owns bagging. X is binned once per fit on the backend and every tree is grown
by :func:`gputree.growth.levelwise.grow_tree` on it. A bootstrap sample is drawn as
integer counts that become the tree's sample weights (exact in fixed point;
the statistics' count channel then counts distinct in-bag rows, so
``min_samples_leaf`` counts rows as scikit-learn does); the random feature
subset of every node is ``GrowthParams.max_features``, drawn on the host from
the tree's seeded RandomState. Out-of-bag rows have weight 0 but still reach a
leaf in the grower's ``positions``, so OOB predictions need no extra pass.

On the CPU trees are grown one at a time. A backend that
``grows_forest_batches`` (CUDA) grows level-wise trees in batches
(:mod:`gputree.growth.forest_batch`: the same level of every tree of a batch
in one launch), as many per batch as its ``forest_batch_size`` gives; the
trees are the same as one at a time: bootstrap counts and random draws come
from the same host streams.
"""
import numbers
import warnings

import numpy as np
import scipy.sparse

from .._arrays import returns_input_kind
from .._compat import ClassifierMixin, RegressorMixin
from ..criteria import CLASSIFICATION_CRITERIA
from ..data.training import seed_from
from ..data.validation import check_choice, check_float, check_int, check_sample_weight, check_y
from ..growth.histogram_pool import HistogramPool
from ..growth.forest_batch import batch_key, batch_size, grow_forest_batch
from ..growth.grower import grow
from ..growth.median import grow_absolute_error
from ..model import register_estimator, saved_floats, saved_int, saved_ints, saved_number
from ..tree import decision_path_indicator
from .bagging import OutOfBag, bootstrap_counts, device_statistics, drawn_rows
from .base import BaseTreeModel, set_params_from
from .tree_params import growth_params, squared_error_alias, tree_random_streams, weight_total
from .._progress import Progress
from .ensemble import device_leaves, stacked_values, training_data, tree_rng
from .importances import impurity_importances
from .prediction import ForestValues
from .targets import CLASS_ATTRIBUTES, ClassTargets, RegressionTargets
from .tree import DecisionTreeClassifier, DecisionTreeRegressor


def _mean_r2(y, prediction):
    """The mean over outputs of R^2 (float64 (n, O) each), as ``score``
    computes it (an output with constant targets: 1 where predicted exactly,
    else 0, as scikit-learn's r2_score)."""
    residual = ((y - prediction) ** 2).sum(axis=0)
    spread = ((y - y.mean(axis=0)) ** 2).sum(axis=0)
    per_output = np.where(spread > 0, 1.0 - residual / np.where(spread > 0, spread, 1.0),
                          np.where(residual == 0, 1.0, 0.0))
    return float(np.mean(per_output))


class _BaseForest(BaseTreeModel):
    """Bagging of trees grown by the shared grower; subclasses define the
    targets, OOB scoring and outputs.

    Tree ``i`` draws its bootstrap rows from ``tree_rng(seed, i)`` and grows
    from its own int seed (``_tree_seed``, its ``random_state`` in
    ``estimators_``) as a single tree with that random_state does
    (:func:`gputree.estimators.base.tree_random_streams`), so it is the tree
    its parameters grow on its rows ``estimators_samples_[i]`` (on the same
    bins). Like scikit-learn's ensembles a fitted forest is a sequence of its
    trees (``len``, iteration, indexing)."""

    _criteria = {}
    _model_kind = "forest"
    #: the splitter of the trees (estimators.base.growth_params)
    _splitter = "best"
    #: _n_samples, _n_samples_bootstrap (estimators_samples_ needs them) are
    #: absent from files written before they existed
    _model_attributes = {"n_outputs_": saved_int(1), "max_features_": saved_int(1),
                         "_value_shape": saved_ints(2, low=1), "_seed": saved_int(0),
                         "oob_score_": saved_number(optional=True),
                         "_n_samples": saved_int(1, optional=True),
                         "_n_samples_bootstrap": saved_int(1, optional=True, nullable=True)}
    _oob_attributes = ("oob_score_", "oob_decision_function_", "oob_prediction_")

    def _check_params(self):
        check_int(self.n_estimators, "n_estimators", 1)
        check_choice(self.criterion, "criterion", set(self._criteria))
        if not (callable(self.oob_score)
                or isinstance(self.oob_score, (bool, np.bool_, numbers.Integral))):
            raise TypeError(f"oob_score must be a bool or a callable metric(y_true, y_pred), "
                            f"got {self.oob_score!r}.")
        if not self.bootstrap and self.oob_score:
            raise ValueError("Out of bag estimation only available if bootstrap=True.")
        if not self.bootstrap and self.max_samples is not None:
            raise ValueError("`max_sample` cannot be set if `bootstrap=False`. Either switch "
                             "to `bootstrap=True` or set `max_sample=None`.")

    def _n_bootstrap(self, n_samples):
        """Rows each tree draws (with replacement); None without bootstrap
        (every row once). ``max_samples``: None (n_samples), an int >= 1 or
        a float > 0 (that fraction of n_samples, rounded down, at least 1);
        both may exceed n_samples."""
        if not self.bootstrap:
            return None
        if self.max_samples is None:
            return n_samples
        if isinstance(self.max_samples, numbers.Integral) and not isinstance(self.max_samples,
                                                                            bool):
            return check_int(self.max_samples, "max_samples", 1)
        fraction = check_float(self.max_samples, "max_samples", 0.0, low_open=True)
        return max(1, int(fraction * n_samples))

    def _drawn_rows(self, i, n_samples, n_bootstrap):
        """int64 (n_bootstrap,) the rows tree ``i`` draws with replacement
        (:func:`drawn_rows`)."""
        return drawn_rows(self._seed, i, n_samples, n_bootstrap)

    def _counts(self, i, n_samples, n_bootstrap):
        """float64 (n,) times tree ``i`` draws each row; ones without bootstrap."""
        return bootstrap_counts(self._seed, i, n_samples, n_bootstrap)

    def _tree_seed(self, i):
        """The int seed tree ``i`` grows from (its ``random_state``)."""
        return seed_from(tree_rng(self._seed, i, stream=1))

    def fit(self, X, y, sample_weight=None):
        """X (n_samples, n_features); y (n_samples,) or (n_samples, n_outputs);
        sample_weight (n_samples,) >= 0. With ``warm_start`` the trees of the
        previous fit are kept and ``n_estimators - len(trees)`` are added (none:
        a warning, and only a missing OOB estimate is computed)."""
        self._check_params()
        if scipy.sparse.issparse(y):
            raise ValueError("sparse multilabel-indicator for y is not supported. gputree "
                             "needs dense targets: convert it with y.toarray().")
        data, warm, start, done = self._begin_fit(X, sample_weight)
        n_samples = data.X_binned.shape[0]
        y = check_y(y, n_samples)
        if done:
            return self
        # None: all ones, and no (n_samples,) array of them
        weight = None if sample_weight is None else check_sample_weight(sample_weight, n_samples)
        targets = self._targets(y, fitting=not warm)
        self._grow_trees(data, targets, y, weight, start)
        return self

    def _begin_fit(self, X, sample_weight):
        """(BinnedData of X, warm, the trees kept, done): X binned (or,
        warm, binned with the kept trees' bins), the trees of a fresh fit
        dropped; ``done``, with a warning, when a warm start adds no tree
        and has its OOB estimate."""
        data, warm = training_data(self, X, sample_weight)
        if not warm:
            self._trees = []
        start = len(self._trees)
        if self.n_estimators < start:
            raise ValueError(f"n_estimators={self.n_estimators} must be larger or equal to "
                             f"len(trees)={start} when warm_start==True.")
        done = False
        if warm and self.n_estimators == start:
            warnings.warn("Warm-start fitting without increasing n_estimators does not fit "
                          "new trees.", UserWarning)
            done = not self.oob_score or hasattr(self, "oob_score_")
        return data, warm, start, done

    def _end_fit(self, n_samples, n_features, n_bootstrap):
        """The fitted attributes of the trees' sizes; the OOB attributes
        of an earlier fit dropped."""
        self.max_features_ = growth_params(self, n_samples, 1.0, n_features).max_features
        self._n_samples, self._n_samples_bootstrap = n_samples, n_bootstrap
        for name in self._oob_attributes:
            if name in self.__dict__:
                delattr(self, name)

    def _targets(self, y, fitting):
        """The fit's targets (:mod:`gputree.estimators.targets`); a first fit
        sets the attributes that describe them, a warm start checks them."""
        targets = self._make_targets(y)
        self._describe_targets(targets, fitting)
        return targets

    def _describe_targets(self, targets, fitting):
        """The checks of the fit's targets (those of OOB scoring; a warm
        start's classes against the fitted ones) and, fitting, the
        attributes that describe them."""
        if self.oob_score and not callable(self.oob_score):
            self._check_oob_target(targets)
        if not fitting:
            targets.check_same_classes(self)
            return
        for name, value in targets.attributes().items():
            setattr(self, name, value)
        self.n_outputs_ = targets.n_outputs
        self._value_shape = targets.value_shape

    def _check_oob_target(self, targets):
        """Raise where ``score`` is undefined for these targets (oob_score=True
        estimates ``score``)."""

    def _grower(self):
        """The function that grows a tree (arguments as
        :func:`gputree.growth.grower.grow`)."""
        return grow

    def _grow_trees(self, data, targets, y, weight, start):
        backend = self._backend
        n_samples, n_features = data.X_binned.shape
        n_bootstrap = self._n_bootstrap(n_samples)
        oob = OutOfBag(backend, (n_samples,) + self._value_shape) if self.oob_score else None
        if oob is not None and start:
            self._add_old_trees_oob(oob, data, n_bootstrap)
        progress = Progress(self.n_estimators - start, self.verbose, type(self).__name__)
        pool, cache = HistogramPool(backend), {}
        try:
            if self._grows_batches(n_samples, n_features):
                self._grow_batches(data, targets, weight, n_bootstrap, oob, pool, cache,
                                   progress)
            for i in range(len(self._trees), self.n_estimators):
                self._trees.append(self._grow_one(i, data, targets, weight, n_bootstrap, oob,
                                                  pool, cache))
                progress.step()
        finally:
            progress.close()
        self._end_fit(n_samples, n_features, n_bootstrap)
        if oob is not None:
            self._set_oob(oob.mean(), targets, y)

    def _grow_one(self, i, data, targets, weight, n_bootstrap, oob, pool, cache):
        """Tree ``i`` with its rows' leaves added to ``oob`` (None: no OOB
        estimate); ``pool`` holds its histograms, ``cache`` what the fit's
        trees share on the device."""
        stats, growth, out_of_bag = self._bootstrap(i, data, targets, weight, n_bootstrap,
                                                    oob is not None, cache)
        rng, _ = tree_random_streams(self._tree_seed(i))
        tree, positions = self._grower()(self._backend, data, stats, growth, rng, pool,
                                         self._held_bytes(stats, oob))
        if oob is not None:
            oob.add(self._backend.asarray(tree.value), positions, out_of_bag)
        return tree

    def _held_bytes(self, stats, oob):
        """Device bytes per row the fit keeps beside a tree's buffers: the
        statistics of weight one and the bootstrap counts, and the OOB sums
        and counts, and a gather of leaf values."""
        held = stats.stats.shape[1] * 8 + 4
        return held + (8 * (2 * int(np.prod(self._value_shape)) + 1) if oob is not None else 0)

    def _grows_batches(self, n_samples, n_features):
        """Whether the trees grow in batches: the backend grows forests so,
        and the trees are grown level-wise without constraints."""
        if not self._backend.grows_forest_batches or self._grower() is not grow:
            return False
        growth = growth_params(self, n_samples, 1.0, n_features)
        return not growth.best_first and growth.constraints is None

    def _grow_batches(self, data, targets, weight, n_bootstrap, oob, pool, cache, progress):
        """Grow the remaining trees in batches of the backend's
        forest_batch_size (decided from the first one's statistics); trees
        of a batch whose statistics differ in scale grow in separate
        groups (:func:`gputree.growth.forest_batch.batch_key`)."""
        size = None
        while len(self._trees) < self.n_estimators:
            first = len(self._trees)
            bootstraps = {}
            for i in range(first, self.n_estimators):
                bootstraps[i] = self._bootstrap(i, data, targets, weight, n_bootstrap,
                                                oob is not None, cache)
                if size is None:
                    stats, growth, _ = bootstraps[i]
                    size = batch_size(self._backend, self.n_estimators - first, data, stats,
                                      growth, self._held_bytes(stats, oob))
                if len(bootstraps) == size:
                    break
            grown = self._grow_batch(data, bootstraps, oob, pool)
            self._trees.extend(grown[i] for i in sorted(grown))
            for _ in grown:
                progress.step()

    def _grow_batch(self, data, bootstraps, oob, pool):
        """dict tree index -> TreeArrays of the trees of ``bootstraps`` (dict
        index -> _bootstrap's result), grown together by groups of one
        batch_key, their rows' leaves added to ``oob`` in the trees' order
        (the sums' order, as one tree at a time adds them)."""
        groups = {}
        for i, (stats, growth, _) in bootstraps.items():
            groups.setdefault(batch_key(stats, growth), []).append(i)
        grown = {}
        for indices in groups.values():
            grown.update(self._grow_group(data, indices, bootstraps, oob, pool))
        if oob is not None:
            for i in sorted(grown):
                tree, positions = grown[i]
                oob.add(self._backend.asarray(tree.value), positions, bootstraps[i][2])
        return {i: tree for i, (tree, _) in grown.items()}

    def _bootstrap(self, i, data, targets, weight, n_bootstrap, with_oob, cache):
        """Tree ``i``'s bootstrap counts made into its statistics (on the
        backend) and GrowthParams; the host bool (n,) out-of-bag mask when
        ``with_oob`` (else None). The (n,) counts and weights are dropped
        here, before the tree grows."""
        n_samples, n_features = data.X_binned.shape
        counts = self._counts(i, n_samples, n_bootstrap)
        w = targets.weights(weight, counts)
        stats = device_statistics(self._backend, targets, weight, counts, cache)
        if stats is None:
            stats = targets.statistics(w)
            stats.stats = self._backend.upload(stats.stats)
        growth = growth_params(self, n_samples, weight_total(w), n_features)
        return stats, growth, (counts == 0 if with_oob else None)

    def _grow_group(self, data, indices, bootstraps, oob, pool):
        """[(tree index, (TreeArrays, positions))] of the trees ``indices``
        grown together; a group the device memory cannot hold (MemoryError:
        the memory check, or an allocation; the batch size was chosen before
        the fit's buffers were held) is grown in two halves, from the same
        statistics and fresh random streams: the same trees."""
        stats = [bootstraps[i][0] for i in indices]
        try:
            return list(zip(indices, grow_forest_batch(
                self._backend, data, stats, [bootstraps[i][1] for i in indices],
                [tree_random_streams(self._tree_seed(i))[0] for i in indices], pool,
                self._held_bytes(stats[0], oob))))
        except MemoryError:
            if len(indices) == 1:
                raise
        half = len(indices) // 2
        return (self._grow_group(data, indices[:half], bootstraps, oob, pool)
                + self._grow_group(data, indices[half:], bootstraps, oob, pool))

    def _add_old_trees_oob(self, oob, data, n_bootstrap):
        """OOB contributions of trees kept by warm_start (their bootstrap
        counts are redrawn from their seeds; leaves in one launch)."""
        n_samples = data.X_binned.shape[0]
        leaves = device_leaves(self._backend, data.X_binned, self._trees)
        values = stacked_values(self._backend, self._trees)
        for i in range(len(self._trees)):
            oob.add(values, leaves[:, i], self._counts(i, n_samples, n_bootstrap) == 0)

    def _trees_for_prediction(self):
        return self._trees

    # ------------------------------------------------ the ensemble protocol
    def __len__(self):
        """The number of fitted trees."""
        self._check_fitted()
        return len(self._trees)

    def __getitem__(self, index):
        """The fitted tree at ``index`` (a list of them for a slice), as in
        ``estimators_``."""
        self._check_fitted()
        at = range(len(self._trees))[index]
        return [self._tree_estimator(i) for i in at] if isinstance(at, range) else \
            self._tree_estimator(at)

    def __iter__(self):
        """The fitted trees, in order."""
        self._check_fitted()
        return (self._tree_estimator(i) for i in range(len(self._trees)))

    @property
    def estimators_(self):
        """The trees as fitted DecisionTreeClassifier / DecisionTreeRegressor
        (scikit-learn's ``estimators_``; each ``tree_`` is scikit-learn
        shaped), sharing the forest's bins and feature layout; tree ``i`` has
        ``random_state`` its own seed."""
        self._check_fitted()
        return [self._tree_estimator(i) for i in range(len(self._trees))]

    @property
    def estimator(self):
        """The tree every tree of the forest is: an unfitted
        DecisionTreeClassifier / DecisionTreeRegressor with the forest's tree
        parameters and ``random_state=None`` (each fitted tree has its own
        seed); scikit-learn's ``estimator``."""
        return self._template(random_state=None)

    @property
    def estimator_(self):
        """``estimator`` of a fitted forest."""
        self._check_fitted()
        return self.estimator

    @property
    def estimators_samples_(self):
        """The rows each tree drew: a list of int32 arrays (n_bootstrap,)
        of row indices, with repetitions (every row once without bootstrap).
        ``clone(estimators_[i]).fit(X[rows], y[rows])`` grows tree ``i``
        again where its bins see the same thresholds (e.g. when every
        feature has at most ``max_bins`` distinct values)."""
        self._check_fitted()
        if not hasattr(self, "_n_samples"):
            raise AttributeError("estimators_samples_ is unknown for this forest: its model "
                                 "file does not record the bootstrap size; refit it.")
        return [self._drawn_rows(i, self._n_samples, self._n_samples_bootstrap)
                .astype(np.int32) for i in range(len(self._trees))]

    def _template(self, **params):
        """The tree class with the forest's tree parameters, then ``params``."""
        names = self._tree_class._get_param_names()
        given = {k: v for k, v in self.get_params(deep=False).items() if k in names}
        if given.get("criterion") == "friedman_mse":
            given["criterion"] = "squared_error"
        return self._tree_class(**{**given, **params})

    def _tree_estimator(self, i):
        estimator = self._template(random_state=self._tree_seed(i))
        for name in estimator._model_attributes:
            if hasattr(self, name):
                setattr(estimator, name, getattr(self, name))
        estimator._restore(self._backend, self._encoder, self._bin_mapper, [self._trees[i]])
        return estimator

    def decision_path(self, X):
        """(indicator, n_nodes_ptr), as scikit-learn's forests: indicator
        CSR (n_samples, total nodes), 1 where the row visits the node, the
        trees' nodes side by side; n_nodes_ptr int64 (n_estimators + 1,):
        tree i's nodes are columns n_nodes_ptr[i] to n_nodes_ptr[i + 1] - 1."""
        leaves = self._leaves(X)
        paths = [decision_path_indicator(tree, leaves[:, i].astype(np.int64))
                 for i, tree in enumerate(self._trees)]
        n_nodes_ptr = np.cumsum([0] + [tree.node_count for tree in self._trees])
        return scipy.sparse.hstack(paths, format="csr"), n_nodes_ptr

    def _raw_model(self):
        return ForestValues(self._trees, self._value_shape)

    def _raw_values(self, X):
        """Mean over trees of the leaf values, host float64 (n_samples,
        n_outputs, n_classes): class probabilities or regression means."""
        data = self._bin_new_data(X)      # checks it is fitted first
        return self._raw_model()(self._backend, data)

    @returns_input_kind
    def apply(self, X):
        """Leaf id of every row in every tree, int64 (n_samples, n_estimators)."""
        return self._leaves(X).astype(np.int64)

    @property
    def feature_importances_(self):
        """Mean over trees of their normalised impurity decrease, normalised."""
        self._check_fitted()
        per_tree = [impurity_importances(t, self.n_features_in_)
                    for t in self._trees if t.node_count > 1]
        if not per_tree:
            return np.zeros(self.n_features_in_)
        mean = np.mean(per_tree, axis=0)
        return mean / mean.sum() if mean.sum() > 0 else mean

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.target_tags.multi_output = True
        return tags


@register_estimator
class RandomForestClassifier(ClassifierMixin, _BaseForest):
    """A random forest of classification trees grown level by level on binned
    features, with scikit-learn's parameters (``criterion`` "gini",
    "entropy"/"log_loss" or "gain_ratio"; ``max_features="sqrt"``;
    ``bootstrap``, ``max_samples``, ``oob_score`` (True: the OOB estimate of
    ``score``, the fraction of rows whose outputs are all right; or a
    callable ``metric(y, oob_predictions)``), ``class_weight`` including
    "balanced_subsample") plus ``max_bins``, ``categorical_features``,
    ``device`` and ``n_jobs`` as in :class:`gputree.DecisionTreeClassifier`. Probabilities
    are the mean of the trees' leaf class fractions.
    """

    _criteria = CLASSIFICATION_CRITERIA
    _tree_class = DecisionTreeClassifier
    _model_attributes = {**CLASS_ATTRIBUTES, **_BaseForest._model_attributes,
                         "oob_decision_function_": saved_floats((2, 3), optional=True)}
    predict_proba = DecisionTreeClassifier.predict_proba
    predict_log_proba = DecisionTreeClassifier.predict_log_proba
    predict = DecisionTreeClassifier.predict
    _predict_values = DecisionTreeClassifier._predict_values
    _outputs = DecisionTreeClassifier._outputs

    def __init__(self, n_estimators=100, criterion="gini", max_depth=None, min_samples_split=2,
                 min_samples_leaf=1, min_weight_fraction_leaf=0.0, max_features="sqrt",
                 max_leaf_nodes=None, min_impurity_decrease=0.0, bootstrap=True,
                 oob_score=False, random_state=None, verbose=0, warm_start=False,
                 class_weight=None, max_samples=None, max_bins=255, categorical_features=None,
                 device="auto", n_jobs=None):
        set_params_from(self, locals())

    def _make_targets(self, y):
        return ClassTargets(y, self.class_weight, self.criterion, per_tree=True)

    def _check_oob_target(self, targets):
        """score's accuracy takes one output, or a multilabel indicator (at
        most two distinct numbers over every output), as scikit-learn's."""
        if targets.n_outputs == 1:
            return
        values = np.concatenate([np.asarray(c).ravel() for c in targets.classes])
        if values.dtype.kind in "biuf" and np.unique(values).size <= 2:
            return
        raise ValueError("The type of target cannot be used to compute OOB estimates: y is "
                         "multiclass-multioutput, for which score (accuracy) is not defined. "
                         "Pass oob_score=<a metric(y_true, y_pred)> to score the OOB "
                         "predictions, or oob_score=False.")

    def _set_oob(self, mean, targets, y):
        """OOB attributes from the OOB mean leaf values (n, n_outputs,
        n_classes); ``y`` as given to fit."""
        if self.n_outputs_ == 1:
            self.oob_decision_function_ = mean[:, 0, :self.n_classes_]
        else:
            self.oob_decision_function_ = mean.transpose(0, 2, 1)
        if callable(self.oob_score):
            self.oob_score_ = self.oob_score(y, self._predict_values(mean))
            return
        # score's accuracy: a row counts only when all its outputs are right
        predicted = np.argmax(mean, axis=2)
        self.oob_score_ = float(np.mean(np.all(predicted == targets.y, axis=1)))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = True
        return tags


@register_estimator
class RandomForestRegressor(RegressorMixin, _BaseForest):
    """A random forest of regression trees (``criterion`` "squared_error",
    "poisson" or "absolute_error": medians, see
    :class:`gputree.DecisionTreeRegressor`; "friedman_mse" is a deprecated
    alias of "squared_error", as in scikit-learn 1.9: the same splits;
    ``max_features=1.0``); ``oob_score`` True is the OOB estimate of
    ``score`` (R^2, the mean over outputs); other parameters as in
    :class:`RandomForestClassifier`. Predictions are the mean of the trees'
    leaf values.
    """

    #: absolute_error splits and leaves by medians (gputree.growth.median)
    _criteria = DecisionTreeRegressor._criteria
    _model_attributes = {**_BaseForest._model_attributes,
                         "oob_prediction_": saved_floats((1, 2), optional=True)}
    _tree_class = DecisionTreeRegressor
    predict = DecisionTreeRegressor.predict
    _predict_values = DecisionTreeRegressor._predict_values
    _outputs = DecisionTreeRegressor._outputs

    def __init__(self, n_estimators=100, criterion="squared_error", max_depth=None,
                 min_samples_split=2, min_samples_leaf=1, min_weight_fraction_leaf=0.0,
                 max_features=1.0, max_leaf_nodes=None, min_impurity_decrease=0.0,
                 bootstrap=True, oob_score=False, random_state=None, verbose=0,
                 warm_start=False, max_samples=None, max_bins=255, categorical_features=None,
                 device="auto", n_jobs=None):
        criterion = squared_error_alias(criterion)
        set_params_from(self, locals())

    def _make_targets(self, y):
        return RegressionTargets(y, self._criteria[self.criterion],
                                 attach=self.criterion == "absolute_error")

    def _grower(self):
        return grow_absolute_error if self.criterion == "absolute_error" else grow

    def _set_oob(self, mean, targets, y):
        """OOB attributes from the OOB mean leaf values (n, n_outputs, 1)."""
        prediction = mean[:, :, 0]
        self.oob_prediction_ = prediction[:, 0] if self.n_outputs_ == 1 else prediction
        if callable(self.oob_score):
            self.oob_score_ = self.oob_score(y, self.oob_prediction_)
        else:
            self.oob_score_ = _mean_r2(targets.y, prediction)
