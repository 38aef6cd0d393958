"""gputree.dask on a real LocalCluster of 2 worker processes: the models are
the one-machine models bit for bit (every array of every tree, the bins,
every prediction) for several partitionings of the same data, with NaNs,
categorical columns, sample weights, random draws and a bin subsample
smaller than the data; predictions on Dask collections are Dask collections
equal to the local ones; bad input gives clear errors; a fit that loses a
worker continues to the same model, or stops with a clear error."""
import copy
import dataclasses
import os
import signal

import numpy as np
import pytest

import frames
from dask_models import (assert_same_model, die_at_round, no_rows_answered, refuse_driver_path,
                         sample_bins_from, softmax)

pytest.importorskip("dask")
pytest.importorskip("distributed")
pd = pytest.importorskip("pandas")

import dask.array as da  # noqa: E402
import dask.dataframe as dd  # noqa: E402
from distributed import Client, LocalCluster  # noqa: E402

import gputree  # noqa: E402
import gputree.dask as gd  # noqa: E402
from gputree.dask import partitions  # noqa: E402

N_ROWS = 600
#: row counts of the partitions of each partitioning (uneven, one of 1 row)
PARTITIONINGS = {1: [N_ROWS], 2: [450, 150], 3: [1, 299, 300], 7: [90, 10, 200, 50, 50, 120, 80]}


@pytest.fixture(scope="module")
def client():
    """Two worker processes. The tests that kill one rely on its nanny to
    start another: the cluster drops a nanny whose worker has not come back
    ``lost-worker-timeout`` after a loss, which a worker killed twice within
    it (the new one not yet registered at the first deadline) would meet."""
    import dask
    with dask.config.set({"distributed.deploy.lost-worker-timeout": "600s"}), \
            LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                         dashboard_address=None) as cluster, Client(cluster) as client:
        yield client


@pytest.fixture
def small_bin_subsample(monkeypatch):
    """Bins learned from a 250-row subsample (the default is 200,000): the
    sampled rows must be the same global rows on the cluster."""
    sample_bins_from(monkeypatch, 250)


def make_frame(seed=0):
    """(pandas X with NaNs and a category column, labels, float target, weights)."""
    return frames.make_frame(N_ROWS, seed)


def dask_frame(X, n_partitions):
    bounds = np.concatenate([[0], np.cumsum(PARTITIONINGS[n_partitions])])
    divisions = [int(b) for b in bounds[:-1]] + [N_ROWS - 1]
    return dd.from_pandas(X, npartitions=1).repartition(divisions=divisions)


def dask_array(X, n_partitions, n_column_chunks=2):
    n_features = X.shape[1]
    columns = (n_features - n_features // 2, n_features // 2)[:n_column_chunks]
    return da.from_array(X, chunks=(tuple(PARTITIONINGS[n_partitions]), columns))


CASES = {
    "boosting-multiclass": (gputree.GradientBoostingClassifier, gd.DaskGradientBoostingClassifier,
                            dict(n_estimators=3, max_depth=3, subsample=0.7,
                                 colsample_bytree=0.6, random_state=3), "labels"),
    "boosting-regression": (gputree.GradientBoostingRegressor, gd.DaskGradientBoostingRegressor,
                            dict(n_estimators=4, max_depth=3, random_state=1), "target"),
    "forest-classifier": (gputree.RandomForestClassifier, gd.DaskRandomForestClassifier,
                          dict(n_estimators=3, max_depth=4, random_state=5), "labels"),
    "forest-regressor": (gputree.RandomForestRegressor, gd.DaskRandomForestRegressor,
                         dict(n_estimators=3, max_depth=4, max_features=0.5, oob_score=True,
                              random_state=2), "target"),
    "tree-classifier": (gputree.DecisionTreeClassifier, gd.DaskDecisionTreeClassifier,
                        dict(max_depth=5, random_state=0), "labels"),
    "tree-wide-bins": (gputree.DecisionTreeRegressor, gd.DaskDecisionTreeRegressor,
                       dict(max_depth=5, max_bins=400), "target"),
    "tree-best-first": (gputree.DecisionTreeClassifier, gd.DaskDecisionTreeClassifier,
                        dict(max_leaf_nodes=10, max_features=3, random_state=0), "labels"),
    # extremely randomized trees: each worker draws its features' thresholds
    "tree-random-splitter": (gputree.DecisionTreeClassifier, gd.DaskDecisionTreeClassifier,
                             dict(max_depth=5, splitter="random", max_features=2,
                                  random_state=4), "labels"),
    "boosting-extra-trees": (gputree.GradientBoostingRegressor,
                             gd.DaskGradientBoostingRegressor,
                             dict(n_estimators=3, max_depth=3, extra_trees=True,
                                  random_state=6), "target"),
    # Friedman's leaves from the workers' per-leaf sums
    "boosting-friedman": (gputree.GradientBoostingRegressor, gd.DaskGradientBoostingRegressor,
                          dict(n_estimators=3, max_depth=3, criterion="friedman_mse",
                               subsample=0.8, random_state=0), "target"),
    # ID3: multiway splits of the histograms summed among the workers
    "tree-multiway": (gputree.DecisionTreeClassifier, gd.DaskDecisionTreeClassifier,
                      dict(criterion="entropy", multiway=True, max_depth=3), "labels"),
    # a RandomState as random_state (fit_pair gives each estimator a copy)
    "tree-random-state": (gputree.DecisionTreeClassifier, gd.DaskDecisionTreeClassifier,
                          dict(max_depth=5, splitter="random", max_features=2,
                               random_state=np.random.RandomState(4)), "labels"),
}


def fit_pair(case, client, n_partitions, weighted=True, as_array=False, **changes):
    local_class, dask_class, params, target = CASES[case]
    params = dict(params, **changes)
    X, labels, target_values, weights = make_frame()
    y = labels if target == "labels" else target_values
    w = weights if weighted else None
    params = dict(params, device="cpu")
    if local_class.__name__.startswith("GradientBoosting"):
        params["early_stopping"] = False
    if as_array:
        X = X.assign(colour=X["colour"].cat.codes.astype(float)).to_numpy()
        params["categorical_features"] = [4]
        dX = dask_array(X, n_partitions)
    else:
        dX = dask_frame(X, n_partitions)
    # a RandomState given as random_state: each estimator draws from its own copy
    local = local_class(**copy.deepcopy(params)).fit(X, y, sample_weight=w)
    dy = da.from_array(y, chunks=200)
    model = dask_class(**copy.deepcopy(params), client=client).fit(dX, dy, sample_weight=w)
    return model, local, X, dX


@pytest.mark.parametrize("n_partitions", [1, 2, 3, 7])
@pytest.mark.parametrize("case", ["boosting-multiclass", "forest-classifier"])
def test_same_model_for_every_partitioning(client, small_bin_subsample, case, n_partitions):
    model, local, X, dX = fit_pair(case, client, n_partitions)
    assert_same_model(model, local)
    methods = ["predict_proba", "predict"] + (["decision_function"] if case.startswith("boost")
                                              else [])
    for method in methods:
        expected = getattr(local, method)(X)
        np.testing.assert_array_equal(getattr(model, method)(X), expected)
        predicted = getattr(model, method)(dX)
        assert isinstance(predicted, dd.DataFrame if expected.ndim == 2 else dd.Series)
        np.testing.assert_array_equal(predicted.compute().to_numpy(), expected)


def _whole_up_to(n_workers):
    from gputree.dask.sliced_histograms import SlicedHistograms
    previous, SlicedHistograms.whole_up_to = SlicedHistograms.whole_up_to, n_workers
    return previous


def test_all_reduce_of_whole_histograms(client, small_bin_subsample):
    """The workers' all-reduce of the whole histograms, each scanning every
    feature (the path of one worker, forced here on two, instead of the
    reduce-scatter by feature and the exchange of best splits) grows the
    one-machine model."""
    previous = client.run(_whole_up_to, 2)
    try:
        model, local, X, dX = fit_pair("boosting-multiclass", client, 3)
    finally:
        client.run(_whole_up_to, next(iter(previous.values())))
    assert_same_model(model, local)


def test_three_workers_reduce_scatter(small_bin_subsample, monkeypatch):
    """Three workers (in this process: the packed histograms go by
    reference, their buffers reused) each sum and scan a third of the
    features and grow the one-machine models."""
    from gputree.dask.sliced_histograms import SlicedHistograms
    joined = []
    real = SlicedHistograms.__init__

    def counted(self, peers, index):
        joined.append((len(peers), index))
        real(self, peers, index)

    monkeypatch.setattr(SlicedHistograms, "__init__", counted)
    with LocalCluster(n_workers=3, threads_per_worker=1, processes=False,
                      dashboard_address=None) as cluster, Client(cluster) as three:
        for case in ("boosting-multiclass", "boosting-regression"):
            joined.clear()
            model, local, X, dX = fit_pair(case, three, 7)
            assert sorted(joined) == [(3, 0), (3, 1), (3, 2)]
            assert_same_model(model, local)


@pytest.mark.filterwarnings("ignore:Some inputs do not have OOB scores")
@pytest.mark.parametrize("case", ["boosting-regression", "forest-regressor", "tree-classifier",
                                  "tree-random-splitter", "boosting-extra-trees",
                                  "tree-best-first"])
def test_same_model_other_estimators(client, small_bin_subsample, case):
    model, local, X, dX = fit_pair(case, client, 3, as_array=True)
    assert_same_model(model, local)
    predicted = model.predict(dX)
    assert isinstance(predicted, da.Array)
    np.testing.assert_array_equal(predicted.compute(), local.predict(X))
    if case == "forest-regressor":
        np.testing.assert_array_equal(model.oob_prediction_, local.oob_prediction_)


@pytest.mark.parametrize("n_partitions", [1, 3, 7])
@pytest.mark.parametrize("params", [
    dict(n_estimators=3, max_depth=4, subsample=0.6, random_state=4),
    dict(n_estimators=2, max_depth=3, multi_strategy="multi_output_tree", colsample_bytree=0.5,
         random_state=1, verbose=1),
    dict(n_estimators=3, grow_policy="lossguide", max_leaf_nodes=7, max_depth=None,
         random_state=2),
    dict(n_estimators=3, max_depth=3, extra_trees=True, colsample_bytree=0.7, random_state=6)],
    ids=["binary-subsample", "multi-output-verbose", "lossguide", "extra-trees"])
def test_boosting_rows_stay_on_the_workers(client, small_bin_subsample, monkeypatch, params,
                                            n_partitions):
    """Boosting with the Newton criterion keeps its rows on the workers: no
    answer of the workers holds a row-sized array, and the model and its
    training scores (order-free sums in parts) are the one-machine ones, with
    and without weights, for binary (row subsample without weights: the
    weighted score path) and multi-output trees (verbose: every round's
    training score computed at once)."""
    refuse_driver_path(monkeypatch, N_ROWS)
    X, labels, _, weights = make_frame()
    y = labels if "multi_strategy" in params else (labels > 0).astype(int)
    dX = dask_frame(X, n_partitions)
    for w in (None, weights):
        local_params = dict(params, device="cpu", early_stopping=False)
        local = gputree.GradientBoostingClassifier(**local_params).fit(X, y, sample_weight=w)
        model = gd.DaskGradientBoostingClassifier(**local_params, client=client).fit(
            dX, da.from_array(y, chunks=250), sample_weight=w)
        assert_same_model(model, local)
        np.testing.assert_array_equal(model.predict_proba(dX).compute().to_numpy(),
                                      local.predict_proba(X))


@pytest.mark.parametrize("n_partitions", [2, 7])
@pytest.mark.parametrize("validation", ["fraction", "eval_set"])
@pytest.mark.parametrize("estimator", ["classifier", "regressor"])
def test_early_stopping_on_the_workers(client, small_bin_subsample, estimator, validation,
                                       n_partitions):
    """Early stopping with validation rows on the workers (eval_set's, or
    the one-machine validation_fraction split: stratified by class for the
    classifier, with class_weight='balanced') stops at the one-machine
    round with the same trees, baseline and every round's scores."""
    _check_early_stopping(*_early_stopping_fits(client, estimator, validation, n_partitions))


@pytest.mark.parametrize("more", [dict(criterion="friedman_mse"), dict(loss=softmax)],
                         ids=["friedman", "custom-softmax"])
def test_friedman_and_custom_early_stopping_on_the_workers(client, small_bin_subsample, more):
    """Friedman's criterion and a custom objective stop early on validation
    rows held by the workers at the one-machine round, with its scores."""
    model, local, n_estimators = _early_stopping_fits(client, "classifier", "fraction", 7,
                                                      **more)
    _check_early_stopping(model, local, n_estimators)
    np.testing.assert_array_equal(model.validation_score_, local.validation_score_)
    np.testing.assert_array_equal(model.train_score_, local.train_score_)


@pytest.mark.parametrize("validation", ["fraction", "eval_set"])
def test_huber_early_stopping_on_the_workers(client, small_bin_subsample, validation):
    """Huber's validation losses use each round's delta found across the
    workers: the fit stops at the one-machine round with the same trees and
    scores."""
    model, local, n_estimators = _early_stopping_fits(client, "regressor", validation, 7,
                                                      loss="huber", alpha=0.8)
    _check_early_stopping(model, local, n_estimators)
    np.testing.assert_array_equal(model.validation_score_, local.validation_score_)
    np.testing.assert_array_equal(model.train_score_, local.train_score_)


def _early_stopping_fits(client, estimator, validation, n_partitions, **more):
    """(Dask model, local model, n_estimators) of early-stopped fits (see
    test_early_stopping_on_the_workers; ``more``: other parameters)."""
    X, labels, target, weights = make_frame()
    X_val, labels_val, target_val, weights_val = frames.make_frame(300, 1)
    classify = estimator == "classifier"
    local_class = gputree.GradientBoostingClassifier if classify else \
        gputree.GradientBoostingRegressor
    dask_class = gd.DaskGradientBoostingClassifier if classify else \
        gd.DaskGradientBoostingRegressor
    y, y_val = (labels, labels_val) if classify else (target, target_val)
    params = dict(n_estimators=40, max_depth=3, learning_rate=0.5, early_stopping=True,
                  n_iter_no_change=2, random_state=3, device="cpu",
                  **({"class_weight": "balanced"} if classify else {}), **more)
    fit, dask_fit = {}, {}
    if validation == "eval_set":
        fit = {"eval_set": (X_val, y_val, weights_val)}
        dask_fit = {"eval_set": [(dd.from_pandas(X_val, npartitions=3),
                                  da.from_array(y_val, chunks=70),
                                  da.from_array(weights_val, chunks=110))]}
    local = local_class(**params).fit(X, y, sample_weight=weights, **fit)
    model = dask_class(**params, client=client).fit(
        dask_frame(X, n_partitions), da.from_array(y, chunks=200),
        sample_weight=da.from_array(weights, chunks=130), **dask_fit)
    return model, local, params["n_estimators"]


def _check_early_stopping(model, local, n_estimators):
    assert local.n_iter_ < n_estimators      # it stopped early
    assert model.n_iter_ == local.n_iter_
    assert_same_model(model, local)
    assert len(model.validation_score_) == local.n_iter_ + 1


def _largest_error(y, predicted):
    """An OOB metric given y as fit was given it."""
    return float(np.max(np.abs(np.asarray(y) - predicted)))


#: trees and forests grown by the workers (name -> local class, Dask class,
#: parameters, target: "labels", "target" or a two-output "labels2" /
#: "target2")
ON_WORKERS = {
    "forest-oob-balanced": (gputree.RandomForestClassifier, gd.DaskRandomForestClassifier,
                            dict(n_estimators=4, max_depth=4, oob_score=True,
                                 class_weight="balanced", random_state=3), "labels"),
    "forest-subsample-entropy": (gputree.RandomForestClassifier,
                                 gd.DaskRandomForestClassifier,
                                 dict(n_estimators=3, max_depth=4, criterion="entropy",
                                      max_samples=0.4, class_weight="balanced_subsample",
                                      min_weight_fraction_leaf=0.02, random_state=1),
                                 "labels"),
    "forest-no-bootstrap-best-first": (gputree.RandomForestClassifier,
                                       gd.DaskRandomForestClassifier,
                                       dict(n_estimators=2, max_leaf_nodes=9, bootstrap=False,
                                            max_features=2, random_state=2), "labels"),
    "forest-multi-output-oob": (gputree.RandomForestClassifier, gd.DaskRandomForestClassifier,
                                dict(n_estimators=3, max_depth=3, oob_score=True,
                                     random_state=4), "labels2"),
    "forest-regressor-oob": (gputree.RandomForestRegressor, gd.DaskRandomForestRegressor,
                             dict(n_estimators=4, max_depth=4, max_samples=300,
                                  oob_score=True, random_state=5), "target"),
    "forest-regressor-oob-metric": (gputree.RandomForestRegressor,
                                    gd.DaskRandomForestRegressor,
                                    dict(n_estimators=3, max_depth=3, oob_score=_largest_error,
                                         random_state=9), "target"),
    "forest-poisson-two-outputs": (gputree.RandomForestRegressor,
                                   gd.DaskRandomForestRegressor,
                                   dict(n_estimators=2, max_depth=3, criterion="poisson",
                                        max_features=0.5, random_state=6), "target2"),
    "tree-gini-class-weight": (gputree.DecisionTreeClassifier, gd.DaskDecisionTreeClassifier,
                               dict(max_depth=5, max_features=3, class_weight={0: 2.0},
                                    min_weight_fraction_leaf=0.01, random_state=7), "labels"),
    "tree-random-splitter-soft-limit": (gputree.DecisionTreeClassifier,
                                        gd.DaskDecisionTreeClassifier,
                                        dict(max_depth=5, splitter="random", max_features=2,
                                             random_state=4), "labels"),
    "tree-regressor-two-outputs": (gputree.DecisionTreeRegressor,
                                   gd.DaskDecisionTreeRegressor,
                                   dict(max_depth=4, ccp_alpha=0.01), "target2"),
}


def _targets(kind, labels, target):
    """y of ``kind`` (see ON_WORKERS): the second output differs from the
    first (a shifted copy; Poisson's non-negative)."""
    if kind == "labels2":       # a multilabel indicator (OOB accuracy is defined)
        return np.stack([labels > 0, labels == 2], axis=1).astype(np.int64)
    if kind == "target2":
        return np.stack([np.abs(target), np.abs(target[::-1])], axis=1)
    return labels if kind == "labels" else target


@pytest.mark.filterwarnings("ignore:Some inputs do not have OOB scores")
@pytest.mark.parametrize("n_partitions", [1, 3, 7])
@pytest.mark.parametrize("case", list(ON_WORKERS))
def test_trees_and_forests_on_the_workers(client, small_bin_subsample, monkeypatch, case,
                                          n_partitions):
    """Trees and forests keep their rows on the workers: no answer of the
    workers holds a row-sized array (but the
    OOB values, row-sized by scikit-learn's API, once at the fit's end),
    and the model, its predictions and its OOB attributes are the
    one-machine ones bit for bit, for uneven partitionings, with and
    without weights: bootstraps, max_samples, class weights, two outputs,
    best-first trees, the max_features soft limit, pruning."""
    seen = no_rows_answered(monkeypatch, N_ROWS, allowed=("oob_rows",))
    local_class, dask_class, params, kind = ON_WORKERS[case]
    X, labels, target, weights = make_frame()
    y = _targets(kind, labels, target)
    dX = dask_frame(X, n_partitions)
    dy = da.from_array(y, chunks=(250,) + y.shape[1:])
    for w in (None, weights):
        params = dict(params, device="cpu")
        local = local_class(**params).fit(X, y, sample_weight=w)
        model = dask_class(**params, client=client).fit(dX, dy, sample_weight=w)
        assert_same_model(model, local)
        for method in ("predict", "predict_proba"):
            if hasattr(local, method) and y.ndim == 1:
                np.testing.assert_array_equal(getattr(model, method)(dX).compute().to_numpy(),
                                              getattr(local, method)(X))
        np.testing.assert_array_equal(model.predict(X), local.predict(X))
        for name in ("oob_score_", "oob_decision_function_", "oob_prediction_",
                     "classes_", "n_classes_", "n_outputs_", "max_features_"):
            if hasattr(local, name):
                expected = getattr(local, name)
                for a, b in zip(*(np.atleast_1d(v) if not isinstance(v, list) else v
                                  for v in (getattr(model, name), expected))):
                    np.testing.assert_array_equal(a, b, err_msg=name)
            else:
                assert not hasattr(model, name), name
    assert seen           # the workers did the work


def test_forest_warm_start_on_the_workers(client, small_bin_subsample):
    """A warm-started Dask forest (the kept trees' OOB sums recomputed on the
    workers from their bootstraps) is the one-machine warm-started forest,
    which is the forest of one fit."""
    X, labels, _, weights = make_frame()
    params = dict(max_depth=4, oob_score=True, warm_start=True, random_state=8, device="cpu")
    dX, dy = dask_frame(X, 3), da.from_array(labels, chunks=200)
    local = gputree.RandomForestClassifier(n_estimators=2, **params).fit(X, labels, weights)
    model = gd.DaskRandomForestClassifier(n_estimators=2, **params, client=client)
    model.fit(dX, dy, sample_weight=weights)
    local.set_params(n_estimators=5).fit(X, labels, weights)
    model.set_params(n_estimators=5).fit(dX, dy, sample_weight=weights)
    assert_same_model(model, local)
    assert model.oob_score_ == local.oob_score_
    np.testing.assert_array_equal(model.oob_decision_function_, local.oob_decision_function_)
    once = gputree.RandomForestClassifier(n_estimators=5, **params).fit(X, labels, weights)
    assert_same_model(model, once)


@pytest.mark.parametrize("n_partitions", [2, 7])
@pytest.mark.parametrize("estimator", ["classifier", "regressor"])
def test_warm_start_on_the_workers(client, small_bin_subsample, monkeypatch, estimator,
                                   n_partitions):
    """A warm-started Dask fit (its raw scores recomputed from the fitted
    trees on the workers) grows the one-machine warm-started model, which is
    the model of one fit of the final n_estimators; with weights, a row
    subsample (draws per round index) and, for the classifier, three
    classes and validation rows on the workers. Two rounds a call: rounds
    0-1, then 2-3 (the first continuing a fit whose last training score is
    known) and 4, each round's scores as one machine's."""
    monkeypatch.setattr(gd.worker_boosting, "ROUNDS_PER_CALL", 2)
    rounds_calls, call = [], gd.worker_boosting.WorkerRowsBackend.call

    def counted(self, method, *args, **kwargs):
        if method == "boost_rounds":
            rounds_calls.append(args[1])          # the rounds the call runs
        return call(self, method, *args, **kwargs)
    monkeypatch.setattr(gd.worker_boosting.WorkerRowsBackend, "call", counted)
    X, labels, target, weights = make_frame()
    classify = estimator == "classifier"
    local_class = gputree.GradientBoostingClassifier if classify else \
        gputree.GradientBoostingRegressor
    dask_class = gd.DaskGradientBoostingClassifier if classify else \
        gd.DaskGradientBoostingRegressor
    y = labels if classify else target
    params = dict(max_depth=3, subsample=0.7, random_state=5, device="cpu", warm_start=True,
                  early_stopping=False)
    fit = {}
    if classify:
        X_val, labels_val, _, weights_val = frames.make_frame(300, 1)
        fit = {"eval_set": (X_val, labels_val, weights_val)}
    dask_fit = {k: (dd.from_pandas(v[0], npartitions=2), da.from_array(v[1], chunks=70),
                    da.from_array(v[2], chunks=110)) for k, v in fit.items()}
    local = local_class(n_estimators=2, **params).fit(X, y, sample_weight=weights, **fit)
    model = dask_class(n_estimators=2, **params, client=client)
    dX, dy = dask_frame(X, n_partitions), da.from_array(y, chunks=200)
    dw = da.from_array(weights, chunks=130)
    model.fit(dX, dy, sample_weight=dw, **dask_fit)
    local.set_params(n_estimators=5).fit(X, y, sample_weight=weights, **fit)
    model.set_params(n_estimators=5).fit(dX, dy, sample_weight=dw, **dask_fit)
    assert model.n_iter_ == local.n_iter_ == 5
    assert rounds_calls == [2, 2, 1]
    assert_same_model(model, local)
    np.testing.assert_array_equal(model.train_score_, local.train_score_)
    np.testing.assert_array_equal(model.validation_score_, local.validation_score_)
    once = local_class(n_estimators=5, **params).fit(X, y, sample_weight=weights, **fit)
    assert_same_model(model, once)
    with pytest.raises(ValueError, match="n_estimators=4 must be larger or equal"):
        model.set_params(n_estimators=4).fit(dX, dy, sample_weight=dw)
    assert model.n_iter_ == 5       # the refused fit left the model as it was


@pytest.mark.parametrize("n_partitions", [2, 7])
@pytest.mark.parametrize("loss", [dict(loss="absolute_error"), dict(loss="quantile", alpha=0.8),
                                  dict(loss="huber", alpha=0.7)],
                         ids=["absolute_error", "quantile", "huber"])
def test_refit_losses_on_the_workers(client, small_bin_subsample, monkeypatch, loss,
                                     n_partitions):
    """Absolute-error and quantile leaves refit to weighted quantiles of the
    residuals found exactly across the workers (and the baseline from the
    targets); Huber's too (the lower median), its delta each round the
    weighted quantile of |y - raw| across the workers and its mean steps from
    the workers' summed int64 fixed-point sums: the one-machine model bit for
    bit, with weights and a row subsample, no answer of the workers holding
    a row-sized array (the Dask trees' and forests' refusal of
    criterion="absolute_error" names these losses)."""
    refuse_driver_path(monkeypatch, N_ROWS)
    X, _, target, weights = make_frame()
    params = dict(n_estimators=3, max_depth=3, subsample=0.8, random_state=2, device="cpu",
                  early_stopping=False, **loss)
    for w in (weights, None):
        local = gputree.GradientBoostingRegressor(**params).fit(X, target, sample_weight=w)
        model = gd.DaskGradientBoostingRegressor(**params, client=client).fit(
            dask_frame(X, n_partitions), da.from_array(target, chunks=200),
            sample_weight=None if w is None else da.from_array(w, chunks=130))
        assert_same_model(model, local)
        np.testing.assert_array_equal(model._baseline, local._baseline)
        np.testing.assert_array_equal(model.train_score_, local.train_score_)


def _refuse_work(monkeypatch):
    """Fail anything that sends work or data to the cluster."""
    def refused(*args, **kwargs):
        raise AssertionError("work was sent to the workers")

    for name in ("submit", "map", "compute", "scatter", "gather", "run_on_scheduler",
                 "who_has"):
        monkeypatch.setattr(Client, name, refused)


@pytest.mark.parametrize("dask_class, local_class",
                         [(gd.DaskDecisionTreeRegressor, gputree.DecisionTreeRegressor),
                          (gd.DaskRandomForestRegressor, gputree.RandomForestRegressor)])
def test_absolute_error_refused_before_any_work(client, monkeypatch, dask_class, local_class):
    """criterion="absolute_error" (an exact split search over a node's rows:
    all of X on the driver) is refused on the driver before anything is sent
    to the workers, the error naming the argument and the fixes."""
    X, _, target, _ = make_frame()
    dX, dy = dask_frame(X, 2), da.from_array(target, chunks=200)
    _refuse_work(monkeypatch)
    model = dask_class(criterion="absolute_error", client=client)
    with pytest.raises(ValueError) as refusal:
        model.fit(dX, dy)
    message = str(refusal.value)
    for part in ('criterion="absolute_error"', 'criterion="squared_error"',
                 'DaskGradientBoostingRegressor(loss="absolute_error")', 'loss="quantile"',
                 f'gputree.{local_class.__name__}(criterion="absolute_error")'):
        assert part in message, part
    assert not hasattr(model, "_trees") and not hasattr(model, "tree_")


def test_absolute_error_refused_on_a_warm_start(client, small_bin_subsample, monkeypatch):
    """A fitted forest warm-started (or refitted) with
    criterion="absolute_error" is refused before any work, and stays the
    forest it was."""
    X, _, target, _ = make_frame()
    dX, dy = dask_frame(X, 2), da.from_array(target, chunks=200)
    model = gd.DaskRandomForestRegressor(n_estimators=2, max_depth=3, warm_start=True,
                                         random_state=0, device="cpu", client=client)
    model.fit(dX, dy)
    trees, before = list(model._trees), model.predict(X)
    _refuse_work(monkeypatch)
    for warm in (True, False):
        model.set_params(criterion="absolute_error", n_estimators=3, warm_start=warm)
        with pytest.raises(ValueError, match='does not take criterion="absolute_error"'):
            model.fit(dX, dy)
        assert len(model._trees) == 2 and all(a is b for a, b in zip(model._trees, trees))
        np.testing.assert_array_equal(model.predict(X), before)


def test_remote_rows_are_never_made_host_arrays():
    """Binned X held by the workers refuses to become a driver array."""
    rows = partitions.RemoteRows(None, [], (10, 3), np.uint8)
    with pytest.raises(TypeError, match="never gathered to the driver"):
        np.asarray(rows)


def test_same_model_with_16_bit_bin_codes(client):
    """max_bins above 255: the workers' binned partitions hold uint16 codes."""
    model, local, X, dX = fit_pair("tree-wide-bins", client, 3, as_array=True)
    assert local._bin_mapper.n_bins_ > 256
    assert_same_model(model, local)
    np.testing.assert_array_equal(model.predict(dX).compute(), local.predict(X))


def test_to_local_is_the_ordinary_estimator(client):
    model, local, X, _ = fit_pair("boosting-regression", client, 2, weighted=False)
    plain = model.to_local()
    assert type(plain) is gputree.GradientBoostingRegressor
    assert "client" not in plain.get_params()
    assert_same_model(plain, local)
    np.testing.assert_array_equal(plain.predict(X), local.predict(X))


def test_unknown_chunk_sizes(client):
    """A dask array whose partition sizes are unknown (from a dataframe) is
    fitted: the sizes are computed on the workers."""
    X, labels, _, _ = make_frame()
    X = X.drop(columns="colour")
    dX = dask_frame(X, 3).to_dask_array()
    assert np.isnan(dX.shape[0])
    params = dict(n_estimators=2, max_depth=3, device="cpu", early_stopping=False)
    model = gd.DaskGradientBoostingClassifier(**params, client=client).fit(dX, labels)
    local = gputree.GradientBoostingClassifier(**params).fit(X, labels)
    assert_same_model(model, local)
    np.testing.assert_array_equal(model.predict(dX).compute(), local.predict(X))


def test_clear_errors(client):
    X, labels, _, _ = make_frame()
    dX = dask_frame(X, 2)
    with pytest.raises(ValueError, match="scoring='loss'"):
        gd.DaskGradientBoostingClassifier(early_stopping=True, scoring="accuracy",
                                          client=client).fit(dX, labels)
    with pytest.raises(ValueError, match="y has 10 rows but X has 600"):
        gd.DaskRandomForestClassifier(client=client).fit(dX, labels[:10])
    unknown = dX.assign(colour=dX["colour"].cat.as_unknown())
    with pytest.raises(ValueError, match="categorize"):
        gd.DaskRandomForestClassifier(client=client).fit(unknown, labels)
    with pytest.raises(TypeError, match="dask.array or a dask.dataframe"):
        gd.DaskRandomForestClassifier(client=client).fit(X, labels)


def test_worker_check_asks_the_scheduler(client, small_bin_subsample, monkeypatch):
    """The check for lost workers asks the scheduler itself: the client's
    cached identity, which the client's periodic refresh replaces with one
    listing no workers (a race seen once in CI), says here from its second
    call on that no worker is left, and the fit still ends with the local
    model."""
    real = type(client).scheduler_info
    calls = []

    def cached(self, *args, **kwargs):
        calls.append(1)
        info = real(self, *args, **kwargs)
        return info if len(calls) == 1 else dict(info, workers={})

    monkeypatch.setattr(type(client), "scheduler_info", cached)
    model, local, _, _ = fit_pair("forest-classifier", client, 2)
    assert_same_model(model, local)


def _kill_at(client, monkeypatch, kill, at, victim, method="boost_rounds"):
    """Make the method ``kill`` (module, class, name) SIGKILL the worker
    ``victim`` (an index into the sorted workers) when its ``at``-th call
    starts (of WorkerRowsBackend.call, the calls of the actors' ``method``),
    once. The nanny starts a new worker in its place."""
    owner, name = _owner(*kill[:2]), kill[2]
    method = kill[3] if len(kill) > 3 else method
    calls, real = [], getattr(owner, name)

    def call_then_kill(self, *args, **kwargs):
        if name != "call" or args[0] == method:
            calls.append(1)
            if len(calls) == at:
                worker = sorted(partitions._cluster_workers(client))[victim]
                os.kill(client.run(os.getpid, workers=[worker])[worker], signal.SIGKILL)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(owner, name, call_then_kill)


def _record_first_argument(monkeypatch, owner, name, begun):
    """Append to ``begun`` the first argument (a tree or round index) of
    every call of ``owner.name`` by a Dask estimator."""
    real = getattr(owner, name)

    def recorded(self, *args, **kwargs):
        if isinstance(self, gd.estimators._DaskEstimator):
            begun.append(args[0])
        return real(self, *args, **kwargs)

    monkeypatch.setattr(owner, name, recorded)


#: case -> (the method whose calls kill, its counted call that kills, the
#: victim, the method whose first argument is the index of a tree or round
#: begun (None: a single tree, grown again), the trees or rounds)
LOSSES = {
    # worker-owned boosting: the last worker (whose histograms the first
    # waits for) killed as the third round's call starts
    "boosting-multiclass": (("worker_boosting", "WorkerRowsBackend", "call"), 3, -1,
                            ("worker_boosting", "WorkerResidentBoosting", "_round"), 3),
    # worker-owned forest: the first worker killed as the second tree's call
    # starts (out-of-bag sums of the kept tree recomputed on the workers)
    "forest-regressor": (("worker_boosting", "WorkerRowsBackend", "call", "grow_trees"), 2, 0,
                         ("worker_forest", "WorkerResidentTrees", "_grow_on_workers"), 3),
    # Friedman's criterion: the first worker killed as the second round's call starts
    "boosting-friedman": (("worker_boosting", "WorkerRowsBackend", "call"), 2, 0,
                          ("worker_boosting", "WorkerResidentBoosting", "_round"), 3),
    # random thresholds drawn from a RandomState (rewound for the new attempt),
    # the first call to the workers killed
    "tree-random-state": (("worker_boosting", "WorkerRowsBackend", "call", "grow_trees"), 1,
                          -1, None, 1),
    # a multiway tree: the first worker killed as the first call starts
    # (the other waiting for its histograms), the tree grown again
    "tree-multiway": (("worker_boosting", "WorkerRowsBackend", "call", "grow_trees"), 1, 0,
                      None, 1),
}


def _owner(module, owner):
    import importlib
    package = "gputree.estimators" if module == "forest" else "gputree.dask"
    return getattr(importlib.import_module(f"{package}.{module}"), owner)


@pytest.mark.filterwarnings("ignore:Some inputs do not have OOB scores")
@pytest.mark.parametrize("case", list(LOSSES))
def test_lost_worker_continues_the_fit(client, small_bin_subsample, monkeypatch, case):
    """A worker killed mid-fit: the fit continues on the workers left (the
    nanny's new one joining), from partitions recomputed from the
    collection's graph and binned with the bins already learned (learned
    once), keeping the trees or rounds finished before the loss (only the
    one under way is grown again; a single tree is grown again), and ends
    with the one-machine model bit for bit: row and column subsamples,
    bootstraps and out-of-bag values drawn by global row index."""
    client.wait_for_workers(2, timeout=60)
    kill, at, victim, progress, n_units = LOSSES[case]
    monkeypatch.setattr(gd.worker_boosting, "ROUNDS_PER_CALL", 1)   # a call a round
    monkeypatch.setattr(gd.worker_forest, "TREES_PER_CALL", 1)      # a call a tree
    _kill_at(client, monkeypatch, kill, at, victim)
    begun, learned, attempts = [], [], []
    real_encoded = gd.estimators.encoded_partitions
    monkeypatch.setattr(gd.estimators, "encoded_partitions",
                        lambda *args: attempts.append(1) or real_encoded(*args))
    if progress is not None:
        _record_first_argument(monkeypatch, _owner(*progress[:2]), progress[2], begun)
    real_learned = gd.inputs._learned_bins
    monkeypatch.setattr(gd.inputs, "_learned_bins",
                        lambda *args: learned.append(1) or real_learned(*args))
    model, local, X, dX = fit_pair(case, client, 3)
    assert_same_model(model, local)
    np.testing.assert_array_equal(model.predict(X), local.predict(X))
    if case == "forest-regressor":
        np.testing.assert_array_equal(model.oob_prediction_, local.oob_prediction_)
    assert len(attempts) >= 2                   # the loss happened mid-fit
    assert len(learned) == 1                    # the bins were not learned again
    if progress is not None:
        assert sorted(set(begun)) == list(range(n_units)), begun
        redone = [i for i in set(begun) if begun.count(i) > 1]
        assert redone and max(redone) == min(redone), begun   # one tree or round redone
        assert redone[0] > 0, begun             # ... after the kept ones


@pytest.mark.parametrize("victim", [0, -1])
def test_lost_worker_keeps_the_rounds_of_the_call(client, small_bin_subsample, monkeypatch,
                                                  victim):
    """A worker killed as it starts round 4 of a single call of 6 rounds
    (nothing decided between rounds): the surviving worker's rounds 0-3 are
    kept (every worker grows the same trees), the continued fit's one call
    runs rounds 4 and 5 only, and the model is the one-machine model bit
    for bit (trees, training scores, predictions). The first worker
    returns the trees of a call; killing either must keep them."""
    client.wait_for_workers(2, timeout=60)
    worker = sorted(partitions._cluster_workers(client))[victim]
    die_at_round(dataclasses.make_dataclass("Victim", ["client", "address"])(client, worker),
                  4)
    calls = []
    real = gd.worker_boosting.WorkerRowsBackend.call

    def recorded(self, method, *args, **kwargs):
        if method == "boost_rounds":
            calls.append(args[:2])             # (first round, rounds)
        return real(self, method, *args, **kwargs)

    monkeypatch.setattr(gd.worker_boosting.WorkerRowsBackend, "call", recorded)
    model, local, X, _ = fit_pair("boosting-multiclass", client, 3, n_estimators=6)
    assert_same_model(model, local)
    np.testing.assert_array_equal(model.predict(X), local.predict(X))
    assert calls == [(0, 6), (4, 2)], calls


@pytest.mark.parametrize("validation, killed_call", [
    ("fraction", "boost_rounds"), ("eval_set", "boost_rounds"), ("fraction", "score_largest")])
def test_early_stopping_after_a_lost_worker(client, small_bin_subsample, monkeypatch,
                                            validation, killed_call):
    """A worker killed as the fourth round starts (or, with verbose output,
    as the training score after the fourth round is computed: that round's
    trees are kept, its scores not yet), in a fit that stops early on
    validation rows on the workers (the validation_fraction split drawn
    again by the workers there are after the loss, or eval_set's rows
    recomputed): the fit keeps the three rounds completed and recorded with
    their training and validation scores, and stops at the one-machine
    round with the same trees and scores."""
    client.wait_for_workers(2, timeout=60)
    # the fifth training score (the first is of the starting raw scores)
    at = 4 if killed_call == "boost_rounds" else 5
    _kill_at(client, monkeypatch, LOSSES["boosting-multiclass"][0], at, -1, killed_call)
    begun = []
    _record_first_argument(monkeypatch, gd.worker_boosting.WorkerResidentBoosting, "_round",
                           begun)
    _check_early_stopping(*_early_stopping_fits(
        client, "classifier", validation, 7, verbose=int(killed_call == "score_largest")))
    assert begun[:5] == [0, 1, 2, 3, 3], begun      # rounds 0-2 kept, round 3 grown again


@pytest.mark.parametrize("case", ["forest-classifier", "boosting-multiclass"])
def test_lost_worker_beyond_the_limit_stops_the_fit(client, small_bin_subsample, monkeypatch,
                                                     case):
    """With no continuation allowed (MAX_LOST_WORKERS = 0), a worker killed
    between two trees (whose workers grow each tree among themselves) stops
    the fit with a clear error and no model, never a model from part of the
    data, never a hang."""
    client.wait_for_workers(2, timeout=60)
    monkeypatch.setattr(gd.recovery, "MAX_LOST_WORKERS", 0)
    monkeypatch.setattr(gd.worker_boosting, "ROUNDS_PER_CALL", 1)
    monkeypatch.setattr(gd.worker_forest, "TREES_PER_CALL", 1)
    kill, at, victim = LOSSES["boosting-multiclass" if case.startswith("boost") else
                              "forest-regressor"][:3]
    _kill_at(client, monkeypatch, kill, at, victim)
    local_class, dask_class, params, _ = CASES[case]
    X, labels, _, _ = make_frame()
    model = dask_class(**params, device="cpu", client=client)
    with pytest.raises(gd.WorkerLostError, match="at most 0 .* no model was fitted"):
        model.fit(dask_frame(X, 3), labels)
    assert not hasattr(model, "_trees")


def test_lost_data_that_cannot_be_recomputed(client, monkeypatch):
    """X made of data scattered to the workers (no graph to compute it
    again): a worker lost mid-fit takes its rows with it, and the fit stops
    with a clear error and no model."""
    client.wait_for_workers(2, timeout=60)
    monkeypatch.setattr(gd.worker_boosting, "ROUNDS_PER_CALL", 1)
    X, labels, _, _ = make_frame()
    X = X.drop(columns="colour").to_numpy()
    workers = sorted(partitions._cluster_workers(client))
    halves = [client.scatter(X[:300], workers=[workers[0]]),
              client.scatter(X[300:], workers=[workers[1]])]
    dX = da.concatenate([da.from_delayed(f, (300, X.shape[1]), X.dtype) for f in halves])
    _kill_at(client, monkeypatch, LOSSES["boosting-multiclass"][0], 2, -1)
    model = gd.DaskGradientBoostingClassifier(n_estimators=3, max_depth=3, device="cpu",
                                              client=client)
    with pytest.raises(gd.WorkerLostError, match="cannot be recomputed"):
        model.fit(dX, labels)
    assert not hasattr(model, "_trees")


def test_parameters_and_missing_dask_message():
    """The Dask classes take the ordinary parameters plus client (clone
    works; boosting's early stopping is off by default); without
    distributed, importing gputree.dask says what to install."""
    import subprocess
    import sys
    from sklearn.base import clone
    model = gd.DaskGradientBoostingClassifier(n_estimators=7, client=None)
    params = model.get_params()
    local_params = gputree.GradientBoostingClassifier().get_params()
    assert set(params) == set(local_params) | {"client"}
    assert params["early_stopping"] is False and params["n_estimators"] == 7
    assert clone(model).get_params() == params
    code = ("import sys; sys.modules['distributed'] = None\n"
            "try:\n    import gputree.dask\nexcept ImportError as e:\n    print(e)")
    root = os.path.dirname(os.path.dirname(gputree.__file__))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=root), timeout=120)
    assert 'pip install "gputree[dask]"' in out.stdout, out.stderr


@pytest.mark.parametrize("n_slices", [1, 2, 3, 5])
def test_sliced_scan_merge_is_the_one_machine_choice(n_slices):
    """The driver's choice among the workers' feature slices equals the
    one-machine reduction over every feature (ties, including all -inf
    nodes, go to the lowest feature) for gains full of ties."""
    from gputree.backends.scan import best_split_per_node, empty_scan_outputs
    from gputree.dask.sliced_histograms import feature_bounds, merge_splits
    rng = np.random.RandomState(n_slices)
    n_nodes, n_features, n_channels = 40, 7, 3
    gain, missing_left, bitset, left, info, words = empty_scan_outputs(
        np, n_nodes, n_features, n_channels, 1000)
    gain[:] = rng.choice([-np.inf, 0.5, 1.0, 2.0], size=gain.shape)
    gain[:3] = -np.inf
    missing_left[:] = rng.randint(0, 2, size=missing_left.shape)
    bitset[:] = rng.randint(0, 2 ** 31, size=bitset.shape)
    left[:] = rng.randint(-9, 9, size=left.shape)
    words[:] = rng.randint(0, 2 ** 31, size=words.shape)
    expected = best_split_per_node(np, gain, missing_left, bitset, left, info, words)
    bounds = feature_bounds(n_features, n_slices)
    assert bounds[0] == 0 and bounds[-1] == n_features and np.all(np.diff(bounds) >= 1)
    parts = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        part = best_split_per_node(np, gain[:, a:b], missing_left[:, a:b], bitset[:, a:b],
                                   left[:, a:b], info[:, a:b], words[:, a:b])
        parts.append((part.gain, part.feature + a, part.bitset, part.missing_left,
                      part.left_sums, part.words))
    merged = merge_splits(parts)
    for name in ("gain", "feature", "bitset", "missing_left", "left_sums", "words"):
        np.testing.assert_array_equal(getattr(merged, name), getattr(expected, name))
