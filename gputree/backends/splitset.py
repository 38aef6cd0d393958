"""The set of bins that go left at a split: its layout and the one rule
that reads it, for device code (``make_splitset``) and for the host (numpy).

A split is a row of ``BITSET_WORDS`` uint32 words (gputree/_dtypes.py):

* words 0 .. 7 (``BITMAP_WORDS``): a bitmap of bins 0 .. 255, bit ``b % 32``
  of word ``b // 32``;
* word 8 (``BITSET_RANGE_WORD``): bins 256 .. word[8] go left (0: none);
* word 9 (``BITSET_EXTRA_WORD``): bin word[9] (>= 256) goes left too (0:
  none).

With at most 256 bins (8-bit codes) the bitmap is the whole set and words 8
and 9 stay 0. With more bins, a numerical split "bins <= t" sets the bitmap up
to min(t, 255) and word 8 to t when t >= 256; the missing bin, the last one,
goes left through the bitmap (8-bit) or word 9. A categorical split on a
feature with more than 256 categories keeps its bins from 256 on in
further words (``extension_words`` of them at most): word j holds bins
256 + 32 j .. 256 + 32 j + 31. Partitioning and prediction read them
through :class:`gputree.tree.LeftSets` (the words of all splits in one
array, each split's start and count: ``goes_left_words``); the split scan
keeps one row of them per (node, feature) (``in_words``). So a split takes
40 bytes plus the words of its many categories, and partitioning and
prediction still need no split kinds. The CUDA C copy of the rule is
``gt_goes_left_words`` in kernels/common.cuh.
"""
from collections import namedtuple

import numpy as np

from .._dtypes import (BITMAP_BINS, BITMAP_WORDS, BITSET_DTYPE, BITSET_EXTRA_WORD,
                       BITSET_RANGE_WORD, BITSET_WORD_BITS, WORD_COUNT_DTYPE, WORD_START_DTYPE)
from ..tree import LeftSets

SplitSetFunctions = namedtuple("SplitSetFunctions",
                               "goes_left add_bin add_bins_upto in_words add_word_bin "
                               "goes_left_words")


def make_splitset(jit):
    """Compile the rule with ``jit`` (numba.njit or numba.cuda.jit(device=True)):

    goes_left(bitset, k, b) -> 0/1: bin b under split row k of bitset
                                   (IN uint32 (n, BITSET_WORDS))
    add_bin(bitset, k, b)          row k INOUT: bin b goes left too (b < 256
                                   or the one extra bin >= 256)
    add_bins_upto(bitset, k, last) row k INOUT: bins 0 .. last go left
    in_words(words, first, n_words, b) -> 0/1: bin b (>= 256) in the
                                   n_words words from words[first] (IN
                                   uint32 (m,)); 0 for b < 256 and beyond
    add_word_bin(words, first, b)  words INOUT: bin b (>= 256) goes left
    goes_left_words(bitset, k, b, words, start, n_words) -> 0/1: bin b
                                   under split k of the LeftSets (bitset,
                                   words, start, n_words): goes_left or
                                   in_words(words, start[k], n_words[k], b)
    """

    # indices and bins as uint64: numba mixes int64 and uint64 into float64,
    # and unsigned indices skip the wrap-around of negative ones
    @jit
    def goes_left(bitset, k, b):
        u, row = np.uint64(b), np.uint64(k)
        if u < np.uint64(BITMAP_BINS):
            word = bitset[row, u >> np.uint64(5)]
            return (word >> np.uint32(u & np.uint64(31))) & np.uint32(1)
        if u <= np.uint64(bitset[row, BITSET_RANGE_WORD]) or \
                u == np.uint64(bitset[row, BITSET_EXTRA_WORD]):
            return np.uint32(1)
        return np.uint32(0)

    @jit
    def add_bin(bitset, k, b):
        u, row = np.uint64(b), np.uint64(k)
        if u < np.uint64(BITMAP_BINS):
            bitset[row, u >> np.uint64(5)] |= np.uint32(1) << np.uint32(u & np.uint64(31))
        else:
            bitset[row, BITSET_EXTRA_WORD] = np.uint32(u)

    @jit
    def add_bins_upto(bitset, k, last):
        # a word at a time: the bits add_bin would set one by one (a chain
        # of read-modify-writes of one word)
        row, n = np.uint64(k), np.uint64(max(min(last + 1, BITMAP_BINS), 0))
        for w in range(n >> np.uint64(5)):
            bitset[row, np.uint64(w)] |= np.uint32(0xFFFFFFFF)
        rest = n & np.uint64(31)
        if rest:
            bitset[row, n >> np.uint64(5)] |= (np.uint32(1) << np.uint32(rest)) - np.uint32(1)
        if last >= BITMAP_BINS:
            bitset[np.uint64(k), BITSET_RANGE_WORD] = np.uint32(last)

    @jit
    def in_words(words, first, n_words, b):
        u = np.uint64(b)
        if u < np.uint64(BITMAP_BINS):
            return np.uint32(0)
        j = (u - np.uint64(BITMAP_BINS)) >> np.uint64(5)
        if j >= np.uint64(n_words):
            return np.uint32(0)
        return (words[np.uint64(first) + j] >> np.uint32(u & np.uint64(31))) & np.uint32(1)

    @jit
    def add_word_bin(words, first, b):
        u = np.uint64(b)
        j = (u - np.uint64(BITMAP_BINS)) >> np.uint64(5)
        words[np.uint64(first) + j] |= np.uint32(1) << np.uint32(u & np.uint64(31))

    @jit
    def goes_left_words(bitset, k, b, words, start, n_words):
        if goes_left(bitset, k, b):
            return np.uint32(1)
        row = np.uint64(k)
        if n_words[row] == 0:
            return np.uint32(0)
        return in_words(words, start[row], n_words[row], b)

    return SplitSetFunctions(goes_left, add_bin, add_bins_upto, in_words, add_word_bin,
                             goes_left_words)


def goes_left(bitset, bins, words=None):
    """bool array shaped like ``bins`` (int array): whether they go left under
    the split rows ``bitset`` (uint32 (..., BITSET_WORDS); the leading axes
    broadcast to ``bins``'s shape) and, for bins from 256 on, their words
    ``words`` (uint32 (..., m), broadcast alike; None: no words)."""
    bins = np.asarray(bins).astype(np.int64)
    bitset = np.broadcast_to(bitset, bins.shape + (np.shape(bitset)[-1],))
    word = np.take_along_axis(bitset, np.minimum(bins >> 5, BITMAP_WORDS - 1)[..., None],
                              axis=-1)[..., 0]
    in_map = (word >> (bins & 31).astype(np.uint32)) & 1
    high = (bins <= bitset[..., BITSET_RANGE_WORD]) | (bins == bitset[..., BITSET_EXTRA_WORD])
    if words is not None and np.shape(words)[-1] > 0:
        words = np.broadcast_to(words, bins.shape + (np.shape(words)[-1],))
        j = (bins - BITMAP_BINS) >> 5
        inside = (j >= 0) & (j < words.shape[-1])
        word = np.take_along_axis(words, np.clip(j, 0, words.shape[-1] - 1)[..., None],
                                  axis=-1)[..., 0]
        high |= inside & (((word >> (bins & 31).astype(np.uint32)) & 1) == 1)
    return np.where(bins < BITMAP_BINS, in_map.astype(bool), high)


def left_bins(bitset_row, n_bins, words=None):
    """int64 ascending: the bins < ``n_bins`` that go left under one split
    row (uint32 (BITSET_WORDS,)) with its words beyond (uint32 (m,) or
    None)."""
    bins = np.arange(n_bins)
    return bins[goes_left(bitset_row, bins, words)]


def node_left_bins(tree, node, n_bins):
    """int64 ascending: the bins < ``n_bins`` that go left at split ``node``
    of ``tree`` (TreeArrays), its words included."""
    return left_bins(tree.bitset[node], n_bins, tree.node_words(node))


def nodes_go_left(tree, nodes, bins):
    """bool (n,): whether ``bins`` (int (n,)) go left at ``nodes`` (int (n,))
    of ``tree`` (TreeArrays), their words included."""
    bins = np.asarray(bins).astype(np.int64)
    left = goes_left(tree.bitset[nodes], bins)
    if tree.has_cat_words:
        j = (bins - BITMAP_BINS) >> 5
        inside = (j >= 0) & (j < tree.cat_n_words[nodes])
        at = np.where(inside, tree.cat_start[nodes] + np.maximum(j, 0), 0)
        word = tree.cat_words[at] if tree.cat_words.size else np.zeros(bins.shape, np.uint32)
        left |= inside & (((word >> (bins & 31).astype(np.uint32)) & 1) == 1)
    return left


def words_of_bins(bins, n_words):
    """uint32 (n_words,): the words beyond the bitmap holding ``bins`` (int
    array, each >= 256)."""
    words = np.zeros(n_words, dtype=BITSET_DTYPE)
    bins = np.asarray(bins, dtype=np.int64) - BITMAP_BINS
    np.bitwise_or.at(words, bins // BITSET_WORD_BITS,
                     (np.uint32(1) << (bins % BITSET_WORD_BITS).astype(np.uint32)))
    return words


def left_sets(bitset, word_rows):
    """LeftSets (host) of splits ``bitset`` (uint32 (n, BITSET_WORDS)) whose
    words beyond are the rows of ``word_rows`` (uint32 (n, m)), each kept
    up to its last non-zero word (a tree's layout)."""
    word_rows = np.asarray(word_rows, dtype=BITSET_DTYPE).reshape(bitset.shape[0], -1)
    if word_rows.shape[1] == 0:        # no split has words (no feature over 256 categories)
        none = np.zeros(bitset.shape[0], dtype=WORD_START_DTYPE)
        return LeftSets(bitset, word_rows.reshape(-1), none,
                        np.zeros(bitset.shape[0], dtype=WORD_COUNT_DTYPE))
    columns = np.arange(word_rows.shape[1])
    last = np.where(word_rows != 0, columns[None, :], -1).max(axis=1, initial=-1)
    n_words = (last + 1).astype(WORD_COUNT_DTYPE)
    start = np.zeros(n_words.shape[0], dtype=WORD_START_DTYPE)
    start[1:] = np.cumsum(n_words[:-1], dtype=WORD_START_DTYPE)
    words = word_rows[columns[None, :] < n_words[:, None]]
    return LeftSets(bitset, words, np.where(n_words > 0, start, 0).astype(WORD_START_DTYPE),
                    n_words)


def left_set(bitset, words):
    """LeftSets (host) of one split: ``bitset`` uint32 (BITSET_WORDS,), its
    words beyond ``words`` uint32 (m,) (left_sets of one row, without its
    numpy calls per row: a best-first tree's step moves one split's rows)."""
    kept = trimmed_words(np.asarray(words, dtype=BITSET_DTYPE))
    return LeftSets(np.asarray(bitset)[None], kept, np.zeros(1, dtype=WORD_START_DTYPE),
                    np.full(1, kept.shape[0], dtype=WORD_COUNT_DTYPE))


def trimmed_words(words):
    """``words`` (uint32 (m,)) without its trailing zero words: how a tree
    stores a split's words."""
    nonzero = np.flatnonzero(words)
    return words[:nonzero[-1] + 1] if nonzero.size else words[:0]


def last_left_bin(bitset, missing_bin):
    """int64 (n,): the last non-missing bin going left at numerical splits
    ``bitset`` (uint32 (n, BITSET_WORDS)), whose left bins are 0 .. t."""
    bits = np.unpackbits(bitset[:, :BITMAP_WORDS].astype(BITSET_DTYPE).view(np.uint8), axis=1,
                         bitorder="little")
    in_map = bits[:, :min(missing_bin, BITMAP_BINS)].sum(axis=1).astype(np.int64) - 1
    return np.where(bitset[:, BITSET_RANGE_WORD] > 0, bitset[:, BITSET_RANGE_WORD], in_map)
