"""What estimators do with a :class:`gputree.data.dataset.Dataset` or a
chunk iterator: ``fit(dataset)`` takes y and sample_weight from the Dataset
(explicit arguments win) and its bins instead of binning X; predict-like
methods stream a Dataset block by block, or an iterator of chunks chunk by
chunk, and return the results of every row, in order."""
import functools
import inspect
from collections.abc import Iterator

import numpy as np

from ..data.dataset import BinnedRows, Dataset

#: predict-like methods that accept a Dataset or an iterator of chunks
STREAMED_METHODS = ("predict", "predict_proba", "predict_log_proba", "decision_function",
                    "apply")

#: rows of a Dataset predicted at a time
PREDICT_BLOCK_ROWS = 262_144


def wrap_dataset_methods(cls):
    """Let the ``fit`` and predict-like methods ``cls`` defines itself take a
    Dataset (called from ``__init_subclass__``)."""
    fit = cls.__dict__.get("fit")
    if callable(fit) and not getattr(fit, "_takes_dataset", False):
        cls.fit = takes_dataset(fit)
    for name in STREAMED_METHODS:
        method = cls.__dict__.get(name)
        if callable(method) and not getattr(method, "_streams", False):
            setattr(cls, name, streams(method))


def takes_dataset(fit):
    """``fit(X, y, ..., sample_weight, ...)`` wrapper: with a Dataset X, a
    missing y (None) and sample_weight come from the Dataset, and a
    ranker's missing qid (and group) its query ids."""
    signature = inspect.signature(fit)

    @functools.wraps(fit)
    def wrapper(self, X, *args, **kwargs):
        if not isinstance(X, Dataset):
            return fit(self, X, *args, **kwargs)
        bound = signature.bind_partial(self, X, *args, **kwargs)
        given = bound.arguments
        if given.get("y") is None:
            if X.label is None:
                raise ValueError("y is required: the Dataset has no label. Pass fit(dataset, y) "
                                 "or build the Dataset with label=...")
            given["y"] = X.label
        if X.weight is not None and given.get("sample_weight") is None:
            if not self._row_sample_weight:
                raise ValueError(f"{type(self).__name__}'s sample_weight is not one weight per "
                                 "row; build the Dataset without weight and pass "
                                 "sample_weight to fit.")
            given["sample_weight"] = X.weight
        if (getattr(X, "qid", None) is not None and "qid" in signature.parameters
                and given.get("qid") is None and given.get("group") is None):
            given["qid"] = X.qid        # a ranker's queries
        return fit(*bound.args, **bound.kwargs)
    wrapper._takes_dataset = True
    return wrapper


def streams(method):
    """Predict-like ``method(X, ...)`` wrapper: a Dataset X is predicted
    block by block on its binned codes, an iterator of chunks (arrays,
    DataFrames, or tuples whose first item is X) chunk by chunk, chunks of
    no rows skipped."""
    @functools.wraps(method)
    def wrapper(self, X, *args, **kwargs):
        if isinstance(X, Dataset):
            self._check_fitted()
            blocks = (BinnedRows(data) for data in X.blocks_for(
                self._encoder, self._bin_mapper, self._backend, type(self).__name__,
                PREDICT_BLOCK_ROWS))
        elif isinstance(X, Iterator):
            blocks = (chunk for chunk in (c[0] if isinstance(c, tuple) else c for c in X)
                      if len(chunk))
        else:
            return method(self, X, *args, **kwargs)
        return _stacked([method(self, block, *args, **kwargs) for block in blocks])
    wrapper._streams = True
    return wrapper


def _stacked(results):
    """The per-block results (arrays, or lists of arrays) stacked by rows."""
    if not results:
        raise ValueError("The chunk iterator gave no chunks; there is nothing to predict.")
    if isinstance(results[0], list):
        return [np.concatenate(parts) for parts in zip(*results)]
    return np.concatenate(results)
