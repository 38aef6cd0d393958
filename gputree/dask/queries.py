"""The queries of a ranking fit on Dask: relevance labels, query layout and
query weights held by the workers, one part per partition of X, with the
one-machine checks.

Each query's rows must lie in one partition (the per-query pass runs on the
worker holding them). ``qid`` (a dask or host vector, one id per row): each
partition's query ids are split into runs on its worker, which sends the
driver their sizes and ids (O(queries), as ``group``); ``group`` (host query
sizes in row order): mapped onto the partitions' row counts on the driver.
The driver checks that no query straddles two partitions and that no id
comes back after another (the one-machine rule), each with an error naming
the fix, and learns each partition's first query (``unit_offsets``). The
workers then build each partition's :class:`RankingTargets` (labels and
local queries) and its row weights (each query's weight on its rows), so no
row-sized array reaches the driver.
"""
import numbers

import numpy as np

from .._arrays import host_values
from ..data.queries import (QUERY_DTYPE, Queries, check_distinct_runs, query_layout, query_runs,
                            query_weights, relevance_labels)
from ..estimators.lambdamart import host_targets
from .inputs import is_dask_collection
from .targets import VectorParts, vector_parts

#: how to cut the rows at the query boundaries, for the errors
_REPARTITION = ("repartition X, y and the queries so that each query's rows lie in one "
                "partition (e.g. rechunk the dask arrays at query starts, or give a dask "
                "DataFrame divisions between queries)")


def _host(value, n_queries=None, name=None):
    """A host array of a dask collection (O(queries): group, sample_weight;
    ``n_queries`` given: one entry per query, checked before it is
    computed, so that a row-sized vector is not gathered here)."""
    if is_dask_collection(value):
        n = getattr(value, "shape", (None,))[0]
        if n_queries is not None and isinstance(n, numbers.Integral) and n != n_queries:
            raise ValueError(f"{name} holds one weight per query ({n_queries} queries), as "
                             f"XGBRanker's; got {n} entries: give each query one weight.")
        value = value.compute()
    return None if value is None else host_values(value)


def qid_runs(qid, offset, name="qid"):
    """(sizes int64 (n_queries,), query ids (n_queries,)) of one partition's
    qid (n,) (named ``name``), its queries' runs checked as the one-machine
    qid (a message's rows counted from ``offset``, the partition's first
    row)."""
    qid = host_values(qid)
    if qid.shape[0] == 0:
        return np.empty(0, QUERY_DTYPE), qid[:0]
    try:
        queries, run_ids = query_runs(qid, qid.shape[0], name)
    except ValueError as exc:
        raise ValueError(f"{exc} (rows counted from row {offset}, where the partition "
                         "starts)") from None
    return queries.sizes, run_ids


def _layout_of_qid(partitions, qid, name):
    """(Queries of every row, int64 (p + 1,) each partition's first query)
    from the workers' runs of ``qid`` (named ``name``)."""
    parts = vector_parts(partitions, qid, name)
    try:
        runs = partitions.gather(partitions.map(qid_runs, parts.parts, partitions.offsets[:-1],
                                                name=name))
    finally:
        parts.release()
    counts = np.asarray([sizes.size for sizes, _ in runs], dtype=np.int64)
    queries = Queries.of_sizes(np.concatenate([sizes for sizes, _ in runs]))
    unit_offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    held = [p for p in range(len(runs)) if counts[p]]
    for p, q in zip(held, held[1:]):
        if runs[p][1][-1] == runs[q][1][0]:
            first = int(unit_offsets[q])
            raise ValueError(
                f"{name}: query {runs[q][1][0].item()!r} has rows in partitions {p} and {q} of X "
                f"(rows {queries.starts[first - 1]}..{queries.starts[first + 1] - 1}); on Dask "
                f"each query's rows lie in one partition: {_REPARTITION}.")
    run_ids = np.concatenate([ids for _, ids in runs])
    check_distinct_runs(run_ids, queries.starts, name)
    return queries, unit_offsets


def _layout_of_group(partitions, group, name):
    """(Queries of every row, int64 (p + 1,) each partition's first query)
    from ``group`` (host query sizes, in row order; named ``name``)."""
    queries = query_layout(partitions.n_rows, _host(group), None, name)
    offsets = partitions.offsets
    unit_offsets = np.searchsorted(queries.starts, offsets).astype(np.int64)
    inside = queries.starts[np.minimum(unit_offsets, queries.n_queries)] != offsets
    if inside.any():
        p = int(np.flatnonzero(inside)[0])
        q = int(unit_offsets[p]) - 1
        raise ValueError(
            f"{name}: query {q} (rows {queries.starts[q]}..{queries.starts[q + 1] - 1}) "
            f"straddles partitions {p - 1} and {p} of X (partition {p} starts at row "
            f"{offsets[p]}); on Dask each query's rows lie in one partition: {_REPARTITION}.")
    return queries, unit_offsets


def partition_queries(partitions, group, qid, names=("group", "qid")):
    """(Queries of every row, int64 (p + 1,) the first query of each of X's
    partitions (RowPartitions)) from ``group`` or ``qid`` (named
    ``names``): exactly one."""
    if (group is None) == (qid is None):
        query_layout(partitions.n_rows, group, qid, *names)    # raises: neither, or both
    if qid is not None:
        return _layout_of_qid(partitions, qid, names[1])
    return _layout_of_group(partitions, group, names[0])


def ranking_part(labels, starts, offset, name="y"):
    """RankingTargets of one partition: its labels (n,) (named ``name``)
    checked as relevance labels (a message's rows counted from ``offset``)
    and its queries' ``starts`` int64 (local)."""
    labels = host_values(labels)
    try:
        checked = relevance_labels(labels, labels.shape[0], name)
    except ValueError as exc:
        raise ValueError(f"{exc} (rows counted from row {offset}, where the partition "
                         "starts)") from None
    return host_targets(checked, Queries(np.asarray(starts, dtype=QUERY_DTYPE)))


def largest_label(targets):
    """The largest relevance label of a partition's RankingTargets (0 without rows)."""
    return int(targets.labels.max(initial=0))


def row_weights(targets, weights):
    """float64 (n,): each query's weight (``weights`` (n_queries,)) on its rows."""
    return targets.queries.expand(np.asarray(weights, dtype=np.float64))


class RankingWorkerTargets:
    """The labels, queries and query weights of a ranking fit on the
    workers, as :class:`gputree.dask.targets.WorkerTargets` (``y``: parts
    of RankingTargets, ``weights``: parts of row weights, ``positive``
    int64 (p,) rows of positive weight, ``largest_w``), with ``queries``
    (the Queries of every row, on the driver: O(queries)), ``unit_offsets``
    int64 (p + 1,) (each partition's first query), ``n_units`` (the
    queries) and ``largest_label``. ``names``: those of group, qid, y and
    sample_weight in the errors."""

    def __init__(self, partitions, y, group, qid, sample_weight,
                 names=("group", "qid", "y", "sample_weight")):
        self.n_rows = partitions.n_rows
        self.queries, self.unit_offsets = partition_queries(partitions, group, qid, names[:2])
        self.n_units = self.queries.n_queries
        weights = query_weights(_host(sample_weight, self.queries.n_queries, names[3]),
                                self.queries, names[3])
        self.largest_w = float(np.max(weights))
        units = self.unit_offsets
        self.positive = np.asarray(
            [int(np.sum(self.queries.sizes[a:b][weights[a:b] > 0]))
             for a, b in zip(units[:-1], units[1:])], dtype=np.int64)
        starts = [self.queries.starts[a:b + 1] - self.queries.starts[a]
                  for a, b in zip(units[:-1], units[1:])]
        labels = vector_parts(partitions, y, names[2])
        self.y = VectorParts(partitions.map(ranking_part, labels.parts, starts,
                                            partitions.offsets[:-1], name=names[2]))
        self.weights = VectorParts(partitions.map(
            row_weights, self.y.parts, [weights[a:b] for a, b in zip(units[:-1], units[1:])]))
        labels.release()
        self.largest_label = max(partitions.gather(partitions.map(largest_label, self.y.parts)))

    @property
    def unit_sizes(self):
        """int64 (n_queries,): the rows of each query."""
        return self.queries.sizes

    def release(self):
        for vector in (self.y, self.weights):
            vector.release()
