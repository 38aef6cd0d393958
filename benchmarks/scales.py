"""Scale robustness: gputree's trees and boosting at target and weight
scales from 1e-300 to 1e300 (2,000 rows x 5 normal features, depth-3 trees,
20 boosted trees), printing R^2 / accuracy or the error raised.

    PYTHONPATH=. python benchmarks/scales.py
"""
import warnings

import numpy as np
from sklearn.metrics import r2_score

import gputree


def _score(make, X, y, w=None, unit=1.0):
    """Accuracy, or R^2 of y / unit (so that no square underflows)."""
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = make().fit(X, y, sample_weight=w)
            if unit == 1.0:
                score = model.score(X, y)
            else:
                score = r2_score(y / unit, model.predict(X) / unit)
        note = f" [{len(caught)} warning(s): {str(caught[0].message)[:60]}]" if caught else ""
        return f"{score:.3f}{note}"
    except Exception as exc:  # the point is to show what a user would see
        return f"{type(exc).__name__}: {str(exc)[:70]}"


def main():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(2000, 5))
    tree_r = lambda: gputree.DecisionTreeRegressor(max_depth=3)  # noqa: E731
    tree_c = lambda: gputree.DecisionTreeClassifier(max_depth=3)  # noqa: E731
    boost_r = lambda: gputree.GradientBoostingRegressor(  # noqa: E731
        n_estimators=20, max_depth=3, early_stopping=False)
    for s in (1.0, 1e-9, 1e-20, 1e-100, 1e-300, 1e100, 1e200, 1e300):
        y = X[:, 0] * s
        print(f"targets x{s:g}: tree R2 {_score(tree_r, X, y, unit=s)}; "
              f"boosting R2 {_score(boost_r, X, y, unit=s)}")
    yc = (X[:, 0] > 0).astype(int)
    for wv in (1.0, 1e18, 1e20, 1e100, 1e-300):
        w = np.full(X.shape[0], wv)
        print(f"weights all {wv:g}: classifier acc {_score(tree_c, X, yc, w)}; "
              f"regressor R2 {_score(tree_r, X, X[:, 0], w)}")


if __name__ == "__main__":
    main()
