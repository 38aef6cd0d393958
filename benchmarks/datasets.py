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
