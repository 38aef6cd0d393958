"""User-supplied boosting callables: a custom objective (gradients and
hessians) and a custom evaluation metric for early stopping, with the
conventions of LightGBM's scikit-learn API.

* objective: ``loss=func`` with ``func(y_true, raw) -> (grad, hess)``.
  ``y_true`` float64 (n,): the target for regressors, the class code
  0..K-1 (index into ``classes_``) for classifiers; ``raw`` float64 (n,)
  raw scores, or (n, K) for more than two classes. ``grad`` and ``hess``
  have raw's shape and are the unweighted first and second derivatives of
  the loss of each row with respect to its raw score; gputree multiplies
  them by the sample weights (as it does for its own losses). Raw scores
  start at 0 (LightGBM's choice for custom objectives); predictions are the
  raw scores for regressors and sigmoid / softmax of them for classifiers,
  and the ``loss`` scores recorded in ``train_score_`` are those of the
  squared error / log-loss.
* eval metric: ``eval_metric=func`` with ``func(y_true, y_pred,
  sample_weight)`` returning a float (lower is better, XGBoost's
  convention) or LightGBM's ``(name, value, is_higher_better)``. ``y_pred``
  is what LightGBM passes: the predicted value for regressors, the
  probability of ``classes_[1]`` (n,) or the class probabilities (n, K)
  for classifiers, and the raw scores under a custom objective. It scores
  the validation rows (``eval_set`` or ``validation_fraction``) every round
  and early stopping watches it instead of ``scoring``.
"""
import numpy as np

from .._dtypes import FLOAT_DTYPE
from .losses import Loss


class CustomObjective(Loss):
    """A Loss whose derivatives come from a user callable; ``base`` (the
    squared error or log-loss) gives targets, predictions and loss values."""

    name = "custom"
    #: raw scores start at 0 whatever the targets (LightGBM's choice)
    baseline_from_targets = False

    def __init__(self, func, base):
        self.func, self.base = func, base
        self.n_outputs = base.n_outputs
        self.is_classification = base.is_classification
        self.link = base.link

    def targets(self, xp, y):
        return self.base.targets(xp, y)

    def init_raw(self, y, w):
        return np.zeros(self.n_outputs)

    def _derivatives(self, xp, y, raw):
        y_host, raw_host = (np.asarray(a if xp is np else a.get()) for a in (y, raw))
        y_true = y_host[:, 0] if self.n_outputs == 1 else np.argmax(y_host, axis=1)
        shown = raw_host[:, 0] if self.n_outputs == 1 else raw_host
        result = self.func(y_true.astype(FLOAT_DTYPE), shown.copy())
        if not isinstance(result, tuple) or len(result) != 2:
            raise ValueError("The custom objective (loss=callable) must return a pair (grad, "
                             f"hess); it returned {type(result).__name__}.")
        return tuple(xp.asarray(_derivative(d, name, raw_host.shape))
                     for d, name in zip(result, ("grad", "hess")))

    def pointwise(self, xp, y, raw):
        return self.base.pointwise(xp, y, raw)

    def predict(self, xp, raw):
        return self.base.predict(xp, raw)

    def __repr__(self):
        return f"CustomObjective({getattr(self.func, '__name__', self.func)!r})"


def _derivative(values, name, shape):
    """float64 ``shape`` (n, K) from a callable's (n,) or (n, K) output."""
    values = np.asarray(values, dtype=FLOAT_DTYPE)
    if values.size != shape[0] * shape[1] or values.ndim not in (1, 2) or (
            values.ndim == 2 and values.shape != shape):
        expected = f"({shape[0]},)" if shape[1] == 1 else f"{shape}"
        raise ValueError(f"The custom objective returned {name} of shape {values.shape}; it "
                         f"must have the raw scores' shape {expected}.")
    if not np.all(np.isfinite(values)):
        raise ValueError(f"The custom objective returned non-finite {name} values.")
    return values.reshape(shape)


def metric_score(metric, y_true, y_pred, sample_weight):
    """A "higher is better" score from ``metric(y_true, y_pred,
    sample_weight)``: a float is negated (lower is better), a tuple
    ``(name, value, is_higher_better)`` is read as LightGBM's."""
    result = metric(y_true, y_pred, sample_weight)
    if isinstance(result, tuple):
        if len(result) != 3:
            raise ValueError("eval_metric must return a float or (name, value, "
                             f"is_higher_better); it returned a {len(result)}-tuple.")
        return float(result[1]) if result[2] else -float(result[1])
    return -float(result)
