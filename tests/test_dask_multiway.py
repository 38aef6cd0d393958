"""Multiway (ID3 / C4.5) Dask trees grown by the workers among themselves
(gputree.growth.multiway over gputree.dask.peer_growth: every level's
histograms summed among the workers, the rows moved on the workers): the
model is the one-machine ``DecisionTreeClassifier(multiway=True)`` bit for
bit (every TreeArrays field, the predictions' bytes), with categorical
features of few and many categories, numerical features, missing values,
sample weights and uneven partitionings, for 2 worker processes and 3
in-process workers; no answer of the workers holds a row-sized array."""
import numpy as np
import pytest

from dask_models import assert_same_model, cluster_client, refuse_driver_path, sample_bins_from

pytest.importorskip("dask")
pytest.importorskip("distributed")
pd = pytest.importorskip("pandas")

import dask.array as da  # noqa: E402
import dask.dataframe as dd  # noqa: E402

import gputree  # noqa: E402
import gputree.dask as gd  # noqa: E402

N_ROWS = 600
#: row counts of the partitions of each partitioning (uneven, one of 1 row)
PARTITIONINGS = {1: [N_ROWS], 2: [450, 150], 3: [1, 299, 300]}
#: the growth parameters of the fits (max_depth, min_samples_leaf)
PARAMS = {"depth": dict(max_depth=3), "leaf": dict(min_samples_leaf=15)}


@pytest.fixture(scope="module")
def client():
    with cluster_client() as client:
        yield client


@pytest.fixture
def small_bin_subsample(monkeypatch):
    sample_bins_from(monkeypatch, 250)


@pytest.fixture
def on_the_workers(monkeypatch):
    """Rows refused on the driver (:func:`refuse_driver_path`); the
    per-call row counts of the workers' answers."""
    return refuse_driver_path(monkeypatch, N_ROWS)


def multiway_frame(seed=0):
    """(pandas X: numerical a, b with NaNs; categorical 'shape' (3
    categories), 'city' (9) and 'code' (25, ID-like), each with NaNs;
    labels in 0..2 that depend on shape, city and a; weights with zeros)."""
    rng = np.random.RandomState(seed)
    X = pd.DataFrame(rng.normal(size=(N_ROWS, 2)), columns=["a", "b"])
    X.loc[rng.rand(N_ROWS) < 0.1, "a"] = np.nan
    for name, n_categories in (("shape", 3), ("city", 9), ("code", 25)):
        codes = rng.randint(n_categories, size=N_ROWS)
        values = np.array([f"{name}{c}" for c in codes], dtype=object)
        values[rng.rand(N_ROWS) < 0.08] = None
        X[name] = pd.Categorical(values, categories=[f"{name}{c}" for c in range(n_categories)])
    shape = X["shape"].cat.codes.to_numpy()
    city = X["city"].cat.codes.to_numpy()
    score = (shape == 1) + 0.8 * (city % 3 == 0) - 0.6 * (city == 4) + 0.5 * np.nan_to_num(X["a"])
    labels = np.digitize(score + 0.4 * rng.normal(size=N_ROWS), [0.2, 0.9])
    weights = rng.rand(N_ROWS) * (rng.rand(N_ROWS) > 0.1)
    return X, labels, weights


def dask_frame(X, n_partitions):
    bounds = np.concatenate([[0], np.cumsum(PARTITIONINGS[n_partitions])])
    divisions = [int(b) for b in bounds[:-1]] + [N_ROWS - 1]
    return dd.from_pandas(X, npartitions=1).repartition(divisions=divisions)


def check_fits(client, criterion, n_partitions, params):
    """The Dask multiway tree of ``params`` against the one-machine one,
    with and without weights: same model, same predictions' bytes."""
    X, labels, weights = multiway_frame()
    dX, dy = dask_frame(X, n_partitions), da.from_array(labels, chunks=200)
    params = dict(params, criterion=criterion, multiway=True, random_state=0, device="cpu")
    for w in (None, weights):
        local = gputree.DecisionTreeClassifier(**params).fit(X, labels, sample_weight=w)
        assert local.tree_.arrays.is_multiway      # the data exercise multiway splits
        model = gd.DaskDecisionTreeClassifier(**params, client=client)
        model.fit(dX, dy, sample_weight=w)
        assert_same_model(model, local)
        for method in ("predict_proba", "predict"):
            expected = getattr(local, method)(X)
            for got in (getattr(model, method)(X),
                        getattr(model, method)(dX).compute().to_numpy()):
                assert got.dtype == expected.dtype
                assert got.tobytes() == expected.tobytes(), method


@pytest.mark.parametrize("params", list(PARAMS))
@pytest.mark.parametrize("n_partitions", [1, 2, 3])
@pytest.mark.parametrize("criterion", ["entropy", "gain_ratio"])
def test_multiway_tree_on_the_workers(client, small_bin_subsample, on_the_workers, criterion,
                                      n_partitions, params):
    check_fits(client, criterion, n_partitions, PARAMS[params])
    assert on_the_workers          # the workers grew the trees


def test_three_workers(small_bin_subsample, on_the_workers):
    """Three in-process workers, each adding two peers' histograms."""
    with cluster_client(3, processes=False) as three:
        for criterion in ("entropy", "gain_ratio"):
            check_fits(three, criterion, 3, PARAMS["depth"])
    assert {len(held) for held in on_the_workers} == {3}


def test_unsupported_options_are_refused_before_the_workers_grow(client):
    X, labels, _ = multiway_frame()
    model = gd.DaskDecisionTreeClassifier(criterion="gini", multiway=True, client=client)
    with pytest.raises(ValueError, match="criterion='entropy'"):
        model.fit(dask_frame(X, 2), da.from_array(labels, chunks=200))
