"""The one home of every dtype and fixed width used by gputree.

Every module and every backend (CPU, CUDA, simulated CUDA) imports dtypes from
here, so saved trees and kernel arguments have the same fixed-width layout on
every platform (never ``intp``).
"""
import numpy as np

#: binned feature values, shape (n_samples, n_features), Fortran order
X_BINNED_DTYPE = np.uint8
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
#: words of the per-node "goes left" bitset over bins
BITSET_DTYPE = np.uint32
BITSET_WORD_BITS = 32

#: at most this many non-missing bins per feature; one more bin holds missing
MAX_NON_MISSING_BINS = 255
#: bins including the missing bin: ``n_bins = max_bins + 1 <= 256``
MAX_N_BINS = MAX_NON_MISSING_BINS + 1
#: every split is stored as a bitset over all MAX_N_BINS bins
BITSET_WORDS = MAX_N_BINS // BITSET_WORD_BITS
