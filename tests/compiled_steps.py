"""Fits with a backend's compiled growth steps and with the general steps
(the backend method that hands them out patched to None), and the check
that both grew the same trees field for field; shared by the tests of the
compiled best-first step and level."""
import dataclasses

import numpy as np
import pandas as pd

import gputree

from gputree.backends.cpu.backend import CPUBackend


def fit_both(monkeypatch, make, X, y, steps_class, step_name, backend_method, **fit_args):
    """(trees grown with the compiled steps, trees grown with the general
    steps, compiled calls taken): ``make()`` an estimator, ``steps_class``'s
    ``step_name`` method counted, CPUBackend's ``backend_method`` patched to
    give None for the general fit."""
    calls = []
    step = getattr(steps_class, step_name)

    def counted(self, pool):
        calls.append(1)
        return step(self, pool)

    with monkeypatch.context() as patch:
        patch.setattr(steps_class, step_name, counted)
        compiled = make().fit(X, y, **fit_args)._trees
    with monkeypatch.context() as patch:
        patch.setattr(CPUBackend, backend_method, lambda self, *args: None)
        general = make().fit(X, y, **fit_args)._trees
    return compiled, general, len(calls)


def assert_same_trees(compiled, general):
    assert len(compiled) == len(general)
    for a, b in zip(compiled, general):
        for field in dataclasses.fields(a):
            x, y = getattr(a, field.name), getattr(b, field.name)
            if isinstance(x, np.ndarray):
                assert x.dtype == y.dtype, field.name
                np.testing.assert_array_equal(x, y, err_msg=field.name)
            else:
                assert x == y, field.name


def many_categories(n=5000, seed=2):
    """(X DataFrame: a categorical feature "c" of 700 categories (left sets
    past bin 255) and a numerical "x", both with missing values; binary y)."""
    rng = np.random.RandomState(seed)
    codes = rng.randint(0, 700, n).astype(float)
    effect = rng.normal(size=700)
    X = pd.DataFrame({"c": pd.Categorical(codes, categories=np.arange(700.0)),
                      "x": rng.normal(size=n)})
    X.loc[rng.rand(n) < 0.05, "c"] = np.nan
    X.loc[rng.rand(n) < 0.05, "x"] = np.nan
    y = (effect[codes.astype(int)] + 0.3 * X["x"].fillna(0) + rng.normal(0, 0.5, n) > 0)
    return X, y.astype(int)


def regression_data(n=3000, seed=0):
    """(X float64 (n, 5) with 8% missing values, y float64 (n,))."""
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, 5))
    X[rng.rand(n, 5) < 0.08] = np.nan
    y = np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1]) ** 2 + rng.normal(0, 0.3, n)
    return X, y


def check_categorical_subsets(fit_both_steps, make):
    """Compiled and general steps (``fit_both_steps(make, X, y)``) grow the
    same trees on :func:`many_categories`, with subsets past bin 255."""
    X, y = many_categories()
    compiled, general, n_calls = fit_both_steps(make, X, y)
    assert n_calls > 0
    assert any((t.cat_n_words > 0).any() for t in compiled)     # subsets past bin 255
    assert_same_trees(compiled, general)


def check_multiclass(fit_both_steps, make):
    """Compiled and general steps grow the same trees for three classes."""
    X, y = regression_data(seed=3)
    classes = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))
    compiled, general, n_calls = fit_both_steps(make, X, classes)
    assert n_calls > 0
    assert_same_trees(compiled, general)


def check_pool_grown_during_the_tree(fit_both_steps, make, monkeypatch):
    """A histogram pool that reserves no rows up front grows while the
    compiled steps hand its rows out (the last scan's outputs kept across)."""
    from gputree.growth import histogram_pool
    monkeypatch.setattr(histogram_pool, "_POOL_RESERVE_BYTES", 0)
    X, y = regression_data(seed=4)
    compiled, general, n_calls = fit_both_steps(make, X, y)
    assert n_calls > 0
    assert_same_trees(compiled, general)


def boosting(estimator, **params):
    """``make``: a callable giving a 4-round CPU boosting ``estimator``
    (a gputree class name) with ``params``."""
    settings = dict(n_estimators=4, device="cpu", random_state=0, early_stopping=False)
    settings.update(params)
    return lambda: getattr(gputree, estimator)(**settings)
