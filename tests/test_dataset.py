"""gputree.Dataset: built from chunks (a callable, a numpy.memmap, Parquet and
CSV files) it holds the bins and codes the in-memory binner gives the
concatenated rows, bit for bit (NaNs, weights with zeros, a bin subsample
smaller than the data, category columns whose categories differ between
chunks); every estimator fitted on it is the in-memory model, bit for bit;
predictions on a Dataset or a chunk iterator equal those on X; bad input
gets errors naming the chunk, the column or the parameter."""
import dataclasses

import numpy as np
import pytest

import frames

import gputree
from gputree import Dataset
from gputree.data.binning import BinMapper

pd = pytest.importorskip("pandas")

N_ROWS = 700


@pytest.fixture
def small_bin_subsample(monkeypatch):
    """Bins learned from a 250-row subsample (the default is 200,000), so
    that the sampled rows must be the same global rows across chunks."""
    defaults = list(BinMapper.__init__.__defaults__)
    names = BinMapper.__init__.__code__.co_varnames[1:1 + len(defaults)]
    defaults[names.index("subsample")] = 250
    monkeypatch.setattr(BinMapper.__init__, "__defaults__", tuple(defaults))
    assert BinMapper().subsample == 250


def make_frame(seed=0):
    """(pandas X, float32, with NaNs and a category column, labels, float target,
    weights with zeros)."""
    return frames.make_frame(N_ROWS, seed, np.float32)


def row_bounds(sizes):
    edges = np.concatenate([[0], np.cumsum(sizes)])
    return list(zip(edges[:-1], edges[1:]))


def frame_chunks(X, sizes, *vectors):
    """A callable of chunks of X in rows of ``sizes``, each chunk's category
    column holding only the categories it uses (so chunks differ)."""
    def make():
        for a, b in row_bounds(sizes):
            part = X.iloc[a:b].copy()
            part["colour"] = part["colour"].cat.remove_unused_categories()
            yield (part,) + tuple(v[a:b] for v in vectors) if vectors else part
    return make


def union_frame(X, sizes):
    """X as one frame whose categories are the chunks' union in order of
    appearance (what pandas.concat gives with union_categoricals)."""
    parts = [X["colour"].iloc[a:b].cat.remove_unused_categories() for a, b in row_bounds(sizes)]
    out = X.copy()
    out["colour"] = pd.api.types.union_categoricals(parts)
    return out


def assert_same_bins(dataset, X, weights=None, categorical_features=None):
    inputs, _ = gputree.data.training.bin_training_data(X, 255, categorical_features, "cpu",
                                                        dataset._seed, weights)
    np.testing.assert_array_equal(dataset.bin_mapper.bin_thresholds_,
                                  inputs.bin_mapper.bin_thresholds_)
    np.testing.assert_array_equal(dataset.bin_mapper.is_categorical_,
                                  inputs.bin_mapper.is_categorical_)
    np.testing.assert_array_equal(dataset.codes, inputs.data.X_binned)
    assert dataset.codes.dtype == inputs.data.X_binned.dtype


def assert_same_model(a, b):
    """Every array of every tree equal."""
    trees_a, trees_b = a._trees_for_prediction(), b._trees_for_prediction()
    assert len(trees_a) == len(trees_b)
    for ta, tb in zip(trees_a, trees_b):
        for field in dataclasses.fields(ta):
            np.testing.assert_array_equal(getattr(ta, field.name), getattr(tb, field.name),
                                          err_msg=field.name)


SIZES = [1, 299, 0, 250, 150]


@pytest.mark.parametrize("weighted", [False, True])
def test_chunks_bin_as_the_concatenated_rows(small_bin_subsample, weighted):
    X, _, y, w = make_frame()
    weights = w if weighted else None
    vectors = (y, w) if weighted else (y,)
    dataset = Dataset(frame_chunks(X, SIZES, *vectors))
    assert_same_bins(dataset, union_frame(X, SIZES), weights)
    np.testing.assert_array_equal(dataset.label, y)
    assert (dataset.weight is None) == (not weighted)
    # the union is not the categories of the first chunk
    first = X["colour"].iloc[:1].cat.remove_unused_categories().cat.categories
    assert len(dataset.encoder.categories_[4]) == 4 > len(first)


def test_memmap_and_binned_file(tmp_path, small_bin_subsample):
    X, _, y, _ = make_frame()
    values = X.drop(columns="colour").to_numpy()
    mapped = np.lib.format.open_memmap(tmp_path / "x.npy", mode="w+", dtype=values.dtype,
                                       shape=values.shape)
    mapped[:] = values
    dataset = Dataset(mapped, label=y, chunk_rows=96, binned_path=tmp_path / "codes.npy")
    assert isinstance(dataset.codes, np.memmap)
    assert_same_bins(dataset, values)
    model = gputree.DecisionTreeRegressor(max_depth=6).fit(dataset)
    reference = gputree.DecisionTreeRegressor(max_depth=6).fit(values, y)
    assert_same_model(model, reference)


def test_parquet_folder_and_csv(tmp_path, small_bin_subsample):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    X, labels, _, w = make_frame()
    table = X.assign(label=labels, w=w)
    folder = tmp_path / "parts"
    folder.mkdir()
    for i, (a, b) in enumerate(row_bounds([300, 0, 250, 150])):
        pq.write_table(pa.Table.from_pandas(table.iloc[a:b], preserve_index=False),
                       folder / f"part-{i:03d}.parquet", row_group_size=64)
    dataset = Dataset(folder, label="label", weight="w", chunk_rows=100, random_state=0)
    assert_same_bins(dataset, X, w)
    model = gputree.GradientBoostingClassifier(n_estimators=5, early_stopping=False,
                                               random_state=0).fit(dataset)
    reference = gputree.GradientBoostingClassifier(n_estimators=5, early_stopping=False,
                                                   random_state=0).fit(X, labels, w)
    assert_same_model(model, reference)
    np.testing.assert_array_equal(model.predict_proba(dataset), reference.predict_proba(X))

    numeric = X.drop(columns="colour")
    numeric.assign(label=labels).to_csv(tmp_path / "data.csv", index=False)
    from_csv = Dataset(tmp_path / "data.csv", label="label")
    # CSV holds decimal text: the reference is what pandas reads back
    read_back = pd.read_csv(tmp_path / "data.csv").drop(columns="label")
    assert_same_bins(from_csv, read_back)
    np.testing.assert_array_equal(from_csv.label, labels)


ESTIMATORS = [
    lambda: gputree.DecisionTreeClassifier(max_depth=5),
    lambda: gputree.DecisionTreeRegressor(max_depth=5, missing_strategy="surrogate"),
    lambda: gputree.RandomForestClassifier(n_estimators=4, max_depth=5, random_state=1),
    lambda: gputree.RandomForestRegressor(n_estimators=4, max_depth=5, random_state=1,
                                          oob_score=True),
    lambda: gputree.GradientBoostingClassifier(n_estimators=5, random_state=2),
    lambda: gputree.GradientBoostingRegressor(n_estimators=5, subsample=0.7, random_state=2),
]


@pytest.mark.filterwarnings("ignore:Some inputs do not have OOB scores")
@pytest.mark.parametrize("make", ESTIMATORS)
def test_every_estimator_fits_a_dataset_as_its_data(make):
    """The bins are learned on all rows here (fewer than the subsample), so
    the estimators' own binning seed does not matter."""
    X, labels, y, w = make_frame(1)
    estimator = make()
    target = labels if hasattr(estimator, "predict_proba") else y
    dataset = Dataset(frame_chunks(X, SIZES, target, w), categorical_features=None)
    model = make().fit(dataset)
    reference = make().fit(union_frame(X, SIZES), target, w)
    assert_same_model(model, reference)
    frame = union_frame(X, SIZES)
    np.testing.assert_array_equal(model.predict(dataset), reference.predict(frame))
    chunks = (part for part in frame_chunks(X, SIZES)())
    np.testing.assert_array_equal(model.predict(chunks), reference.predict(frame))
    if hasattr(reference, "oob_score_"):
        assert model.oob_score_ == reference.oob_score_
    if hasattr(model, "apply"):
        np.testing.assert_array_equal(model.apply(dataset), reference.apply(frame))


def test_ranker_fits_a_dataset(tmp_path):
    """A ranker fitted on a Dataset is the in-memory model, its queries
    passed to fit or held by the Dataset: query sizes, a vector of query ids,
    or a qid column of a frame, of Parquet files or of chunks."""
    rng = np.random.RandomState(3)
    X = rng.normal(size=(400, 3))
    y = rng.randint(0, 4, 400)
    group = [100, 150, 150]
    qid = np.repeat([7, 3, 9], group)
    reference = gputree.GradientBoostingRanker(n_estimators=4, early_stopping=False)
    reference.fit(X, y, group=group)
    frame = pd.DataFrame(X, columns=["a", "b", "c"]).assign(y=y, q=qid)
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    for i, (a, b) in enumerate(row_bounds([150, 250])):
        pq.write_table(pa.Table.from_pandas(frame.iloc[a:b], preserve_index=False),
                       tmp_path / f"part-{i}.parquet", row_group_size=64)
    datasets = [(Dataset(X, label=y), dict(group=group)), (Dataset(X, label=y, group=group), {}),
                (Dataset(X, label=y, qid=qid), {}), (Dataset(frame, label="y", qid="q"), {}),
                (Dataset(tmp_path, label="y", qid="q", chunk_rows=100), {}),
                (Dataset(lambda: (frame.iloc[a:b] for a, b in row_bounds([90, 310])),
                         label="y", qid="q"), {})]
    for dataset, given in datasets:
        model = gputree.GradientBoostingRanker(n_estimators=4, early_stopping=False)
        assert_same_model(model.fit(dataset, **given), reference)
    np.testing.assert_array_equal(datasets[4][0].qid, qid)
    with pytest.raises(ValueError, match="either qid or group"):
        Dataset(X, label=y, qid=qid, group=group)
    with pytest.raises(ValueError, match="group must be .* summing to the Dataset's 400 rows"):
        Dataset(X, label=y, group=[100, 100])
    with pytest.raises(ValueError, match="has no column 'query'"):
        Dataset(tmp_path, label="y", qid="query")


def test_one_binning_for_many_fits_and_reference_data(small_bin_subsample):
    X, labels, _, _ = make_frame(2)
    train = Dataset(X.iloc[:500], label=labels[:500])
    valid = Dataset(X.iloc[500:], label=labels[500:], reference=train)
    assert valid.bin_mapper is train.bin_mapper
    for depth in (2, 4):
        model = gputree.DecisionTreeClassifier(max_depth=depth).fit(train)
        reference = gputree.DecisionTreeClassifier(max_depth=depth).fit(X.iloc[:500],
                                                                        labels[:500])
        assert_same_model(model, reference)
        np.testing.assert_array_equal(model.predict(valid), reference.predict(X.iloc[500:]))
    # eval_set on reference data: the validation rows are binned with the fit's bins
    booster = gputree.GradientBoostingClassifier(n_estimators=6, early_stopping=True,
                                                 n_iter_no_change=2)
    booster.fit(train, eval_set=(valid, labels[500:]))
    expected = gputree.GradientBoostingClassifier(n_estimators=6, early_stopping=True,
                                                  n_iter_no_change=2)
    expected.fit(X.iloc[:500], labels[:500], eval_set=(X.iloc[500:], labels[500:]))
    assert_same_model(booster, expected)


def test_prediction_on_a_dataset_with_other_bins_rebins_its_source():
    X, labels, _, _ = make_frame(4)
    model = gputree.DecisionTreeClassifier(max_depth=4).fit(X, labels)
    other = Dataset(frame_chunks(X, [350, 350]), max_bins=16)
    np.testing.assert_array_equal(model.predict(other),
                                  model.predict(union_frame(X, [350, 350])))
    in_memory = Dataset(X, max_bins=16)
    with pytest.raises(ValueError, match="reference="):
        model.predict(in_memory)


def test_binning_parameters_must_agree():
    X, labels, _, _ = make_frame()
    dataset = Dataset(X, label=labels, max_bins=63)
    with pytest.raises(ValueError, match="max_bins=255.*max_bins=63"):
        gputree.DecisionTreeClassifier().fit(dataset)
    with pytest.raises(ValueError, match="categorical_features"):
        gputree.DecisionTreeClassifier(max_bins=63, categorical_features=[0]).fit(dataset)
    # the same categorical columns, named again: fine
    gputree.DecisionTreeClassifier(max_bins=63, categorical_features=["colour"]).fit(dataset)
    with pytest.raises(ValueError, match="y is required"):
        gputree.DecisionTreeClassifier(max_bins=63).fit(Dataset(X, max_bins=63))
    weights = np.ones(N_ROWS)
    weights[3] = 0.0
    with pytest.raises(ValueError, match="zero weight"):
        gputree.DecisionTreeClassifier(max_bins=63).fit(dataset, sample_weight=weights)


def test_inconsistent_chunks_are_named():
    X, labels, _, _ = make_frame()
    values = X.drop(columns="colour").to_numpy()

    def narrow():
        yield values[:300]
        yield values[300:, :3]
    with pytest.raises(ValueError, match="chunk 1: X has 3 features"):
        Dataset(narrow)

    def text():
        yield X.iloc[:300]
        yield X.iloc[300:].assign(b="x")
    with pytest.raises(ValueError, match="chunk 1: Column 'b'"):
        Dataset(text)

    with pytest.raises(ValueError, match="chunk 0 has no column 'target'"):
        Dataset(lambda: iter([X]), label="target")

    def half_labelled():
        yield values[:300], labels[:300]
        yield values[300:]
    with pytest.raises(ValueError, match="chunk 1 has no y"):
        Dataset(half_labelled)

    def changing(state={"calls": 0}):
        state["calls"] += 1
        return iter([values[:300 + state["calls"]]])
    with pytest.raises(ValueError, match="same rows every time"):
        Dataset(changing)

    with pytest.raises(TypeError, match="fresh iterable"):
        Dataset(lambda: 3)


def test_files_need_pyarrow(monkeypatch, tmp_path):
    import builtins
    real_import = builtins.__import__

    def no_pyarrow(name, *args, **kwargs):
        if name.startswith("pyarrow"):
            raise ImportError("no pyarrow")
        return real_import(name, *args, **kwargs)
    monkeypatch.setattr(builtins, "__import__", no_pyarrow)
    with pytest.raises(ImportError, match=r"gputree\[parquet\]"):
        Dataset(tmp_path)


def test_subset_keeps_the_bins():
    X, labels, _, _ = make_frame()
    dataset = Dataset(X, label=labels)
    rows = np.arange(0, N_ROWS, 3)
    part = dataset.subset(rows)
    np.testing.assert_array_equal(part.codes, dataset.codes[rows])
    np.testing.assert_array_equal(part.label, labels[rows])
    model = gputree.DecisionTreeClassifier(max_depth=3).fit(part)
    np.testing.assert_array_equal(model.predict(part), model.predict(X.iloc[rows]))


def test_a_seeded_estimator_gets_its_own_subsample(small_bin_subsample):
    """More rows than the bin subsample: the Dataset's random_state draws the
    rows an estimator of that random_state draws; another seed is refused."""
    X, _, y, _ = make_frame(5)
    dataset = Dataset(frame_chunks(X, SIZES, y), random_state=7)
    model = gputree.GradientBoostingRegressor(n_estimators=3, random_state=7).fit(dataset)
    reference = gputree.GradientBoostingRegressor(n_estimators=3, random_state=7)
    assert_same_model(model, reference.fit(union_frame(X, SIZES), y))
    with pytest.raises(ValueError, match="random_state=None.*random_state=7"):
        gputree.DecisionTreeRegressor().fit(dataset)


@pytest.mark.parametrize("params", [
    dict(loss="log_loss"),
    dict(loss="log_loss", subsample=0.7, colsample_bytree=0.5, early_stopping=True,
         n_iter_no_change=20),
    dict(loss="log_loss", unweighted=True),
    dict(loss="squared_error", early_stopping=True, validation_fraction=None,
         n_iter_no_change=2, tol=1e9),
    dict(loss="squared_error", unweighted=True),
    dict(loss="squared_error", unweighted=True, grow_policy="lossguide", max_leaf_nodes=6),
    dict(loss="log_loss", unweighted=True, max_depth=6, min_samples_leaf=3),
    dict(loss="quantile", alpha=0.3), dict(loss="poisson")])
def test_lean_fit_on_a_dataset_is_the_in_memory_model(monkeypatch, params):
    """On a Dataset boosting keeps no column-order copy of the codes and builds
    its statistics a block of rows at a time (blocks of 64 rows here: the
    last one shorter), without their count channel where every weight is
    one (the histograms count the rows); the model, its scores and
    predictions are the in-memory fit's, bit for bit (weights with zeros, a
    validation split, best-first growth, deep trees whose leaves
    min_samples_leaf bounds)."""
    from gputree.estimators import boosting
    monkeypatch.setattr(boosting, "NEWTON_BLOCK_ROWS", 64)
    params = dict(params)
    X, labels, y, w = make_frame(2)
    X = X.drop(columns="colour").to_numpy()
    if params.pop("unweighted", False):
        w = None
    classify = params["loss"] == "log_loss"
    target = (labels > 0) if classify else (np.abs(y) if params["loss"] == "poisson" else y)
    make = gputree.GradientBoostingClassifier if classify else gputree.GradientBoostingRegressor
    blocks = []
    monkeypatch.setattr(boosting, "newton_statistics_in_blocks",
                        lambda *a, **k: blocks.append(gputree.criteria
                                                      .newton_statistics_in_blocks(*a, **k))
                        or blocks[-1])
    dataset = Dataset(X, label=target, weight=w)
    made = []
    make_rows = make._make_rows
    monkeypatch.setattr(make, "_make_rows", lambda self, *a, **k: made.append(
        make_rows(self, *a, **k)) or made[-1])
    params = {"max_depth": 3} | params
    model = make(n_estimators=4, random_state=0, **params).fit(dataset)
    assert len(blocks) == model.n_iter_ > 0
    # unit weights, every row in every round: no count channel held
    unit = w is None and "subsample" not in params
    assert all(b.stats.shape[1] == 3 - unit and b.n_channels == 3 for b in blocks)
    # lean rows: no float64 targets (but for a loss that refits its leaves), no unit weights
    assert (made[0].y is None) == (params["loss"] != "quantile")
    assert (made[0].w is None) == (w is None and "subsample" not in params
                                   and params["loss"] != "quantile")
    reference = make(n_estimators=4, random_state=0, **params).fit(X, target, w)
    assert len(blocks) == model.n_iter_
    assert_same_model(model, reference)
    np.testing.assert_array_equal(model.train_score_, reference.train_score_)
    np.testing.assert_array_equal(model.validation_score_, reference.validation_score_)
    np.testing.assert_array_equal(model.predict(dataset), reference.predict(X))


def test_a_datasets_codes_get_no_column_order_copy():
    """The CPU backend copies large binned X to column order for the moves,
    but not a Dataset's codes (kept lean: memory first), nor their row and
    column subsets."""
    from gputree.backends import get_backend
    backend = get_backend("cpu")
    codes = np.random.RandomState(0).randint(0, 9, size=(150_000, 28)).astype(np.uint8)
    plain = gputree.data.binned.BinnedData(codes.copy(), 10, np.full(28, 9, np.int32),
                                           np.zeros(28, np.uint8), np.zeros((28, 9)))
    copy = backend.binned.columns(plain.X_binned)
    assert copy is not plain.X_binned and copy.flags.f_contiguous
    np.testing.assert_array_equal(copy, codes)
    lean = Dataset(codes.astype(np.float64)).binned_data(backend)
    assert lean.lean and backend.binned.columns(lean.X_binned) is lean.X_binned
    for part in (lean.take_rows(backend, np.arange(0, 150_000, 2)),
                 lean.take_columns(backend, np.arange(0, 28, 3))):
        assert part.lean and backend.binned.columns(part.X_binned) is part.X_binned
