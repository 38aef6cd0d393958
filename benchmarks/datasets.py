"""Data sets of ``compare.py``: the synthetic task and one real data set with
categorical columns, each split into train and held-out rows.

The real one is the Titanic passenger list (OpenML 40945, 1,309 rows), which
scikit-learn ships in full as a test fixture of ``fetch_openml``
(``sklearn/datasets/tests/data/openml/id_40945``), so nothing is downloaded.
Target: ``survived``. Features: ``pclass``, ``sex``, ``embarked`` and
``deck`` (the letter of ``cabin``) as pandas ``category`` columns with
missing values; ``age``, ``sibsp``, ``parch``, ``fare`` numerical (``age``
and ``fare`` with missing values). Free-text columns (name, ticket,
home.dest) are dropped, and so are ``boat`` and ``body``, which give the
answer away (they are known only for survivors or for the dead).
"""
import gzip
import io
from dataclasses import dataclass, field

import numpy as np

from .common import (N_FEATURES, REGRESSION_TASK, TASK, classification_data,
                     regression_data)

TITANIC_PACKAGE = "sklearn.datasets.tests.data.openml"
TITANIC_FILE = ("id_40945", "data-v1-dl-16826755.arff.gz")
TITANIC_CATEGORICAL = ["pclass", "sex", "embarked", "deck"]
TITANIC_NUMERICAL = ["age", "sibsp", "parch", "fare"]


@dataclass
class Split:
    """Train and held-out rows of one data set."""

    name: str
    X_train: object                 # numpy float32 array or pandas DataFrame
    X_test: object
    y_train: np.ndarray
    y_test: np.ndarray
    categorical: list = field(default_factory=list)   # categorical column names
    regression: bool = False

    def inputs(self, how):
        """(X_train, X_test) as a library takes them: "pandas" keeps the
        ``category`` columns; "codes" gives float arrays with category codes
        (NaN for missing), for estimators without categorical support."""
        if how == "pandas" or not self.categorical:
            return self.X_train, self.X_test
        return _codes(self.X_train), _codes(self.X_test)

    def describe(self):
        n_features = self.X_train.shape[1]
        text = (f"{self.name}: {len(self.y_train):,} train rows, {len(self.y_test):,} "
                f"held-out rows, {n_features} features")
        if self.categorical:
            text += f" ({len(self.categorical)} categorical: {', '.join(self.categorical)})"
        return text


def _codes(frame):
    columns = [frame[c].cat.codes.to_numpy(np.float32) if frame[c].dtype == "category"
               else frame[c].to_numpy(np.float32, na_value=np.nan) for c in frame.columns]
    array = np.column_stack(columns)
    for j, c in enumerate(frame.columns):
        if frame[c].dtype == "category":
            array[array[:, j] < 0, j] = np.nan      # code -1 is missing
    return array


def _split(name, X, y, test_size, categorical=(), regression=False):
    from sklearn.model_selection import train_test_split
    parts = train_test_split(X, y, test_size=test_size, random_state=0,
                             stratify=None if regression else y)
    return Split(name, *parts, categorical=list(categorical), regression=regression)


def synthetic(rows, test_size=0.25, regression=False):
    """make_classification (or make_regression), ``rows`` rows in all, 28
    float32 features."""
    maker, task = ((regression_data, REGRESSION_TASK) if regression
                   else (classification_data, TASK))
    settings = ", ".join(f"{k}={v}" for k, v in task.items() if k != "n_features")
    X, y = maker(rows)
    return _split(f"make_{'regression' if regression else 'classification'}"
                  f"({rows:,} x {N_FEATURES} float32, {settings})",
                  X, y, test_size, regression=regression)


def titanic(rows=None, test_size=0.25):
    """The Titanic data (all 1,309 rows, or the first ``rows``)."""
    frame = _read_titanic()
    if rows is not None:
        frame = frame.iloc[:rows]
    y = frame.pop("survived").to_numpy(np.int32)
    return _split("Titanic (OpenML 40945, shipped with scikit-learn)", frame, y,
                  test_size, TITANIC_CATEGORICAL)


def _read_titanic():
    """The ARFF file as a DataFrame with the columns described above."""
    import importlib.resources

    import pandas as pd
    try:
        path = importlib.resources.files(TITANIC_PACKAGE).joinpath(*TITANIC_FILE)
        text = gzip.decompress(path.read_bytes()).decode("utf-8")
    except (ModuleNotFoundError, FileNotFoundError) as exc:
        raise FileNotFoundError(
            "scikit-learn's copy of the Titanic data was not found (an install "
            f"without its test data?): {exc}") from exc
    header, body = text.split("@data", 1)
    names = [line.split()[1].strip("'") for line in header.splitlines()
             if line.lower().startswith("@attribute")]
    raw = pd.read_csv(io.StringIO(body), names=names, na_values=["?"],
                      keep_default_na=False)
    frame = raw[TITANIC_NUMERICAL].astype(np.float32)
    raw["deck"] = raw["cabin"].str[0]
    for column in TITANIC_CATEGORICAL:
        frame[column] = raw[column].astype("category")
    frame["survived"] = raw["survived"]
    return frame


# ---------------------------------------------------------------- ranking

@dataclass
class RankingSplit:
    """Train and held-out queries of a ranking data set: rows of a query are
    consecutive; ``group_*`` the number of rows of each query."""

    name: str
    X_train: np.ndarray
    X_test: np.ndarray
    y_train: np.ndarray
    y_test: np.ndarray
    group_train: np.ndarray
    group_test: np.ndarray
    regression: bool = False
    categorical: list = field(default_factory=list)

    def inputs(self, how):
        return self.X_train, self.X_test

    def queries(self, how, group):
        """The fit keyword of a library's queries: {"group": sizes} or
        {"qid": one id per row}."""
        if how == "qid":
            return {"qid": np.repeat(np.arange(len(group)), group)}
        return {"group": np.asarray(group)}

    def first_queries(self, rows):
        """(rows used, sizes): the first queries of the training set holding
        about ``rows`` rows (whole queries, at least one)."""
        ends = np.cumsum(self.group_train)
        k = max(1, int(np.searchsorted(ends, rows, side="right")))
        return int(ends[k - 1]), self.group_train[:k]

    def describe(self):
        return (f"{self.name}: {len(self.y_train):,} train rows in {len(self.group_train):,} "
                f"queries, {len(self.y_test):,} held-out rows in {len(self.group_test):,} "
                f"queries, {self.X_train.shape[1]} features, labels "
                f"{int(self.y_train.min())}..{int(self.y_train.max())}")


#: relevance labels of the synthetic ranking task: thresholds on the latent score's quantiles
RANKING_LABEL_QUANTILES = (0.5, 0.75, 0.9, 0.97)


def synthetic_ranking(rows, test_size=0.25, seed=0):
    """Synthetic learning-to-rank data: queries of 20 to 180 rows (``rows``
    in all), 28 float32 features, relevance 0..4 from a nonlinear latent
    score plus a per-query offset and noise (half the rows 0, 3% 4). The
    last ``test_size`` of the queries are held out."""
    rng = np.random.RandomState(seed)
    sizes = rng.randint(20, 181, rows // 20 + 1)
    sizes = sizes[:np.searchsorted(np.cumsum(sizes), rows) + 1]
    sizes[-1] -= int(sizes.sum()) - rows
    if sizes[-1] <= 0:
        sizes = sizes[:-1]
    n = int(sizes.sum())
    X = rng.normal(size=(n, N_FEATURES)).astype(np.float32)
    w = rng.normal(size=10)
    latent = (X[:, :10] @ w + 1.5 * np.sin(2 * X[:, 10]) + X[:, 11] * X[:, 12]
              + np.repeat(rng.normal(0, 1.0, len(sizes)), sizes) + rng.normal(0, 1.5, n))
    y = np.digitize(latent, np.quantile(latent, RANKING_LABEL_QUANTILES)).astype(np.int32)
    n_test = max(1, int(round(test_size * len(sizes))))
    cut = int(sizes[:-n_test].sum())
    return RankingSplit(f"synthetic ranking ({n:,} x {N_FEATURES} float32, {len(sizes):,} "
                        "queries of 20..180 rows)", X[:cut], X[cut:], y[:cut], y[cut:],
                        sizes[:-n_test], sizes[-n_test:])


def letor_files(folder):
    """A LETOR-style data set as LightGBM's examples/lambdarank ships it:
    ``rank.train``, ``rank.test`` (svmlight: label then index:value) and
    ``rank.train.query``, ``rank.test.query`` (one query size per line) in
    ``folder``. Features dense float32 (missing entries 0)."""
    import os

    from sklearn.datasets import load_svmlight_files
    paths = [os.path.join(folder, name) for name in ("rank.train", "rank.test")]
    X_train, y_train, X_test, y_test = load_svmlight_files(paths, dtype=np.float32)
    groups = [np.loadtxt(p + ".query", dtype=np.int64, ndmin=1) for p in paths]
    return RankingSplit(f"LETOR files in {folder} (rank.train / rank.test, as LightGBM's "
                        "examples/lambdarank)", X_train.toarray(), X_test.toarray(),
                        y_train.astype(np.int32), y_test.astype(np.int32), *groups)
