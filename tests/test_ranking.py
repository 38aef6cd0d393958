"""Learning to rank: GradientBoostingRanker and its LambdaMART loss.

The per-query pass (sort, NDCG@k, pair lambdas) is checked against brute
force from the definitions (tests/ranking_reference.py) on small queries with
ties in scores and in labels; NDCG also against scikit-learn's ndcg_score
where the two definitions coincide. Then the estimator: group and qid give
the same model, bad queries and labels are refused naming the argument,
early stopping watches the validation queries' NDCG, models round-trip.
"""
import numpy as np
import pytest

import gputree
from gputree.backends import get_backend
from gputree.data.queries import query_layout
from gputree.estimators.lambdamart import LambdaMART, host_targets
from ranking_reference import lambdamart, ndcg_at


def _query_sizes(rng, n_queries, largest):
    return rng.randint(1, largest + 1, n_queries)


def _tied_queries(seed, n_queries=25, largest=12, n_labels=4, n_scores=4):
    """(scores, labels, sizes): few distinct scores and labels, so that
    ties in both are common; one-row queries and all-equal queries too."""
    rng = np.random.RandomState(seed)
    sizes = _query_sizes(rng, n_queries, largest)
    sizes[0] = 1
    n = int(sizes.sum())
    scores = rng.randint(0, n_scores, n) * 0.375 - 0.5
    labels = rng.randint(0, n_labels, n)
    scores[1:1 + sizes[1]] = 0.25              # a query whose scores are all equal
    return scores, labels, sizes


def _pass(scores, labels, sizes, **settings):
    """The CPU pass: (g (n,), h (n,), ndcg (n_queries,))."""
    loss = LambdaMART(**settings)
    queries = query_layout(len(labels), group=sizes)
    targets = loss.rows_targets(get_backend("cpu"), host_targets(labels, queries))
    g, h, ndcg = loss.gradients_and_pointwise(np, targets, np.asarray(scores)[:, None], None)
    return g[:, 0], h[:, 0], ndcg


SETTINGS = [
    dict(),
    dict(truncation_level=3),
    dict(norm=False, sigmoid=0.7),
    dict(name="rank:pairwise"),
    dict(name="rank:pairwise", norm=False, truncation_level=2, sigmoid=2.0),
    dict(label_gain=(0.0, 1.0, 1.5, 10.0), truncation_level=5),
]


def _settings_id(settings):
    return ",".join(f"{k}={v}" for k, v in settings.items()) or "default"


@pytest.mark.parametrize("settings", SETTINGS, ids=_settings_id)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_gradients_agree_with_brute_force(settings, seed):
    scores, labels, sizes = _tied_queries(seed)
    if seed == 2:
        scores = scores + np.random.RandomState(5).normal(0, 3, scores.shape)   # no ties
    g, h, _ = _pass(scores, labels, sizes, **settings)
    gains = settings.get("label_gain")
    starts = np.concatenate([[0], np.cumsum(sizes)])
    nonzero = 0
    for q in range(len(sizes)):
        rows = slice(starts[q], starts[q + 1])
        expected_g, expected_h = lambdamart(
            scores[rows], labels[rows], truncation=settings.get("truncation_level", 30),
            norm=settings.get("norm", True), sigma=settings.get("sigmoid", 1.0),
            pairwise=settings.get("name") == "rank:pairwise",
            **({} if gains is None else {"gains": lambda l: np.asarray(gains)[l]}))
        np.testing.assert_allclose(g[rows], expected_g, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(h[rows], expected_h, rtol=1e-12, atol=1e-15)
        nonzero += np.count_nonzero(expected_g)
    assert nonzero > len(scores) // 2          # the check saw real gradients
    assert g[0] == 0.0 and h[0] == 0.0         # a one-row query contributes nothing
    # the gradients of a query sum to zero (every pair adds +x and -x)
    for q in range(len(sizes)):
        assert abs(g[starts[q]:starts[q + 1]].sum()) < 1e-12


@pytest.mark.parametrize("k", [1, 3, 10])
def test_ndcg_agrees_with_brute_force(k):
    scores, labels, sizes = _tied_queries(3, n_queries=40)
    labels[np.concatenate([[0], np.cumsum(sizes)])[2]:][:sizes[2]] = 0   # no relevant row
    _, _, ndcg = _pass(scores, labels, sizes, eval_at=k)
    starts = np.concatenate([[0], np.cumsum(sizes)])
    expected = [ndcg_at(scores[a:b], labels[a:b], k) for a, b in zip(starts[:-1], starts[1:])]
    np.testing.assert_allclose(ndcg, expected, rtol=1e-13)
    assert ndcg[2] == 1.0


def test_ndcg_agrees_with_scikit_learn_where_definitions_coincide():
    """scikit-learn's ndcg_score takes the gains as y_true and averages over
    tied scores: with untied scores, gains 2**label - 1 and a relevant row
    in every query, it is the same NDCG@k."""
    from sklearn.metrics import ndcg_score
    rng = np.random.RandomState(7)
    sizes = np.full(30, 9)
    n = int(sizes.sum())
    scores = rng.normal(size=n)
    labels = rng.randint(0, 5, n)
    labels[::9] = 3
    for k in (1, 5, 9):
        _, _, ndcg = _pass(scores, labels, sizes, eval_at=k)
        theirs = [ndcg_score([2.0 ** labels[i:i + 9] - 1], [scores[i:i + 9]], k=k)
                  for i in range(0, n, 9)]
        np.testing.assert_allclose(ndcg, theirs, rtol=1e-13)


def test_ties_rank_in_row_order():
    """Equal scores rank in row order, on every query: a relevant row first
    among equals scores NDCG 1, last scores less."""
    scores = np.zeros(6)
    labels = np.array([1, 0, 0, 0, 0, 1])
    _, _, ndcg = _pass(scores, labels, np.array([3, 3]), eval_at=3)
    assert ndcg[0] == 1.0
    assert ndcg[1] == pytest.approx(0.5)


# ----------------------------------------------------------------- estimator

def ranking_data(seed=0, n_queries=120, largest=30, n_features=5):
    """(X, y, sizes): labels 0..4 from a noisy nonlinear signal of X."""
    rng = np.random.RandomState(seed)
    sizes = _query_sizes(rng, n_queries, largest)
    n = int(sizes.sum())
    X = rng.normal(size=(n, n_features))
    signal = X[:, 0] + 0.5 * X[:, 1] ** 2 - 0.5 * X[:, 2] + rng.normal(0, 0.5, n)
    y = np.clip(np.floor(signal + 1.5), 0, 4).astype(int)
    return X, y, sizes


SMALL = dict(n_estimators=8, max_depth=4, min_samples_leaf=5, early_stopping=False,
             device="cpu", random_state=0)


def _same_model(a, b):
    assert len(a._trees) == len(b._trees)
    for s, t in zip(a._trees, b._trees):
        assert np.array_equal(s.feature, t.feature) and np.array_equal(s.bitset, t.bitset)
        assert s.value.tobytes() == t.value.tobytes()
    assert np.array_equal(a.train_score_, b.train_score_)


def test_group_and_qid_give_the_same_model():
    X, y, sizes = ranking_data()
    by_group = gputree.GradientBoostingRanker(**SMALL).fit(X, y, group=sizes)
    # query ids in any order of values, each query's rows consecutive
    qid = np.repeat(np.random.RandomState(1).permutation(len(sizes)) * 10 - 7, sizes)
    by_qid = gputree.GradientBoostingRanker(**SMALL).fit(X, y, qid=qid)
    _same_model(by_group, by_qid)
    assert any(t.node_count > 1 for t in by_group._trees)


def test_learns_to_rank_held_out_queries():
    X, y, sizes = ranking_data(n_queries=200)
    X_test, y_test, sizes_test = ranking_data(seed=1, n_queries=80)
    model = gputree.GradientBoostingRanker(n_estimators=30, max_depth=4, early_stopping=False,
                                           device="cpu", random_state=0)
    model.fit(X, y, group=sizes)
    held_out = model.score(X_test, y_test, group=sizes_test)
    starts = np.concatenate([[0], np.cumsum(sizes_test)])
    by_hand = np.mean([ndcg_at(model.predict(X_test[a:b]), y_test[a:b], 10)
                       for a, b in zip(starts[:-1], starts[1:])])
    assert held_out == pytest.approx(by_hand, rel=1e-12)
    shuffled = np.mean([ndcg_at(np.random.RandomState(a).normal(size=b - a), y_test[a:b], 10)
                        for a, b in zip(starts[:-1], starts[1:])])
    assert held_out > shuffled + 0.15
    assert model.train_score_[-1] > model.train_score_[0] + 0.1


def test_pairwise_objective_fits_and_differs():
    X, y, sizes = ranking_data()
    ndcg = gputree.GradientBoostingRanker(**SMALL).fit(X, y, group=sizes)
    pairwise = gputree.GradientBoostingRanker(loss="rank:pairwise", **SMALL).fit(X, y,
                                                                                 group=sizes)
    assert not np.array_equal(ndcg.predict(X), pairwise.predict(X))
    assert pairwise.train_score_[-1] > pairwise.train_score_[0]


def test_query_weights_scale_like_repeated_queries():
    """Weight 2 on a query: its gradients double, as if the query were there
    twice (the same trees when min_samples_leaf counts do not bind, on
    features with fewer values than bins, whose bins repeating rows cannot
    move)."""
    X, y, sizes = ranking_data(n_queries=40)
    X = np.round(X * 2)
    w = np.ones(len(sizes))
    w[::3] = 2.0
    starts = np.concatenate([[0], np.cumsum(sizes)])
    doubled = np.concatenate([np.arange(a, b) for q, (a, b) in enumerate(zip(starts[:-1],
                                                                             starts[1:]))
                              for _ in range(int(w[q]))])
    params = dict(SMALL, min_samples_leaf=1, min_child_weight=0.0, max_bins=16)
    weighted = gputree.GradientBoostingRanker(**params).fit(X, y, group=sizes, sample_weight=w)
    repeated = gputree.GradientBoostingRanker(**params).fit(
        X[doubled], y[doubled], group=np.repeat(sizes, w.astype(int)))
    for a, b in zip(weighted._trees, repeated._trees):
        assert np.array_equal(a.feature, b.feature)
        np.testing.assert_allclose(a.value, b.value, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(weighted.train_score_, repeated.train_score_, rtol=1e-12)


def test_one_row_queries_are_allowed():
    X, y, _ = ranking_data(n_queries=30)
    sizes = np.ones(len(y), dtype=int)
    model = gputree.GradientBoostingRanker(**SMALL).fit(X, y, group=sizes)
    assert all(t.node_count == 1 for t in model._trees)   # no pair, no gradient
    assert np.all(model.predict(X) == 0.0)


def test_early_stopping_watches_validation_ndcg():
    X, y, sizes = ranking_data(n_queries=150)
    X_val, y_val, sizes_val = ranking_data(seed=4, n_queries=60)
    model = gputree.GradientBoostingRanker(n_estimators=200, learning_rate=0.5, max_depth=5,
                                           n_iter_no_change=3, device="cpu", random_state=0)
    model.fit(X, y, group=sizes, eval_set=[(X_val, y_val)], eval_group=[sizes_val])
    assert model.n_iter_ < 200
    assert len(model.validation_score_) == model.n_iter_ + 1
    assert model.validation_score_[-1] == pytest.approx(
        model.score(X_val, y_val, group=sizes_val), rel=1e-12)
    # the same validation queries by qid
    again = gputree.GradientBoostingRanker(n_estimators=200, learning_rate=0.5, max_depth=5,
                                           n_iter_no_change=3, device="cpu", random_state=0)
    again.fit(X, y, group=sizes, eval_set=(X_val, y_val),
              eval_qid=np.repeat(np.arange(len(sizes_val)), sizes_val))
    _same_model(model, again)


def test_validation_fraction_and_subsample_draw_whole_queries():
    X, y, sizes = ranking_data(n_queries=100)
    model = gputree.GradientBoostingRanker(n_estimators=5, max_depth=3, early_stopping=True,
                                           validation_fraction=0.25, subsample=0.5,
                                           device="cpu", random_state=0)
    model.fit(X, y, group=sizes)
    assert len(model.validation_score_) == model.n_iter_ + 1
    # the same seed draws the same queries: refitting gives the same model
    _same_model(model, gputree.GradientBoostingRanker(**model.get_params()).fit(X, y,
                                                                                 group=sizes))


@pytest.mark.parametrize("kwargs, message", [
    (dict(), "pass group="),
    (dict(group=[5, 5], qid=np.zeros(12)), "not both"),
    (dict(group=[5, 5]), "sum to 10 but X has 12 rows"),
    (dict(group=[5, 0, 7]), r"group\[1\] is 0"),
    (dict(group=[5.5, 6.5]), "integers"),
    (dict(qid=[0, 0, 1, 1, 0, 0, 2, 2, 2, 2, 2, 2]), "query 0 are not consecutive"),
    (dict(qid=[0] * 11), "one query id per row"),
    (dict(group=[6, 6], sample_weight=np.ones(12)), "one weight per query"),
    (dict(group=[6, 6], sample_weight=[1.0, -1.0]), "sample_weight must be finite"),
])
def test_bad_queries_are_refused_naming_the_argument(kwargs, message):
    X = np.random.RandomState(0).normal(size=(12, 2))
    y = np.arange(12) % 3
    with pytest.raises(ValueError, match=message):
        gputree.GradientBoostingRanker(**SMALL).fit(X, y, **kwargs)


@pytest.mark.parametrize("y, message", [
    (np.array([0, 1, 2, -1] * 3), r"non-negative integers.*rows \[3, 7, 11\]"),
    (np.array([0, 1, 2, 0.5] * 3), r"non-negative integers.*hold \[0.5"),
    (np.array([0, 1, 2, 40] * 3), "label_gain"),
])
def test_bad_labels_are_refused_naming_y(y, message):
    X = np.random.RandomState(0).normal(size=(12, 2))
    with pytest.raises(ValueError, match=message):
        gputree.GradientBoostingRanker(**SMALL).fit(X, y, group=[6, 6])


@pytest.mark.parametrize("label_gain, message", [
    ([0, 3, 1], "must not decrease"), ([[0, 1]], "1-D list"), ([0, np.nan], "finite")])
def test_bad_label_gain_is_refused(label_gain, message):
    X = np.random.RandomState(0).normal(size=(12, 2))
    with pytest.raises(ValueError, match=message):
        gputree.GradientBoostingRanker(label_gain=label_gain, **SMALL).fit(
            X, np.arange(12) % 2, group=[6, 6])


def test_label_gain_covers_larger_labels():
    X = np.random.RandomState(0).normal(size=(12, 2))
    y = np.array([0, 1, 2, 40] * 3)
    with pytest.raises(ValueError, match="label_gain has gains for labels 0..3"):
        gputree.GradientBoostingRanker(label_gain=[0, 1, 3, 7], **SMALL).fit(X, y, group=[6, 6])
    gputree.GradientBoostingRanker(label_gain=list(range(41)), **SMALL).fit(X, y, group=[6, 6])


def test_dask_collections_are_refused_with_a_clear_error():
    """The ordinary ranker names the Dask one (gputree.dask)."""
    da = pytest.importorskip("dask.array")
    X, y, sizes = ranking_data(n_queries=10)
    with pytest.raises(TypeError, match="X is a Dask collection.*DaskGradientBoostingRanker"):
        gputree.GradientBoostingRanker(**SMALL).fit(da.from_array(X), y, group=sizes)


def test_saved_model_predicts_the_same(tmp_path):
    X, y, sizes = ranking_data()
    model = gputree.GradientBoostingRanker(label_gain=[0, 1, 2, 4, 8], **SMALL).fit(
        X, y, group=sizes)
    model.save_model(tmp_path / "ranker.json")
    loaded = gputree.load_model(tmp_path / "ranker.json")
    assert type(loaded) is gputree.GradientBoostingRanker
    assert loaded.predict(X).tobytes() == model.predict(X).tobytes()
    assert loaded.score(X, y, group=sizes) == model.score(X, y, group=sizes)


def test_warm_start_continues_the_same_fit():
    X, y, sizes = ranking_data()
    once = gputree.GradientBoostingRanker(**SMALL).fit(X, y, group=sizes)
    twice = gputree.GradientBoostingRanker(**dict(SMALL, n_estimators=4, warm_start=True))
    twice.fit(X, y, group=sizes).set_params(n_estimators=8).fit(X, y, group=sizes)
    _same_model(once, twice)
