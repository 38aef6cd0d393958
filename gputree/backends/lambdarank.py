"""LambdaMART's per-query work as device math: one query's rows sorted by
score, their NDCG@k, and the pairwise lambdas (gradients) and hessians of
LambdaRank, written once in the Python subset that ``numba.njit`` and
``numba.cuda.jit(device=True)`` both compile (:func:`make_query_terms`), so
that the CPU and the GPU compute every gradient with the same operations in
the same order: + - * / only, devmath's exp and log2, no fused multiply-add
(the CUDA backend compiles with ``-fma=0``).

One query, rows ``starts[q] .. starts[q + 1] - 1``, scores ``s``, relevance
labels ``l`` (int), gains ``G[l]`` and discounts ``D[r] = 1 / log2(r + 2)``
(tables made on the host, :func:`discount_table`):

* the rows are ranked by score, highest first, ties in row order (a stable
  merge sort: the one order every device finds);
* ``ndcg[q]`` = sum over the first ``eval_k`` ranks of G[l] D[r], times the
  query's inverse ideal DCG@eval_k (1 when that ideal is 0: no relevant row);
* pairs (i, j), i ranked above j, i among the first ``truncation`` ranks,
  with different labels; "high" is the row with the larger label. The pair
  weight ``w`` is |delta NDCG| = (G[l_high] - G[l_low]) |D[r_high] - D[r_low]|
  times the inverse ideal DCG@truncation (``lambdarank``), or 1
  (``rank:pairwise``, RankNet); with ``norm``, divided by 0.01 + |s_high -
  s_low| unless every score of the query is equal. With ``p = 1 / (1 +
  exp(sigma (s_high - s_low)))``: gradient ``-sigma w p`` for the high row and
  ``+sigma w p`` for the low one, hessian ``sigma**2 w p (1 - p)`` for both;
  with ``norm``, a query's gradients and hessians are then scaled by
  ``log2(1 + S) / S``, S the sum of ``2 sigma w p`` over its pairs (LightGBM's
  normalisation, as its documentation describes ``lambdarank_norm``).

``p`` is computed as ``e_low / (e_high + e_low)`` from ``e = exp(sigma (s -
s_top))`` (one exponential per row instead of one per pair; the scores less
the query's top score keep every ``e`` in (0, 1]); where both underflow to 0,
from ``exp(sigma (s_high - s_low))`` directly.
"""
from typing import NamedTuple

import numba
import numpy as np

from .devmath import apply, make_devmath

class QueryArrays(NamedTuple):
    """A set of queries on a backend (arrays of that backend): the inputs
    and scratch of :func:`make_query_terms` besides scores and outputs."""

    starts: object          # int64 (n_queries + 1,)
    labels: object          # int32 (n,)
    gains: object           # float64 (n_labels,)
    discounts: object       # float64 (largest query,)
    inv_ideal: object       # float64 (n_queries,)
    inv_ideal_eval: object  # float64 (n_queries,)
    order: object           # int64 (n,) scratch
    buffer: object          # int64 (n,) scratch
    expo: object            # float64 (n,) scratch


class RankSettings(NamedTuple):
    """The scalar arguments of :func:`make_query_terms`."""

    sigma: float
    truncation: int
    eval_k: int
    flags: int


def kernel_arguments(scores, queries, settings, g, h, ndcg):
    """The arguments of ``query_terms`` after ``q``, in order, from a
    backend's ``query_terms`` call."""
    q = queries
    return (q.starts, scores, q.labels, q.gains, q.discounts, q.inv_ideal, q.inv_ideal_eval,
            float(settings.sigma), int(settings.truncation), int(settings.eval_k),
            int(settings.flags), q.order, q.buffer, q.expo, g, h, ndcg)


#: flags of the per-query pass
FLAG_GRADIENTS = 1      # compute gradients and hessians (else NDCG only)
FLAG_NORM = 2           # lambdarank_norm: score-gap division and log2 scaling
FLAG_PAIRWISE = 4       # pair weight 1 (rank:pairwise) instead of |delta NDCG|
#: the score gap added before dividing a pair's weight by it (LightGBM's)
SCORE_GAP_OFFSET = 0.01


def make_query_terms(jit, inline=None):
    """Compile ``query_terms(q, starts, scores, labels, gains, discounts,
    inv_ideal, inv_ideal_eval, sigma, truncation, eval_k, flags, order, buffer,
    expo, g, h, ndcg)`` with ``jit`` (its helpers with ``inline``, default
    ``jit``): query q's work as the module docstring says.

      starts          IN  int64 (n_queries + 1,): query boundaries
      scores          IN  float64 (n,): raw scores
      labels          IN  int32 (n,): relevance labels (indices into gains)
      gains           IN  float64 (n_labels,)
      discounts       IN  float64 (largest query,): 1 / log2(rank + 2)
      inv_ideal       IN  float64 (n_queries,): 1 / ideal DCG@truncation (0: none)
      inv_ideal_eval  IN  float64 (n_queries,): 1 / ideal DCG@eval_k (0: none)
      sigma           IN  float64; truncation, eval_k, flags: int64
      order, buffer   OUT int64 (n,): scratch; order holds each query's rows
                          (global indices) from the best score to the worst
      expo            OUT float64 (n,): scratch
      g, h            OUT float64 (n,): gradients, hessians (FLAG_GRADIENTS)
      ndcg            OUT float64 (n_queries,): NDCG@eval_k at ``scores``
    """
    inline = inline or jit
    dm = make_devmath(inline)
    exp, log2 = dm.exp, dm.log2

    @inline
    def merge_pass(scores, src, dst, start, n, width):
        """Merge the sorted runs of ``width`` rows of src[start:start + n]
        pairwise into dst (higher score first; equal scores: left run first,
        which keeps row order)."""
        low = 0
        while low < n:
            mid = min(low + width, n)
            high = min(low + 2 * width, n)
            i, j = low, mid
            for k in range(low, high):
                take_right = j < high and (i >= mid or scores[src[start + j]]
                                           > scores[src[start + i]])
                if take_right:
                    dst[start + k] = src[start + j]
                    j += 1
                else:
                    dst[start + k] = src[start + i]
                    i += 1
            low = high

    @inline
    def sort_by_score(scores, start, n, order, buffer):
        """order[start:start + n] := rows start .. start + n - 1 by score,
        highest first, ties in row order (bottom-up stable merge sort)."""
        for r in range(n):
            order[start + r] = start + r
        width = 1
        in_order = True
        while width < n:
            if in_order:
                merge_pass(scores, order, buffer, start, n, width)
            else:
                merge_pass(scores, buffer, order, start, n, width)
            in_order = not in_order
            width *= 2
        if not in_order:
            for r in range(n):
                order[start + r] = buffer[start + r]

    @inline
    def pair_lambdas(q, start, n, scores, labels, gains, discounts, inv_ideal, sigma,
                     truncation, flags, order, expo, g, h):
        """Accumulate the pairs' gradients and hessians into g, h (zeroed);
        returns S, the sum of 2 sigma w p."""
        top = scores[order[start]]
        all_equal = top == scores[order[start + n - 1]]
        norm = (flags & FLAG_NORM) != 0
        pairwise = (flags & FLAG_PAIRWISE) != 0
        for r in range(n):
            row = order[start + r]
            expo[row] = exp(sigma * (scores[row] - top))
        total = 0.0
        sigma2 = sigma * sigma
        for a in range(min(n - 1, truncation)):
            i = order[start + a]
            label_i = labels[i]
            for b in range(a + 1, n):
                j = order[start + b]
                label_j = labels[j]
                if label_i == label_j:
                    continue
                if label_i > label_j:
                    hi, lo, rank_hi, rank_lo, label_hi, label_lo = i, j, a, b, label_i, label_j
                else:
                    hi, lo, rank_hi, rank_lo, label_hi, label_lo = j, i, b, a, label_j, label_i
                gap = scores[hi] - scores[lo]
                if pairwise:
                    w = 1.0
                else:
                    w = ((gains[label_hi] - gains[label_lo])
                         * abs(discounts[rank_hi] - discounts[rank_lo])) * inv_ideal[q]
                if norm and not all_equal:
                    w = w / (SCORE_GAP_OFFSET + abs(gap))
                e_sum = expo[hi] + expo[lo]
                if e_sum > 0.0:
                    p = expo[lo] / e_sum
                else:
                    p = 1.0 / (1.0 + exp(sigma * gap))
                lam = p * (sigma * w)
                hess = (p * (1.0 - p)) * (sigma2 * w)
                g[hi] -= lam
                g[lo] += lam
                h[hi] += hess
                h[lo] += hess
                total += lam + lam
        return total

    @jit
    def query_terms(q, starts, scores, labels, gains, discounts, inv_ideal, inv_ideal_eval,
                    sigma, truncation, eval_k, flags, order, buffer, expo, g, h, ndcg):
        start = starts[q]
        n = starts[q + 1] - start
        sort_by_score(scores, start, n, order, buffer)
        dcg = 0.0
        for r in range(min(n, eval_k)):
            dcg += gains[labels[order[start + r]]] * discounts[r]
        ndcg[q] = dcg * inv_ideal_eval[q] if inv_ideal_eval[q] > 0.0 else 1.0
        if (flags & FLAG_GRADIENTS) == 0:
            return
        for r in range(n):
            g[start + r] = 0.0
            h[start + r] = 0.0
        if n < 2:
            return
        total = pair_lambdas(q, start, n, scores, labels, gains, discounts, inv_ideal, sigma,
                             truncation, flags, order, expo, g, h)
        if (flags & FLAG_NORM) != 0 and total > 0.0:
            factor = log2(1.0 + total) / total
            for r in range(n):
                g[start + r] = g[start + r] * factor
                h[start + r] = h[start + r] * factor

    return query_terms


def discount_table(n_ranks):
    """float64 (max(n_ranks, 1),): 1 / log2(rank + 2) for rank 0 .., with
    devmath's log2 (made on the host once, the same table for every device)."""
    ranks = np.arange(max(int(n_ranks), 1), dtype=np.float64)
    return 1.0 / apply("log2", ranks + 2.0)


def exponential_gains(n_labels):
    """float64 (n_labels,): 2**label - 1 (exact), the default gains."""
    return np.ldexp(1.0, np.arange(n_labels)) - 1.0


@numba.njit(cache=True)
def ideal_dcg_inverse(starts, labels, gains, discounts, k):
    """float64 (n_queries,): 1 / (the largest DCG@k of each query: its
    labels' gains in decreasing order times the discounts, summed from the
    top), 0 where that is 0. starts int64 (n_queries + 1,), labels int32
    (n,), gains, discounts float64 IN. On the host, once per set of queries:
    every device then reads the same values."""
    n_queries = starts.shape[0] - 1
    out = np.zeros(n_queries)
    for q in range(n_queries):
        ranked = np.sort(labels[starts[q]:starts[q + 1]])[::-1]
        ideal = 0.0
        for r in range(min(ranked.shape[0], k)):
            ideal += gains[ranked[r]] * discounts[r]
        if ideal > 0.0:
            out[q] = 1.0 / ideal
    return out


def largest_query(starts):
    """Rows of the largest query (host int)."""
    return int(np.max(np.diff(starts))) if starts.shape[0] > 1 else 0
