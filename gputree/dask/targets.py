"""The targets and sample weights of a boosting fit on the workers: cut to
the rows of X's partitions where they live, checked there, and known to the
driver only by per-partition summaries (the distinct labels and their
counts, the largest magnitudes, the number of positive weights), so that no
row-sized array reaches the driver.

The driver combines the summaries into what the one-machine fit computes
from the whole vectors: the classes (the distinct labels of the union of the
partitions' distinct labels), the class counts of ``class_weight=
"balanced"`` (integer sums), the largest |y| and weight of the range checks,
the rows that shape the bins.
"""
import warnings

import numpy as np

from .._arrays import host_values
from ..data.validation import check_magnitude, check_weight_values, check_y
from ..estimators.targets import as_float_targets, check_poisson_targets, encode_labels
from .partitions import computed_with_sizes


class VectorParts:
    """A vector of one entry per row of X held by the workers: ``parts``
    futures, one per partition of X, of host arrays of its rows."""

    def __init__(self, parts):
        self.parts = list(parts)

    def release(self):
        for part in self.parts:
            part.release()
        self.parts = []


def vector_parts(partitions, v, name):
    """VectorParts of ``v`` (a dask or host vector (n,) or column (n, 1))
    cut to the partitions of X (RowPartitions) on the workers; None for
    None. A host v is cut on the driver (it is there already). The cuts
    are not waited for: the tasks that use them wait (the summaries of
    :class:`WorkerTargets`, gathered at once)."""
    from .inputs import is_dask_collection
    if v is None:
        return None
    client = partitions.client
    if not is_dask_collection(v):
        v = host_values(v)
        _check_rows(v.shape[0] if v.ndim else 1, partitions.n_rows, name)
        return VectorParts(client.scatter(partitions.slices(v)))
    blocks, sizes = computed_with_sizes(client, _vector_blocks(v, name))
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    _check_rows(int(offsets[-1]), partitions.n_rows, name)
    parts = []
    for p in range(len(partitions.parts)):
        start, stop = int(partitions.offsets[p]), int(partitions.offsets[p + 1])
        held = [j for j in range(len(blocks)) if offsets[j] < stop and offsets[j + 1] > start]
        held = held or [min(int(np.searchsorted(offsets, start, "right")) - 1, len(blocks) - 1)]
        worker = partitions.workers[p]
        parts.append(client.submit(_cut, start - int(offsets[held[0]]), stop - start,
                                   *[blocks[j] for j in held],
                                   workers=[worker] if worker else None,
                                   allow_other_workers=True, pure=False))
    for block in blocks:       # held by the scheduler until the cuts have run
        block.release()
    return VectorParts(parts)


def _check_rows(n, n_rows, name):
    if n != n_rows:
        raise ValueError(f"{name} has {n} rows but X has {n_rows}; pass {name} with one "
                         "entry per row of X, in the same order.")


def _vector_blocks(v, name):
    """Delayed row blocks of a dask vector, column or series, in order."""
    if hasattr(v, "to_delayed") and hasattr(v, "npartitions") and not hasattr(v, "chunks"):
        return list(v.to_delayed())       # a dask Series or DataFrame
    if v.ndim == 1:
        return list(v.to_delayed().ravel())
    if v.ndim == 2:
        return list(v.rechunk({1: -1}).to_delayed()[:, 0])
    raise ValueError(f"{name} must be 1-D (n_samples,); got a {v.ndim}-D dask array.")


def _cut(start, length, *blocks):
    """Rows start .. start + length of the blocks' concatenation (host)."""
    host = [host_values(b) for b in blocks]
    joined = host[0] if len(host) == 1 else np.concatenate(host)
    return joined[start:start + length]


def _first_rows(y, offset):
    """y (n,) of one partition checked as check_y checks y; a message's rows
    counted from ``offset`` (the partition's first row)."""
    try:
        return check_y(y, y.shape[0])
    except ValueError as exc:
        raise ValueError(f"{exc} (rows counted from row {offset}, where the partition "
                         "starts)") from None


def target_summary(y, w, offset, classify, poisson, single=True):
    """What the driver needs of one partition's y (n,) or (n, n_outputs)
    (``single``: one output, boosting's) and weights (n,) or None: dict
    with ``column`` (a single output given as (n, 1)), for a classifier
    per output ``labels`` (distinct, as encode_labels sorts them) and
    ``counts`` (int64 rows of each), else ``largest_y`` and ``smallest_y``
    float64 (n_outputs,) (max |y|, min y); ``largest_w`` (max weight, 1
    without weights) and ``positive`` (rows of weight > 0)."""
    y = _first_rows(np.asarray(y), offset)
    summary = {"column": single and y.ndim == 2}
    if single and y.ndim == 2:
        if y.shape[1] != 1:
            raise ValueError(f"Gradient boosting fits a single target; y has {y.shape[1]} "
                             "columns. Fit one model per column.")
        y = y[:, 0]
    if classify:
        codes, labels, _ = encode_labels(y)
        summary.update(labels=labels, counts=[np.bincount(codes[:, o], minlength=len(known))
                                              for o, known in enumerate(labels)])
    else:
        y = as_float_targets(y).reshape(y.shape[0], -1)
        if poisson:
            check_poisson_targets(np.concatenate([y, np.ones((1, y.shape[1]))]))  # the signs
        summary.update(largest_y=np.max(np.abs(y), axis=0, initial=0.0),
                       smallest_y=np.min(y, axis=0, initial=np.inf))
    if w is None:
        summary.update(largest_w=1.0 if y.shape[0] else 0.0, positive=y.shape[0])
    else:
        w = np.asarray(w, dtype=np.float64)
        check_weight_values(w, offset)
        summary.update(largest_w=float(np.max(w, initial=0.0)),
                       positive=int(np.count_nonzero(w > 0)))
    return summary


class WorkerTargets:
    """y and sample_weight of a Dask fit, held by the workers (one part per
    partition of X) and checked: ``y``, ``weights`` VectorParts (weights
    None: all ones); ``positive`` int64 (n_partitions,) rows of positive
    weight; for a classifier per output ``classes`` (the distinct labels of
    all rows, object or the labels' dtype) and ``class_counts`` (int64 rows
    of each), ``labels`` and ``counts`` those of the first output; for a
    regressor ``largest_y`` and ``smallest_y`` (over every output).
    ``single``: y has one output (boosting), else one or more (trees and
    forests: ``n_outputs``)."""

    #: int64 (p + 1,) the first unit of each partition where the loss's
    #: pointwise values are per unit of several rows (queries), else None
    #: (with ``unit_sizes``: int64 (n_units,) the rows of each)
    unit_offsets = None

    def __init__(self, partitions, y, sample_weight, classify, poisson=False, single=True):
        if y is None:
            check_y(y, partitions.n_rows)
        self.n_rows = partitions.n_rows
        self.y = vector_parts(partitions, y, "y")
        self.weights = vector_parts(partitions, sample_weight, "sample_weight")
        weights = self.weights.parts if self.weights else [None] * len(self.y.parts)
        summaries = partitions.gather(partitions.map(
            target_summary, self.y.parts, weights, partitions.offsets[:-1],
            classify=classify, poisson=poisson, single=single))
        self.n_outputs = _n_outputs(summaries)
        if any(s["column"] for s in summaries):
            from sklearn.exceptions import DataConversionWarning
            warnings.warn("A column-vector y was passed when a 1d array was expected. Please "
                          "change the shape of y to (n_samples,), for example using ravel().",
                          DataConversionWarning, stacklevel=4)
        self.positive = np.asarray([s["positive"] for s in summaries], dtype=np.int64)
        self.largest_w = max(s["largest_w"] for s in summaries)
        if self.weights is not None:
            self._check_weights()
        if classify:
            self._union_labels(summaries)
        else:
            largest = np.max([s["largest_y"] for s in summaries], axis=0)
            smallest = np.min([s["smallest_y"] for s in summaries], axis=0)
            self.largest_y, self.smallest_y = float(np.max(largest)), float(np.min(smallest))
            if poisson:        # no negative y (checked per partition), a positive sum
                check_poisson_targets(np.stack([smallest, largest]))

    @property
    def n_units(self):
        """The values of the loss's pointwise sums: one a row."""
        return self.n_rows

    def _check_weights(self):
        """check_sample_weight's checks of the whole vector."""
        if not self.positive.sum():
            raise ValueError("sample_weight is zero for every row; at least one row needs "
                             "a positive weight.")
        check_magnitude(self.largest_w, self.n_rows, "sample_weight", "sample_weight",
                        "this does not change the tree")

    def _union_labels(self, summaries):
        """Per output, the distinct labels of every row (those of the
        partitions' distinct labels) and their counts, summed in int64."""
        self.classes, self.class_counts = [], []
        for o in range(self.n_outputs):
            _, labels, _ = encode_labels(np.concatenate([s["labels"][o] for s in summaries]))
            counts = np.zeros(len(labels[0]), dtype=np.int64)
            for s in summaries:
                counts[np.searchsorted(labels[0], s["labels"][o])] += s["counts"][o]
            self.classes.append(labels[0])
            self.class_counts.append(counts)
        self.labels, self.counts = self.classes[0], self.class_counts[0]

    def release(self):
        for vector in (self.y, self.weights):
            if vector is not None:
                vector.release()


def _n_outputs(summaries):
    """The outputs of y, the same in every partition."""
    widths = {len(s["labels"]) if "labels" in s else len(s["largest_y"]) for s in summaries}
    if len(widths) != 1:
        raise ValueError(f"y has a different number of outputs in different partitions "
                         f"({sorted(widths)}); give every row the same outputs.")
    return widths.pop()
