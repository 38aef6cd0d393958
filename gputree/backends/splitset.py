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
to min(t, 255) and word 8 to t when t >= 256; categorical features have at
most 255 categories (``MAX_CATEGORIES``), so their bins lie in the bitmap; the
missing bin, the last one, goes left through the bitmap (8-bit) or word 9.
So a split takes 40 bytes whatever the number of bins, and partitioning and
prediction still need no split kinds. The CUDA C copy of the rule is
``gt_goes_left`` in kernels/common.cuh.
"""
from collections import namedtuple

import numpy as np

from .._dtypes import (BITMAP_BINS, BITMAP_WORDS, BITSET_DTYPE, BITSET_EXTRA_WORD,
                       BITSET_RANGE_WORD)

SplitSetFunctions = namedtuple("SplitSetFunctions", "goes_left add_bin add_bins_upto")


def make_splitset(jit):
    """Compile the rule with ``jit`` (numba.njit or numba.cuda.jit(device=True)):

    goes_left(bitset, k, b) -> 0/1: bin b under split row k of bitset
                                   (IN uint32 (n, BITSET_WORDS))
    add_bin(bitset, k, b)          row k INOUT: bin b goes left too (b < 256
                                   or the one extra bin >= 256)
    add_bins_upto(bitset, k, last) row k INOUT: bins 0 .. last go left
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
        for b in range(min(last + 1, BITMAP_BINS)):
            add_bin(bitset, k, b)
        if last >= BITMAP_BINS:
            bitset[np.uint64(k), BITSET_RANGE_WORD] = np.uint32(last)

    return SplitSetFunctions(goes_left, add_bin, add_bins_upto)


def goes_left(bitset, bins):
    """bool array shaped like ``bins`` (int array): whether they go left under
    the split rows ``bitset`` (uint32 (..., BITSET_WORDS); the leading axes
    broadcast to ``bins``'s shape)."""
    bins = np.asarray(bins).astype(np.int64)
    bitset = np.broadcast_to(bitset, bins.shape + (np.shape(bitset)[-1],))
    word = np.take_along_axis(bitset, np.minimum(bins >> 5, BITMAP_WORDS - 1)[..., None],
                              axis=-1)[..., 0]
    in_map = (word >> (bins & 31).astype(np.uint32)) & 1
    high = (bins <= bitset[..., BITSET_RANGE_WORD]) | (bins == bitset[..., BITSET_EXTRA_WORD])
    return np.where(bins < BITMAP_BINS, in_map.astype(bool), high)


def left_bins(bitset_row, n_bins):
    """int64 ascending: the bins < ``n_bins`` that go left under one split
    row (uint32 (BITSET_WORDS,))."""
    bins = np.arange(n_bins)
    return bins[goes_left(bitset_row, bins)]


def last_left_bin(bitset, missing_bin):
    """int64 (n,): the last non-missing bin going left at numerical splits
    ``bitset`` (uint32 (n, BITSET_WORDS)), whose left bins are 0 .. t."""
    bits = np.unpackbits(bitset[:, :BITMAP_WORDS].astype(BITSET_DTYPE).view(np.uint8), axis=1,
                         bitorder="little")
    in_map = bits[:, :min(missing_bin, BITMAP_BINS)].sum(axis=1).astype(np.int64) - 1
    return np.where(bitset[:, BITSET_RANGE_WORD] > 0, bitset[:, BITSET_RANGE_WORD], in_map)
