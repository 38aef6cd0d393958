"""Split finding as device math: the scan of one (node, feature) histogram for its best split,
and the per-level reduction to one best split per node.

The scan is written once in the Python subset that both ``numba.njit`` and
``numba.cuda.jit(device=True)`` compile; :func:`make_split_scanner` compiles it
for a backend, so CPU and CUDA evaluate the same candidates in the same order
with the same arithmetic. Candidates, in order (the first strictly best wins):

* numerical: thresholds after bin ``b = 0 .. n-2`` with missing values right,
  then left; then "all non-missing left, missing right" (a bin ``b > 0``
  holding no rows of the node is skipped: it would repeat the candidate
  before it, which wins ties anyway);
* categorical (``params[PARAM_CAT_SEARCH]`` 0: CART's exact search, trees
  and forests): categories with rows in the node sorted by the criterion's
  sort key (ties by category code: their bin), prefixes of that order
  (missing right, then left), then each category alone, then "all
  categories left, missing right";
* categorical, LightGBM's search (``PARAM_CAT_SEARCH`` 1, boosting; 2:
  for features of more than 255 categories, CART's exact search for the
  others): a
  feature of at most ``PARAM_MAX_CAT_TO_ONEHOT`` categories tries each
  category alone (one-vs-rest; missing right, then left); otherwise the
  categories with at least ``max(1, PARAM_CAT_SMOOTH)`` rows in the node,
  sorted by G / (H + cat_smooth) (output 0's sums; ties by category code),
  give the prefixes of that order from its start, then from its end, of at
  most ``min(PARAM_MAX_CAT_THRESHOLD, (n + 1) // 2)`` categories, each
  prefix tried when its categories since the last one tried hold at least
  ``PARAM_MIN_DATA_PER_GROUP`` rows (and so does the rest), scored with
  ``reg_lambda + PARAM_CAT_L2`` for the children (formulas.categorical_gain);
  categories left out of the order go right;
* categorical with multiway splits on (``layout[LAYOUT_MULTIWAY]``, ID3 /
  C4.5): one candidate, one child per category with rows in the node, the
  node's missing rows joining the heaviest child (the lowest bin on ties);
  its information gain over the m-way partition, divided by the partition's
  entropy for gain ratio. ``out_info`` holds every feature's information
  gain (the undivided gain of its best candidate), which C4.5's
  at-least-average rule needs (:mod:`gputree.growth.multiway`);
* with a chosen ``split_bin`` b >= 0 (extremely randomized trees,
  :mod:`gputree.backends.node_features`): the threshold after bin b alone,
  or the categorical prefix of b + 1 categories alone, missing right then
  left (an empty bin b is evaluated: the random threshold lies in a gap).

Every split is returned as the set of bins that go left (the missing bin
included; layout in splitset.py), so partitioning and prediction need no
split kinds.
When the node had no missing values, missing values go to the child with more
samples (right on ties, as scikit-learn sends them).
"""
import math
from types import SimpleNamespace

import numpy as np

from .._dtypes import (BITMAP_BINS, BITSET_DTYPE, BITSET_WORDS, FEATURE_DTYPE, FLOAT_DTYPE,
                       STAT_DTYPE, extension_words)
from .devmath import make_devmath
from .formulas import (KIND_NEWTON, LAYOUT_COUNT_CHANNEL, LAYOUT_MULTIWAY, LAYOUT_N_CHANNELS,
                       LAYOUT_N_OUTPUTS, LAYOUT_PER_OUTPUT, LAYOUT_SPLIT_INFO, PARAM_CAT_SEARCH,
                       PARAM_CAT_SMOOTH, PARAM_CONSTRAINTS, PARAM_MAX_CAT_THRESHOLD,
                       PARAM_MAX_CAT_TO_ONEHOT, PARAM_MIN_DATA_PER_GROUP, PARAM_MIN_SAMPLES_LEAF,
                       PARAM_MIN_WEIGHT_LEAF, PARAM_REG_ALPHA, PARAM_REG_LAMBDA,
                       make_criterion_functions, specialised)
from .splitset import make_splitset

#: scratch channel-vectors per (node, feature) scan: total, left, right, missing, running
SCRATCH_VECTORS = 5
#: scratch slots per categorical scan at least (one per category: the
#: histograms' non-missing bins when more)
MIN_CATEGORY_SLOTS = 256
#: entries of the insertion-sorted runs that the CPU's merge sort of categories merges
SORT_RUN = 16
#: candidates per block of the vectorized boosting scan (``vector``; a
#: multiple of 8, the gain loop's vector width)
BLOCK_BINS = 256


#: a scan's "no candidate yet" bin and missing-left flag, typed int64 (not
#: numba literals): a loop-carried variable that starts as a literal is
#: first typed as that literal, and the helper it reaches is then compiled
#: twice (once for the literal, once for int64)
_NO_BIN, _ZERO = np.int64(-1), np.int64(0)


def make_split_scanner(jit, inline=None, measure=None, categorical=True, entry=None,
                       vector=False, newton_only=None):
    """``scan`` of :func:`make_scan_parts` (the same arguments)."""
    return make_scan_parts(jit, inline, measure, categorical, entry, vector, newton_only).scan


def make_scan_parts(jit, inline=None, measure=None, categorical=True, entry=None,
                    vector=False, newton_only=None):
    """Compile the (node, feature) scan with ``jit`` (small per-candidate
    helpers with ``inline``, default ``jit``; ``scan`` itself with ``entry``,
    default ``jit``), for one criterion ``measure``
    or (None) the one ``layout`` names (see make_criterion_functions); returns
    ``scan(t, ...)``. ``categorical`` False leaves the categorical scan out
    (a constant branch the compiler drops: not compiled) for data whose
    features are all numerical. ``vector`` (the CPU) scans boosting's
    candidates in blocks whose gains a vectorized loop computes
    (``scan_newton_blocks``; the same candidates, arithmetic and choice).
    ``newton_only`` True: every scan is boosting's with one output and no
    value constraints (its scan alone is compiled); False: none is (the
    boosting scans are left out); None: read from ``layout`` and ``params``
    per scan. Returns a namespace: ``scan``, ``scan_task`` (``scan`` of
    task node * n_features + f given as (node, f, slot, ...): the CPU's
    kernel, which steps through its tasks without dividing), and the
    device functions a
    kernel that divides boosting's scan among threads composes
    (``newton_task``, ``clear_task``, ``newton_candidate``,
    ``newton_missing_right``, ``add_bins_upto``, ``record_split``; the CUDA
    backend's block scan), and the two sorts of categories (``heap_sort``,
    ``merge_sort``).

    scan(t, slot, hist, cells, n_features, n_bins_non_missing, is_categorical,
         feature_allowed, split_bin, missing_bin, layout, inv, params,
         scratch_sums, scratch_keys, scratch_order, scratch_prefix, scratch_gains,
         out_gain, out_missing_left, out_bitset, out_left, out_info, out_words)
      t                  : int, task index = node * n_features + feature
      slot               : int, the scratch row the task may use (one task at
                           a time per slot: a GPU thread's t, a CPU worker's)
      hist               : IN  int64 (n_nodes, n_features, n_bins, n_channels),
                           or with ``cells`` (n_nodes, 1, cells[-1], n_channels)
      cells              : IN  int64 empty (the layout above), or (n_features
                           + 1,): the compact layout, feature f's bins b <
                           n_bins_non_missing[f] in cells cells[f] + b, its
                           missing bin in cells[f + 1] - 1 (the CPU's
                           histograms.row_layout)
      n_bins_non_missing : IN  int32 (n_features,)
      is_categorical     : IN  uint8 (n_features,)
      feature_allowed    : IN  uint8 (n_nodes, n_features)
      split_bin          : IN  int32 (n_nodes, n_features): -1, every
                           candidate; b >= 0, only the threshold after bin
                           b (numerical) or the prefix order[:b + 1]
                           (categorical), missing values right then left
                           (extremely randomized trees, node_features.py)
      layout, inv, params: IN  criterion description (criteria.py)
      scratch_sums       : OUT int64 (n_slots, SCRATCH_VECTORS * n_channels)
      scratch_keys       : OUT float64 (n_slots or 1, >= categories of a feature;
                           ``vector``: >= twice as many, an even number)
      scratch_order      : OUT int32 (as scratch_keys)
      scratch_prefix     : OUT int64 (n_slots or 1, 3, BLOCK_BINS or 1)
      scratch_gains      : OUT float64 (n_slots or 1, 2, BLOCK_BINS or 1)
                           (the last two: ``vector`` only)
      out_gain           : OUT float64 (n_nodes, n_features), -inf if no split
      out_missing_left   : OUT uint8 (n_nodes, n_features)
      out_bitset         : OUT uint32 (n_nodes, n_features, BITSET_WORDS)
      out_left           : OUT int64 (n_nodes, n_features, n_channels), the
                           left child's sums of the feature's best split
      out_info           : OUT float64 (n_nodes, n_features), multiway mode:
                           the information gain of that split (else -inf)
      out_words          : OUT uint32 (n_nodes, n_features, n_ext): a
                           categorical split's bins from 256 on (splitset's
                           words; n_ext >= 1, enough for every category)
    """
    inline = inline or jit
    crit = make_criterion_functions(jit, inline, measure)
    bounded_gain, node_count, bounded_parent_score, sort_key = (
        crit.bounded_gain, crit.node_count, crit.bounded_parent_score, crit.sort_key)
    categorical_gain, smoothed_ratio = crit.categorical_gain, crit.smoothed_ratio
    sets = make_splitset(inline)
    goes_left, add_bin, add_bins_upto = sets.goes_left, sets.add_bin, sets.add_bins_upto
    in_words, add_word_bin = sets.in_words, sets.add_word_bin
    node_weight, impurity, impurity_gain = crit.node_weight, crit.impurity, crit.impurity_gain
    newton_gain_one, kind_of = crit.newton_gain_one, crit.kind_of
    newton_gain_scalars, newton_term = crit.newton_gain_scalars, crit.newton_term
    log2 = make_devmath(inline).log2
    newton_fixed = -1 if newton_only is None else int(newton_only)
    variant = ("c" if categorical else "n") + ("" if newton_fixed < 0 else str(newton_fixed))
    entry = specialised(entry or jit, measure, variant)
    jit, inline = specialised(jit, measure, variant), specialised(inline, measure, variant)

    @inline
    def combine(L, R, A, M, T, with_missing):
        """L = A (+ M), R = T - L."""
        for c in range(L.shape[0]):
            L[c] = A[c] + (M[c] if with_missing else 0)
            R[c] = T[c] - L[c]

    @inline
    def accumulate(A, H, b):
        """A += H[b] (H is (n_bins, C); indexing it, not slicing it, keeps
        numba from reference-counting a view per bin)."""
        for c in range(A.shape[0]):
            A[c] += H[b, c]

    @inline
    def channel_sums(S, H, n):
        """S = the sum of H's first n bins, each channel summed in a
        register (int64: the same sums as bin by bin)."""
        for c in range(S.shape[0]):
            total = H[0, c] * 0
            for b in range(n):
                total += H[b, c]
            S[c] = total

    @inline
    def newton_sums(S, H, n):
        """channel_sums of boosting's three channels (gradient, hessian,
        count) in one pass over the bins, each summed in a register."""
        g, h, c = H[0, 0] * 0, H[0, 1] * 0, H[0, 2] * 0
        for b in range(n):
            g, h, c = g + H[b, 0], h + H[b, 1], c + H[b, 2]
        S[0], S[1], S[2] = g, h, c

    @inline
    def copy_bin(A, H, b):
        """A = H[b]."""
        for c in range(A.shape[0]):
            A[c] = H[b, c]

    @inline
    def feature_histogram(hist, cells, node, f, missing_bin):
        """(H, missing_cell): feature f's histogram of node ``node``, (bins,
        C), and the cell of its missing bin, in either layout of ``cells``
        (see scan)."""
        if cells.shape[0] == 0:
            return hist[node, f], missing_bin
        first, stop = cells[f], cells[f + 1]
        return hist[node, 0, first:stop], stop - first - 1

    @inline
    def majority_class(T, layout):
        best = 0
        for k in range(1, layout[LAYOUT_PER_OUTPUT]):
            if T[k] > T[best]:
                best = k
        return best

    @inline
    def newton_candidate(ag, ah, an, T, M, ml, parent, inv, params):
        """Boosting's candidate whose non-missing left rows sum to (ag, ah,
        an), the missing rows M joining them when ``ml`` is 1: (gain, left
        g, h, n) (formulas.newton_gain_one)."""
        lg, lh, ln = ag, ah, an
        if ml == 1:
            lg, lh, ln = ag + M[0], ah + M[1], an + M[2]
        gain = newton_gain_one(lg, lh, ln, T[0] - lg, T[1] - lh, T[2] - ln, parent, inv, params)
        return gain, lg, lh, ln

    @inline
    def newton_missing_right(T, L, M, n_non_missing, parent, inv, params, best, best_bin,
                             best_ml):
        """The boosting scans' last candidate, every non-missing bin left and
        the missing ones right: (best, best_bin, best_ml) updated, its left
        sums in L when it wins."""
        lg, lh, ln = T[0] - M[0], T[1] - M[1], T[2] - M[2]
        gain = newton_gain_one(lg, lh, ln, T[0] - lg, T[1] - lh, T[2] - ln, parent, inv, params)
        if gain > best:
            L[0], L[1], L[2] = lg, lh, ln
            return gain, n_non_missing - 1, 0
        return best, best_bin, best_ml

    @jit
    def scan_newton_one(H, T, L, M, n_non_missing, has_missing, parent, inv, params):
        """scan_numerical for boosting with one output and no value
        constraints: the same candidates in the same order and the same
        arithmetic (formulas.newton_gain_one), on sums held as scalars rather
        than in scratch rows (3x faster per candidate on the CPU). L OUT:
        the best candidate's left sums (what finish would add up from the
        split's bins)."""
        best, best_bin, best_ml = -math.inf, _NO_BIN, _ZERO
        ag, ah, an = H[0, 0] * 0, H[0, 1] * 0, H[0, 2] * 0     # int64 zeros
        n_ml = 2 if has_missing else 1
        previous_count = -1.0
        for b in range(n_non_missing - 1):
            ag, ah, an = ag + H[b, 0], ah + H[b, 1], an + H[b, 2]
            if an * 1.0 == previous_count:
                continue  # an empty bin repeats the previous candidate exactly
            previous_count = an * 1.0
            for ml in range(n_ml):
                gain, lg, lh, ln = newton_candidate(ag, ah, an, T, M, ml, parent, inv, params)
                if gain > best:
                    best, best_bin, best_ml = gain, b, ml
                    L[0], L[1], L[2] = lg, lh, ln
        if has_missing:
            return newton_missing_right(T, L, M, n_non_missing, parent, inv, params,
                                        best, best_bin, best_ml)
        return best, best_bin, best_ml

    @inline
    def newton_prefix(H, first, n, prefix, ag, ah, an):
        """prefix[0:3, k] = (ag, ah, an) + the sums of H's bins first ..
        first + k (k < n), the running sums of boosting's three channels,
        each in a register; returns the sums after the last."""
        for k in range(n):
            u = np.uint64(first + k)    # unsigned indices: no wraparound of negative ones
            ag, ah, an = ag + H[u, 0], ah + H[u, 1], an + H[u, 2]
            v = np.uint64(k)
            prefix[0, v], prefix[1, v], prefix[2, v] = ag, ah, an
        return ag, ah, an

    @inline
    def newton_block_gains(prefix, gains, ml, n, mg, mh, mn, tg, th, tn, parent, inv_g, inv_h,
                           min_samples, min_weight, reg_lambda, reg_alpha):
        """gains[ml, k] = the gain of the threshold whose non-missing left
        rows sum to prefix[0:3, k] (k < n), the missing rows (mg, mh, mn)
        joining them (formulas.newton_gain_scalars: the same operations);
        -inf for a NaN gain (it never wins) and for k from n up to the next
        multiple of 8 (a loop the compiler vectorizes without a remainder)."""
        for k in range((n + 7) // 8 * 8):
            lg, lh, ln = prefix[0, k] + mg, prefix[1, k] + mh, prefix[2, k] + mn
            gain = newton_gain_scalars(lg, lh, ln, tg - lg, th - lh, tn - ln, parent, inv_g,
                                       inv_h, min_samples, min_weight, reg_lambda, reg_alpha)
            gains[ml, k] = gain if (k < n) & (gain == gain) else -math.inf

    @inline
    def order_key(bits):
        """The int64 that orders float64s (given as their int64 bits, not
        NaN) as their values: -0.0 and +0.0 alike."""
        sign = bits >> 63
        return (bits ^ (sign & 0x7FFFFFFFFFFFFFFF)) - sign

    @inline
    def first_best(gains, n_ml, n):
        """(k, ml) of the first largest of gains[ml, k] (float64, no NaN;
        k < n, then ml < n_ml: the scan's order; gains[ml, n:] up to the
        next multiple of 8 are -inf): the largest order_key by integer
        maxima (a loop the compiler vectorizes, no fast-math), then the
        first candidate of that key (a search: cheaper than a second
        reduction on the few candidates of most features)."""
        bits = gains.view(np.int64)
        padded = (n + 7) // 8 * 8
        top = order_key(bits[0, 0])
        for ml in range(n_ml):
            for k in range(padded):
                top = max(top, order_key(bits[ml, k]))
        for k in range(n):
            for ml in range(n_ml):
                if order_key(bits[ml, k]) == top:
                    return k, ml
        return 0, 0

    @inline
    def scan_newton_blocks(H, T, L, M, n_non_missing, missing_cell, has_missing, inv, params,
                           prefix, gains):
        """scan_newton_one, a block of thresholds at a time, in passes the
        compiler vectorizes: the running sums (newton_prefix), every
        threshold's gains (newton_block_gains), the first best of them
        (first_best). The same candidates, arithmetic and choice: a
        threshold after an empty bin, which scan_newton_one skips, repeats
        the one before it, and the first of equal gains wins; one whose
        children break min_samples_leaf has gain -inf. Also sums the node's
        total into T (the bins' sums of the first pass when one block holds
        them all). Returns (gain, threshold, missing_left, parent score); L
        OUT: the best candidate's left sums."""
        best, best_bin, best_ml = -math.inf, _NO_BIN, _ZERO
        zero = H[0, 0] * 0      # int64
        block = prefix.shape[1]
        n_sum = min(n_non_missing, missing_cell)
        whole = n_non_missing <= block and n_sum == n_non_missing
        if whole:
            T[0], T[1], T[2] = newton_prefix(H, 0, n_sum, prefix, zero, zero, zero)
        else:
            newton_sums(T, H, n_sum)
        T[0], T[1], T[2] = T[0] + M[0], T[1] + M[1], T[2] + M[2]
        inv_g, inv_h = inv[0], inv[1]
        min_samples, min_weight = params[PARAM_MIN_SAMPLES_LEAF], params[PARAM_MIN_WEIGHT_LEAF]
        reg_lambda, reg_alpha = params[PARAM_REG_LAMBDA], params[PARAM_REG_ALPHA]
        # newton_score of one output (parent_score): its operations, no loop
        parent = 0.0 + newton_term(T[0], T[1], inv_g, inv_h, reg_lambda, reg_alpha)
        n_ml = 2 if has_missing else 1
        ag, ah, an = zero, zero, zero
        for first in range(0, n_non_missing - 1, block):
            n = min(block, n_non_missing - 1 - first)
            if not whole:
                ag, ah, an = newton_prefix(H, first, n, prefix, ag, ah, an)
            for ml in range(n_ml):
                mg, mh, mn = (M[0], M[1], M[2]) if ml == 1 else (zero, zero, zero)
                newton_block_gains(prefix, gains, ml, n, mg, mh, mn, T[0], T[1], T[2], parent,
                                   inv_g, inv_h, min_samples, min_weight, reg_lambda, reg_alpha)
            k, ml = first_best(gains, n_ml, n)
            if gains[ml, k] > best:
                best, best_bin, best_ml = gains[ml, k], first + k, ml
                L[0], L[1], L[2] = prefix[0, k], prefix[1, k], prefix[2, k]
                if ml == 1:
                    L[0], L[1], L[2] = L[0] + M[0], L[1] + M[1], L[2] + M[2]
        if has_missing:
            best, best_bin, best_ml = newton_missing_right(T, L, M, n_non_missing, parent, inv,
                                                           params, best, best_bin, best_ml)
        return best, best_bin, best_ml, parent

    @inline
    def newton_one(layout, params):
        """Boosting with one output and no value constraints (scan_newton_one)."""
        return (kind_of(layout) == KIND_NEWTON and layout[LAYOUT_N_OUTPUTS] == 1
                and int(params[PARAM_CONSTRAINTS]) == 0)

    @jit
    def scan_numerical(H, T, L, R, A, M, n_non_missing, has_missing,
                       parent, layout, inv, params, row, f, n_features):
        """Returns (gain, threshold bin, missing_left)."""
        best, best_bin, best_ml = -math.inf, _NO_BIN, _ZERO
        for c in range(A.shape[0]):
            A[c] = 0
        n_ml = 2 if has_missing else 1
        previous_count = -1.0
        for b in range(n_non_missing - 1):
            accumulate(A, H, b)
            count = node_count(A, layout, inv)
            if count == previous_count:
                continue  # an empty bin repeats the previous candidate exactly
            previous_count = count
            for ml in range(n_ml):
                combine(L, R, A, M, T, ml == 1)
                gain = bounded_gain(L, R, parent, layout, inv, params, row, f, n_features)
                if gain > best:
                    best, best_bin, best_ml = gain, b, ml
        if has_missing:
            for c in range(A.shape[0]):
                A[c] = T[c] - M[c]
            combine(L, R, A, M, T, False)
            gain = bounded_gain(L, R, parent, layout, inv, params, row, f, n_features)
            if gain > best:
                best, best_bin, best_ml = gain, n_non_missing - 1, 0
        return best, best_bin, best_ml

    @inline
    def entry_before(key_a, bin_a, key_b, bin_b):
        """An entry (key, bin) sorts before another: by key (NaN after every
        number), ties by bin (a total order: bins are distinct; so any
        correct sort gives the same order)."""
        if key_a < key_b:
            return True
        if key_a > key_b:
            return False
        a_nan, b_nan = key_a != key_a, key_b != key_b
        if a_nan == b_nan:          # equal keys, or both NaN
            return bin_a < bin_b
        return b_nan

    @inline
    def sorts_before(keys, order, i, j):
        """Entry i of (keys, order) sorts before entry j (entry_before)."""
        return entry_before(keys[i], order[i], keys[j], order[j])

    @inline
    def sift_ends(keys, order, base, root, end, smallest):
        """Heap property of (keys, order)[base:base + end] restored below
        ``root``: the entry sorting last at the root (``smallest``: a heap
        of the smallest entries seen, or heap_sort's) or the one sorting
        first."""
        while 2 * root + 1 < end:
            child = 2 * root + 1
            a, b = base + child, base + child + 1
            if child + 1 < end and (sorts_before(keys, order, a, b) if smallest
                                    else sorts_before(keys, order, b, a)):
                child += 1
            r, c = base + root, base + child
            if not (sorts_before(keys, order, r, c) if smallest
                    else sorts_before(keys, order, c, r)):
                return
            keys[r], keys[c] = keys[c], keys[r]
            order[r], order[c] = order[c], order[r]
            root = child

    @jit
    def heap_sort(keys, order, n):
        """(keys, order)[:n] sorted in place (entry_before): heapsort (n log
        n steps, no recursion nor memory)."""
        for root in range(n // 2 - 1, -1, -1):
            sift_ends(keys, order, 0, root, n, True)
        for end in range(n - 1, 0, -1):
            keys[0], keys[end] = keys[end], keys[0]
            order[0], order[end] = order[end], order[0]
            sift_ends(keys, order, 0, 0, end, True)

    @inline
    def insertion_runs(keys, order, n):
        """(keys, order)[:n] sorted in runs of SORT_RUN entries."""
        for start in range(0, n, SORT_RUN):
            stop = min(start + SORT_RUN, n)
            for i in range(start + 1, stop):
                key, b = keys[i], order[i]
                j = i - 1
                while j >= start and entry_before(key, b, keys[j], order[j]):
                    keys[j + 1], order[j + 1] = keys[j], order[j]
                    j -= 1
                keys[j + 1], order[j + 1] = key, b

    @inline
    def merge_runs(src_keys, src_order, dst_keys, dst_order, n, width):
        """Merge the sorted runs of ``width`` entries of src, two by two,
        into dst (the left run first on ties: there are none)."""
        for low in range(0, n, 2 * width):
            mid, high = min(low + width, n), min(low + 2 * width, n)
            i, j = low, mid
            for out in range(low, high):
                if i < mid and (j >= high or not entry_before(
                        src_keys[j], src_order[j], src_keys[i], src_order[i])):
                    dst_keys[out], dst_order[out] = src_keys[i], src_order[i]
                    i += 1
                else:
                    dst_keys[out], dst_order[out] = src_keys[j], src_order[j]
                    j += 1

    @jit
    def merge_sort(keys, order, n):
        """(keys, order)[:n] sorted in place (entry_before), keys and order
        holding at least 2n entries (the second half is scratch):
        insertion-sorted runs merged bottom up (3-4x faster than heapsort
        on the CPU for thousands of categories)."""
        half = keys.shape[0] // 2
        k0, o0, k1, o1 = keys[:half], order[:half], keys[half:], order[half:]
        insertion_runs(k0, o0, n)
        width, in_first = SORT_RUN, True
        while width < n:
            if in_first:
                merge_runs(k0, o0, k1, o1, n, width)
            else:
                merge_runs(k1, o1, k0, o0, n, width)
            in_first = not in_first
            width *= 2
        if not in_first:
            for i in range(n):
                k0[i], o0[i] = k1[i], o1[i]

    @inline
    def heap_insert(keys, order, base, k, key, b, smallest):
        """Entry (key, b) replaces the root of the heap of ``k`` entries at
        ``base`` (sift_ends) when it belongs among them."""
        if (entry_before(key, b, keys[base], order[base]) if smallest
                else entry_before(keys[base], order[base], key, b)):
            keys[base], order[base] = key, b
            sift_ends(keys, order, base, 0, k, smallest)

    @inline
    def heap_drain(keys, order, base, k, smallest, out):
        """The heap of ``k`` entries at ``base`` written to (keys,
        order)[out:out + k] in entry_before order (the heap is consumed)."""
        for end in range(k - 1, -1, -1):
            key, b = keys[base], order[base]
            keys[base], order[base] = keys[base + end], order[base + end]
            sift_ends(keys, order, base, 0, end, smallest)
            at = out + end if smallest else out + k - 1 - end
            keys[at], order[at] = key, b

    @jit
    def select_ends(keys, order, n, k):
        """(keys, order)[:k] OUT: the ``k`` entries of (keys, order)[:n]
        that sort first (entry_before), sorted; [n - k:n] the ``k`` that
        sort last, sorted; the entries between are not kept (2k < n). keys
        and order hold at least 2n entries (scratch from ``n`` on): two
        heaps of ``k`` over one pass, n log k steps at most (a merge sort
        of every entry when only the ends are read: LightGBM's search reads
        at most max_cat_threshold entries from each end)."""
        low, high = n, n + k
        for i in range(k):
            keys[low + i], order[low + i] = keys[i], order[i]
            keys[high + i], order[high + i] = keys[i], order[i]
        for root in range(k // 2 - 1, -1, -1):
            sift_ends(keys, order, low, root, k, True)
            sift_ends(keys, order, high, root, k, False)
        for i in range(k, n):
            heap_insert(keys, order, low, k, keys[i], order[i], True)
            heap_insert(keys, order, high, k, keys[i], order[i], False)
        heap_drain(keys, order, low, k, True, 0)
        heap_drain(keys, order, high, k, False, n - k)

    @jit
    def sort_entries(keys, order, n):
        """(keys, order)[:n] sorted in place by key, ties by bin
        (entry_before: a total order, so every device sorts alike, whatever
        the algorithm): merge sort on the CPU (``vector``; scratch rows of
        twice the categories), heapsort elsewhere (no scratch)."""
        if vector:
            merge_sort(keys, order, n)
        else:
            heap_sort(keys, order, n)

    @jit
    def scan_one_threshold(H, T, L, R, A, M, b, has_missing, parent, layout, inv, params,
                           row, f, n_features):
        """The candidates at the threshold after bin b alone (missing
        values right, then left): returns (gain, b, missing_left)."""
        channel_sums(A, H, b + 1)
        best, best_ml = -math.inf, 0
        for ml in range(2 if has_missing else 1):
            combine(L, R, A, M, T, ml == 1)
            gain = bounded_gain(L, R, parent, layout, inv, params, row, f, n_features)
            if gain > best:
                best, best_ml = gain, ml
        return best, b, best_ml

    @jit
    def sort_categories(H, T, A, n_non_missing, keys, order, layout, inv, params):
        """Fill order[:n] with the bins that hold rows, sorted by key, ties
        by bin (A is scratch)."""
        majority = majority_class(T, layout)
        n = 0
        for b in range(n_non_missing):
            copy_bin(A, H, b)
            if node_count(A, layout, inv) > 0:
                keys[n] = sort_key(A, T, layout, inv, params, majority)
                order[n] = b
                n += 1
        sort_entries(keys, order, n)
        return n

    @jit
    def scan_categorical(H, T, L, R, A, M, n_non_missing, has_missing,
                         parent, layout, inv, params, keys, order, row, f, n_features):
        """Returns (gain, kind, index, missing_left, n_categories); kind 0 is
        the prefix order[:index+1], 1 the single order[index], 2 all."""
        n_cat = sort_categories(H, T, A, n_non_missing, keys, order, layout, inv, params)
        best, best_kind, best_index, best_ml = -math.inf, 0, -1, 0
        n_ml = 2 if has_missing else 1
        for c in range(A.shape[0]):
            A[c] = 0
        for i in range(n_cat - 1):
            accumulate(A, H, order[i])
            for ml in range(n_ml):
                combine(L, R, A, M, T, ml == 1)
                gain = bounded_gain(L, R, parent, layout, inv, params, row, f, n_features)
                if gain > best:
                    best, best_kind, best_index, best_ml = gain, 0, i, ml
        if n_cat > 2:
            for i in range(n_cat):
                copy_bin(A, H, order[i])
                for ml in range(n_ml):
                    combine(L, R, A, M, T, ml == 1)
                    gain = bounded_gain(L, R, parent, layout, inv, params, row, f, n_features)
                    if gain > best:
                        best, best_kind, best_index, best_ml = gain, 1, i, ml
        if has_missing and n_cat > 0:
            for c in range(A.shape[0]):
                A[c] = T[c] - M[c]
            combine(L, R, A, M, T, False)
            gain = bounded_gain(L, R, parent, layout, inv, params, row, f, n_features)
            if gain > best:
                best, best_kind, best_index, best_ml = gain, 2, n_cat - 1, 0
        return best, best_kind, best_index, best_ml, n_cat

    @jit
    def scan_one_vs_rest(H, T, L, R, A, M, n_non_missing, has_missing, parent, layout, inv,
                         params, order, row, f, n_features):
        """LightGBM's one-vs-rest candidates: each category with rows alone
        (missing right, then left). Returns (gain, index, missing_left, n);
        the category is order[index]."""
        best, best_index, best_ml = -math.inf, -1, 0
        n_ml = 2 if has_missing else 1
        n = 0
        for b in range(n_non_missing):
            copy_bin(A, H, b)
            if node_count(A, layout, inv) <= 0:
                continue
            order[n] = b
            for ml in range(n_ml):
                combine(L, R, A, M, T, ml == 1)
                gain = bounded_gain(L, R, parent, layout, inv, params, row, f, n_features)
                if gain > best:
                    best, best_index, best_ml = gain, n, ml
            n += 1
        return best, best_index, best_ml, n

    @jit
    def sort_smoothed(H, A, n_non_missing, keys, order, layout, inv, params):
        """Fill order[:n] with the bins of at least max(1, cat_smooth) rows,
        sorted by G / (H + cat_smooth), ties by bin (A is scratch)."""
        least = max(params[PARAM_CAT_SMOOTH], 1.0)
        n = 0
        count_channel = layout[LAYOUT_COUNT_CHANNEL]
        for b in range(n_non_missing):
            # node_count of the bin, read in place where it is a channel
            if count_channel >= 0:
                enough = H[b, count_channel] * 1.0 >= least
            else:
                copy_bin(A, H, b)
                enough = node_count(A, layout, inv) >= least
            if enough:
                copy_bin(A, H, b)
                keys[n] = smoothed_ratio(A, inv, params)
                order[n] = b
                n += 1
        # the search reads the n_steps entries at each end (scan_sorted_groups)
        ends = min(int(params[PARAM_MAX_CAT_THRESHOLD]), (n + 1) // 2)
        if vector and 2 * ends < n:
            select_ends(keys, order, n, ends)
        else:
            sort_entries(keys, order, n)
        return n

    @jit
    def scan_sorted_groups(H, T, L, R, A, M, has_missing, parent, layout, inv, params,
                           order, n_used, row, f, n_features):
        """LightGBM's many-vs-many candidates over order[:n_used] (see the
        module's docstring). Returns (gain, direction, index, missing_left):
        the left set is order[:index + 1] (direction 0) or order[n_used -
        1 - index:] (direction 1)."""
        best, best_dir, best_index, best_ml = -math.inf, 0, -1, 0
        n_ml = 2 if has_missing else 1
        min_samples, min_weight = params[PARAM_MIN_SAMPLES_LEAF], params[PARAM_MIN_WEIGHT_LEAF]
        per_group = params[PARAM_MIN_DATA_PER_GROUP]
        n_steps = min(n_used, min(int(params[PARAM_MAX_CAT_THRESHOLD]), (n_used + 1) // 2))
        total = node_count(T, layout, inv)
        for direction in range(2):
            for c in range(A.shape[0]):
                A[c] = 0
            group, before = 0.0, 0.0
            for i in range(n_steps):
                accumulate(A, H, order[i] if direction == 0 else order[n_used - 1 - i])
                count = node_count(A, layout, inv)
                group += count - before
                before = count
                if count < min_samples or node_weight(A, layout, inv) < min_weight:
                    continue
                combine(L, R, A, M, T, False)
                rest = total - count
                if (rest < min_samples or rest < per_group
                        or node_weight(R, layout, inv) < min_weight):
                    break
                if group < per_group:
                    continue
                group = 0.0
                for ml in range(n_ml):
                    combine(L, R, A, M, T, ml == 1)
                    gain = categorical_gain(L, R, parent, layout, inv, params, row, f,
                                            n_features)
                    if gain > best:
                        best, best_dir, best_index, best_ml = gain, direction, i, ml
        return best, best_dir, best_index, best_ml

    @jit
    def search_categories(H, T, L, R, A, M, n_non_missing, has_missing, parent, layout, inv,
                          params, keys, order, row, f, n_features):
        """The categorical scan of the node: (gain, first, last, missing_left);
        the split's categories are order[first:last + 1]."""
        search = params[PARAM_CAT_SEARCH]
        if search == 0 or (search == 2 and n_non_missing < BITMAP_BINS):
            gain, kind, index, ml, n_cat = scan_categorical(
                H, T, L, R, A, M, n_non_missing, has_missing, parent, layout, inv, params,
                keys, order, row, f, n_features)
            return (gain, index if kind == 1 else 0, index if kind != 2 else n_cat - 1, ml)
        if n_non_missing <= params[PARAM_MAX_CAT_TO_ONEHOT]:
            gain, index, ml, _ = scan_one_vs_rest(
                H, T, L, R, A, M, n_non_missing, has_missing, parent, layout, inv, params,
                order, row, f, n_features)
            return gain, index, index, ml
        n_used = sort_smoothed(H, A, n_non_missing, keys, order, layout, inv, params)
        gain, direction, index, ml = scan_sorted_groups(
            H, T, L, R, A, M, has_missing, parent, layout, inv, params, order, n_used, row, f,
            n_features)
        if direction == 0:
            return gain, 0, index, ml
        return gain, n_used - 1 - index, n_used - 1, ml

    @jit
    def scan_categorical_prefix(H, T, L, R, A, M, n_non_missing, has_missing, parent, layout,
                                inv, params, keys, order, index, row, f, n_features):
        """scan_categorical's prefix order[:index+1] alone (missing values
        right, then left), the same return values."""
        n_cat = sort_categories(H, T, A, n_non_missing, keys, order, layout, inv, params)
        best, best_ml = -math.inf, 0
        if index < n_cat:
            for c in range(A.shape[0]):
                A[c] = 0
            for i in range(index + 1):
                accumulate(A, H, order[i])
            for ml in range(2 if has_missing else 1):
                combine(L, R, A, M, T, ml == 1)
                gain = bounded_gain(L, R, parent, layout, inv, params, row, f, n_features)
                if gain > best:
                    best, best_ml = gain, ml
        return best, 0, index, best_ml, n_cat

    @jit
    def heaviest_bin(H, A, n_non_missing, layout, inv):
        """The non-missing bin of most weight (the lowest on ties; A is
        scratch), -1 when all are empty."""
        best, best_weight = -1, 0.0
        for b in range(n_non_missing):
            copy_bin(A, H, b)
            w = node_weight(A, layout, inv)
            if w > best_weight:
                best, best_weight = b, w
        return best

    @jit
    def scan_multiway(H, T, A, M, n_non_missing, parent, layout, inv, params):
        """One child per bin with rows (missing rows in the heaviest):
        returns (gain or gain ratio, information gain), -inf when fewer than
        two children or a child breaks min_samples_leaf / min_weight_leaf."""
        heaviest = heaviest_bin(H, A, n_non_missing, layout, inv)
        w = node_weight(T, layout, inv)
        children_impurity, split_info, n_children = 0.0, 0.0, 0
        for b in range(n_non_missing):
            copy_bin(A, H, b)
            if node_count(A, layout, inv) <= 0 and b != heaviest:
                continue
            if b == heaviest:
                for c in range(A.shape[0]):
                    A[c] += M[c]
            wb = node_weight(A, layout, inv)
            if (node_count(A, layout, inv) < params[PARAM_MIN_SAMPLES_LEAF]
                    or wb < params[PARAM_MIN_WEIGHT_LEAF] or wb <= 0.0):
                return -math.inf, -math.inf
            p = wb / w
            children_impurity += p * impurity(A, layout, inv)
            split_info -= p * log2(p)
            n_children += 1
        if n_children < 2:
            return -math.inf, -math.inf
        gain = parent - children_impurity
        if layout[LAYOUT_SPLIT_INFO]:
            return gain / split_info, gain
        return gain, gain

    @inline
    def add_category(bitset, f, words, b):
        """Category bin b goes left at split row f of bitset (its words
        ``words`` uint32 (n_ext,) from bin 256 on)."""
        if b < BITMAP_BINS:
            add_bin(bitset, f, b)
        else:
            add_word_bin(words, 0, b)

    @jit
    def left_sums(H, bitset, f, words, missing_bin, missing_cell, L):
        """L = sum of H over the bins of split row f of bitset (and its
        words): bins 0 .. missing_cell-1 in H's cells of theirs, the
        missing bin in H[missing_cell]."""
        for c in range(L.shape[0]):
            L[c] = 0
        for b in range(missing_cell):
            if goes_left(bitset, f, b) or in_words(words, 0, words.shape[0], b):
                accumulate(L, H, b)
        if goes_left(bitset, f, missing_bin) or in_words(words, 0, words.shape[0],
                                                         missing_bin):
            accumulate(L, H, missing_cell)

    @jit
    def finish(H, T, L, R, bitset, f, words, missing_bin, missing_cell, has_missing, layout,
               inv, left_known):
        """Fill L (unless ``left_known``: the scan left the split's sums in
        it) and R from split row f of bitset (and its words); without
        missing values in the node, send the missing bin to the larger
        child. Returns missing_left."""
        if not left_known:
            left_sums(H, bitset, f, words, missing_bin, missing_cell, L)
        for c in range(L.shape[0]):
            R[c] = T[c] - L[c]
        if not has_missing:
            if node_count(L, layout, inv) > node_count(R, layout, inv):
                add_bin(bitset, f, missing_bin)
        return goes_left(bitset, f, missing_bin)

    @inline
    def newton_task(node, f, is_categorical, split_bin, layout, params):
        """Task (node, f) is boosting's scan of a numerical feature's every
        threshold with one output and no value constraints
        (scan_newton_one or scan_newton_blocks)."""
        return (not (categorical and is_categorical[f]) and split_bin[node, f] < 0
                and (newton_fixed == 1 or (newton_fixed < 0 and newton_one(layout, params))))

    @inline
    def clear_task(node, f, out_gain, out_missing_left, out_bitset, out_info, out_words):
        """Task (node, f)'s outputs as for no split: gains -inf, no bins left."""
        out_gain[node, f] = -math.inf
        out_info[node, f] = -math.inf
        out_missing_left[node, f] = 0
        for w in range(out_bitset.shape[2]):
            out_bitset[node, f, w] = 0
        for w in range(out_words.shape[2]):
            out_words[node, f, w] = 0

    @inline
    def record_split(H, T, L, R, node, f, gain, ml, missing_bin, missing_cell, has_missing,
                     parent, layout, inv, params, left_known, out_gain, out_missing_left,
                     out_bitset, out_left, out_info, out_words):
        """Write task (node, f)'s split, whose non-missing bins are already in
        its bitset row, with the missing bin when ``ml`` is 1 (finish's L
        and R, its direction of missing values)."""
        bitset = out_bitset[node]
        if ml == 1:
            add_bin(bitset, f, missing_bin)
        out_gain[node, f] = gain
        if left_known:
            # finish's steps, inlined (a call of it passed some 60 words: a
            # third of LETOR's boosting scan)
            for c in range(L.shape[0]):
                R[c] = T[c] - L[c]
            if not has_missing and node_count(L, layout, inv) > node_count(R, layout, inv):
                add_bin(bitset, f, missing_bin)
            out_missing_left[node, f] = goes_left(bitset, f, missing_bin)
        else:
            out_missing_left[node, f] = finish(H, T, L, R, bitset, f, out_words[node, f],
                                               missing_bin, missing_cell, has_missing, layout,
                                               inv, left_known)
        for c in range(L.shape[0]):
            out_left[node, f, c] = L[c]
        if newton_fixed != 1 and layout[LAYOUT_MULTIWAY] != 0:
            out_info[node, f] = impurity_gain(L, R, parent, layout, inv, params)

    @entry
    def scan(t, slot, hist, cells, n_features, n_bins_non_missing, is_categorical,
             feature_allowed, split_bin, missing_bin, layout, inv, params,
             scratch_sums, scratch_keys, scratch_order, scratch_prefix, scratch_gains,
             out_gain, out_missing_left, out_bitset, out_left, out_info, out_words):
        node = t // n_features
        scan_task(node, t - node * n_features, slot, hist, cells, n_features,
                  n_bins_non_missing, is_categorical, feature_allowed, split_bin, missing_bin,
                  layout, inv, params, scratch_sums, scratch_keys, scratch_order,
                  scratch_prefix, scratch_gains, out_gain, out_missing_left, out_bitset,
                  out_left, out_info, out_words)

    @entry
    def scan_task(node, f, slot, hist, cells, n_features, n_bins_non_missing, is_categorical,
                  feature_allowed, split_bin, missing_bin, layout, inv, params,
                  scratch_sums, scratch_keys, scratch_order, scratch_prefix, scratch_gains,
                  out_gain, out_missing_left, out_bitset, out_left, out_info, out_words):
        """scan of task node * n_features + f (its node and feature given:
        no division)."""
        clear_task(node, f, out_gain, out_missing_left, out_bitset, out_info, out_words)
        bitset = out_bitset[node]       # (n_features, BITSET_WORDS): row f is this split
        words = out_words[node, f]      # (n_ext,): its categories from bin 256 on
        if feature_allowed[node, f] == 0:
            return
        C = layout[LAYOUT_N_CHANNELS]
        row = scratch_sums[slot]
        T, L, R, M, A = row[0:C], row[C:2 * C], row[2 * C:3 * C], row[3 * C:4 * C], row[4 * C:5 * C]
        H, missing_cell = feature_histogram(hist, cells, node, f, missing_bin)
        n_non_missing = n_bins_non_missing[f]
        for c in range(C):
            M[c] = H[missing_cell, c]
        has_missing = node_count(M, layout, inv) > 0
        one = split_bin[node, f]        # >= 0: one candidate (random thresholds)
        if (n_non_missing <= 1 and not has_missing and one < 0
                and not (categorical and is_categorical[f])):
            return      # a numerical feature of one bin in the node: no candidate
        # the node's total: its non-missing bins and the missing bin (no row
        # is in a bin between them: the scan reads no other cell); the CPU's
        # boosting scan sums it in its first pass
        blocks = vector and newton_task(node, f, is_categorical, split_bin, layout, params)
        parent = 0.0
        if not blocks:
            if newton_fixed == 1:
                newton_sums(T, H, min(n_non_missing, missing_cell))
            else:
                channel_sums(T, H, min(n_non_missing, missing_cell))
            for c in range(C):
                T[c] += M[c]
            parent = bounded_parent_score(T, layout, inv, params, node, n_features)
        multiway = layout[LAYOUT_MULTIWAY] != 0
        left_known = False
        if categorical and newton_fixed != 1 and multiway and is_categorical[f]:
            gain, info = scan_multiway(H, T, A, M, n_non_missing, parent, layout, inv, params)
            if gain != -math.inf:
                out_gain[node, f] = gain
                out_info[node, f] = info
            return
        if categorical and is_categorical[f]:
            keys, order = scratch_keys[slot], scratch_order[slot]
            if one >= 0:
                gain, _, last, ml, _ = scan_categorical_prefix(
                    H, T, L, R, A, M, n_non_missing, has_missing, parent,
                    layout, inv, params, keys, order, one, node, f, n_features)
                first = 0
            else:
                gain, first, last, ml = search_categories(
                    H, T, L, R, A, M, n_non_missing, has_missing, parent,
                    layout, inv, params, keys, order, node, f, n_features)
            if gain == -math.inf:
                return
            # the left sums from the split's categories (and the missing bin
            # when it goes left, a bin apart from theirs): the sums over its
            # bitset's bins, exact integers, without finish's pass over every bin
            left_known = missing_bin >= n_non_missing
            for c in range(C):
                L[c] = 0
            for i in range(first, last + 1):
                add_category(bitset, f, words, order[i])
                accumulate(L, H, order[i])
            if ml == 1:
                accumulate(L, H, missing_cell)
        else:
            if one >= 0:
                gain, threshold, ml = scan_one_threshold(
                    H, T, L, R, A, M, one, has_missing, parent, layout, inv, params,
                    node, f, n_features)
            # (conditions on constants of this compilation first: numba drops
            # the code they rule out before compiling it)
            elif newton_fixed == 1 or (newton_fixed < 0 and newton_one(layout, params)):
                left_known = True
                if vector:
                    gain, threshold, ml, parent = scan_newton_blocks(
                        H, T, L, M, n_non_missing, missing_cell, has_missing, inv, params,
                        scratch_prefix[slot], scratch_gains[slot])
                else:
                    gain, threshold, ml = scan_newton_one(H, T, L, M, n_non_missing,
                                                          has_missing, parent, inv, params)
            else:
                gain, threshold, ml = scan_numerical(
                    H, T, L, R, A, M, n_non_missing, has_missing, parent,
                    layout, inv, params, node, f, n_features)
            if gain == -math.inf:
                return
            add_bins_upto(bitset, f, threshold)
        record_split(H, T, L, R, node, f, gain, ml, missing_bin, missing_cell, has_missing,
                     parent, layout, inv, params, left_known, out_gain, out_missing_left,
                     out_bitset, out_left, out_info, out_words)

    return SimpleNamespace(scan=scan, scan_task=scan_task, newton_task=newton_task,
                           clear_task=clear_task,
                           heap_sort=heap_sort, merge_sort=merge_sort,
                           select_ends=select_ends,
                           newton_candidate=newton_candidate,
                           newton_missing_right=newton_missing_right,
                           add_bins_upto=add_bins_upto, record_split=record_split,
                           bounded_parent_score=bounded_parent_score, node_count=node_count)


def scratch_shapes(n_slots, n_channels, any_categorical, n_bins, vector=False):
    """Shapes of the scan's scratch buffers (sums, keys, order, prefix,
    gains) for ``n_slots`` tasks at a time on histograms of ``n_bins``
    bins (one category slot per non-missing bin; twice as many for the
    merge sort of ``vector``)."""
    n_cat = n_slots if any_categorical else 1
    n_block, block = (n_slots, BLOCK_BINS) if vector else (1, 1)
    slots = max(MIN_CATEGORY_SLOTS, n_bins - 1) if any_categorical else 1
    if any_categorical and vector:
        slots *= 2
    return ((n_slots, SCRATCH_VECTORS * n_channels), (n_cat, slots),
            (n_cat, slots), (n_block, 3, block), (n_block, 2, block))


class SplitInfo:
    """Best split of every node of a level (arrays in the backend's ``xp``).

    gain float64 (n_nodes,) (-inf: no valid split); feature int32 (n_nodes,);
    bitset uint32 (n_nodes, BITSET_WORDS); missing_left uint8 (n_nodes,);
    left_sums int64 (n_nodes, n_channels); words uint32 (n_nodes, n_ext): a
    categorical split's bins from 256 on (splitset's words; zeros for
    other splits).
    """

    def __init__(self, gain, feature, bitset, missing_left, left_sums, words):
        self.gain = gain
        self.feature = feature
        self.bitset = bitset
        self.missing_left = missing_left
        self.left_sums = left_sums
        self.words = words


def best_split_per_node(xp, gain, missing_left, bitset, left, info, words):
    """Reduce per-(node, feature) results to the best feature per node; ties go
    to the lowest feature index (argmax returns the first maximum)."""
    feature = xp.argmax(gain, axis=1).astype(FEATURE_DTYPE)
    nodes = xp.arange(gain.shape[0])
    return SplitInfo(gain[nodes, feature], feature, bitset[nodes, feature],
                     missing_left[nodes, feature], left[nodes, feature],
                     words[nodes, feature])


def scan_words(n_bins):
    """Words of a (node, feature)'s categorical split beyond its bitset, on
    histograms of ``n_bins`` bins (at least 1)."""
    return max(1, extension_words(n_bins - 1))


def empty_scan_outputs(xp, n_nodes, n_features, n_channels, n_bins):
    """Allocate the scan's OUT arrays (gain, missing_left, bitset, left, info,
    words) for histograms of ``n_bins`` bins."""
    return (xp.empty((n_nodes, n_features), dtype=FLOAT_DTYPE),
            xp.empty((n_nodes, n_features), dtype=np.uint8),
            xp.empty((n_nodes, n_features, BITSET_WORDS), dtype=BITSET_DTYPE),
            xp.zeros((n_nodes, n_features, n_channels), dtype=STAT_DTYPE),
            xp.empty((n_nodes, n_features), dtype=FLOAT_DTYPE),
            xp.empty((n_nodes, n_features, scan_words(n_bins)), dtype=BITSET_DTYPE))


def empty_scratch(xp, n_slots, n_channels, any_categorical, n_bins, vector=False):
    """The scan's scratch buffers (scratch_shapes)."""
    shapes = scratch_shapes(n_slots, n_channels, any_categorical, n_bins, vector)
    dtypes = (STAT_DTYPE, FLOAT_DTYPE, np.int32, STAT_DTYPE, FLOAT_DTYPE)
    return tuple(xp.empty(shape, dtype=dtype) for shape, dtype in zip(shapes, dtypes))
