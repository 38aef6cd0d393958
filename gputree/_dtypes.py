"""The one home of every dtype and fixed width used by gputree.

Every module and every backend (CPU, CUDA, simulated CUDA) imports dtypes from
here, so saved trees and kernel arguments have the same fixed-width layout on
every platform (never ``intp``).
"""
import numpy as np

#: binned feature values, shape (n_samples, n_features) (order: the backend's
#: ``binned_order``), when
#: every bin code fits a byte (n_bins <= 256); see :func:`bin_dtype`
X_BINNED_DTYPE = np.uint8
#: binned feature values when more than 256 bins are asked for (max_bins > 255)
X_BINNED_WIDE_DTYPE = np.uint16
#: raw feature values handed to the binning kernel
X_DTYPE = np.float64
#: bin thresholds, shape (n_features, max_bins), padded with +inf
THRESHOLD_DTYPE = np.float64
#: fixed-point per-row statistics and histogram cells (order-free sums)
STAT_DTYPE = np.int64
#: per-row node id (global, breadth-first numbering) and node indices
NODE_DTYPE = np.int32
#: feature indices in trees and split decisions
FEATURE_DTYPE = np.int32
#: split gains and leaf values
FLOAT_DTYPE = np.float64

#: at most this many non-missing bins per feature; one more bin holds missing
MAX_NON_MISSING_BINS = 65535
#: bins including the missing bin: ``n_bins = max_bins + 1 <= 65536``
MAX_N_BINS = MAX_NON_MISSING_BINS + 1
#: bins (missing bin included) whose codes fit X_BINNED_DTYPE
MAX_NARROW_N_BINS = 256
#: categories per categorical feature (16-bit codes, as the bins of any
#: feature); a categorical feature has one bin per category, so its
#: categories, not max_bins, decide its bins
MAX_CATEGORIES = MAX_NON_MISSING_BINS


def bin_dtype(n_bins):
    """dtype of binned features with ``n_bins`` bins (missing bin included):
    uint8 up to 256 bins (the fast path), uint16 up to 65536."""
    if not 2 <= n_bins <= MAX_N_BINS:
        raise ValueError(f"n_bins must be in [2, {MAX_N_BINS}], got {n_bins}.")
    return X_BINNED_DTYPE if n_bins <= MAX_NARROW_N_BINS else X_BINNED_WIDE_DTYPE


#: the set of bins going left at a split (gputree/backends/splitset.py): a
#: bitmap of bins 0..255 in BITMAP_WORDS uint32 words, then one word holding
#: the last bin of the range 256.. that goes left and one holding one more
#: single bin >= 256 that goes left (0: none)
BITSET_DTYPE = np.uint32
BITSET_WORD_BITS = 32
BITMAP_BINS = 256
BITMAP_WORDS = BITMAP_BINS // BITSET_WORD_BITS
BITSET_RANGE_WORD = BITMAP_WORDS
BITSET_EXTRA_WORD = BITMAP_WORDS + 1
BITSET_WORDS = BITMAP_WORDS + 2
#: a categorical split's bins from BITMAP_BINS on: a bitmap in a variable
#: number of further uint32 words (BITSET_DTYPE), word j holding bins
#: BITMAP_BINS + 32 j .. + 31, kept apart from the split's BITSET_WORDS
#: (gputree.tree.LeftSets): where a node's words start (WORD_START_DTYPE)
#: and how many it has (WORD_COUNT_DTYPE)
WORD_START_DTYPE = np.int64
WORD_COUNT_DTYPE = np.int32


def extension_words(n_bins_non_missing):
    """Words a categorical split needs beyond the bitmap for a feature with
    ``n_bins_non_missing`` (int or int array) categories: its bins 256 ..
    n - 1 (the missing bin goes left through word BITSET_EXTRA_WORD)."""
    n = np.asarray(n_bins_non_missing, dtype=np.int64)
    words = np.maximum(n - BITMAP_BINS + BITSET_WORD_BITS - 1, 0) // BITSET_WORD_BITS
    return int(words) if words.ndim == 0 else words
