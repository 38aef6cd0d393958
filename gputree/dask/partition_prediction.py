"""Predictions of a Dask collection's partitions, on the workers: each
task gets the fitted model's
:class:`gputree.estimators.prediction.Predictor` and one partition, so a
worker loads neither the estimator classes nor scikit-learn to predict
(nor to fit: :mod:`gputree.dask` loads its estimators on first use)."""
import numpy as np

from ..backends import get_backend
from .backend import use_worker_threads


def model_backend(device):
    """The backend of a fitted model in this process (driver or worker):
    ``device`` where it starts here, else the CPU (same results)."""
    try:
        return get_backend(device)
    except Exception:  # noqa: BLE001 - a GPU device on a driver without a GPU
        return get_backend("cpu")


def predict_part(part, predictor, method, width):
    """``method`` of the fitted model's ``predictor`` on one partition (n,
    n_features) of a dask array or DataFrame, on the worker's device: host
    numpy (n,), or (n, width)."""
    use_worker_threads()
    if part.shape[0] == 0:
        return np.empty((0,) if width is None else (0, width))
    return predictor(model_backend(predictor.device), method, part)


def predict_frame(frame, predictor, method, width):
    """:func:`predict_part` of a DataFrame partition, as a pandas Series
    (one value per row) or DataFrame (``width`` columns) on its index."""
    import pandas as pd
    result = predict_part(frame, predictor, method, width)
    if result.ndim == 1:
        return pd.Series(result, index=frame.index)
    return pd.DataFrame(result, index=frame.index)
