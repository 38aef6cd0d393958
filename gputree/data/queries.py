"""Queries of learning-to-rank data: the rows of each query, given as
consecutive group sizes (LightGBM's ``group``) or as a query id per row
(XGBoost's ``qid``), turned into one layout (:class:`Queries`: where each
query's rows start), with per-query weights and relevance labels; every check
names the argument and the fix.

A query's rows are consecutive. With ``qid`` each run of equal ids is one
query, in row order; an id that comes back after another id (interleaved
queries) is refused rather than regrouped, since the order of a query's rows
decides how ties between its scores are broken.
"""
import numbers
from dataclasses import dataclass

import numpy as np

from .._arrays import to_host
from .validation import _reject_sparse, check_y

#: dtype of query boundaries and row indices derived from them
QUERY_DTYPE = np.int64
#: dtype of relevance labels on every device
LABEL_DTYPE = np.int32


@dataclass(frozen=True)
class Queries:
    """The query layout of n rows: ``starts`` int64 (n_queries + 1,),
    ``starts[0] = 0``, ``starts[-1] = n_rows``, strictly increasing; query q
    holds rows ``starts[q] .. starts[q + 1] - 1``."""

    starts: np.ndarray

    @property
    def n_queries(self):
        return self.starts.shape[0] - 1

    @property
    def n_rows(self):
        return int(self.starts[-1])

    @property
    def sizes(self):
        """int64 (n_queries,): rows per query."""
        return np.diff(self.starts)

    def expand(self, per_query):
        """One value per row from one per query: (n_queries, ...) -> (n_rows, ...)."""
        return np.repeat(per_query, self.sizes, axis=0)

    def rows_of(self, queries):
        """int64 row indices of ``queries`` (sorted query indices), in row order."""
        queries = np.asarray(queries, dtype=QUERY_DTYPE)
        sizes = self.sizes[queries]
        offsets = np.arange(int(sizes.sum()), dtype=QUERY_DTYPE) - np.repeat(
            np.cumsum(sizes) - sizes, sizes)
        return np.repeat(self.starts[queries], sizes) + offsets

    def take(self, queries):
        """The layout of ``queries`` (sorted query indices) alone, renumbered."""
        return Queries.of_sizes(self.sizes[np.asarray(queries, dtype=QUERY_DTYPE)])

    @staticmethod
    def of_sizes(sizes):
        """The layout of queries of ``sizes`` rows (int (n_queries,)), in order."""
        return Queries(np.concatenate([[0], np.cumsum(sizes)]).astype(QUERY_DTYPE))

    @staticmethod
    def joined(layouts):
        """The layout of the rows of ``layouts`` (Queries) one after the other."""
        return Queries.of_sizes(np.concatenate([layout.sizes for layout in layouts]))


def query_layout(n_rows, group=None, qid=None, group_name="group", qid_name="qid"):
    """The Queries of ``n_rows`` rows from ``group`` (sizes of consecutive
    queries) or ``qid`` (a query id per row): exactly one of the two."""
    if group is None and qid is None:
        raise ValueError(f"Ranking needs the queries: pass {group_name}= (the number of rows "
                         f"of each query, queries in row order, as LightGBM) or {qid_name}= "
                         "(a query id per row, as XGBoost).")
    if group is not None and qid is not None:
        raise ValueError(f"Pass {group_name} or {qid_name}, not both: they describe the same "
                         "queries.")
    if group is not None:
        return _from_sizes(group, n_rows, group_name)
    return _from_ids(qid, n_rows, qid_name)


def _integers(values, name, what):
    """values as int64 when every one is an integer (int or integral float)."""
    _reject_sparse(values, name)
    array = np.asarray(to_host(values))
    if array.dtype.kind in "iu":
        return array.astype(QUERY_DTYPE)
    if array.dtype.kind == "b" or array.dtype.kind not in "f":
        raise ValueError(f"{name} must hold {what} (integers); got dtype {array.dtype}.")
    bad = ~np.isfinite(array) | (array != np.round(array))
    if bad.any():
        index = np.flatnonzero(bad.ravel())[:5].tolist()
        raise ValueError(f"{name} must hold {what} (integers); entries {index} are not "
                         f"({array.ravel()[index].tolist()}).")
    return array.astype(QUERY_DTYPE)


def _from_sizes(group, n_rows, name):
    sizes = _integers(group, name, "the number of rows of each query")
    if sizes.ndim != 1 or sizes.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array of query sizes; got shape "
                         f"{sizes.shape}.")
    if np.any(sizes <= 0):
        index = np.flatnonzero(sizes <= 0)[:5].tolist()
        raise ValueError(f"{name}[{index[0]}] is {sizes[index[0]]}: every query needs at "
                         f"least one row (non-positive sizes at {index}); drop empty queries "
                         f"from {name}.")
    if int(sizes.sum()) != n_rows:
        raise ValueError(f"{name} sizes sum to {int(sizes.sum())} but X has {n_rows} rows; "
                         f"{name}[q] is the number of rows of query q, queries in row order, "
                         "and every row belongs to one query.")
    return Queries.of_sizes(sizes)


def _from_ids(qid, n_rows, name):
    return query_runs(qid, n_rows, name)[0]


def query_runs(qid, n_rows, name="qid"):
    """(Queries, the query id of each query (n_queries,)) of ``qid`` (a
    query id per row, each query's rows consecutive)."""
    _reject_sparse(qid, name)
    ids = np.asarray(to_host(qid))
    if ids.ndim != 1 or ids.shape[0] != n_rows:
        raise ValueError(f"{name} must hold one query id per row of X ({n_rows},); got shape "
                         f"{ids.shape}.")
    if ids.dtype.kind == "f" and np.isnan(ids).any():
        raise ValueError(f"{name} holds NaN at rows {np.flatnonzero(np.isnan(ids))[:5].tolist()}"
                         "; every row needs a query id.")
    change = np.flatnonzero(ids[1:] != ids[:-1]) + 1
    starts = np.concatenate([[0], change, [n_rows]]).astype(QUERY_DTYPE)
    run_ids = ids[starts[:-1]]
    check_distinct_runs(run_ids, starts, name)
    return Queries(starts), run_ids


def check_distinct_runs(run_ids, starts, name="qid"):
    """A ValueError naming the fix where a query id ``run_ids`` (one per
    run of equal ids, their rows from ``starts`` int64 (n_runs + 1,)) comes
    back after another id (interleaved queries)."""
    if np.unique(run_ids).size == run_ids.size:
        return
    order = np.argsort(run_ids, kind="stable")
    sorted_ids = run_ids[order]
    repeat = np.flatnonzero(sorted_ids[1:] == sorted_ids[:-1])[0]
    first, again = order[repeat], order[repeat + 1]
    raise ValueError(
        f"{name}: the rows of query {run_ids[first].item()!r} are not consecutive (rows "
        f"{starts[first]}..{starts[first + 1] - 1}, and again from row {starts[again]}). A "
        "query's rows must be consecutive: sort the rows by query id, keeping each query's "
        f"order (order = np.argsort({name}, kind='stable'); X[order], y[order], "
        f"{name}[order]).")


def query_weights(sample_weight, queries, name="sample_weight"):
    """float64 (n_queries,): one weight per query (XGBRanker's convention),
    finite, >= 0, not all zero; None: all ones."""
    n_queries = queries.n_queries
    if sample_weight is None:
        return np.ones(n_queries)
    if isinstance(sample_weight, numbers.Number):
        sample_weight = np.full(n_queries, float(sample_weight))
    _reject_sparse(sample_weight, name)
    w = np.asarray(to_host(sample_weight), dtype=np.float64)
    if w.ndim != 1 or w.shape[0] != n_queries:
        hint = (" (one per row?): give each query one weight, e.g. the first of its rows'"
                if w.ndim == 1 and w.shape[0] == queries.n_rows else "")
        raise ValueError(f"{name} holds one weight per query ({n_queries} queries), as "
                         f"XGBRanker's; got shape {w.shape}{hint}.")
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        index = np.flatnonzero(~(np.isfinite(w) & (w >= 0)))[:5].tolist()
        raise ValueError(f"{name} must be finite and >= 0 per query; queries {index} are not.")
    if not np.any(w > 0):
        raise ValueError(f"{name} is zero for every query; at least one query needs a "
                         "positive weight.")
    return w


def relevance_labels(y, n_rows, name="y"):
    """int32 (n_rows,): relevance labels, non-negative integers."""
    y = check_y(y, n_rows, name, allow_2d=True)
    if y.ndim == 2:
        if y.shape[1] != 1:
            raise ValueError(f"{name} must be 1-D relevance labels; got shape {y.shape}.")
        y = y[:, 0]
    if y.dtype.kind not in "iuf" or y.dtype.kind == "b":
        raise ValueError(f"{name} holds relevance labels, non-negative integers; got dtype "
                         f"{y.dtype}.")
    bad = (y < 0) | (y != np.round(y))
    if np.any(bad):
        rows = np.flatnonzero(bad)[:5].tolist()
        raise ValueError(f"{name} holds relevance labels, non-negative integers (0 = not "
                         f"relevant); rows {rows} hold {y[rows].tolist()}.")
    if y.size and float(y.max()) > np.iinfo(LABEL_DTYPE).max:
        raise ValueError(f"{name} holds a relevance label above {np.iinfo(LABEL_DTYPE).max}.")
    return y.astype(LABEL_DTYPE)
