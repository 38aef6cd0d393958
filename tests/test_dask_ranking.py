"""gputree.dask.DaskGradientBoostingRanker on a real LocalCluster of 2 worker
processes: the model is the one-machine GradientBoostingRanker's bit for bit
(every array of every tree, the bins, train_score_, the predictions) with
the queries as qid or group, for uneven partitionings (queries of various
sizes, a one-row query, tied labels), per-query weights, a query subsample,
both losses; bad queries give clear errors naming the fix."""
import dataclasses

import numpy as np
import pytest

pytest.importorskip("dask")
pytest.importorskip("distributed")
pd = pytest.importorskip("pandas")

import dask.array as da  # noqa: E402
import dask.dataframe as dd  # noqa: E402
from distributed import Client, LocalCluster  # noqa: E402

import gputree  # noqa: E402
import gputree.dask as gd  # noqa: E402
from dask_models import assert_same_model, die_at_round  # noqa: E402
from gputree.dask import partitions  # noqa: E402


@pytest.fixture(scope="module")
def client():
    """Two worker processes (a killed one is restarted by its nanny)."""
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        yield client


def ranking_data(seed=0, largest=14):
    """(X float64 (n, 5) with NaNs, labels 0..4 (many ties) from the first
    feature and noise, query sizes
    1..14 (query 3 has one row, query 5 two rows of one label), qid:
    unsorted ids, each query's rows consecutive)."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, largest + 1, 70)
    sizes[3], sizes[5] = 1, 2
    n = int(sizes.sum())
    X = rng.normal(size=(n, 5))
    X[rng.random((n, 5)) < 0.05] = np.nan
    signal = 1.5 * np.nan_to_num(X[:, 0]) + 2 + 0.8 * rng.normal(size=n)
    y = np.clip(signal, 0, 4).astype(np.int64)
    starts = np.concatenate([[0], np.cumsum(sizes)])
    y[starts[5]:starts[6]] = 2
    qid = np.repeat(rng.permutation(1000)[:sizes.size], sizes)
    return X, y, sizes, qid


def cuts_of(sizes, n_partitions):
    """Partition row counts for ``n_partitions`` uneven partitions whose
    bounds fall between queries (the first one 1 query long)."""
    starts = np.concatenate([[0], np.cumsum(sizes)])
    bounds = {1: [], 2: [40], 3: [1, 50]}[n_partitions]
    edges = [0] + [int(starts[b]) for b in bounds] + [int(starts[-1])]
    return tuple(np.diff(edges))


def dask_inputs(X, y, qid, cuts, frame=False):
    if frame:
        divisions = list(np.concatenate([[0], np.cumsum(cuts)[:-1]])) + [X.shape[0] - 1]
        df = pd.DataFrame(X, columns=[f"f{k}" for k in range(X.shape[1])])
        df["y"], df["qid"] = y, qid
        df = dd.from_pandas(df, npartitions=1).repartition(divisions=[int(d) for d in divisions])
        return df[[f"f{k}" for k in range(X.shape[1])]], df["y"], df["qid"]
    return (da.from_array(X, chunks=(cuts, 3)), da.from_array(y, chunks=(cuts,)),
            da.from_array(qid, chunks=(cuts,)))


CASES = {
    "qid-1-lambdarank": ("qid", 1, dict(), False, False),
    "qid-2-weighted-subsample": ("qid", 2, dict(subsample=0.6), True, False),
    "qid-3-pairwise-frame": ("qid", 3, dict(loss="rank:pairwise"), True, True),
    "group-2-pairwise-subsample": ("group", 2, dict(loss="rank:pairwise", subsample=0.7),
                                   False, False),
    "group-3-weighted-extra": ("group", 3, dict(colsample_bytree=0.6, lambdarank_norm=False,
                                                eval_at=3), True, True),
}


@pytest.mark.parametrize("case", list(CASES))
def test_same_model_as_one_machine(client, case):
    queries, n_partitions, changes, weighted, frame = CASES[case]
    X, y, sizes, qid = ranking_data()
    w = np.random.default_rng(1).uniform(0.2, 3.0, sizes.size) if weighted else None
    params = dict(n_estimators=6, max_depth=3, min_samples_leaf=3, random_state=7,
                  early_stopping=False, device="cpu", **changes)
    local = gputree.GradientBoostingRanker(**params).fit(X, y, qid=qid, sample_weight=w)
    dX, dy, dqid = dask_inputs(X, y, qid, cuts_of(sizes, n_partitions), frame)
    given = dict(qid=dqid) if queries == "qid" else dict(group=sizes)
    model = gd.DaskGradientBoostingRanker(**params, client=client).fit(dX, dy, sample_weight=w,
                                                                        **given)
    assert_same_model(model, local)
    assert np.isfinite(local.train_score_).all() and local.train_score_[-1] > 0.5
    expected = local.predict(X)
    assert model.predict(X).tobytes() == expected.tobytes()
    on_workers = model.predict(dX)
    assert type(on_workers).__module__.startswith("dask")
    assert np.asarray(on_workers.compute()).tobytes() == expected.tobytes()
    assert model.score(X, y, qid=qid) == local.score(X, y, qid=qid)
    assert type(model.to_local()) is gputree.GradientBoostingRanker


def test_warm_start_continues_the_fit(client):
    X, y, sizes, qid = ranking_data(2)
    params = dict(max_depth=3, random_state=1, early_stopping=False, device="cpu")
    local = gputree.GradientBoostingRanker(n_estimators=5, **params).fit(X, y, group=sizes)
    dX, dy, _ = dask_inputs(X, y, qid, cuts_of(sizes, 2))
    model = gd.DaskGradientBoostingRanker(n_estimators=2, warm_start=True, client=client,
                                          **params).fit(dX, dy, group=sizes)
    model.set_params(n_estimators=5).fit(dX, dy, group=sizes)
    assert_same_model(model, local)


@pytest.mark.parametrize("queries", ["qid", "group"])
def test_early_stopping_on_an_eval_set(client, queries):
    """eval_set's NDCG (query weights, queries as eval_qid or eval_group,
    in uneven partitions) every round and the stop: the one machine's."""
    X, y, sizes, qid = ranking_data(5)
    Xv, yv, sizes_v, qid_v = ranking_data(6, largest=120)   # sums of 70 NDCGs, not 4000 rows
    wv = np.random.default_rng(7).uniform(0.5, 2.0, sizes_v.size)
    params = dict(n_estimators=40, max_depth=3, early_stopping=True, n_iter_no_change=2,
                  tol=0.0, random_state=3, device="cpu")
    local = gputree.GradientBoostingRanker(**params).fit(X, y, qid=qid, eval_set=[(Xv, yv, wv)],
                                                         eval_qid=[qid_v])
    assert 2 < local.n_iter_ < 40        # it stopped early
    dX, dy, dqid = dask_inputs(X, y, qid, cuts_of(sizes, 2))
    dXv, dyv, dqid_v = dask_inputs(Xv, yv, qid_v, cuts_of(sizes_v, 3), frame=True)
    given = (dict(qid=dqid, eval_qid=dqid_v) if queries == "qid" else
             dict(group=sizes, eval_group=[sizes_v]))
    model = gd.DaskGradientBoostingRanker(**params, client=client).fit(
        dX, dy, eval_set=(dXv, dyv, wv), **given)
    assert_same_model(model, local)
    assert model.n_iter_ == local.n_iter_


@pytest.mark.parametrize("n_partitions", [2, 3])
def test_early_stopping_on_a_validation_split(client, n_partitions):
    """validation_fraction holds out the one machine's whole queries: each
    worker its own, the training queries renumbered for the subsample."""
    X, y, sizes, qid = ranking_data(9, largest=40)
    w = np.random.default_rng(10).uniform(0.5, 2.0, sizes.size)
    params = dict(n_estimators=40, max_depth=3, early_stopping=True, validation_fraction=0.3,
                  n_iter_no_change=2, tol=0.0, subsample=0.7, random_state=5, device="cpu")
    local = gputree.GradientBoostingRanker(**params).fit(X, y, qid=qid, sample_weight=w)
    assert local.n_iter_ < 40
    dX, dy, dqid = dask_inputs(X, y, qid, cuts_of(sizes, n_partitions))
    model = gd.DaskGradientBoostingRanker(**params, client=client).fit(dX, dy, qid=dqid,
                                                                        sample_weight=w)
    assert_same_model(model, local)


def test_early_stopping_on_the_training_ndcg(client):
    X, y, sizes, qid = ranking_data(8)
    params = dict(n_estimators=40, max_depth=4, learning_rate=0.5, early_stopping=True,
                  validation_fraction=None, n_iter_no_change=1, tol=1e-3, subsample=0.8,
                  random_state=4, device="cpu")
    local = gputree.GradientBoostingRanker(**params).fit(X, y, group=sizes)
    assert local.n_iter_ < 40
    dX, dy, dqid = dask_inputs(X, y, qid, cuts_of(sizes, 3))
    model = gd.DaskGradientBoostingRanker(**params, client=client).fit(dX, dy, qid=dqid)
    assert_same_model(model, local)


def _fit(client, X, y, cuts, **fit_params):
    qid = fit_params.pop("qid", None)
    dX, dy, dqid = dask_inputs(X, y, np.zeros(len(y)) if qid is None else qid, cuts)
    params = {k: fit_params.pop(k) for k in list(fit_params) if k in ("early_stopping",
                                                                       "label_gain")}
    model = gd.DaskGradientBoostingRanker(n_estimators=2, client=client, **params)
    return model.fit(dX, dy, qid=None if qid is None else dqid, **fit_params)


def test_clear_errors(client):
    X, y, sizes, qid = ranking_data()
    n = len(y)
    straddling = (int(np.sum(sizes[:10])) + 1, n - int(np.sum(sizes[:10])) - 1)
    with pytest.raises(ValueError, match=r"qid: query .* partitions 0 and 1 .*repartition"):
        _fit(client, X, y, straddling, qid=qid)
    with pytest.raises(ValueError, match=r"group: query 10 .*straddles partitions 0 and 1.*"
                                         r"repartition"):
        _fit(client, X, y, straddling, group=sizes)
    again = qid.copy()
    again[-sizes[-1]:] = qid[0]           # the first query's id comes back in partition 1
    with pytest.raises(ValueError, match="are not consecutive.*sort the rows by query id"):
        _fit(client, X, y, cuts_of(sizes, 2), qid=again)
    inside = qid.copy()
    inside[n - 1] = qid[n - sizes[-1] - 1]   # within one partition
    with pytest.raises(ValueError, match="not consecutive.*rows counted from row"):
        _fit(client, X, y, cuts_of(sizes, 2), qid=inside)
    with pytest.raises(ValueError, match="group sizes sum to"):
        _fit(client, X, y, cuts_of(sizes, 2), group=sizes[1:])
    with pytest.raises(ValueError, match="Ranking needs the queries"):
        _fit(client, X, y, cuts_of(sizes, 2))
    with pytest.raises(ValueError, match="not both"):
        _fit(client, X, y, cuts_of(sizes, 2), group=sizes, qid=qid)
    with pytest.raises(ValueError, match="one weight per query"):
        _fit(client, X, y, cuts_of(sizes, 2), group=sizes, sample_weight=np.ones(n))
    with pytest.raises(ValueError, match="one weight per query .* got 500 entries"):
        _fit(client, X, y, cuts_of(sizes, 2), group=sizes,
             sample_weight=da.ones(500, chunks=100))
    bad = y.copy()
    bad[n - 3] = -1
    with pytest.raises(ValueError, match=r"relevance labels.*rows counted from row"):
        _fit(client, X, bad, cuts_of(sizes, 2), group=sizes)
    with pytest.raises(ValueError, match="label_gain has gains for labels 0..2"):
        _fit(client, X, y, cuts_of(sizes, 2), group=sizes, label_gain=[0, 1, 3])
    with pytest.raises(ValueError, match="holds out whole queries and y has 1 query"):
        _fit(client, X, y, cuts_of(sizes, 1), group=[n], early_stopping=True)
    with pytest.raises(ValueError, match="eval_group / eval_qid describe the queries"):
        _fit(client, X, y, cuts_of(sizes, 2), group=sizes, eval_group=sizes)
    dX, dy, _ = dask_inputs(X, y, qid, straddling)
    with pytest.raises(ValueError, match="eval_group: query 10 .*straddles"):
        _fit(client, X, y, cuts_of(sizes, 2), group=sizes, eval_set=[(dX, dy)],
             eval_group=sizes)
    with pytest.raises(ValueError, match="Ranking needs the queries: pass eval_group"):
        _fit(client, X, y, cuts_of(sizes, 2), group=sizes, eval_set=[(dX, dy)])


def test_dask_sample_weight_of_the_queries(client):
    """A dask vector of query weights is the host one (computed: O(queries))."""
    X, y, sizes, qid = ranking_data(3)
    w = np.random.default_rng(4).uniform(0.5, 2.0, sizes.size)
    params = dict(n_estimators=3, max_depth=2, random_state=2, early_stopping=False)
    local = gputree.GradientBoostingRanker(**params).fit(X, y, group=sizes, sample_weight=w)
    dX, dy, _ = dask_inputs(X, y, qid, cuts_of(sizes, 3))
    model = gd.DaskGradientBoostingRanker(client=client, **params).fit(
        dX, dy, group=sizes, sample_weight=da.from_array(w, chunks=20))
    assert_same_model(model, local)


def test_lost_worker_continues_the_fit(client, monkeypatch):
    """A worker killed as it starts round 3: the fit continues on the
    workers left from the collections (the queries laid out again), keeping
    the finished rounds, and ends with the one-machine model bit for bit."""
    client.wait_for_workers(2, timeout=60)
    X, y, sizes, qid = ranking_data(11)
    params = dict(n_estimators=6, max_depth=3, subsample=0.7, random_state=2,
                  early_stopping=False, device="cpu")
    local = gputree.GradientBoostingRanker(**params).fit(X, y, qid=qid)
    attempts = []
    real_encoded = gd.estimators.encoded_partitions
    monkeypatch.setattr(gd.estimators, "encoded_partitions",
                        lambda *args: attempts.append(1) or real_encoded(*args))
    worker = sorted(partitions._cluster_workers(client))[-1]
    die_at_round(dataclasses.make_dataclass("Victim", ["client", "address"])(client, worker), 3)
    dX, dy, dqid = dask_inputs(X, y, qid, cuts_of(sizes, 3))
    model = gd.DaskGradientBoostingRanker(**params, client=client).fit(dX, dy, qid=dqid)
    assert len(attempts) >= 2               # the loss happened mid-fit
    assert_same_model(model, local)
