"""Checks of what a user passes besides X: estimator parameters (ints,
floats, choices, seeds), targets ``y`` and ``sample_weight``, and the
magnitudes whose sums gputree forms in float64, with errors that say what is
wrong, where, and how to fix it."""
import numbers

import numpy as np

from .._arrays import to_host


def _reject_sparse(X, name):
    if hasattr(X, "toarray") or hasattr(X, "tocsr"):
        raise TypeError(f"{name} is a sparse matrix; gputree needs dense targets. "
                        f"Convert it with {name}.toarray().")


def check_y(y, n_samples, name="y", allow_2d=True):
    """Checked y: numpy array (n_samples,) or (n_samples, n_outputs)."""
    if y is None:
        raise ValueError(f"{name} is required: this estimator needs targets to fit "
                         "(requires y to be passed, but the target y is None).")
    _reject_sparse(y, name)
    y = to_host(y)
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
    w = np.asarray(to_host(sample_weight), dtype=np.float64)
    if w.ndim == 0:
        raise TypeError("sample_weight: Input should have at least 1 dimension i.e. satisfy "
                        f"`len(x.shape) > 0`, got scalar `{w!r}` instead. Give one weight "
                        "per row of X (or a number for all).")
    if w.ndim != 1 or w.shape[0] != n_samples:
        raise ValueError(f"sample_weight.shape == {w.shape}, expected ({n_samples},): "
                         "one weight per row of X.")
    check_weight_values(w)
    if not np.any(w > 0):
        raise ValueError("sample_weight is zero for every row; at least one row needs "
                         "a positive weight.")
    check_sum_range(w, "sample_weight", "this does not change the tree")
    return w


def check_weight_values(w, first_row=0):
    """Every weight of float64 ``w`` (n,) finite and >= 0 (``first_row``:
    the global row of w[0], for the message)."""
    if not np.all(np.isfinite(w)):
        raise ValueError("sample_weight contains NaN or infinity; weights must be finite.")
    if np.any(w < 0):
        rows = (np.flatnonzero(w < 0)[:5] + first_row).tolist()
        raise ValueError(f"Negative values in data passed to sample_weight (rows {rows}); "
                         "weights must be >= 0.")


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
    check_boosting_range_of(y_magnitude, float(np.max(sample_weight)), sample_weight.shape[0],
                            name)


def check_boosting_range_of(y_magnitude, largest_weight, n_samples, name):
    """:func:`check_boosting_range` from the largest weight and the number
    of rows."""
    largest = largest_weight * y_magnitude
    bound = largest * n_samples
    low, high = 2.0 ** -BOOSTING_EXPONENT, 2.0 ** BOOSTING_EXPONENT
    if largest < low or bound > high:
        raise ValueError(
            f"{name} is out of boosting's range: gradient sums reach about {bound:.3g}, and "
            "gains square them, which float64 holds exactly only between 2**-1000 and "
            f"2**1000. Multiply {name} by a power of two such as "
            f"{_power_of_two_fix(bound)} (the trees are the same; predictions scale with y; "
            "reg_lambda, min_child_weight and gamma are in units of the weights).")
