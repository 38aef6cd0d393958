"""Input validation: turning user inputs (numpy, pandas, lists) into checked
arrays, with errors that say what is wrong, where, and how to fix it.

``FeatureEncoder`` owns the mapping from a user's ``X`` to a float array:
feature names, pandas ``category`` columns (their codes, matched by category
value at predict time), and the categorical mask.
"""
import functools
import numbers
from collections.abc import Iterator

import numpy as np


def _is_dataframe(X):
    return hasattr(X, "columns") and hasattr(X, "dtypes") and hasattr(X, "iloc")


def _reject_sparse(X, name):
    if hasattr(X, "toarray") or hasattr(X, "tocsr"):
        raise TypeError(f"{name} is a sparse matrix; gputree needs dense targets. "
                        f"Convert it with {name}.toarray().")


def as_float_2d(X, name="X"):
    """Checked 2-D float array (float32 kept, anything else -> float64); a
    scipy.sparse X becomes a checked CSC float64 matrix (see gputree.sparse)."""
    from .sparse import check_sparse, is_sparse
    if is_sparse(X):
        return check_sparse(X, name)
    if hasattr(X, "__cuda_array_interface__") and not isinstance(X, np.ndarray):
        X = _device_to_host(X)
    try:
        array = np.asarray(X)
    except Exception as exc:  # ragged lists and similar
        raise ValueError(f"{name} could not be converted to an array: {exc}") from exc
    if np.iscomplexobj(array):
        raise ValueError(f"Complex data not supported in {name}; pass real numbers.")
    if array.ndim != 2:
        raise ValueError(
            f"Expected 2D array for {name}, got {array.ndim}D array instead "
            f"(shape {array.shape}). Reshape your data either using "
            f"{name}.reshape(-1, 1) if it has a single feature or "
            f"{name}.reshape(1, -1) if it contains a single sample.")
    if array.dtype.kind not in "fiub":
        try:
            array = array.astype(np.float64)
        except (TypeError, ValueError) as exc:
            # keep numpy's exception type: TypeError for objects such as dicts
            raise type(exc)(
                f"{name} has non-numeric values ({exc}). Encode text columns as "
                "numbers, or pass a pandas DataFrame with 'category' columns.") from exc
    if array.dtype not in (np.float32, np.float64):
        array = array.astype(np.float64)
    if array.shape[1] == 0:
        raise ValueError(f"Found array with 0 feature(s) (shape={array.shape}) "
                         "while a minimum of 1 is required.")
    if array.shape[0] == 0:
        raise ValueError(f"Found array with 0 sample(s) (shape={array.shape}) "
                         "while a minimum of 1 is required.")
    return array


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


def to_numpy(array):
    """numpy version of a host or device array (a copy only for device arrays)."""
    return _device_to_host(array) if is_device_array(array) else np.asarray(array)


def device_matrix(X, xp, name="X"):
    """A device array as a checked 2-D float array of ``xp`` (cupy), used in
    place: no host copy."""
    array = xp.asarray(X)
    if array.ndim != 2:
        raise ValueError(f"Expected 2D array for {name}, got {array.ndim}D array instead "
                         f"(shape {array.shape}).")
    if 0 in array.shape:
        raise ValueError(f"Found array with shape {array.shape}; {name} needs at least "
                         "1 sample and 1 feature.")
    if array.dtype.kind not in "fiub":
        raise TypeError(f"{name} has dtype {array.dtype}; pass real numbers.")
    if array.dtype not in (np.float32, np.float64):
        array = array.astype(np.float64)
    return array


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


class FeatureEncoder:
    """Learn the feature layout at fit; encode X identically at predict.

    categorical_features : None, array of int indices, array of str names or
        bool mask (n_features,). pandas ``category`` columns are always
        categorical.
    """

    def __init__(self, categorical_features=None):
        self.categorical_features = categorical_features

    def fit_transform(self, X, device_xp=None):
        """Returns float array (n_samples, n_features), NaN for missing.

        With ``device_xp`` (cupy, on the CUDA backend), a device array X is
        checked and returned as a device array, without a host copy."""
        self.feature_names_in_ = None
        self.categories_ = {}
        if device_xp is not None and is_device_array(X):
            array = device_matrix(X, device_xp)
            self.n_features_in_ = array.shape[1]
            self.is_categorical_ = self._categorical_mask(array.shape[1])
            return array
        if _is_dataframe(X):
            self.feature_names_in_ = np.asarray([str(c) for c in X.columns], dtype=object)
            self.categories_ = {i: X.iloc[:, i].cat.categories
                                for i, dtype in enumerate(X.dtypes)
                                if getattr(dtype, "name", "") == "category"}
        array = self._encode(X)
        self.n_features_in_ = array.shape[1]
        self.is_categorical_ = self._categorical_mask(array.shape[1])
        return array

    def transform(self, X, estimator_name="the model", device_xp=None):
        """Encode X for prediction; checks feature count and names (a device
        array stays on the device when ``device_xp`` is given)."""
        if device_xp is not None and is_device_array(X):
            array = device_matrix(X, device_xp)
            self._check_n_features(array, estimator_name)
            return array
        if _is_dataframe(X) and self.feature_names_in_ is not None:
            names = [str(c) for c in X.columns]
            unknown = [n for n in names if n not in set(self.feature_names_in_)]
            missing = [n for n in self.feature_names_in_ if n not in set(names)]
            if unknown or missing:
                raise ValueError(
                    "The feature names should match those that were passed during fit. "
                    f"Feature names unseen at fit time: {unknown}. Feature names seen "
                    f"at fit time, yet now missing: {missing}. Pass the same columns.")
            if names != list(self.feature_names_in_):
                raise ValueError(
                    "The feature names should match those that were passed during fit, "
                    "in the same order. Reorder the columns with "
                    "X[estimator.feature_names_in_].")
        array = self._encode(X)
        self._check_n_features(array, estimator_name)
        return array

    def _check_n_features(self, array, estimator_name):
        if array.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {array.shape[1]} features, but {estimator_name} is expecting "
                f"{self.n_features_in_} features as input. Pass the same columns "
                "as at fit.")

    def _encode(self, X):
        if not _is_dataframe(X):
            return as_float_2d(X)
        columns = []
        for i, name in enumerate(X.columns):
            column = X.iloc[:, i]
            if i in self.categories_:
                columns.append(self._category_codes(column, i))
            elif column.dtype.kind in "fiub":
                columns.append(column.to_numpy(dtype=np.float64, na_value=np.nan))
            else:
                raise ValueError(
                    f"Column {name!r} has dtype {column.dtype}, which is neither numeric "
                    "nor 'category'. Convert it with X[col].astype('category') or to numbers.")
        return as_float_2d(np.column_stack(columns) if columns else np.empty((len(X), 0)))

    def _category_codes(self, column, i):
        """Codes in the fit-time category order; unseen categories -> NaN."""
        fitted = self.categories_[i]
        if getattr(column.dtype, "name", "") == "category":
            values = column.astype(object).to_numpy()
        else:
            values = column.to_numpy(dtype=object)
        codes = fitted.get_indexer(values).astype(np.float64)
        codes[codes < 0] = np.nan
        return codes

    def _categorical_mask(self, n_features):
        mask = np.zeros(n_features, dtype=bool)
        mask[list(self.categories_)] = True
        spec = self.categorical_features
        if spec is None:
            return mask
        spec = np.asarray(spec)
        if spec.dtype == bool:
            if spec.shape != (n_features,):
                raise ValueError(f"categorical_features as a boolean mask must have "
                                 f"shape ({n_features},), got {spec.shape}.")
            return mask | spec
        for item in spec.ravel():
            mask[self._feature_index(item, n_features)] = True
        return mask

    def _feature_index(self, item, n_features):
        if isinstance(item, np.generic):
            item = item.item()      # plain int / str, also in error messages
        if isinstance(item, (str, np.str_)):
            if self.feature_names_in_ is None or item not in list(self.feature_names_in_):
                raise ValueError(f"categorical_features names {item!r}, which is not a "
                                 "column of X (names need a pandas DataFrame).")
            return list(self.feature_names_in_).index(item)
        if isinstance(item, numbers.Integral) and -n_features <= int(item) < n_features:
            return int(item)
        raise ValueError(f"categorical_features entry {item!r} is not a feature index "
                         f"in [0, {n_features}) nor a column name.")


def check_y(y, n_samples, name="y", allow_2d=True):
    """Checked y: numpy array (n_samples,) or (n_samples, n_outputs)."""
    if y is None:
        raise ValueError(f"{name} is required: this estimator needs targets to fit "
                         "(requires y to be passed, but the target y is None).")
    _reject_sparse(y, name)
    if hasattr(y, "__cuda_array_interface__") and not isinstance(y, np.ndarray):
        y = _device_to_host(y)
    y = np.asarray(y)
    if y.ndim == 0 or y.ndim > 2 or (y.ndim == 2 and not allow_2d):
        raise ValueError(f"{name} must be 1-D (n_samples,)"
                         f"{' or 2-D (n_samples, n_outputs)' if allow_2d else ''}; "
                         f"got shape {y.shape}.")
    if y.shape[0] != n_samples:
        raise ValueError(f"Found input variables with inconsistent numbers of samples: "
                         f"X has {n_samples} rows but {name} has {y.shape[0]}.")
    if y.dtype.kind in "fc":
        bad = ~np.isfinite(y)
        if bad.any():
            rows = np.flatnonzero(bad.reshape(y.shape[0], -1).any(axis=1))
            raise ValueError(
                f"{name} contains NaN or infinity at rows {rows[:5].tolist()}"
                f"{' ...' if rows.size > 5 else ''} ({rows.size} rows). Targets must be "
                "finite: drop or impute those rows.")
    return y


def check_sample_weight(sample_weight, n_samples):
    """float64 (n_samples,) weights, all finite, >= 0, not all zero."""
    if sample_weight is None:
        return np.ones(n_samples, dtype=np.float64)
    if isinstance(sample_weight, numbers.Number):
        sample_weight = np.full(n_samples, float(sample_weight))
    w = np.asarray(to_numpy(sample_weight), dtype=np.float64)
    if w.ndim != 1 or w.shape[0] != n_samples:
        raise ValueError(f"sample_weight.shape == {w.shape}, expected ({n_samples},): "
                         "one weight per row of X.")
    if not np.all(np.isfinite(w)):
        raise ValueError("sample_weight contains NaN or infinity; weights must be finite.")
    if np.any(w < 0):
        rows = np.flatnonzero(w < 0)[:5].tolist()
        raise ValueError(f"Negative values in data passed to sample_weight (rows {rows}); "
                         "weights must be >= 0.")
    if not np.any(w > 0):
        raise ValueError("sample_weight is zero for every row; at least one row needs "
                         "a positive weight.")
    check_sum_range(w, "sample_weight", "this does not change the tree")
    return w


#: float64's smallest normal and largest finite numbers
_TINY = float(np.finfo(np.float64).tiny)
_HUGE = float(np.finfo(np.float64).max)


def _power_of_two_fix(largest):
    """``2**j`` as text, with ``largest * 2**j`` about 1."""
    return f"2**{-np.frexp(largest)[1] + 1}"


def check_sum_range(values, name, effect):
    """Values (n_samples, ...) float64 whose sum over rows gputree forms in
    float64: raise a ValueError naming ``name`` and the fix (multiply by a
    power of two, whose ``effect`` it states) when that sum can overflow or
    the largest value is subnormal (below 2**-1022, where float64 loses
    bits)."""
    check_magnitude(float(np.max(np.abs(values), initial=0.0)), values.shape[0], name,
                    name, effect)


def check_magnitude(largest, n, name, what, effect):
    """The check of :func:`check_sum_range` for ``n`` values of ``what`` (an
    expression of argument ``name``) whose largest magnitude is ``largest``."""
    fix = (f"Multiply {name} by a power of two such as {_power_of_two_fix(largest)} "
           f"({effect}).") if 0.0 < largest < np.inf else f"Pass finite {name}."
    if not np.isfinite(largest) or largest > _HUGE / max(n, 1):
        raise ValueError(f"{name} is too large: the sum of {what} over {n} rows overflows "
                         f"float64 (largest |{what}| = {largest:.3g}). {fix}")
    if 0.0 < largest < _TINY:
        raise ValueError(f"{name} is too small: the largest |{what}| is {largest:.3g}, below "
                         "float64's normal range (2**-1022), where it loses precision. " + fix)


def check_target_range(y, sample_weight, name="y"):
    """Squared-error statistics square ``y``: raise, naming ``name`` and the
    fix, when ``sample_weight * y**2`` summed over rows overflows, or falls
    below float64's normal range while y is not all zero. y float64
    (n_samples, n_outputs); sample_weight (n_samples,)."""
    effect = "the tree is the same and its predictions scale by the same factor"
    check_sum_range(y, name, effect)
    largest_y = float(np.max(np.abs(y), initial=0.0))
    if largest_y == 0.0:
        return
    with np.errstate(over="ignore", under="ignore"):
        second = float(np.max(sample_weight)) * largest_y * largest_y
    if 0.0 < second < np.inf:
        check_magnitude(second, y.shape[0], name, f"sample_weight * {name}**2", effect)
        return
    raise ValueError(
        f"{name} is too {'large' if second else 'small'}: sample_weight * {name}**2 "
        f"{'overflows' if second else 'underflows'} float64 (largest |{name}| = "
        f"{largest_y:.3g}). Multiply {name} by a power of two such as "
        f"{_power_of_two_fix(largest_y)} ({effect}).")


def check_int(value, name, low, high=None, allow_none=False):
    """Validated integer parameter in [low, high]."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {value!r} ({type(value).__name__}).")
    if value < low or (high is not None and value > high):
        bound = f"[{low}, {high}]" if high is not None else f">= {low}"
        raise ValueError(f"{name} must be {bound}, got {value}.")
    return int(value)


def check_float(value, name, low, high=None, low_open=False):
    """Validated real parameter."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {value!r} ({type(value).__name__}).")
    value = float(value)
    if not np.isfinite(value) or value < low or (low_open and value == low) or (
            high is not None and value > high):
        raise ValueError(f"{name} must be in {'(' if low_open else '['}{low}, "
                         f"{high if high is not None else 'inf'}], got {value}.")
    return value


def check_choice(value, name, choices):
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {sorted(choices)}, got {value!r}.")
    return value


def check_random_state(seed):
    """numpy RandomState from None, an int or a RandomState."""
    if seed is None:
        return np.random.RandomState()
    if isinstance(seed, np.random.RandomState):
        return seed
    if isinstance(seed, numbers.Integral) and not isinstance(seed, bool):
        return np.random.RandomState(int(seed))
    raise ValueError(f"random_state must be None, an int or a numpy RandomState, got {seed!r}.")


#: boosting squares gradient sums: they stay within 2**-BOOSTING_EXPONENT
#: to 2**BOOSTING_EXPONENT so that the squares are normal float64 numbers
BOOSTING_EXPONENT = 500


def check_boosting_range(y_magnitude, sample_weight, name):
    """Boosting's gains square gradient sums, about ``sample_weight * y``
    (``y_magnitude`` float: max |y| for regression, 1 for classification):
    raise a ValueError naming ``name`` and a power-of-two fix when the
    largest ``sample_weight * y`` times n_samples leaves
    [2**-500, 2**500], where a square would lose bits or overflow."""
    largest = float(np.max(sample_weight)) * y_magnitude
    bound = largest * sample_weight.shape[0]
    low, high = 2.0 ** -BOOSTING_EXPONENT, 2.0 ** BOOSTING_EXPONENT
    if largest < low or bound > high:
        raise ValueError(
            f"{name} is out of boosting's range: gradient sums reach about {bound:.3g}, and "
            "gains square them, which float64 holds exactly only between 2**-1000 and "
            f"2**1000. Multiply {name} by a power of two such as "
            f"{_power_of_two_fix(bound)} (the trees are the same; predictions scale with y; "
            "reg_lambda, min_child_weight and gamma are in units of the weights).")
