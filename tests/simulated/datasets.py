"""Small datasets mixing numerical, categorical and missing values."""
import numpy as np
import pandas as pd


def mixed_frame(n_samples=160, seed=0, missing=0.1):
    """DataFrame with 2 numerical (with NaN), 1 integer-valued and 2
    categorical columns (one with NaN), and a target built from all of them."""
    rng = np.random.RandomState(seed)
    a = rng.normal(size=n_samples)
    b = rng.uniform(-2, 2, size=n_samples)
    c = rng.randint(0, 5, size=n_samples).astype(float)
    colour = rng.choice(["red", "green", "blue", "grey"], size=n_samples)
    size = rng.choice(["S", "M", "L"], size=n_samples).astype(object)
    signal = a + (colour == "red") * 1.5 - (size == "L") * 1.0 + 0.3 * c + 0.5 * rng.normal(size=n_samples)
    a[rng.rand(n_samples) < missing] = np.nan
    b[rng.rand(n_samples) < missing] = np.nan
    size[rng.rand(n_samples) < missing] = None
    X = pd.DataFrame({"a": a, "b": b, "c": c,
                      "colour": pd.Categorical(colour),
                      "size": pd.Categorical(size, categories=["S", "M", "L"])})
    return X, signal


def classification(n_samples=160, seed=0, n_classes=2):
    X, signal = mixed_frame(n_samples, seed)
    edges = np.quantile(signal, np.linspace(0, 1, n_classes + 1)[1:-1])
    return X, np.searchsorted(edges, signal)


def regression(n_samples=160, seed=0):
    return mixed_frame(n_samples, seed)
