"""Histograms summed among the workers, each worker owning a slice of the
features: a reduce-scatter by feature, then each worker's split scan over
its features, and every worker's choice of the best of the slices' splits.

Every worker builds the int64 histograms of its own rows for every feature
(the level's built nodes only), sends each peer the peer's features
(worker to worker over distributed's comms: no driver, no scheduler, not
through the worker's event loop: :mod:`gputree.dask.peer_links`), packed
into the bytes their values need (:mod:`gputree.dask.packed_histograms`), and adds the
pieces it receives to its own, exact in any order: a worker then holds the
one-machine histograms of its features. It keeps them in its own pool
(``derive``: a larger sibling is ``parent - built``, as the grower plans)
and scans them with the backend's ``find_best_splits``: the same scan code
and arithmetic as one machine, per (node, feature). The workers exchange
their node-sized best splits (:meth:`SlicedHistograms.exchange`) and each
keeps, per node, the first slice whose gain is the largest: slices are
contiguous and ascending, so that is the lowest feature among the best, the
one-machine choice (``numpy.argmax``). With :attr:`SlicedHistograms.whole_up_to`
workers or fewer, every worker owns every feature: each sends the others its
whole histograms and scans them all, so no exchange of best splits follows.
A multiway tree sums a level's whole histograms on every worker
(:meth:`SlicedHistograms.all_reduce`): its grower reads them on the host.
"""
import pickle

import numpy as np

from .._dtypes import FEATURE_DTYPE, STAT_DTYPE
from ..backends.scan import SplitInfo
from .packed_histograms import add_packed, pack, packed_capacity
from .sliced_features import constant_features, soft_limit


def feature_bounds(n_features, n_slices):
    """int64 (n_slices + 1,): slice s owns features [bounds[s], bounds[s+1]),
    contiguous, ascending, sizes differing by at most one."""
    return np.array([(n_features * s) // n_slices for s in range(n_slices + 1)],
                    dtype=np.int64)


class SlicedHistograms:
    """One worker's part of the reduce-scatter (held by its
    :class:`gputree.dask.worker_rows.WorkerRows`).

    links : this worker's :class:`gputree.dask.peer_links.PeerLinks` to
    every peer (``len(links)`` workers, this one at ``index`` in slice
    order); the features' slices are :func:`feature_bounds` of the
    histograms' feature count (binned X's or, after colsample_bytree, the
    tree's columns').
    """

    #: up to this many workers, each sums and scans the whole histograms
    #: (an all-reduce), so that no exchange of best splits follows; beyond,
    #: the reduce-scatter. Two workers reduce-scatter as well: half the
    #: histogram bytes on the wire and half the scan per worker cost less
    #: than the exchange of best splits (150k x 28, 100 trees: workers'
    #: CPU 21.6 -> 18.4 s). Measured again with one-way sends
    #: (150k x 28, 100 trees, runs alternated, load 2-5): the all-reduce's
    #: workers' CPU 20.4-23.1 s against the reduce-scatter's 17.6-19.9 s
    whole_up_to = 1

    def __init__(self, links, index):
        self.links, self.index = links, int(index)
        self.n_slices = len(links)
        self.pool = None     # int64 (capacity, own features, n_bins, C)
        self.buffers = {}    # slice -> uint8: the packed histograms sent to it
        self.whole = self.n_slices <= self.whole_up_to

    def _own(self, n_features):
        """(bounds of every slice, this worker's first and stop feature)."""
        if self.whole:
            return np.array([0, n_features]), 0, int(n_features)
        bounds = feature_bounds(n_features, self.n_slices)
        return bounds, int(bounds[self.index]), int(bounds[self.index + 1])

    # ------------------------------------------------------ communication
    def reduce(self, tag, rows, n_features, build):
        """Build this worker's histograms of pool ``rows`` int32 (all
        ``n_features`` features) with ``build(bounds, order, done)``
        (:meth:`Backend.build_histograms_by_features`'s last arguments, host
        int64 (len(rows), F, n_bins, C) given to ``done``): each peer's
        features first, sent to it as soon as they are built, so that they
        travel while this worker builds the next slice, its own last. Then
        the peers' pieces are added to this worker's features and the sums
        stored in the pool's ``rows``. The sends are not waited for (the
        links' thread writes them; a failed write raises at the next take
        or at the end of the round: :meth:`settle`)."""
        bounds, first, stop = self._own(n_features)
        others = [s for s in range(self.n_slices) if s != self.index]
        built = []

        def done(s, local):
            built[:] = [local]
            if self.whole:   # every peer gets all of it (a lone worker: nobody)
                if others:
                    packed = pack(local)
                    self._send(tag, [None if p == self.index else packed
                                     for p in range(self.n_slices)])
            elif s != self.index:
                # packed (copied): the peers' pieces can then be added into local in place
                self._send_to(s, tag, self._pack(s, local[:, bounds[s]:bounds[s + 1]]))
        build(bounds, [0] if self.whole else others + [self.index], done)
        total = built[0][:, first:stop]
        self._ensure_rows(int(rows.max()) + 1, total.shape)
        if not others:
            self.pool[rows] = total
        for k, sender in enumerate(others):
            # the first peer's piece added on the way into the pool, the others' there
            add_packed(self.pool[rows] if k else total, self._take(tag, sender), self.pool,
                       rows)

    def all_reduce(self, tag, hist):
        """Every worker's ``hist`` host int64 (n, F, n_bins, C) (the same
        shape on each) summed, exactly, on every worker: this worker's
        sent packed to every peer, the peers' added to it in place;
        returns ``hist``, then the sum."""
        if self.n_slices > 1:
            packed = pack(hist)
            self._send(tag, [packed] * self.n_slices)
            for sender in range(self.n_slices):
                if sender != self.index:
                    add_packed(hist, self._take(tag, sender))
        return hist

    def _pack(self, peer, hist):
        """``hist`` packed for slice ``peer`` into this worker's buffer for
        that peer: its previous contents were sent and added (the peer's
        best splits of that level, needed before this level, came after it
        added them), whether or not their write has been reported done."""
        buffer = self.buffers.get(peer)
        if buffer is None or buffer.size < packed_capacity(hist.shape):
            buffer = self.buffers[peer] = np.empty(packed_capacity(hist.shape), np.uint8)
        return pack(hist, buffer)

    def exchange(self, tag, value):
        """Every worker's ``value`` (node-sized), in slice order: this
        worker's sent to every peer, the peers' received (all-gather).
        Sent pickled here, as bytes, which the message carries as they are
        (distributed's serialization of a tuple of small arrays, an array a
        frame, costs more than the pickle)."""
        if self.n_slices == 1:
            return [value]
        self._send(tag, [pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)]
                   * self.n_slices)
        return [value if s == self.index else pickle.loads(self._take(tag, s))
                for s in range(self.n_slices)]

    def _send(self, tag, pieces):
        """Send each peer its piece of ``pieces`` (one per slice) over the
        links (:mod:`gputree.dask.peer_links`), not waiting for it to be
        read."""
        for s in range(self.n_slices):
            if s != self.index:
                self._send_to(s, tag, pieces[s])

    def _send_to(self, s, tag, piece):
        """:meth:`_send` of ``piece`` (bytes or a numpy array) to slice
        ``s``'s worker only."""
        self.links.send(s, tag, piece)

    def settle(self):
        """Wait until every send is written (a round's end)."""
        self.links.settle()

    def _take(self, tag, sender):
        return self.links.take(tag, sender)

    def _ensure_rows(self, n_rows, shape):
        """A pool of at least ``n_rows`` rows for histograms of ``shape``
        (n, own features, n_bins, C), the used rows kept."""
        row_shape = tuple(shape[1:])
        if self.pool is not None and self.pool.shape[1:] != row_shape:
            self.pool = None
        capacity = 0 if self.pool is None else self.pool.shape[0]
        if n_rows > capacity:
            pool = np.zeros((max(n_rows, 2 * capacity),) + row_shape, dtype=STAT_DTYPE)
            if capacity:
                pool[:capacity] = self.pool
            self.pool = pool

    # -------------------------------------------------------- node work
    def derive(self, backend, parent_rows, built_rows):
        """pool[parent_rows] -= pool[built_rows]: the larger siblings."""
        if parent_rows.size:
            backend.subtract_histograms(self.pool, parent_rows, self.pool, built_rows,
                                        parent_rows)

    def limit(self, tag, order, max_features, n_bins_non_missing, missing_bin, layout,
              allowed):
        """The ``max_features`` soft limit of pool rows [0, len(allowed)),
        applied to ``allowed`` uint8 (n_nodes, F) in place, from every
        slice's constant features (:mod:`gputree.dask.sliced_features`;
        ``tag``: the level's id)."""
        _, first, stop = self._own(allowed.shape[1])
        n_nodes = allowed.shape[0]
        self._ensure_rows(n_nodes, (0,) + self.pool.shape[1:])
        own = constant_features(self.pool[:n_nodes],
                                np.asarray(n_bins_non_missing)[first:stop], missing_bin, layout)
        parts = [own] if self.whole else self.exchange(("limit", tag), own)
        soft_limit(order, max_features, np.concatenate(parts, axis=1), allowed)

    def draw(self, backend, draws, n_bins_non_missing, is_categorical, missing_bin, layout,
             allowed):
        """The random thresholds of this worker's features (the backend's
        ``choose_node_features`` on its slice: a (node, feature)'s draw and
        histogram alone decide them): int32 (n_nodes, own features)
        ``split_bin``, or None when this slice has no feature; their
        columns of ``allowed`` uint8 (n_nodes, F) updated in place (0 where
        constant). ``draws`` float64 (n_nodes, F), every feature's."""
        _, first, stop = self._own(allowed.shape[1])
        if stop == first:
            return None
        own, n_nodes = slice(first, stop), allowed.shape[0]
        self._ensure_rows(n_nodes, (0,) + self.pool.shape[1:])
        mine = np.ascontiguousarray(allowed[:, own])
        split_bin = backend.choose_node_features(
            self.pool[:n_nodes], mine, None, 0, np.ascontiguousarray(draws[:, own]),
            np.ascontiguousarray(n_bins_non_missing[own]),
            np.ascontiguousarray(is_categorical[own]), missing_bin, layout)
        allowed[:, own] = mine
        return split_bin

    def scan(self, backend, n_nodes, n_bins_non_missing, is_categorical, allowed, missing_bin,
             layout, inv, params, split_bin=None):
        """The best split of pool rows [0, n_nodes) over this worker's
        features (arguments as ``find_best_splits``, every feature's;
        ``split_bin``: :meth:`draw`'s): a tuple of host arrays (gain,
        feature (global index), bitset, missing_left, left_sums, words), or
        None when this slice has no feature."""
        _, first, stop = self._own(allowed.shape[1])
        if stop == first:
            return None
        own = slice(first, stop)
        self._ensure_rows(n_nodes, (0,) + self.pool.shape[1:])
        split = backend.find_best_splits(
            self.pool[:n_nodes], np.ascontiguousarray(n_bins_non_missing[own]),
            np.ascontiguousarray(is_categorical[own]), np.ascontiguousarray(allowed[:, own]),
            missing_bin, layout, inv, params, split_bin=split_bin)
        return (split.gain, (split.feature + first).astype(FEATURE_DTYPE), split.bitset,
                split.missing_left, split.left_sums, split.words)


def merge_splits(parts):
    """The one-machine :class:`SplitInfo` from the slices' best splits
    (:meth:`SlicedHistograms.scan`, in slice order): per node the first
    slice with the largest gain."""
    parts = [part for part in parts if part is not None]
    gain = np.stack([part[0] for part in parts], axis=1)
    best = np.argmax(gain, axis=1)
    nodes = np.arange(gain.shape[0])
    pick = [np.stack([part[k] for part in parts], axis=1)[nodes, best] for k in range(6)]
    return SplitInfo(*pick)
