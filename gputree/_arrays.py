"""Device arrays (cupy, or anything with ``__cuda_array_interface__``) next
to numpy ones: telling them apart, bringing one to the host, and returning
results in the kind of array a caller passed."""
import functools
from collections.abc import Iterator

import numpy as np


def _device_to_host(X):
    try:
        import cupy
        return cupy.asnumpy(cupy.asarray(X))
    except ImportError as exc:
        raise TypeError("X is a device array but cupy is not installed; "
                        "install gputree[cuda] or pass a numpy array.") from exc


def is_device_array(X):
    """True for GPU arrays: cupy, or anything with ``__cuda_array_interface__``."""
    return hasattr(X, "__cuda_array_interface__") and not isinstance(X, np.ndarray)


def to_host(array):
    """numpy version of a host or device array (a copy only for device arrays)."""
    return _device_to_host(array) if is_device_array(array) else np.asarray(array)


def host_values(values):
    """numpy version of a host or device array, or of a pandas Series or
    Index (its ``to_numpy()``): a partition's vector on a worker."""
    return to_host(getattr(values, "to_numpy", lambda: values)())


def returns_input_kind(method):
    """Decorator for predict-like methods ``f(self, X, ...)``: when X is a
    device array, results (arrays, lists of arrays, or a generator of them)
    come back as cupy arrays."""
    def convert(result):
        import cupy
        if isinstance(result, list):
            return [cupy.asarray(r) for r in result]
        return cupy.asarray(result)

    @functools.wraps(method)
    def wrapper(self, X, *args, **kwargs):
        result = method(self, X, *args, **kwargs)
        if not is_device_array(X):
            return result
        if isinstance(result, Iterator):  # staged predictions
            return map(convert, result)
        return convert(result)
    return wrapper

