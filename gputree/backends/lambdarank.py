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
  with different relevance; "high" is the more relevant row. Relevance is
  the gain for ``lambdarank`` (gains do not decrease with the label, so
  that is the larger label; rows of equal gains make no pair: their weight
  would be 0) and the label for ``rank:pairwise``. The pair weight ``w`` is
  |delta NDCG| = |G[l_i] - G[l_j]| (D[r_i] - D[r_j]) times the inverse ideal
  DCG@truncation (``lambdarank``), or 1 (``rank:pairwise``, RankNet); with
  ``norm``, divided by 0.01 + |s_i - s_j| unless every score of the query
  is equal. With ``p = 1 / (1 + exp(sigma (s_high - s_low)))``:
  gradient ``-sigma w p`` for the high row and ``+sigma w p`` for the low
  one, hessian ``sigma**2 w p (1 - p)`` for both; with ``norm``, a query's
  gradients and hessians are then scaled by ``log2(1 + S) / S``, S the sum of
  ``2 sigma w p`` over its pairs (LightGBM's normalisation, as its
  documentation describes ``lambdarank_norm``).

How it is computed (the same on every device): the query's scores and
relevance are first copied in rank order into scratch rows (contiguous, so
the pair loop reads no scattered memory); ``p`` is ``e_low / (e_high +
e_low)`` from ``e = exp(sigma (s - s_top))``, one exponential per row
instead of one per pair (every ``e`` in (0, 1]; for a row whose ``e``
underflowed to 0, its pairs take ``exp(sigma (s_high - s_low))`` each),
and a pair's one division gives both ``1 / (e_high + e_low)`` and the
weight's ``1 / (0.01 + gap)``. For each row i of the top ranks, the loop
over the rows j below it computes the pairs' terms into scratch
(independent: the compiler vectorizes it), adds them to the rows j, and i's
own sums are taken over that scratch in four interleaved partial sums
combined in a fixed order (the same additions on every device, four times
the throughput of one running sum).
"""
from typing import NamedTuple

import numpy as np

from .._compile_cache import cached_kernel
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
    work: object            # float64 (WORK_ROWS, n) scratch


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
            int(settings.flags), q.order, q.buffer, q.work, g, h, ndcg)


#: flags of the per-query pass
FLAG_GRADIENTS = 1      # compute gradients and hessians (else NDCG only)
FLAG_NORM = 2           # lambdarank_norm: score-gap division and log2 scaling
FLAG_PAIRWISE = 4       # pair weight 1 (rank:pairwise) instead of |delta NDCG|
#: the score gap added before dividing a pair's weight by it (LightGBM's)
SCORE_GAP_OFFSET = 0.01
#: rows of the float scratch ``work``, each one value per row of X, in rank
#: order within a query: scores (sorted), the sort's buffer then exp terms,
#: relevance keys (gains; labels for rank:pairwise), gradients, hessians, a
#: row's pair terms
W_SCORE, W_EXP, W_KEY, W_G, W_H, W_PAIR_G, W_PAIR_H = range(7)
WORK_ROWS = 7
#: runs sorted by insertion before the merge passes
_RUN = 8


def make_query_terms(jit, inline=None):
    """Compile ``query_terms(q, starts, scores, labels, gains, discounts,
    inv_ideal, inv_ideal_eval, sigma, truncation, eval_k, flags, order, buffer,
    work, g, h, ndcg)`` with ``jit`` (its helpers with ``inline``, default
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
      work            OUT float64 (WORK_ROWS, n): scratch
      g, h            OUT float64 (n,): gradients, hessians (FLAG_GRADIENTS)
      ndcg            OUT float64 (n_queries,): NDCG@eval_k at ``scores``
    """
    inline = inline or jit
    dm = make_devmath(inline)
    exp, log2 = dm.exp, dm.log2

    @inline
    def insertion_runs(key, order, start, n):
        """Sort each run of _RUN rows of (key, order)[start:start + n] by
        key, highest first, keeping the order of equal keys."""
        for first in range(0, n, _RUN):
            stop = min(first + _RUN, n)
            for i in range(first + 1, stop):
                k, o = key[start + i], order[start + i]
                j = i
                while j > first and key[start + j - 1] < k:
                    key[start + j] = key[start + j - 1]
                    order[start + j] = order[start + j - 1]
                    j -= 1
                key[start + j], order[start + j] = k, o

    @inline
    def merge_pass(key, order, key_out, order_out, start, n, width):
        """Merge the sorted runs of ``width`` rows of (key, order)
        pairwise into (key_out, order_out) (higher key first; equal keys:
        the left run's first, which keeps row order)."""
        low = 0
        while low < n:
            mid = min(low + width, n)
            high = min(low + 2 * width, n)
            i, j = low, mid
            for k in range(low, high):
                if j < high and (i >= mid or key[start + j] > key[start + i]):
                    key_out[start + k], order_out[start + k] = key[start + j], order[start + j]
                    j += 1
                else:
                    key_out[start + k], order_out[start + k] = key[start + i], order[start + i]
                    i += 1
            low = high

    @inline
    def sort_by_score(scores, start, n, order, buffer, key, key_buffer):
        """order[start:start + n] := rows start .. start + n - 1 by score,
        highest first, ties in row order; key[start:start + n] := their
        scores (a stable merge sort: runs by insertion, then merge passes)."""
        for r in range(n):
            order[start + r] = start + r
            key[start + r] = scores[start + r]
        insertion_runs(key, order, start, n)
        width = _RUN
        in_place = True
        while width < n:
            if in_place:
                merge_pass(key, order, key_buffer, buffer, start, n, width)
            else:
                merge_pass(key_buffer, buffer, key, order, start, n, width)
            in_place = not in_place
            width *= 2
        if not in_place:
            for r in range(n):
                key[start + r], order[start + r] = key_buffer[start + r], buffer[start + r]

    @inline
    def pair_sums(pair_g, pair_h, first, stop):
        """(sum of pair_g, sum of pair_h, sum of |pair_g|) over first..stop-1,
        each in four interleaved partial sums combined as (s0 + s1) + (s2 +
        s3): a fixed order of additions, four chains where one running sum
        would wait on every addition."""
        g0 = g1 = g2 = g3 = h0 = h1 = h2 = h3 = a0 = a1 = a2 = a3 = 0.0
        i = first
        while i + 4 <= stop:
            g0 += pair_g[i]
            g1 += pair_g[i + 1]
            g2 += pair_g[i + 2]
            g3 += pair_g[i + 3]
            h0 += pair_h[i]
            h1 += pair_h[i + 1]
            h2 += pair_h[i + 2]
            h3 += pair_h[i + 3]
            a0 += abs(pair_g[i])
            a1 += abs(pair_g[i + 1])
            a2 += abs(pair_g[i + 2])
            a3 += abs(pair_g[i + 3])
            i += 4
        while i < stop:
            g0 += pair_g[i]
            h0 += pair_h[i]
            a0 += abs(pair_g[i])
            i += 1
        return (g0 + g1) + (g2 + g3), (h0 + h1) + (h2 + h3), (a0 + a1) + (a2 + a3)

    @inline
    def pair_terms(m, s_a, e_a, key_a, d_a, s, e, key, discounts, inv, sigma, scaled,
                   pairwise, pair_g, pair_h):
        """pair_g[j], pair_h[j] for the m rows ranked below a row (views
        that start at the next rank; that row's score s_a, e_a, key_a, its
        discount d_a): the gradient term of row j (the upper row's is its
        negative) and the hessian term of the pair; 0 for equal keys (the
        relevance key: gains for lambdarank, labels for pairwise).
        ``scaled``: divide pair weights by 0.01 + the score gap."""
        sigma2 = sigma * sigma
        if e_a > 0.0:
            for j in range(m):
                key_j = key[j]
                # +1: the upper row is the more relevant, -1: row j is, 0: no pair
                sign = (1.0 if key_a > key_j else 0.0) - (1.0 if key_a < key_j else 0.0)
                w = sign * sign if pairwise else (abs(key_a - key_j) * (d_a - discounts[j])) * inv
                gap = SCORE_GAP_OFFSET + (s_a - s[j]) if scaled else 1.0
                e_j = e[j]
                e_sum = e_a + e_j
                # one division: p = e_low / e_sum, 1 - p = e_high / e_sum, w / gap
                inverse = 1.0 / (e_sum * gap)
                per_e = gap * inverse
                p = (e_j if sign > 0.0 else e_a) * per_e
                w = w * (e_sum * inverse)
                pair_g[j] = (sign * p) * (sigma * w)
                pair_h[j] = (p * ((e_a if sign > 0.0 else e_j) * per_e)) * (sigma2 * w)
        else:                       # e_a underflowed: exp per pair
            for j in range(m):
                key_j = key[j]
                sign = (1.0 if key_a > key_j else 0.0) - (1.0 if key_a < key_j else 0.0)
                w = sign * sign if pairwise else (abs(key_a - key_j) * (d_a - discounts[j])) * inv
                gap = s_a - s[j]
                w = w / (SCORE_GAP_OFFSET + gap if scaled else 1.0)
                p = 1.0 / (1.0 + exp(sigma * (sign * gap)))
                pair_g[j] = (sign * p) * (sigma * w)
                pair_h[j] = (p * (1.0 - p)) * (sigma2 * w)

    @inline
    def add_pairs(m, g, h, pair_g, pair_h):
        """g[j] += pair_g[j], h[j] += pair_h[j] for j < m (views)."""
        for j in range(m):
            g[j] += pair_g[j]
            h[j] += pair_h[j]

    @inline
    def lambdas(n, s, e, key, discounts, inv, sigma, truncation, flags, g, h, pair_g, pair_h):
        """g, h (rank order, this query's views) := the query's gradients
        and hessians before normalisation; returns S, the sum of 2 sigma w p."""
        for r in range(n):
            g[r] = 0.0
            h[r] = 0.0
        if n < 2:
            return 0.0
        top = s[0]
        for r in range(n):
            e[r] = exp(sigma * (s[r] - top))
        scaled = (flags & FLAG_NORM) != 0 and top != s[n - 1]
        pairwise = (flags & FLAG_PAIRWISE) != 0
        total = 0.0
        for a in range(min(n - 1, truncation)):
            m = n - a - 1
            pair_terms(m, s[a], e[a], key[a], discounts[a], s[a + 1:], e[a + 1:], key[a + 1:],
                       discounts[a + 1:], inv, sigma, scaled, pairwise, pair_g[a + 1:],
                       pair_h[a + 1:])
            add_pairs(m, g[a + 1:], h[a + 1:], pair_g[a + 1:], pair_h[a + 1:])
            sum_g, sum_h, sum_abs = pair_sums(pair_g, pair_h, a + 1, n)
            g[a] -= sum_g
            h[a] += sum_h
            total += sum_abs + sum_abs
        return total

    @jit
    def query_terms(q, starts, scores, labels, gains, discounts, inv_ideal, inv_ideal_eval,
                    sigma, truncation, eval_k, flags, order, buffer, work, g, h, ndcg):
        start = starts[q]
        stop = starts[q + 1]
        n = stop - start
        sort_by_score(scores, start, n, order, buffer, work[W_SCORE], work[W_EXP])
        # this query's scratch, in rank order
        s, e, key = work[W_SCORE, start:stop], work[W_EXP, start:stop], work[W_KEY, start:stop]
        rows = order[start:stop]
        dcg = 0.0
        for r in range(min(n, eval_k)):
            dcg += gains[labels[rows[r]]] * discounts[r]
        ndcg[q] = dcg * inv_ideal_eval[q] if inv_ideal_eval[q] > 0.0 else 1.0
        if (flags & FLAG_GRADIENTS) == 0:
            return
        pairwise = (flags & FLAG_PAIRWISE) != 0
        for r in range(n):
            label_r = labels[rows[r]]
            key[r] = label_r if pairwise else gains[label_r]
        g_r, h_r = work[W_G, start:stop], work[W_H, start:stop]
        total = lambdas(n, s, e, key, discounts, inv_ideal[q], sigma, truncation, flags, g_r,
                        h_r, work[W_PAIR_G, start:stop], work[W_PAIR_H, start:stop])
        factor = 1.0
        if (flags & FLAG_NORM) != 0 and total > 0.0:
            factor = log2(1.0 + total) / total
        for r in range(n):
            g[rows[r]] = g_r[r] * factor
            h[rows[r]] = h_r[r] * factor

    return query_terms


def discount_table(n_ranks):
    """float64 (max(n_ranks, 1),): 1 / log2(rank + 2) for rank 0 .., with
    devmath's log2 (made on the host once, the same table for every device)."""
    ranks = np.arange(max(int(n_ranks), 1), dtype=np.float64)
    return 1.0 / apply("log2", ranks + 2.0)


def exponential_gains(n_labels):
    """float64 (n_labels,): 2**label - 1 (exact), the default gains."""
    return np.ldexp(1.0, np.arange(n_labels)) - 1.0


@cached_kernel()
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
