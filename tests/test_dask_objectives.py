"""Dask boosting with a custom objective (``loss=callable``) and with
Friedman's criterion (``criterion="friedman_mse"``) on the workers' path:
each worker calls the callable on its own rows, the workers add up
Friedman's per-leaf int64 sums among themselves, y and the weights are never
gathered to the driver, and the model is the one-machine model bit for bit
(every array of every tree, the bins, the training scores, the predictions)
for uneven partitionings of the same rows, with sample weights and row
subsamples. A callable with a wrong output gives the one-machine error."""
import numpy as np
import pytest

import frames
from dask_models import (assert_same_model, cluster_client, logistic, refuse_driver_path,
                         softmax, squared_error)

pytest.importorskip("dask")
pytest.importorskip("distributed")
pytest.importorskip("pandas")

import dask.array as da  # noqa: E402
import dask.dataframe as dd  # noqa: E402

import gputree  # noqa: E402
import gputree.dask as gd  # noqa: E402

N_ROWS = 400
#: row counts of the partitions of each partitioning (uneven, one of 1 row)
PARTITIONINGS = {1: [N_ROWS], 2: [300, 100], 3: [1, 199, 200]}


@pytest.fixture(scope="module")
def client():
    with cluster_client() as client:
        yield client


@pytest.fixture
def rows_on_workers(monkeypatch):
    """Fail a fit whose rows reach the driver (no answer of the workers'
    actors holds a row-sized array: :func:`refuse_driver_path`); yields the
    per-worker row counts the actors' calls saw."""
    seen = refuse_driver_path(monkeypatch, N_ROWS)
    yield seen
    assert seen         # the fit ran on the workers' actors


def wrong_shape(y_true, raw):
    return np.zeros(raw.shape[0] + 1), np.ones(raw.shape[0] + 1)


def not_finite(y_true, raw):
    return raw - y_true, np.full_like(raw, np.nan)


def not_a_pair(y_true, raw):
    return raw - y_true


def _fit_both(local_class, dask_class, params, y, n_partitions, weighted):
    X, _, _, weights = frames.make_frame(N_ROWS, 0)
    w = weights if weighted else None
    params = dict(params, device="cpu", early_stopping=False)
    local = local_class(**params).fit(X, y, sample_weight=w)
    bounds = np.concatenate([[0], np.cumsum(PARTITIONINGS[n_partitions])])
    dX = dd.from_pandas(X, npartitions=1).repartition(
        divisions=[int(b) for b in bounds[:-1]] + [N_ROWS - 1])
    model = dask_class(**params).fit(dX, da.from_array(y, chunks=150), sample_weight=w)
    assert_same_model(model, local)
    for method in ("predict", "decision_function", "predict_proba"):
        if hasattr(local, method):
            np.testing.assert_array_equal(getattr(model, method)(X), getattr(local, method)(X))
    return model, local


def _targets(kind):
    _, labels, target, _ = frames.make_frame(N_ROWS, 0)
    return {"labels": labels, "binary": (labels > 0).astype(int), "target": target}[kind]


REGRESSOR = (gputree.GradientBoostingRegressor, gd.DaskGradientBoostingRegressor)
CLASSIFIER = (gputree.GradientBoostingClassifier, gd.DaskGradientBoostingClassifier)
CASES = {
    "custom-squared-error": (REGRESSOR, dict(loss=squared_error), "target"),
    "custom-logistic": (CLASSIFIER, dict(loss=logistic), "binary"),
    "custom-softmax": (CLASSIFIER, dict(loss=softmax), "labels"),
    "friedman-regression": (REGRESSOR, dict(criterion="friedman_mse", reg_lambda=0.5),
                            "target"),
    "friedman-multiclass": (CLASSIFIER, dict(criterion="friedman_mse"), "labels"),
    "friedman-multi-output": (CLASSIFIER, dict(criterion="friedman_mse", reg_alpha=0.1,
                                               multi_strategy="multi_output_tree"), "labels"),
    # Friedman's leaves, then Huber's refit (its delta a quantile of the round)
    "friedman-huber": (REGRESSOR, dict(criterion="friedman_mse", loss="huber"), "target"),
    "custom-friedman": (CLASSIFIER, dict(loss=logistic, criterion="friedman_mse"), "binary"),
}


@pytest.mark.parametrize("n_partitions", [1, 2, 3])
@pytest.mark.parametrize("case", list(CASES))
def test_same_model_on_the_workers(client, rows_on_workers, case, n_partitions):
    """The one-machine model bit for bit, the rows on the workers, with
    sample weights and a row subsample (and without either, on 2
    partitions: unit weights, g and h unweighted)."""
    (local_class, dask_class), params, target = CASES[case]
    params = dict(params, n_estimators=3, max_depth=3, subsample=0.7, random_state=n_partitions)
    _fit_both(local_class, dask_class, params, _targets(target), n_partitions, weighted=True)
    if n_partitions == 2:
        _fit_both(local_class, dask_class, dict(params, subsample=1.0), _targets(target), 2,
                  weighted=False)


def test_custom_objective_is_called_on_the_workers(client, rows_on_workers):
    """The callable runs where the rows are: never on the driver, on each
    worker's rows (fewer than all), to the one-machine model."""
    def squared_error_on_workers(y_true, raw):
        from distributed import get_worker
        get_worker()        # raises ValueError on the driver
        if raw.shape[0] >= N_ROWS:
            raise AssertionError(f"the callable got {raw.shape[0]} rows: all of them")
        return squared_error(y_true, raw)

    X, _, target, _ = frames.make_frame(N_ROWS, 0)
    params = dict(n_estimators=2, max_depth=2, device="cpu", early_stopping=False)
    local = gputree.GradientBoostingRegressor(loss=squared_error, **params).fit(X, target)
    model = gd.DaskGradientBoostingRegressor(loss=squared_error_on_workers, **params).fit(
        dd.from_pandas(X, npartitions=2), target)
    assert_same_model(model, local)


def test_not_rowwise_objective_is_per_partition(client):
    """A callable that is not row-wise (each row's gradient centred on the
    mean of the rows it is given) sees each worker's rows: the one-machine
    model where one worker holds every row, another model where two
    workers hold them (as documented)."""
    def centred(y_true, raw):
        g = raw - y_true
        return g - g.mean(), np.ones_like(raw)

    params = dict(loss=centred, n_estimators=2, max_depth=3, random_state=0)
    y = _targets("target")
    _fit_both(*REGRESSOR, params, y, 1, weighted=False)
    with pytest.raises(AssertionError):
        _fit_both(*REGRESSOR, params, y, 2, weighted=False)


@pytest.mark.parametrize("case", ["custom-softmax", "friedman-multiclass"])
def test_warm_start_on_the_workers(client, rows_on_workers, case):
    """warm_start continues a fit on the workers (raw scores recomputed from
    the fitted trees there): the model of one fit of the final rounds."""
    (local_class, dask_class), params, target = CASES[case]
    X, _, _, weights = frames.make_frame(N_ROWS, 0)
    y = _targets(target)
    params = dict(params, max_depth=3, subsample=0.7, random_state=1, device="cpu",
                  early_stopping=False)
    once = local_class(n_estimators=4, **params).fit(X, y, sample_weight=weights)
    model = dask_class(n_estimators=2, warm_start=True, **params)
    dX = dd.from_pandas(X, npartitions=3)
    model.fit(dX, y, sample_weight=weights)
    model.set_params(n_estimators=4).fit(dX, y, sample_weight=weights)
    assert model.n_iter_ == 4
    assert_same_model(model, once)
    np.testing.assert_array_equal(model.predict_proba(X), once.predict_proba(X))


@pytest.mark.parametrize("objective, message", [
    (wrong_shape, r"The custom objective returned grad of shape \(\d+,\); it must have the "
                  r"raw scores' shape"),
    (not_finite, "The custom objective returned non-finite hess values"),
    (not_a_pair, r"must return a pair \(grad, hess\)")], ids=["shape", "finite", "pair"])
def test_bad_output_of_the_callable(client, objective, message):
    """The one-machine checks of the callable's output, raised from the
    worker to the user."""
    X, _, target, _ = frames.make_frame(N_ROWS, 0)
    dX = dd.from_pandas(X, npartitions=2)
    with pytest.raises(ValueError, match=message):
        gd.DaskGradientBoostingRegressor(loss=objective, n_estimators=2, device="cpu",
                                         early_stopping=False).fit(dX, target)


def test_eval_metric_still_refused_when_validating(client):
    X, _, target, _ = frames.make_frame(N_ROWS, 0)
    with pytest.raises(ValueError, match="eval_metric=None"):
        gd.DaskGradientBoostingRegressor(
            loss=squared_error, eval_metric=lambda y, p, w: 0.0, early_stopping=True,
            device="cpu").fit(dd.from_pandas(X, npartitions=2), target)
