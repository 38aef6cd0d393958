"""What a Dask worker loads: fits (boosting, forests, trees) and the
predictions of their models on the workers load neither gputree's
estimator classes nor scikit-learn
(whose import was most of a fresh worker's start), and the predictions are
the one-machine model's, byte for byte. A fitted model's Predictor (what
the workers get) predicts as its estimator in a process where scikit-learn
cannot be imported, for every kind of model."""
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dask_models import cluster_client, noisy_rows

pytest.importorskip("dask")
pytest.importorskip("distributed")
pytest.importorskip("pandas")

import dask.array as da  # noqa: E402
import dask.dataframe as dd  # noqa: E402
import pandas as pd  # noqa: E402

import gputree  # noqa: E402
import gputree.dask as gd  # noqa: E402

#: modules a worker must not load
HEAVY = ("sklearn", "gputree.estimators.boosting", "gputree.estimators.base",
         "gputree.estimators.forest", "gputree.estimators.tree", "gputree.dask.estimators")


def _heavy_modules():
    """On a worker: the HEAVY modules (and scikit-learn's submodules) it has loaded."""
    return sorted(m for m in sys.modules if m in HEAVY or m.split(".")[0] == "sklearn")


@pytest.fixture(scope="module")
def client():
    """Two fresh worker processes, used by this module only."""
    with cluster_client() as client:
        yield client


def _methods(model):
    return [m for m in ("predict", "predict_proba", "decision_function") if hasattr(model, m)]


def test_fits_and_predictions_load_no_estimator_nor_scikit_learn(client):
    assert client.run(_heavy_modules) == {w: [] for w in client.scheduler_info()["workers"]}, \
        "the workers must start without them for this test to mean anything"
    X, target = noisy_rows(600, 5)
    frame = pd.DataFrame(X, columns=list("abcde"))
    frame["c"] = pd.Categorical(np.where(X[:, 2] > 0, "x", "y"), categories=["x", "y"])
    cases = [(gd.DaskGradientBoostingClassifier, target > 0.4),
             (gd.DaskGradientBoostingClassifier, np.digitize(target, [0.0, 1.0])),
             (gd.DaskGradientBoostingRegressor, target),
             (gd.DaskRandomForestClassifier, np.digitize(target, [0.0, 1.0])),
             (gd.DaskDecisionTreeRegressor, target)]
    for make, y in cases:
        for inputs in (da.from_array(X, chunks=(200, 5)),
                       dd.from_pandas(frame, npartitions=3)):
            params = dict(max_depth=3, device="cpu", client=client)
            if "DecisionTree" not in make.__name__:
                params["n_estimators"] = 4
            model = make(**params)
            model.fit(inputs, da.from_array(y, chunks=200))
            local = model.to_local()
            rows = X if isinstance(inputs, da.Array) else frame
            for method in _methods(model):
                got = np.asarray(getattr(model, method)(inputs).compute())
                expected = getattr(local, method)(rows)
                assert got.dtype == expected.dtype and got.tobytes() == expected.tobytes(), \
                    (make.__name__, method)
    assert client.run(_heavy_modules) == {w: [] for w in client.scheduler_info()["workers"]}


def _fitted_models():
    """Fitted one-machine models of every kind: (name, model, X)."""
    X, target = noisy_rows(300, 5, seed=1)
    classes = np.digitize(target, [0.0, 1.0])
    fast = dict(device="cpu")
    yield "tree classifier", gputree.DecisionTreeClassifier(max_depth=4, **fast).fit(X, classes), X
    yield ("two-output tree regressor",
           gputree.DecisionTreeRegressor(max_depth=4, **fast).fit(X, np.c_[target, -target]), X)
    yield ("tree with surrogates", gputree.DecisionTreeClassifier(
        max_depth=4, missing_strategy="surrogate", **fast).fit(X, classes), X)
    yield ("two-output forest classifier", gputree.RandomForestClassifier(
        n_estimators=3, max_depth=3, random_state=0, **fast).fit(X, np.c_[classes, target > 0]),
        X)
    yield "forest regressor", gputree.RandomForestRegressor(
        n_estimators=3, max_depth=3, random_state=0, **fast).fit(X, target), X
    yield "binary boosting", gputree.GradientBoostingClassifier(
        n_estimators=3, max_depth=3, **fast).fit(X, target > 0.4), X
    yield "softmax boosting", gputree.GradientBoostingClassifier(
        n_estimators=3, max_depth=3, **fast).fit(X, classes), X
    yield "poisson boosting", gputree.GradientBoostingRegressor(
        loss="poisson", n_estimators=3, max_depth=3, **fast).fit(X, np.exp(target / 3)), X
    yield "ranker", gputree.GradientBoostingRanker(
        n_estimators=3, max_depth=3, **fast).fit(X, classes, group=[100, 100, 100]), X


#: in a process where scikit-learn cannot be imported: each pickled
#: (predictor, method, X) case's answer, pickled to stdout
_PREDICT_WITHOUT_SKLEARN = """
import pickle, sys
sys.modules["sklearn"] = None
from gputree.backends import get_backend
cases = pickle.load(sys.stdin.buffer)
answers = [predictor(get_backend("cpu"), method, X) for predictor, method, X in cases]
assert not [m for m in sys.modules if m.startswith("gputree.estimators.")
            and m.split(".")[2] in ("base", "tree", "forest", "boosting", "ranking")]
sys.stdout.buffer.write(pickle.dumps(answers))
"""


def test_a_predictor_predicts_as_its_estimator_without_scikit_learn():
    cases, expected = [], []
    for name, model, X in _fitted_models():
        for method in _methods(model):
            cases.append((model._predictor(), method, X))
            expected.append((name, method, getattr(model, method)(X)))
    result = subprocess.run([sys.executable, "-c", _PREDICT_WITHOUT_SKLEARN],
                            input=pickle.dumps(cases), capture_output=True,
                            cwd=Path(__file__).parents[1], timeout=300)
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    answers = pickle.loads(result.stdout)
    for (name, method, want), got in zip(expected, answers):
        for w, g in zip(want if isinstance(want, list) else [want],
                        got if isinstance(got, list) else [got]):
            assert g.dtype == w.dtype and g.tobytes() == w.tobytes(), (name, method)
