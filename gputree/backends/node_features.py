"""Which features and thresholds a node's split scan tries, decided from the
node's histograms: scikit-learn's ``max_features`` soft limit and the random
thresholds of extremely randomized trees, as device math.

Written once, in the Python subset that both ``numba.njit`` and
``numba.cuda.jit(device=True)`` compile (:func:`make_node_features`), and
integer-exact: every device decides the same. The random numbers come from
the host (one draw per (node, feature), from the tree's RandomState, in one
host code path); the device only maps them onto the node's bins.

* A bin of a (node, feature) histogram *holds rows* when its count channel
  (else its weight channel, else the sum of its class channels) is
  positive: the scan's own test (``node_count > 0``). A feature is
  *constant* in a node, as scikit-learn defines it, when none of its
  non-missing bins holds rows, or one does and the missing bin holds none
  (one non-missing value and missing ones can still split).
* Soft limit (:func:`soft_limit_row`): the node's features come in a random
  order drawn on the host, the first ``max_features`` allowed; when all of
  those are constant in the node, the next ones in the order are allowed
  too, up to and including the first that is not constant. scikit-learn's
  splitters draw features one at a time and stop after ``max_features``
  only once one of them was not constant: the same rule.
* Random thresholds (:func:`random_bin_task`): an allowed numerical
  feature whose lowest and highest non-missing bins holding rows are ``lo
  < hi`` gets the one threshold "bins <= lo + floor(u * (hi - lo))" (u in
  [0, 1) drawn on the host; a bin in [lo, hi - 1], so both children hold
  non-missing rows); a categorical one with ``n >= 2`` categories holding
  rows gets the one prefix of ``floor(u * (n - 1)) + 1`` categories in the
  scan's order (sorted by the criterion's key). With one non-missing bin
  and missing values, the threshold is that bin (non-missing rows left,
  missing right). A constant feature is dropped. The chosen bin goes to
  the split scan as ``split_bin`` (-1: every candidate, the best
  splitter).
"""
from .formulas import LAYOUT_COUNT_CHANNEL, LAYOUT_PER_OUTPUT, LAYOUT_WEIGHT_CHANNEL

#: ``split_bin`` of a (node, feature) that tries every candidate
ALL_CANDIDATES = -1


def make_node_features(jit):
    """Compile the rules with ``jit``; returns (soft_limit_row,
    random_bin_task, random_bin):

    soft_limit_row(row, hist, order, max_features, n_bins_non_missing,
                   missing_bin, layout, allowed)
      row                : int, the histogram row (a node) to decide
      hist               : IN  int64 (n_rows, n_features, n_bins, n_channels)
      order              : IN  int32 (n_rows, n_features): the row's features
                           in their drawn order (order[row, 0] < 0: not a
                           candidate, nothing to do)
      max_features       : int, features allowed before the soft limit
      n_bins_non_missing : IN  int32 (n_features,)
      missing_bin        : int, the bin of missing values
      layout             : IN  int64 (LAYOUT_SIZE,)
      allowed            : INOUT uint8 (n_rows, n_features)

    random_bin_task(row, f, hist, draws, n_bins_non_missing, missing_bin,
                    is_categorical, layout, allowed, split_bin)
      draws              : IN  float64 (n_rows, n_features), each in [0, 1)
      is_categorical     : IN  uint8 (n_features,)
      allowed            : INOUT uint8: 0 where the feature is constant
      split_bin          : OUT int32 (n_rows, n_features): the chosen bin
                           (numerical) or prefix index (categorical), -1
                           where not allowed

    random_bin(u, lo, hi) -> int in [lo, hi - 1] (hi > lo)
    """

    @jit
    def holds_rows(H, b, layout):
        """Whether bin b of H (n_bins, n_channels) holds rows."""
        c = layout[LAYOUT_COUNT_CHANNEL]
        if c < 0:
            c = layout[LAYOUT_WEIGHT_CHANNEL]
        if c >= 0:
            return H[b, c] > 0
        total = H[b, 0] * 0
        for k in range(layout[LAYOUT_PER_OUTPUT]):
            total += H[b, k]
        return total > 0

    @jit
    def present_range(H, n, layout):
        """(lowest, highest, number) of the bins 0 .. n-1 of H holding rows
        (-1, -1, 0 when none)."""
        lo, hi, count = -1, -1, 0
        for b in range(n):
            if holds_rows(H, b, layout):
                if lo < 0:
                    lo = b
                hi = b
                count += 1
        return lo, hi, count

    @jit
    def is_constant(H, n, missing_bin, layout):
        """Whether feature H (n non-missing bins) is constant (above)."""
        count = 1 if holds_rows(H, missing_bin, layout) else 0
        for b in range(n):
            if holds_rows(H, b, layout):
                count += 2
                if count > 2:
                    return False
        return True

    @jit
    def random_bin(u, lo, hi):
        step = int(u * (hi - lo))
        return lo + min(step, hi - lo - 1)

    @jit
    def soft_limit_row(row, hist, order, max_features, n_bins_non_missing, missing_bin, layout,
                       allowed):
        if order[row, 0] < 0:
            return
        for j in range(order.shape[1]):
            f = order[row, j]
            if j >= max_features:
                allowed[row, f] = 1
            if not is_constant(hist[row, f], n_bins_non_missing[f], missing_bin, layout):
                return

    @jit
    def random_bin_task(row, f, hist, draws, n_bins_non_missing, missing_bin, is_categorical,
                        layout, allowed, split_bin):
        split_bin[row, f] = ALL_CANDIDATES
        if allowed[row, f] == 0:
            return
        H = hist[row, f]
        lo, hi, count = present_range(H, n_bins_non_missing[f], layout)
        if count == 1 and holds_rows(H, missing_bin, layout):
            split_bin[row, f] = 0 if is_categorical[f] else lo
        elif count < 2:
            allowed[row, f] = 0
        elif is_categorical[f]:
            split_bin[row, f] = random_bin(draws[row, f], 0, count - 1)
        else:
            split_bin[row, f] = random_bin(draws[row, f], lo, hi)

    return soft_limit_row, random_bin_task, random_bin
