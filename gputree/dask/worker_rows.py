"""The rows one worker owns during a boosting fit, as a distributed Actor
(:class:`gputree.dask.forest_rows.ForestRows` extends it for trees and
forests).

A :class:`WorkerRows` lives on a worker for the whole fit and keeps every
row-sized array of that worker's partitions (their rows stacked in global
order): binned X, the loss's targets, the weights, the raw scores, the
round's gradients, hessians and pointwise losses, the fixed-point
statistics and the grower's positions. The driver calls its methods
directly (actor calls: no scheduler round trip) with node-sized arguments
and gets node-sized answers: the largest magnitudes that fix a fixed-point
scale, int64 totals, the tree grown by the workers together (they sum
their histograms among themselves, exact in any order, and exchange their
best splits: :mod:`gputree.dask.peer_growth`) and integer parts of
order-free loss sums.

Random draws are the one-machine draws: a round's row subsample is drawn
with the same seeded generator over the global row indices, and each worker
keeps the rows it holds (``ranges``: the global rows of its partitions).
"""
import math

import numba
import numpy as np

from .._arrays import to_host
from .._dtypes import FLOAT_DTYPE, NODE_DTYPE, STAT_DTYPE
from ..criteria import Statistics, newton_largest, newton_statistics
from ..fixed_point import grouped_summable_sums, largest_magnitudes, summable_total
from ..estimators.sampling import grow_on_columns, subsample_rows
from ..estimators.ensemble import add_tree_values, tree_rng
from ..estimators.losses import _set_leaves
from ..estimators.targets import encode_labels
from ..estimators.treeboost import weight_hessians
from ..growth.histogram_pool import HistogramPool
from .backend import worker_backend
from .peer_growth import PeerBackend, WorkerArray
from .leaf_refits import friedman_leaves, leaf_values, round_selection
from .peer_links import PeerLinks
from .selection import fixed_weights, order_keys, shard_summary, weight_at_or_below
from .sliced_histograms import SlicedHistograms
from .worker_validation import validation_score


class WorkerRows:
    """One worker's rows of a fit (created on the worker with
    ``client.submit(WorkerRows, ..., actor=True)``).

    device : str, the worker's backend; ranges : int64 (p, 2) the global
    [start, stop) rows of its partitions, in order; parts : the binned
    partitions (n_p, F), in the same order.
    """

    def __init__(self, device, ranges, parts, y_parts=None, w_parts=None, validation=None):
        self.backend = worker_backend(device)
        self.device, self.grower = device, None
        self.threads = numba.get_num_threads()
        self.ranges = np.asarray(ranges, dtype=np.int64).reshape(-1, 2)
        xp = self.backend.xp
        X = parts[0] if len(parts) == 1 else xp.concatenate(parts)
        self.X = {"X": self.backend.in_binned_order(X)}
        self.n_rows = int(X.shape[0])
        self.units = None
        self.positions = None
        self.labels = None if y_parts is None else _joined(y_parts)
        self.w = None if w_parts is None else _joined(w_parts).astype(FLOAT_DTYPE)
        self.val = None
        if validation is not None and len(validation[0]):
            Xv, yv, wv = validation
            self.val = {"X": self.backend.in_binned_order(_joined(Xv)), "labels": _joined(yv),
                        "w": None if wv is None else _joined(wv).astype(FLOAT_DTYPE)}

    def _use_threads(self):
        """Actor calls run in the worker's actor thread: numba's thread
        count is per thread, so set it to the worker's on every call."""
        numba.set_num_threads(self.threads)
        return self.backend

    # ------------------------------------------------------------ the fit
    def set_weights(self, classes, factors):
        """The fit's weights: the given ones (1 without) times, for a
        classifier (``classes``: the sorted labels of every row, else None),
        ``factors`` float64 (n_classes,) or None of each row's class.
        Returns (the largest weight, whether every weight is 1)."""
        backend = self._use_threads()
        w = np.ones(self.n_rows, dtype=FLOAT_DTYPE) if self.w is None else self.w
        if classes is not None:
            codes, local, _ = encode_labels(self.labels)
            self.labels = np.searchsorted(classes, local[0])[codes[:, 0]]
            if factors is not None:
                w = w * factors[self.labels]
        self.w = backend.asarray(w, dtype=FLOAT_DTYPE)
        largest = float(np.max(w, initial=0.0))
        return largest, bool(np.all(w == 1.0))

    def set_validation_weights(self, classes, factors):
        """:meth:`set_weights` of the eval_set rows this worker holds (their
        labels coded by the training ``classes``); (largest, all one)."""
        if self.val is None:
            return 0.0, True
        self.labels, self.w, held = self.val["labels"], self.val["w"], (self.labels, self.w)
        n_rows, self.n_rows = self.n_rows, self.val["X"].shape[0]
        try:
            answer = self.set_weights(classes, factors)
            self.val.update(labels=self.labels, w=self.w)
        finally:
            (self.labels, self.w), self.n_rows = held, n_rows
        return answer

    # ---------------------------------------------- validation_fraction
    def split_positions(self, seed, stream, n_total, n_classes):
        """Where this worker's rows (or units: :meth:`set_units`) fall in the
        one-machine validation split's permutation of ``n_total`` of them
        (``tree_rng(seed, 0, stream).permutation``): kept, per class
        (n_classes None: one group), as sorted positions; returns
        nothing."""
        self._use_threads()
        perm = tree_rng(seed, 0, stream).permutation(n_total)
        mine = np.zeros(n_total, dtype=bool)
        ranges = self.ranges if self.units is None else self.units[0]
        for start, stop in ranges:
            mine[start:stop] = True
        positions = np.flatnonzero(mine[perm])
        local = self._local_unsorted(perm[positions], ranges)
        groups = np.zeros(local.size, np.int64) if n_classes is None else self.labels[local]
        self.split = (positions, local, groups)
        self.split_sorted = [np.sort(positions[groups == c])
                             for c in range(1 if n_classes is None else n_classes)]

    def count_before(self, bounds):
        """int64 (G,): per group, this worker's rows whose position is
        below bounds[g]."""
        return np.asarray([np.searchsorted(p, b) for p, b in zip(self.split_sorted, bounds)],
                          dtype=np.int64)

    def hold_out(self, bounds):
        """Move the rows (or the units of :meth:`set_units`, with their
        rows) of position below their group's ``bounds`` to the validation
        rows; returns, per partition, its rows (units) left for training
        (int64 (p,)); :meth:`rows_left` gives its rows left."""
        self._use_threads()
        positions, local, groups = self.split
        del self.split, self.split_sorted
        held = np.zeros(local.size, dtype=bool)
        held[local[positions < np.asarray(bounds)[groups]]] = True
        if self.units is None:
            self._move_to_validation(held, self.labels[held], self.labels[~held])
            return self.rows_kept
        ranges, n_units, sizes = self.units
        self.units = (ranges, n_units, sizes[~held])      # ranges renumbered by the driver
        self._move_to_validation(np.repeat(held, sizes), self.labels.take(np.flatnonzero(held)),
                                 self.labels.take(np.flatnonzero(~held)))
        return _kept_per_range(held, ranges)

    def _move_to_validation(self, held, held_labels, kept_labels):
        """The rows ``held`` (bool (n_rows,)) become the validation rows
        (labels ``held_labels``), the others stay (``kept_labels``)."""
        kept, chosen = np.flatnonzero(~held), np.flatnonzero(held)
        on_device = self.backend.asarray
        self.val = {"X": self._take(self.X["X"], chosen), "labels": held_labels,
                    "w": self.w[on_device(chosen)]}
        self.X["X"] = self._take(self.X["X"], kept)
        self.labels, self.w = kept_labels, self.w[on_device(kept)]
        self.n_rows = kept.size
        self.rows_kept = _kept_per_range(held, self.ranges)

    def rows_left(self):
        """int64 (p,): per partition, its rows left for training by
        :meth:`hold_out`."""
        return self.rows_kept

    def set_ranges(self, ranges):
        """The global rows of this worker's partitions after the split."""
        self.ranges = np.asarray(ranges, dtype=np.int64).reshape(-1, 2)

    def set_units(self, local, n_units):
        """For a loss whose pointwise values, score weights and subsample
        draws are per unit of consecutive rows (a ranking loss's queries):
        ``local`` (ranges int64 (p, 2) the global [start, stop) units of
        this worker's partitions, sizes int64 (n_local_units,) the rows of
        each, or None after a split: kept), ``n_units`` the units of every
        worker. The order-free sums then count units, a round draws whole
        units, and a validation split holds out whole units."""
        ranges, sizes = local
        if sizes is None:
            sizes = self.units[2]
        self.units = (np.asarray(ranges, dtype=np.int64).reshape(-1, 2), int(n_units),
                      np.asarray(sizes, dtype=np.int64))

    def _n_units(self, n_total):
        """The number of values that the order-free score sums add up:
        ``n_total`` rows, or the units of :meth:`set_units`."""
        return n_total if self.units is None else self.units[1]

    def _take(self, X, rows):
        backend = self.backend
        return backend.in_binned_order(X[backend.asarray(rows)])

    def load(self, loss, largest=None, n_total=None):
        """The loss's targets of the rows; returns, for the baseline's
        weighted mean of the targets (sums in parts), the largest |w| and
        |y_k w| per output k (``largest`` None: float64 (K + 1,)), else
        this worker's :meth:`_summable` part of each of those sums; None
        for a loss whose baseline is no mean of the targets."""
        backend = self._use_threads()
        if largest is None:
            self.loss = loss
            self.y = loss.rows_targets(backend, self.labels)
            if self.val is not None:
                self.val["y"] = loss.rows_targets(backend, self.val["labels"])
                self.val["w"] = backend.asarray(self.val["w"], dtype=FLOAT_DTYPE)
            if not loss.baseline_from_targets:
                return None
        values = [self.w] + [self.y[:, k] * self.w for k in range(self.y.shape[1])]
        if largest is None:
            return np.asarray([self._largest(v) for v in values])
        return [self._summable(v, top, n_total) for v, top in zip(values, largest)]

    def start_scores(self, baseline, trees=(), columns=()):
        """Raw scores set to ``baseline`` float64 (K,) on every row, plus
        the values of the fitted ``trees`` (a warm start; ``columns``: the
        first raw-score column of each), as one machine predicts them."""
        backend = self._use_threads()
        self.raw = backend.xp.tile(backend.asarray(baseline), (self.n_rows, 1))
        add_tree_values(backend, self.X["X"], list(trees), list(columns), self.raw)
        self.spare = None
        if self.val is not None:
            self.val["raw"] = backend.xp.tile(backend.asarray(baseline),
                                              (self.val["X"].shape[0], 1))
            add_tree_values(backend, self.val["X"], list(trees), list(columns), self.val["raw"])

    def gradients(self, seed, it, stream, subsample, n_total, unit, treeboost=False):
        """The round's gradients, hessians and pointwise losses at the raw
        scores, on the round's rows (``subsample`` < 1: drawn as on one
        machine from ``tree_rng(seed, it, stream)`` over ``n_total`` rows;
        a loss's round quantile, Huber's delta, found over every worker's
        rows first: :func:`round_selection`; a custom objective's callable
        called on this worker's rows). Returns (the generator's state after
        the draw or None, largest |g|, |h| per output float64 (2K,),
        largest |pointwise * w|, with ``treeboost`` the largest round
        weight, else None); ``unit``: every weight is one and every row is
        used (g, h unweighted)."""
        backend = self._use_threads()
        state, self.w_round = None, self.w
        if subsample < 1:
            rng = tree_rng(seed, it, stream)
            mask = self._drawn_rows(rng, n_total, subsample)
            self.w_round = self.w * backend.asarray(mask).astype(np.float64)
            state = rng.get_state()
        self.g, self.h, self.pointwise = self.loss.gradients_and_pointwise(
            backend.xp, self.y, self.raw, None if unit else self.w_round, out=self.spare,
            selected=round_selection(self._gather, self.loss))
        return (state, self._largest_gh(), self._largest(self._weighted(self.pointwise)),
                self._largest(self.w_round) if treeboost else None)

    def _drawn_rows(self, rng, n_total, subsample):
        """uint8 (n_rows,): 1 on this worker's rows of the round's draw from
        ``rng`` (as one machine draws it): of the ``n_total`` rows, or of
        whole units (:meth:`set_units`), every row of a drawn unit."""
        if self.units is None:
            mask = np.zeros(self.n_rows, dtype=np.uint8)
            mask[self._local(subsample_rows(rng, n_total, subsample))] = 1
            return mask
        ranges, n_units, sizes = self.units
        chosen = np.zeros(sizes.size, dtype=np.uint8)
        chosen[_local_indices(ranges, subsample_rows(rng, n_units, subsample))] = 1
        return np.repeat(chosen, sizes)

    def _largest_gh(self):
        xp = self.backend.xp
        return [newton_largest(self.g[:, o:o + 1], self.h[:, o:o + 1], xp)
                for o in range(self.g.shape[1])]

    def statistics(self, start, stop, largest, n_total, score_largest=None, treeboost=False):
        """Fixed-point statistics of outputs start:stop of the round's
        gradients, scaled from ``largest`` (the workers' maximum of
        :meth:`gradients`' values) over ``n_total`` rows, with the round's
        weights as hessians where ``treeboost`` (Friedman's least squares on
        the residuals: :func:`weight_hessians`); returns their
        int64 column totals (1, C), with ``score_largest`` this worker's
        integer part of the order-free sum of the pointwise losses (times
        the weights), else None, and the statistics' inverse scales and
        layout (the same on every worker)."""
        backend = self._use_threads()
        xp = backend.xp
        old = getattr(self, "stats", None)
        h = (weight_hessians(xp, self.w_round, stop - start) if treeboost
             else self.h[:, start:stop])
        stats = newton_statistics(self.g[:, start:stop], h, self.w_round,
                                  xp, out=None if old is None else old.stats,
                                  scale_from=(np.asarray(largest, np.float64), n_total))
        self.stats = stats
        totals = stats.totals
        if totals is None:
            totals = xp.stack([stats.stats[:, c].sum() for c in range(stats.stats.shape[1])])
        score = (None if score_largest is None else
                 self._summable(self._weighted(self.pointwise), score_largest,
                                self._n_units(n_total)))
        return backend.to_host(totals).reshape(1, -1), score, stats.inv_scale, stats.layout

    def newton_leaf_sums(self, start, stop, largest, n_total, n_nodes):
        """This worker's int64 (n_nodes, 2 (stop - start)) per-leaf
        fixed-point sums of g and h of outputs start:stop (interleaved, the
        rows' leaves ``positions``), on the scales of ``largest`` float64
        (stop - start, 2) (every worker's largest |g|, |h|) over every
        worker's ``n_total`` rows, and each column's shift (None where its largest is
        0: its sums are 0); see :func:`gputree.dask.leaf_refits.friedman_leaves`."""
        xp = self._use_threads().xp
        columns, shifts = [], []
        for o in range(start, stop):
            for values, top in ((self.g[:, o], largest[o - start][0]),
                                (self.h[:, o], largest[o - start][1])):
                if top == 0.0:
                    columns.append(np.zeros(n_nodes, dtype=np.int64))
                    shifts.append(None)
                    continue
                total, shift = grouped_summable_sums(xp, values, self.positions, n_nodes,
                                                     float(top), n_total)
                columns.append(to_host(total))
                shifts.append(shift)
        return np.stack(columns, axis=1), shifts

    def listen(self):
        """Open this worker's end of the links among the workers
        (:mod:`gputree.dask.peer_links`); returns its address."""
        from distributed import get_worker
        self.links = PeerLinks(get_worker())
        return self.links.listen()

    def connect(self, index, addresses):
        """Join the reduce-scatter of the histograms among the workers
        (every worker's :meth:`listen` address, this one's at ``index``;
        see :mod:`gputree.dask.sliced_histograms`)."""
        self.links.connect(index, addresses)
        self.sliced = SlicedHistograms(self.links, index)
        self._exchanges = 0

    def boost_rounds(self, first, n_rounds, seed, stream, subsample, n_total, unit, groups,
                     score_pending, *rest):
        """Rounds ``first`` .. ``first + n_rounds - 1`` (:meth:`boost_round`,
        whose arguments follow ``n_rounds``; ``score_pending`` is the first
        round's: each later round computes the training score it starts
        from). Returns, on the first worker, every round's answer in order;
        None on the others. Every worker keeps the answers of the rounds it
        completed (:meth:`completed_rounds`: a lost worker's peers hold
        them)."""
        self.completed = (first, [])
        for k in range(n_rounds):
            self.completed[1].append(self.boost_round(
                first + k, seed, stream, subsample, n_total, unit, groups,
                score_pending or k > 0, *rest))
        return self.completed[1] if self.sliced.index == 0 else None

    def completed_rounds(self, first):
        """The answers (:meth:`boost_round`) of the rounds this worker
        completed in the :meth:`boost_rounds` call from round ``first``, in
        order (every worker grows the same trees and computes the same
        scores); [] for another call. Asked after a peer was lost."""
        done_first, done = getattr(self, "completed", (None, []))
        return list(done) if done_first == first else []

    def boost_round(self, it, seed, stream, subsample, n_total, unit, groups, score_pending,
                    data, growth, colsample_bytree, learning_rate, n_validation,
                    quantile=None, treeboost=False):
        """One boosting round on every worker at once, the workers combining
        their answers among themselves (:meth:`_gather`): the one-machine
        round's gradients on its rows (``subsample``, ``unit``: see
        :meth:`gradients`; ``n_total`` training rows), then per output group
        ``groups`` [(start, stop)] its statistics and its tree
        (:meth:`grow_tree`), whose leaves are refit where the loss refits
        them (``quantile``: its leaf_quantile, else None;
        :mod:`gputree.dask.leaf_refits`), after Friedman's Newton leaves
        where ``treeboost`` (criterion "friedman_mse"); with
        ``n_validation`` validation rows, the trees are added to their raw
        scores and their score computed. Returns (the
        trees, the order-free total of the weighted pointwise losses at the
        round's start where ``score_pending``, else None, the validation
        score or None), the same on every worker."""
        with_validation = n_validation > 0
        rng = tree_rng(seed, it, stream)
        answers = self._gather("gradients", seed, it, stream, subsample, n_total, unit,
                               treeboost)
        if subsample < 1:
            rng.set_state(answers[0][0])     # after the row draw, as on one machine
        largest = np.max([answer[1] for answer in answers], axis=0)   # (K, 2)
        score_largest = float(np.max([answer[2] for answer in answers]))
        split_largest = largest.copy()
        if treeboost:       # the trees split on (g, w): Friedman's least squares
            split_largest[:, 1] = max(answer[3] for answer in answers)
        score, trees = None, []
        for group, (start, stop) in enumerate(groups):
            with_score = score_pending and group == 0
            parts = self._gather("statistics", start, stop, split_largest[start:stop].ravel(),
                                 n_total, score_largest if with_score else None, treeboost)
            totals = np.sum([part[0] for part in parts], axis=0)
            if with_score:
                score = order_free_total([part[1] for part in parts])
            stats = Statistics(WorkerArray("stats", (n_total, totals.shape[1]), np.int64),
                               parts[0][2], parts[0][3], 1, totals,
                               int(totals[0, -1]) == n_total)
            refit = quantile is not None or treeboost
            tree, rng = self.grow_tree(data, stats, growth, rng, colsample_bytree,
                                       learning_rate, start, not refit, with_validation)
            if refit:
                self._refit_leaves(tree, (start, stop), largest if treeboost else None,
                                   n_total, growth, quantile is not None)
                tree.value *= learning_rate
                self.add_values(np.ascontiguousarray(tree.value[:, :, 0]), start,
                                tree if with_validation else None)
            trees.append(tree)
        validation = (validation_score(self._gather, order_free_total, n_validation, self.loss)
                      if with_validation else None)
        self.sliced.settle()
        return trees, score, validation

    def _refit_leaves(self, tree, outputs, largest, n_total, growth, quantile):
        """The leaves of the tree just grown (outputs (start, stop)) set as
        one machine sets them: Friedman's Newton leaves where ``largest``
        (every worker's largest |g|, |h|, float64 (K, 2)) is given, then
        the loss's quantile refit where ``quantile``."""
        if largest is not None:
            friedman_leaves(self._gather, tree, largest, n_total, growth, self.loss, *outputs)
        if quantile:
            _set_leaves(tree, leaf_values(self._gather, self.loss, tree.node_count))

    def _gather(self, method, *args):
        """Every worker's answer to ``method(*args)``, in worker order: this
        worker's, exchanged with the peers (every worker makes the same
        calls in the same order, so the n-th exchange of each is the same)."""
        return self._share(getattr(self, method)(*args))

    def _share(self, value):
        """Every worker's ``value`` (node-sized), in worker order (see
        :meth:`_gather`)."""
        self._exchanges += 1
        return self.sliced.exchange(("round", self._exchanges), value)

    def grow_tree(self, data, stats, growth, rng, colsample_bytree, learning_rate,
                  first_column, add, with_validation):
        """Grow the round's tree with the peers (:mod:`gputree.dask.peer_growth`):
        ``data`` the fit's BinnedData with X as :class:`WorkerArray` "X",
        ``stats`` its Statistics (int64 totals of every worker's rows, the
        statistics as :class:`WorkerArray` "stats"), ``rng`` the round's
        generator, the rest as the one-machine round's. ``add``: its values
        times ``learning_rate`` added to the raw scores from
        ``first_column`` (and to the validation rows' with
        ``with_validation``); otherwise only the positions are moved to
        its leaves. Returns (tree, the generator after it): every worker
        grows the same tree."""
        self._use_threads()
        if self.grower is None:
            self.grower = PeerBackend(self, self.device)
            self.tree_pool = HistogramPool(self.grower)
        tree, _ = grow_on_columns(self.grower, data, stats, growth, rng, self.tree_pool, 0,
                                  colsample_bytree)
        self.grower.finish("X")
        if add:
            tree.value *= learning_rate
            self.add_values(np.ascontiguousarray(tree.value[:, :, 0]), first_column,
                            tree if with_validation else None)
        return tree, rng

    def abort(self, separate_thread=None):
        """Stop waiting for the peers (called on the event loop)."""
        links = getattr(self, "links", None)
        if links is not None:
            links.abort()

    def level_splits(self, tag, x_name, zero, moves, level_start, node_to_build, n_bins,
                     derive, scan, choice=None):
        """One level of the tree being grown: positions zeroed (``zero``: a
        new tree), the previous level's splits applied (``moves``: host
        (level_start, split_feature, split_bitset, left_child) or None), the
        histograms of the build rows of
        ``node_to_build`` int32 (n_level,) built, reduced by feature
        (``tag``: the level's id), larger siblings derived (``derive``:
        host (parent_rows, built_rows) int32) and this worker's features
        scanned (``scan``: the remaining arguments of ``find_best_splits``
        with the number of pool rows first), with the node features' choice
        where ``choice`` (order int32 (n_rows, F) or None, max_features,
        draws float64 (n_rows, F) or None) is given: the ``max_features``
        soft limit (:meth:`SlicedHistograms.limit`), then the random
        thresholds (:meth:`SlicedHistograms.draw`). Returns this slice's
        best splits (:meth:`SlicedHistograms.scan`)."""
        backend = self._use_threads()
        X = self.X[x_name]
        self.move(x_name, zero, moves)
        built = node_to_build >= 0
        rows = np.unique(node_to_build[built])
        if rows.size:
            # built into rows 0..len(rows) - 1 (in the order of ``rows``), not
            # into pool rows: no histogram row that nothing is built into
            compact = backend.asarray(np.where(built, np.searchsorted(rows, node_to_build),
                                               -1).astype(node_to_build.dtype))
            held = [None, None]       # the histograms, on the host (once)
            out = self._level_buffer(rows.size, (X.shape[1], n_bins, self.stats.stats.shape[1]))

            def build(bounds, order, done):
                def on_host(s, hist):
                    if held[0] is not hist:
                        held[:] = [hist, to_host(hist)]
                    done(s, held[1])
                backend.build_histograms_by_features(X, self.stats.stats, self.positions,
                                                     level_start, compact, rows.size, n_bins,
                                                     bounds, order, on_host, out=out)
            self.sliced.reduce(tag, rows, X.shape[1], build)
        self.sliced.derive(backend, *derive)
        split_bin = None
        if choice is not None:
            order, max_features, draws = choice
            _, n_bins_non_missing, is_categorical, allowed, missing_bin, layout = scan[:6]
            if order is not None:
                self.sliced.limit(tag, order, max_features, n_bins_non_missing, missing_bin,
                                  layout, allowed)
            if draws is not None:
                split_bin = self.sliced.draw(backend, draws, n_bins_non_missing,
                                             is_categorical, missing_bin, layout, allowed)
        return self.sliced.scan(backend, *scan, split_bin=split_bin)

    def summed_histograms(self, tag, x_name, zero, level_start, node_to_build, n_build,
                          n_bins):
        """Host int64 (n_build, F, n_bins, C): the histograms of the level's
        build rows (``node_to_build`` int32 (n_level,)) of every worker's
        rows, summed among the workers (:meth:`SlicedHistograms.all_reduce`,
        ``tag`` the level's id), positions zeroed first where ``zero`` (a
        new tree): a multiway level's (:mod:`gputree.growth.multiway`)."""
        backend = self._use_threads()
        X = self.X[x_name]
        self.move(x_name, zero, None)
        hist = backend.build_histograms(X, self.stats.stats, self.positions, level_start,
                                        backend.asarray(node_to_build), n_build, n_bins)
        return self.sliced.all_reduce(tag, np.ascontiguousarray(to_host(hist)))

    def move_by_child_table(self, x_name, zero, level_start, split_feature, child_of):
        """Positions zeroed (``zero``), then a multiway level's moves
        (:meth:`gputree.backends.base.Backend.move_by_child_table`)."""
        backend = self._use_threads()
        self.move(x_name, zero, None)
        self.positions = backend.move_by_child_table(self.X[x_name], self.positions,
                                                     level_start, split_feature, child_of)

    def _level_buffer(self, n_build, row_shape):
        """The buffer a level's histograms are built into: int64 (>= n_build,
        *row_shape) on the worker's device, kept between levels and trees
        (any former contents; built anew where the shape changed or it is
        too small). Fresh memory at every level cost each worker its pages'
        faults and clearing: 150k x 28, 100 trees, ~2 GB a worker."""
        buffer = getattr(self, "_built", None)
        if buffer is None or buffer.shape[1:] != row_shape or buffer.shape[0] < n_build:
            capacity = max(n_build, 0 if buffer is None or buffer.shape[1:] != row_shape
                           else 2 * buffer.shape[0])
            buffer = self._built = self.backend.empty((capacity,) + row_shape, STAT_DTYPE)
        return buffer

    def move(self, x_name, zero, moves):
        """Positions zeroed (``zero``) and the splits ``moves`` (or None)
        applied: the last splits of a tree, or a level's first step."""
        backend = self._use_threads()
        if zero:
            self.positions = backend.row_zeros(self.n_rows, NODE_DTYPE, reuse=self.positions)
        if moves is not None:
            self._move(self.X[x_name], moves)

    def _move(self, X, moves):
        backend = self.backend
        start, feature, sets, left = moves
        backend.update_positions(X, self.positions, start, backend.asarray(feature),
                                 sets.map(backend.asarray), backend.asarray(left))

    def take_columns(self, columns):
        """Binned X of the host int ``columns`` (colsample_bytree), kept as
        the "columns" array."""
        backend = self._use_threads()
        self.X["columns"] = backend.take_columns(self.X["X"], columns)

    def add_values(self, values, first_column, tree=None):
        """raw[:, first_column:first_column + V] += values[positions] (host
        float64 (n_nodes, V)): the tree just grown (``tree``: to add to the
        validation rows' raw scores as well)."""
        backend = self._use_threads()
        backend.add_node_values(backend.asarray(values), self.positions, self.raw, first_column)
        if tree is not None and self.val is not None:
            add_tree_values(backend, self.val["X"], [tree], [first_column], self.val["raw"])
        self.spare = (self.g, self.h, self.pointwise) if self.backend.xp is np else None

    # ------------------------------------------------- quantile selection
    def quantile_rows(self, source):
        """Hold the values of a distributed weighted quantile
        (:mod:`gputree.dask.selection`), by ``source``: "targets", the
        targets with the weights (one group); "residuals", y - raw with the
        round's weights per leaf of the tree just grown; "round", the
        loss's round_values with the round's weights (one group). Returns
        :func:`shard_summary` of the weights."""
        backend = self._use_threads()
        values, w = self.y[:, 0], self.w
        groups = np.zeros(self.n_rows, dtype=np.int64)
        if source == "residuals":
            values, w = (self.y - self.raw)[:, 0], self.w_round
            groups = to_host(self.positions).astype(np.int64)
        elif source == "round":
            values, w = self.loss.round_values(backend.xp, self.y, self.raw), self.w_round
        w = to_host(backend.asarray(w, dtype=FLOAT_DTYPE))
        self.selection = [order_keys(to_host(values)), w, groups]
        return shard_summary(w)

    def quantile_scale(self, largest, n_kept, n_groups):
        """The held weights in fixed point on the scale of all the shards';
        returns this shard's int64 weight per group (n_groups,)."""
        keys, w, groups = self.selection
        self.selection = [keys, fixed_weights(w, largest, n_kept), groups, n_groups]
        return self.quantile_ask(np.full(n_groups, np.iinfo(np.int64).max))

    def quantile_ask(self, pivots):
        """int64 (n_groups,): the held weight per group at or below the
        group's pivot key."""
        keys, fixed, groups, n_groups = self.selection
        return weight_at_or_below(keys, fixed, groups, n_groups, np.asarray(pivots))

    def leaf_sums(self, quantiles, scale):
        """This worker's part of the loss's per-leaf int64 sums of the tree
        just grown (``leaf_sums`` of its rows: host int64 (n_nodes, S)),
        from the leaves' ``quantiles`` float64 (n_nodes,) and the weights'
        ``scale`` over every worker's rows."""
        backend = self._use_threads()
        return to_host(self.loss.leaf_sums(backend.xp, backend.asarray(quantiles),
                                           self.positions, self.y, self.raw, self.w_round,
                                           scale))

    # ------------------------------------------------------------- scores
    def score_largest(self):
        """Largest |pointwise * w| of the loss at the current raw scores
        (for the fit's last training score)."""
        backend = self._use_threads()
        self.pointwise = self.loss.pointwise(backend.xp, self.y, self.raw)
        return self._largest(self._weighted(self.pointwise))

    def score_part(self, largest, n_total):
        """This worker's integer part of the order-free sum of the
        pointwise losses of :meth:`score_largest` (times the weights)."""
        self._use_threads()
        return self._summable(self._weighted(self.pointwise), largest, self._n_units(n_total))

    def validation_parts(self, largest=None, n_total=None):
        """For the validation loss (order-free sums in parts): the largest
        |pointwise * w| and |w| of the validation rows (``largest`` None),
        else this worker's parts of their sums."""
        backend = self._use_threads()
        val = self.val
        if val is None:
            return [0.0, 0.0] if largest is None else [(0, None), (0, None)]
        if largest is None:
            val["unit_w"] = self.loss.unit_weights(val["y"], val["w"])
            val["pointwise"] = (self.loss.pointwise(backend.xp, val["y"], val["raw"])
                                * val["unit_w"])
        values = (val["pointwise"], val["unit_w"])
        if largest is None:
            return [self._largest(v) for v in values]
        return [self._summable(v, top, n_total) for v, top in zip(values, largest)]

    def weight_parts(self, largest=None, n_total=None):
        """Largest |w| (``largest`` None), else this worker's integer part
        of the order-free sum of the weights (of the loss's units: rows, or
        a ranking loss's queries)."""
        self._use_threads()
        w = self.loss.unit_weights(self.y, self.w)
        if largest is None:
            return self._largest(w)
        return self._summable(w, largest, self._n_units(n_total))

    def _weighted(self, pointwise):
        """pointwise * the weights of its units (equal to the pointwise
        losses where every weight is one, the one-machine fit's unweighted
        sum)."""
        return pointwise * self.loss.unit_weights(self.y, self.w)

    def _largest(self, values):
        """Largest magnitude of ``values`` (n,) on the backend or the host."""
        if values.shape[0] == 0:
            return 0.0
        if self.backend.xp is np or isinstance(values, np.ndarray):
            return float(largest_magnitudes(np.ascontiguousarray(values)[:, None])[0])
        return float(self.backend.xp.max(self.backend.xp.abs(values)))

    def _summable(self, values, largest, n_total):
        """(int, shift) part of an order-free sum (see
        :func:`gputree.fixed_point.summable_total`), or (float partial sum,
        None) where the whole's largest magnitude is 0 or not finite."""
        if values.shape[0] == 0:
            return 0, None
        xp = np if isinstance(values, np.ndarray) else self.backend.xp
        if largest == 0.0 or not np.isfinite(largest):
            return float(xp.sum(values)), None
        return summable_total(xp, values, largest, n_total)

    def _local_unsorted(self, rows, ranges):
        """Local indices (int64) of the global ``rows`` (any order) inside
        ``ranges`` int64 (p, 2), in the same order."""
        local = np.empty(rows.size, dtype=np.int64)
        first = 0
        for start, stop in ranges:
            inside = (rows >= start) & (rows < stop)
            local[inside] = rows[inside] - start + first
            first += stop - start
        return local

    def _local(self, rows):
        """Local indices (int64) of the global ``rows`` this worker holds."""
        return _local_indices(self.ranges, rows)


def _kept_per_range(held, ranges):
    """int64 (p,): per range of ``ranges`` (p, 2) (consecutive local
    indices), its entries not ``held`` (bool)."""
    edges = np.concatenate([[0], np.cumsum(ranges[:, 1] - ranges[:, 0])])
    return np.diff(np.searchsorted(np.flatnonzero(~held), edges)).astype(np.int64)


def _local_indices(ranges, indices):
    """Local indices (int64) of the global ``indices`` inside ``ranges``
    int64 (p, 2) (global [start, stop), numbered consecutively)."""
    local, first = [], 0
    for start, stop in ranges:
        inside = indices[(indices >= start) & (indices < stop)]
        local.append(inside - start + first)
        first += stop - start
    return np.concatenate(local) if local else np.empty(0, np.int64)


def _joined(parts):
    """Host parts (n_p, ...) of the worker's partitions, concatenated (parts
    of a type with a ``joined`` constructor, such as ranking targets with
    their queries, joined by it)."""
    join = getattr(type(parts[0]), "joined", None)
    if join is not None:
        return parts[0] if len(parts) == 1 else join(parts)
    host = [np.asarray(to_host(p)) for p in parts]
    return host[0] if len(host) == 1 else np.concatenate(host)


def order_free_total(parts):
    """The order-free sum (host float) from the workers' parts
    (:meth:`WorkerRows._summable`): (int, shift) each, or (float, None)
    where the largest magnitude was 0 or not finite."""
    if any(shift is None for _, shift in parts):
        return float(sum(value for value, _ in parts))
    return math.ldexp(float(sum(int(value) for value, _ in parts)), -parts[0][1])
