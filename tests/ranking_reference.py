"""Brute-force numpy references for learning to rank, written from the
definitions (not from the library's code): ranks, DCG and NDCG@k, and
LambdaMART's gradients and hessians, pair by pair."""
import numpy as np


def ranks(scores):
    """Rank of every row (0 = best): rows with a higher score, plus rows
    with the same score that come earlier."""
    scores = np.asarray(scores, dtype=np.float64)
    n = scores.shape[0]
    index = np.arange(n)
    above = (scores[None, :] > scores[:, None]) | (
        (scores[None, :] == scores[:, None]) & (index[None, :] < index[:, None]))
    return above.sum(axis=1)


def default_gains(labels):
    return 2.0 ** np.asarray(labels, dtype=np.float64) - 1.0


def discount(rank):
    return 1.0 / np.log2(np.asarray(rank, dtype=np.float64) + 2.0)


def dcg_at(gains_in_rank_order, k):
    g = np.asarray(gains_in_rank_order, dtype=np.float64)[:k]
    return float(np.sum(g * discount(np.arange(g.shape[0]))))


def ndcg_at(scores, labels, k, gains=default_gains):
    """NDCG@k of one query; 1 when no ranking can score (ideal DCG 0)."""
    labels = np.asarray(labels)
    order = np.argsort(ranks(scores))
    ideal = dcg_at(np.sort(gains(labels))[::-1], k)
    if ideal == 0.0:
        return 1.0
    return dcg_at(gains(labels)[order], k) / ideal


def lambdamart(scores, labels, truncation=30, norm=True, sigma=1.0, pairwise=False,
               gains=default_gains):
    """(gradients, hessians) of one query, each pair from its definition:
    pairs of rows with different labels, the better ranked one among the
    first ``truncation``; |delta NDCG| is the change of the full-list DCG
    when the two rows swap ranks, over the ideal DCG@truncation."""
    scores = np.asarray(scores, dtype=np.float64)
    labels = np.asarray(labels)
    n = scores.shape[0]
    g, h = np.zeros(n), np.zeros(n)
    if n < 2:
        return g, h
    r = ranks(scores)
    gain = gains(labels)
    ideal = dcg_at(np.sort(gain)[::-1], truncation)
    all_equal = scores.max() == scores.min()
    total = 0.0
    for i in range(n):
        for j in range(n):
            if labels[i] <= labels[j] or min(r[i], r[j]) >= truncation:
                continue   # i is the more relevant row of the pair
            if pairwise:
                w = 1.0
            else:
                before = gain[i] * discount(r[i]) + gain[j] * discount(r[j])
                swapped = gain[i] * discount(r[j]) + gain[j] * discount(r[i])
                w = abs(before - swapped) / ideal if ideal > 0 else 0.0
            gap = scores[i] - scores[j]
            if norm and not all_equal:
                w /= 0.01 + abs(gap)
            p = 1.0 / (1.0 + np.exp(sigma * gap))
            g[i] -= sigma * w * p
            g[j] += sigma * w * p
            h[i] += sigma * sigma * w * p * (1 - p)
            h[j] += sigma * sigma * w * p * (1 - p)
            total += 2 * sigma * w * p
    if norm and total > 0:
        factor = np.log2(1 + total) / total
        g, h = g * factor, h * factor
    return g, h
