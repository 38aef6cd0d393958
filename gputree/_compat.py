"""scikit-learn base classes when scikit-learn is installed, minimal stand-ins
otherwise (gputree itself needs only numpy and numba)."""
import inspect

try:  # pragma: no cover - exercised when scikit-learn is installed
    from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
except ImportError:  # pragma: no cover
    class BaseEstimator:
        """get_params / set_params from the __init__ signature."""

        @classmethod
        def _get_param_names(cls):
            signature = inspect.signature(cls.__init__)
            return sorted(p for p in signature.parameters if p != "self")

        def get_params(self, deep=True):
            return {name: getattr(self, name) for name in self._get_param_names()}

        def set_params(self, **params):
            valid = self._get_param_names()
            for key, value in params.items():
                if key not in valid:
                    raise ValueError(f"Invalid parameter {key!r} for {type(self).__name__}; "
                                     f"valid parameters are {valid}.")
                setattr(self, key, value)
            return self

        def __repr__(self):
            args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
            return f"{type(self).__name__}({args})"

    class ClassifierMixin:
        _estimator_type = "classifier"

        def score(self, X, y, sample_weight=None):
            """Accuracy; with several outputs a row is right when all are."""
            import numpy as np
            weights = None if sample_weight is None else np.asarray(sample_weight)
            y = np.asarray(y)
            right = (self.predict(X) == y).reshape(y.shape[0], -1).all(axis=1)
            return float(np.average(right, weights=weights))

    class RegressorMixin:
        _estimator_type = "regressor"

        def score(self, X, y, sample_weight=None):
            import numpy as np
            y = np.asarray(y, dtype=float)
            w = np.ones(len(y)) if sample_weight is None else np.asarray(sample_weight)
            pred = self.predict(X)
            residual = np.average((y - pred) ** 2, weights=w, axis=0)
            total = np.average((y - np.average(y, weights=w, axis=0)) ** 2, weights=w, axis=0)
            return float(np.mean(1 - residual / total))


class NotFittedError(ValueError, AttributeError):
    """Raised when predicting with an estimator that was not fitted."""


try:  # use scikit-learn's class so that its checks recognise the error
    from sklearn.exceptions import NotFittedError  # noqa: F811
except ImportError:  # pragma: no cover
    pass
