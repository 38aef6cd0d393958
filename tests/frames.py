"""Shared test data: a pandas frame with NaNs and a category column, its
class labels, a float target and weights with zeros."""
import numpy as np


def make_frame(n_rows, seed=0, dtype=np.float64):
    """(pandas X: columns a..d of ``dtype`` with NaNs in a, 'colour' category;
    labels in 0..2, float target, weights with about 10% zeros)."""
    import pandas as pd
    rng = np.random.RandomState(seed)
    X = pd.DataFrame(rng.normal(size=(n_rows, 4)).astype(dtype), columns=list("abcd"))
    X.loc[rng.rand(n_rows) < 0.1, "a"] = np.nan
    X["colour"] = pd.Categorical(rng.choice(["red", "green", "blue", "cyan"], n_rows))
    code = X["colour"].cat.codes.to_numpy()
    signal = np.nan_to_num(X["a"].to_numpy()) + X["b"].to_numpy() + (code == 1)
    labels = np.digitize(signal + 0.5 * rng.normal(size=n_rows), [-0.5, 0.7])
    weights = rng.rand(n_rows) * (rng.rand(n_rows) > 0.1)
    return X, labels, signal + rng.normal(size=n_rows), weights
