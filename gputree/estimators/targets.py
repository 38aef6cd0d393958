"""Targets as the estimators take them, for single trees and forests alike:
class labels encoded to indices (one column per output) with their class
weights (:class:`ClassTargets`), regression targets checked to be finite
numbers, non-negative with a positive sum for Poisson
(:class:`RegressionTargets`); each turns a row's weights into the
criterion's fixed-point statistics."""
import numpy as np

from ..criteria import (CLASSIFICATION_CRITERIA, POISSON, classification_statistics,
                        regression_statistics)
from ..data.validation import check_choice
from ..model import per_output, saved_int, saved_labels

#: the fitted attributes of a classifier's classes, as a saved model keeps
#: them: per output, the sorted labels and their number (gputree.model.Saved)
CLASS_ATTRIBUTES = {"classes_": per_output(saved_labels()), "n_classes_": per_output(saved_int(1))}


def as_float_targets(y):
    """Regression targets as float64, with a clear error for non-numbers."""
    try:
        y = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"y must hold numbers for regression: {exc}") from exc
    if not np.all(np.isfinite(y)):
        raise ValueError("y contains NaN or infinity; targets must be finite.")
    return y


def check_poisson_targets(y, strictly=True):
    """Poisson targets: none negative, a positive sum per output. The second
    message says "strictly positive" (scikit-learn's forests and boosting)
    or, ``strictly=False``, "positive" (scikit-learn's trees)."""
    if np.any(y < 0):
        raise ValueError("Some value(s) of y are negative which is not allowed for "
                         "Poisson regression (criterion='poisson').")
    if np.any(y.sum(axis=0) <= 0):
        raise ValueError(f"Sum of y is not {'strictly ' if strictly else ''}positive which is "
                         "necessary for Poisson regression (criterion='poisson'): it must be "
                         "> 0.")


def encode_labels(y):
    """(int32 (n_samples, n_outputs) class indices, list of class arrays,
    list of class counts); rejects continuous targets."""
    y2 = y if y.ndim == 2 else y.reshape(y.shape[0], -1)
    if y2.dtype.kind == "f" and np.any(y2 != np.round(y2)):
        raise ValueError("Unknown label type: continuous. Classification needs discrete "
                         "labels; use DecisionTreeRegressor for a continuous y.")
    encoded = np.empty(y2.shape, dtype=np.int32)
    classes = []
    for o in range(y2.shape[1]):
        column = y2[:, o]
        if column.dtype == object:
            column = column.astype(str) if any(isinstance(v, str) for v in column) else column
        values, encoded[:, o] = np.unique(column, return_inverse=True)
        classes.append(values)
    return encoded, classes, [len(c) for c in classes]


def class_weights(class_weight, y_encoded, classes, counts=None):
    """Per-row multiplier (float64 (n_samples,)) from class_weight;
    ``counts``: per output the int rows of each class among all the fit's
    rows (None: y_encoded is all of them)."""
    n_samples, n_outputs = y_encoded.shape
    factor = np.ones(n_samples)
    if class_weight is None:
        return factor
    n_total = n_samples
    if counts is None:
        counts = [np.bincount(y_encoded[:, o], minlength=len(classes[o]))
                  for o in range(n_outputs)]
    else:
        n_total = int(np.sum(counts[0]))
    for o, per_class in enumerate(class_factors(class_weight, counts, classes, n_total)):
        factor *= per_class[y_encoded[:, o]]
    return factor


def class_factors(class_weight, counts, classes, n_samples):
    """Per output, the float64 (n_classes,) multiplier of each class from
    class_weight (not None), given the classes' int row counts (per
    output) among ``n_samples`` rows."""
    n_outputs = len(classes)
    specs = class_weight if isinstance(class_weight, list) else [class_weight] * n_outputs
    if len(specs) != n_outputs:
        raise ValueError(f"The number of elements in class_weight should match number of "
                         f"outputs: class_weight is a list of {len(specs)} dicts but y has "
                         f"{n_outputs} outputs; give one dict per output.")
    factors = []
    for o, spec in enumerate(specs):
        n_classes = len(classes[o])
        if isinstance(spec, str):
            check_choice(spec, "class_weight", {"balanced"})
            per_class = n_samples / (n_classes * np.maximum(counts[o], 1))
        elif isinstance(spec, dict):
            per_class = np.ones(n_classes)
            known = list(classes[o].tolist())
            for label, value in spec.items():
                if label not in known:
                    raise ValueError(f"class_weight names class {label!r}, which is not "
                                     f"in y (classes: {known}).")
                per_class[known.index(label)] = value
        else:
            raise TypeError(f"class_weight must be None, 'balanced', a dict or a list of "
                            f"dicts; got {spec!r}.")
        factors.append(per_class)
    return factors


class ClassTargets:
    """Class labels of one fit: ``y`` int32 (n, n_outputs) class indices,
    ``classes`` (a list of class arrays, one per output), ``n_classes``, and
    the per-row factor of ``class_weight`` (None: all ones).

    ``class_weight="balanced_subsample"`` (forests: ``per_tree=True``)
    weighs the classes of each tree's sample, in :meth:`weights`.

    ``whole``: y is a part of the fit's rows (a Dask worker's), whose
    classes and class counts (per output, of every row) are given as
    ``(classes, counts)``; the codes and factors are then the whole's.
    """

    def __init__(self, y, class_weight, criterion, per_tree=False, whole=None):
        self.y, self.classes, self.n_classes = encode_labels(y)
        counts = None
        if whole is not None:
            classes, counts = whole
            self.y = np.stack([np.searchsorted(c, mine)[self.y[:, o]].astype(np.int32)
                               for o, (c, mine) in enumerate(zip(classes, self.classes))],
                              axis=1).reshape(self.y.shape)
            self.classes, self.n_classes = list(classes), [len(c) for c in classes]
        self.criterion = CLASSIFICATION_CRITERIA[criterion]
        self.per_bootstrap = (per_tree and isinstance(class_weight, str)
                              and class_weight == "balanced_subsample")
        self.factor = (None if self.per_bootstrap or class_weight is None
                       else class_weights(class_weight, self.y, self.classes, counts))

    @property
    def n_outputs(self):
        return self.y.shape[1]

    @property
    def value_shape(self):
        """(n_outputs, most classes of an output): a node value's shape."""
        return self.n_outputs, max(self.n_classes)

    def attributes(self):
        """``classes_`` and ``n_classes_`` (a column vector y is single-output)."""
        single = len(self.classes) == 1
        return {"classes_": self.classes[0] if single else self.classes,
                "n_classes_": self.n_classes[0] if single else self.n_classes}

    def check_same_classes(self, estimator):
        """Raise unless ``estimator`` (fitted before) has these classes."""
        previous = [estimator.classes_] if len(self.classes) == 1 else estimator.classes_
        if len(previous) != len(self.classes) or not all(
                np.array_equal(a, b) for a, b in zip(previous, self.classes)):
            raise ValueError("warm_start needs the same classes as the previous fit.")

    def weights(self, weight, counts=None, bags=None):
        """float64 (n,) weights of a tree: ``weight`` x ``counts`` (a
        bootstrap's; None: ones) x the class weights (either None: all ones;
        both None: ``counts`` itself). ``bags``: :meth:`in_bag` of every
        row's counts where these rows are a part of the fit's (None: of
        these rows)."""
        w = _product(weight, counts)
        w = w if self.factor is None else w * self.factor
        if self.per_bootstrap:
            total, in_bags = self.in_bag(counts) if bags is None else bags
            for o, k in enumerate(self.n_classes):
                per_class = np.divide(total, k * in_bags[o], out=np.zeros(k),
                                      where=in_bags[o] > 0)
                w = w * per_class[self.y[:, o]]
        return w

    def in_bag(self, counts):
        """(the bootstrap's draws, per output the float64 (n_classes,)
        draws of each class) of ``counts`` float64 (n,): whole numbers, so
        the parts' sums add up exactly to the whole's."""
        return counts.sum(), [np.bincount(self.y[:, o], weights=counts, minlength=k)
                              for o, k in enumerate(self.n_classes)]

    def statistics(self, w, scales=None):
        """The criterion's Statistics of weights ``w`` float64 (n,) (``scales``:
        see :func:`gputree.criteria.classification_statistics`)."""
        return classification_statistics(self.y, max(self.n_classes), w, self.criterion, scales)


class RegressionTargets:
    """Float targets of one fit, ``y`` float64 (n, n_outputs), for
    ``criterion`` (a regression :class:`gputree.criteria.Criterion`);
    ``attach``: the Statistics carry ``y`` as ``targets`` too, for a grower
    that splits on the targets themselves (:mod:`gputree.growth.median`).
    ``part``: y is a part of the fit's rows, checked as a whole elsewhere
    (Poisson's positive sum)."""

    def __init__(self, y, criterion, attach=False, part=False):
        y = as_float_targets(y)
        self.y, self.criterion = y if y.ndim == 2 else y.reshape(y.shape[0], -1), criterion
        self.attach = attach
        if criterion == POISSON and not part:
            check_poisson_targets(self.y)

    @property
    def n_outputs(self):
        return self.y.shape[1]

    @property
    def value_shape(self):
        return self.n_outputs, 1

    def attributes(self):
        return {}

    def check_same_classes(self, estimator):
        """Nothing to check: regression has no classes."""

    def weights(self, weight, counts=None, bags=None):
        """float64 (n,) ``weight`` x ``counts`` (``bags``: no class weights
        here; as :meth:`ClassTargets.weights`)."""
        return _product(weight, counts)

    def statistics(self, w, scales=None):
        stats = regression_statistics(self.y, w, self.criterion, scales)
        if self.attach:
            stats.targets = self.y
        return stats


def _product(weight, counts):
    """weight x counts, float64 (n,); either None is all ones (``counts``
    or ``weight`` itself when the other is None)."""
    if counts is None:
        return weight
    return counts if weight is None else weight * counts
