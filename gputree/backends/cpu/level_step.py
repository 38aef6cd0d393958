"""The CPU level step: one compiled call per level of a tree grown level by
level (:mod:`gputree.growth.levelwise`) on the CPU, with the Newton
criterion, no leaf budget and nothing drawn or constrained.

The call takes, of the level's nodes just scanned, each one's best split
(:func:`gputree.backends.cpu.split_scan.take_best`),
accepts those of a finite gain above ``min_split_gain``, appends their
children to the node arrays (totals, depth, parent; the children of the
level's splits in the order of their parents, left then right), writes the
level's split arrays for the row partition (feature, bitset, words, each
node's left child), decides which children may split (the Newton rules of
:func:`gputree.growth.policy.splittable`) and plans the next level's
histograms as the general plan does: of each pair with a child that may
split, the child with fewer rows is built in the lowest free pool row
(after every row but the derived siblings' parents' is released) and a
sibling that may split is derived in its parent's row. Python then runs
only the row move with the histogram pass and the scan between two calls.
The trees are the general level's, node for node.
"""
import numpy as np

from ..._dtypes import BITSET_DTYPE, BITSET_WORDS, NODE_DTYPE
from ..._threads import kernel_jit
from ..kernel_cache import cache_numba_cpu_kernels
from .bestfirst_step import _MIN_GAIN, _N_NODES, _TOUCHED, BestFirstSteps, may_split
from .split_scan import take_best

cache_numba_cpu_kernels(__file__)

# the level's scalars (int64 ``level``): its first node, its nodes, whether
# its nodes were scanned (0: their best splits are set already, the root's)
_START, _N_LEVEL, _SCANNED = range(3)
# what the call tells its caller (int64 ``out``)
N_SPLIT, N_SCAN, N_BUILD, SCAN_ROWS, N_BUILT = range(5)
#: the depth of the deepest tree whose nodes LevelSteps holds from the start
_PRESIZED_DEPTH = 8


@kernel_jit()
def _level(gain, missing_left, bitset, left, words, state, limits, inv, level, level_rows,
           next_rows, totals, depth, parent, taken, best_feature, best_bitset, best_words,
           best_gain, best_missing_left, best_left, in_use, allowed, built_of, split_feature,
           split_bitset, split_words, left_child, node_to_build, build_index, built_rows,
           scan_rows, out):
    """One level. IN: the last scan's outputs (as the best-first step's
    ``_step``), ``state`` int64 (9,) (the best-first step's: the nodes, the
    rows touched, the rules' scalars) IN/OUT, ``limits`` float64 (4,),
    ``inv`` float64 (C,); ``level`` int64 (3,) IN/OUT (the next level's on
    return); ``level_rows`` int64 (L,) IN/OUT: each level node's pool row,
    -1 where it may not split (the next level's on return); ``next_rows``
    int64 (2L,) scratch; the node arrays IN/OUT (as the best-first
    step's); the pool's ``in_use`` bool (R,), ``allowed`` uint8 (R, F),
    ``built_of`` int32 (R,) and the scan's ``left`` (zeroed in the rows to
    scan) IN/OUT. OUT: the level's splits (-1 / zeros where none):
    split_feature int32 (L,), split_bitset uint32 (L, BITSET_WORDS),
    split_words uint32 (L, W), left_child int32 (L,); the next level's
    node_to_build int32 (2L,) (-1: not built), and as the histogram pass
    takes them, build_index int32 (2L,) (each node's index among the
    built ones, -1: not built) and built_rows int64 (2L,) (their pool rows,
    the first out[N_BUILT]); scan_rows int64 (2L,) OUT: the rows to scan
    (the first out[N_SCAN]); ``out`` int64 (5,): the level's splits, the
    next level's nodes to scan, rows built (one past the highest), rows
    the scan reads, nodes built."""
    start, n_level = level[_START], level[_N_LEVEL]
    n_split = 0
    for i in range(n_level):
        split_feature[i], left_child[i] = -1, -1
        split_bitset[i, :] = 0
        split_words[i, :] = 0
        row = level_rows[i]
        if row < 0:
            continue
        node = start + i
        if level[_SCANNED]:
            take_best(gain, missing_left, bitset, left, words, row, node, best_feature,
                      best_bitset, best_words, best_gain, best_missing_left, best_left)
            allowed[row, :] = 0
            built_of[row] = -1
        g = best_gain[node]
        if np.isfinite(g) and g > limits[_MIN_GAIN]:
            taken[node] = 1
            n_split += 1
            split_feature[i] = best_feature[node]
            for k in range(split_bitset.shape[1]):
                split_bitset[i, k] = best_bitset[node, k]
            for k in range(split_words.shape[1]):
                split_words[i, k] = best_words[node, k]
    level[_SCANNED] = 1
    out[:] = 0
    out[N_SPLIT] = n_split
    in_use[:] = False
    if n_split == 0:
        return
    first = state[_N_NODES]
    child = first
    d = depth[start] + 1
    for i in range(n_level):
        node = start + i
        if level_rows[i] < 0 or not taken[node]:
            continue
        left_child[i] = child
        for k in range(totals.shape[1]):
            totals[child, k] = best_left[node, k]
            totals[child + 1, k] = totals[node, k] - best_left[node, k]
        depth[child], depth[child + 1] = d, d
        parent[child], parent[child + 1] = node, node
        child += 2
    n_next = child - first
    state[_N_NODES] = child
    # the derived siblings' parents keep their rows, then the built children
    # take the lowest free rows, pair after pair
    for c in range(first, child, 2):
        next_rows[c - first], next_rows[c - first + 1] = -1, -1
        node_to_build[c - first], node_to_build[c - first + 1] = -1, -1
        build_index[c - first], build_index[c - first + 1] = -1, -1
        count0, may0 = may_split(totals, c, d, state, limits, inv)
        count1, may1 = may_split(totals, c + 1, d, state, limits, inv)
        smaller = 0 if count0 <= count1 else 1
        if may1 if smaller == 0 else may0:
            parent_row = level_rows[parent[c] - start]
            in_use[parent_row] = True
            next_rows[c - first + 1 - smaller] = parent_row
    row, n_scan, last, n_build = 0, 0, 0, 0
    for c in range(first, child, 2):
        count0, may0 = may_split(totals, c, d, state, limits, inv)
        count1, may1 = may_split(totals, c + 1, d, state, limits, inv)
        if not (may0 or may1):
            continue
        smaller = 0 if count0 <= count1 else 1
        while in_use[row]:
            row += 1
        in_use[row] = True
        state[_TOUCHED] = max(state[_TOUCHED], row + 1)
        n_build = max(n_build, row + 1)
        node_to_build[c - first + smaller] = row
        built = c - first + smaller
        build_index[built] = out[N_BUILT]
        built_rows[out[N_BUILT]] = row
        out[N_BUILT] += 1
        derived = c - first + 1 - smaller
        if next_rows[derived] >= 0:
            built_of[next_rows[derived]] = row
        next_rows[built] = row
        for k in range(2):
            if may1 if k else may0:
                r = next_rows[c - first + k]
                scan_rows[n_scan] = r
                n_scan += 1
                last = max(last, r + 1)
                allowed[r, :] = 1
                left[r, :, :] = 0
            else:
                next_rows[c - first + k] = -1
    for i in range(n_next):
        level_rows[i] = next_rows[i]
    level[_START], level[_N_LEVEL] = first, n_next
    out[N_SCAN], out[N_BUILD], out[SCAN_ROWS] = n_scan, n_build, last


class LevelSteps(BestFirstSteps):
    """The node arrays of one tree grown level by level, its compiled level
    (:func:`_level`) and the best-first steps' scan (arguments as
    :class:`BestFirstSteps`' with no leaf budget)."""

    def __init__(self, n_channels, n_features, n_words, limits, max_depth, count_channel,
                 n_outputs, scan, kept):
        # room for a full tree of up to _PRESIZED_DEPTH levels from the start
        # (arrays grown level after level: 5 copies of 13 arrays a tree at depth 6)
        depth = min(max_depth, _PRESIZED_DEPTH)
        super().__init__(n_channels, n_features, n_words, limits, 0, max_depth, count_channel,
                         n_outputs, scan, kept, capacity=2 ** (depth + 1) - 1)
        self.level = np.array([0, 1, 0], dtype=np.int64)
        self.out = np.zeros(5, dtype=np.int64)
        self._level_arrays(2 ** depth, n_words)
        self._shapes = (n_channels, n_features, n_words, max_depth, count_channel, n_outputs)
        self._fresh_state = self.state.copy()

    def restart(self, n_channels, n_features, n_words, limits, max_depth, count_channel,
                n_outputs, scan):
        """Start another tree (arguments as the constructor's, ``kept``
        aside) with these arrays, where its shapes are this tree's (the
        same channels, features, words, depth, layout and bins): the next
        tree of a fit, without making some 30 arrays again. Returns whether
        it did; False leaves the steps as they were."""
        n_bins_non_missing, is_categorical, missing_bin, _, _, _ = scan
        if ((n_channels, n_features, n_words, max_depth, count_channel, n_outputs)
                != self._shapes or missing_bin + 1 != self.n_bins
                or bool(np.count_nonzero(is_categorical)) != self.any_categorical):
            return False
        # a fresh tree's: no node taken, no pool row to scan or derived
        self.taken.fill(0)
        self.allowed.fill(0)
        self.built_of.fill(-1)
        self.state[:] = self._fresh_state
        self.limits[:] = limits
        self._scan_constants(scan)
        return True

    def _level_arrays(self, n_level, n_words):
        """The level's arrays for up to ``n_level`` nodes (level_rows kept)."""
        old = getattr(self, "level_rows", np.zeros(0, dtype=np.int64))
        self.level_rows = np.full(n_level, -1, dtype=np.int64)
        self.level_rows[:old.shape[0]] = old
        self.next_rows = np.full(2 * n_level, -1, dtype=np.int64)
        self.node_to_build = np.full(2 * n_level, -1, dtype=NODE_DTYPE)
        self.build_index = np.full(2 * n_level, -1, dtype=np.int32)
        self.built_rows = np.zeros(2 * n_level, dtype=np.int64)
        self.scan_rows = np.zeros(2 * n_level, dtype=np.int64)
        self.split_feature = np.full(n_level, -1, dtype=NODE_DTYPE)
        self.split_bitset = np.zeros((n_level, BITSET_WORDS), dtype=BITSET_DTYPE)
        self.split_words = np.zeros((n_level, n_words), dtype=BITSET_DTYPE)
        self.left_child = np.full(n_level, -1, dtype=NODE_DTYPE)

    def start_level(self, root_totals, row, pool):
        """The root (int64 totals (C,)) whose histogram is in pool ``row``,
        scanned next (``row`` -1: the root may not split)."""
        self.start(root_totals, None, 0.0, -1)
        self._fit(pool, 1)
        self.level_rows[0] = row
        self.level[:] = (0, 1, 1)
        if row >= 0:
            self.scan_rows[0] = row
            self.allowed[row, :] = 1
            self.built_of[row] = -1
            self.outputs[3][row] = 0

    def _fit(self, pool, n_next):
        """Room for ``n_next`` more nodes, a level of as many and as many
        pool rows (``pool`` grown where it lacks them)."""
        if self.state[_N_NODES] + n_next > self.totals.shape[0]:
            self._nodes(max(2 * self.totals.shape[0], int(self.state[_N_NODES]) + n_next),
                        self.totals.shape[1], self.best_words.shape[1])
        if self.level_rows.shape[0] < n_next:
            self._level_arrays(n_next, self.best_words.shape[1])
        if pool.in_use.shape[0] < n_next:
            pool.reserve(n_next, int(self.state[_TOUCHED]))
        if self.allowed.shape[0] != pool.in_use.shape[0]:
            self._rows(pool.in_use.shape[0])

    def level_step(self, pool):
        """The splits of the level (:func:`_level`) after the last scan, and
        the next level's plan, with the rows of ``pool`` (a HistogramPool,
        grown here where the next level might lack rows): ``out`` (see
        :func:`_level`)."""
        self._fit(pool, 2 * int(self.level[_N_LEVEL]))
        gain, missing_left, bitset, left, _, words = self.outputs
        _level(gain, missing_left, bitset, left, words, self.state, self.limits, self.inv,
               self.level, self.level_rows, self.next_rows, self.totals, self.depth,
               self.parent, self.taken, self.best_feature, self.best_bitset, self.best_words,
               self.best_gain, self.best_missing_left, self.best_left, pool.in_use,
               self.allowed, self.built_of, self.split_feature, self.split_bitset,
               self.split_words, self.left_child, self.node_to_build, self.build_index,
               self.built_rows, self.scan_rows, self.out)
        return self.out

    def level_splits(self, n_level):
        """The splits of the level just stepped, of its ``n_level`` nodes:
        (feature int32, bitset uint32 (n, BITSET_WORDS), words uint32 (n, W),
        left_child int32) views; and the next level's node_to_build int32."""
        return (self.split_feature[:n_level], self.split_bitset[:n_level],
                self.split_words[:n_level], self.left_child[:n_level])

    def next_built(self, n_next):
        """The next level's (``n_next`` nodes) built nodes as the histogram
        pass takes them (CPUBackend.move_and_build_histograms' ``built``):
        (their pool rows int64, each node's index among them int32 (-1:
        not built)) views."""
        return self.built_rows[:int(self.out[N_BUILT])], self.build_index[:n_next]
