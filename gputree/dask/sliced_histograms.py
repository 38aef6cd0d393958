"""Histograms summed among the workers, each worker owning a slice of the
features: a reduce-scatter by feature, then each worker's split scan over
its features, and every worker's choice of the best of the slices' splits.

Every worker builds the int64 histograms of its own rows for every feature
(the level's built nodes only), sends each peer the peer's features
(worker to worker, actor to actor: no driver, no scheduler), packed into the
bytes their values need (:mod:`gputree.dask.packed_histograms`), and adds the
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
"""
import concurrent.futures
import pickle
import threading

import numpy as np

from .._dtypes import FEATURE_DTYPE, STAT_DTYPE
from ..backends.scan import SplitInfo
from .packed_histograms import add_packed, pack, packed_capacity


def feature_bounds(n_features, n_slices):
    """int64 (n_slices + 1,): slice s owns features [bounds[s], bounds[s+1]),
    contiguous, ascending, sizes differing by at most one."""
    return np.array([(n_features * s) // n_slices for s in range(n_slices + 1)],
                    dtype=np.int64)


class SlicedHistograms:
    """One worker's part of the reduce-scatter (held by its
    :class:`gputree.dask.worker_rows.WorkerRows`).

    peers : the actors of every worker, in slice order (this one at
    ``index``); the features' slices are :func:`feature_bounds` of the
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

    def __init__(self, peers, index):
        self.peers, self.index = peers, int(index)
        self.inbox = {}
        self.arrived = threading.Condition()
        self.sent = []       # the previous level's sends, checked at the next
        self.aborted = False
        self.worker = None   # the distributed Worker this one runs on (its comms)
        self.pool = None     # int64 (capacity, own features, n_bins, C)
        self.buffers = {}    # slice -> uint8: the packed histograms sent to it
        self.whole = len(self.peers) <= self.whole_up_to

    def _own(self, n_features):
        """(bounds of every slice, this worker's first and stop feature)."""
        if self.whole:
            return np.array([0, n_features]), 0, int(n_features)
        bounds = feature_bounds(n_features, len(self.peers))
        return bounds, int(bounds[self.index]), int(bounds[self.index + 1])

    # ------------------------------------------------------ communication
    def receive(self, tag, sender, piece):
        """A peer's histograms of this worker's features for level ``tag``
        (runs on the worker's event loop: it only stores)."""
        tag = tuple(tag) if isinstance(tag, list) else tag   # msgpack sends tuples as lists
        with self.arrived:
            self.inbox[(tag, int(sender))] = piece
            self.arrived.notify_all()

    def abort(self):
        """Stop waiting for the peers (the driver gave up the fit)."""
        with self.arrived:
            self.aborted = True
            self.arrived.notify_all()

    def reduce(self, tag, rows, n_features, build):
        """Build this worker's histograms of pool ``rows`` int32 (all
        ``n_features`` features) with ``build(bounds, order, done)``
        (:meth:`Backend.build_histograms_by_features`'s last arguments, host
        int64 (len(rows), F, n_bins, C) given to ``done``): each peer's
        features first, sent to it as soon as they are built, so that they
        travel while this worker builds the next slice, its own last. Then
        the peers' pieces are added to this worker's features and the sums
        stored in the pool's ``rows``. The sends are one-way and not waited
        for (a peer needs them to answer the driver, who waits for every
        worker's answer): their writes are checked as they finish
        (:meth:`_send`) and at the end of the round (:meth:`settle`)."""
        bounds, first, stop = self._own(n_features)
        others = [s for s in range(len(self.peers)) if s != self.index]
        built = []

        def done(s, local):
            built[:] = [local]
            if self.whole:   # every peer gets all of it (a lone worker: nobody)
                if others:
                    packed = pack(local)
                    self._send(tag, [None if p == self.index else packed
                                     for p in range(len(self.peers))])
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
        frame, costs the event loop more than the pickle costs here)."""
        if len(self.peers) == 1:
            return [value]
        self._send(tag, [pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)]
                   * len(self.peers))
        return [value if s == self.index else pickle.loads(self._take(tag, s))
                for s in range(len(self.peers))]

    def _send(self, tag, pieces):
        """Send each peer its piece of ``pieces`` (one per slice) as a
        one-way message (:meth:`_post`), not waiting: the sends already
        written are checked (a failed one raises), the others kept for
        later."""
        self._settle(wait=False)
        self.sent += [self._post(peer, tag, pieces[s])
                      for s, peer in enumerate(self.peers) if s != self.index]

    def _send_to(self, s, tag, piece):
        """:meth:`_send` of ``piece`` to slice ``s``'s worker only."""
        self._settle(wait=False)
        self.sent.append(self._post(self.peers[s], tag, piece))

    def _post(self, peer, tag, piece):
        """``peer.receive(tag, self.index, piece)``, the actor call that
        distributed makes, sent with ``reply=False`` over the worker's
        connection pool: the peer answers nothing (it waits for every
        message before its step ends, so a reply would tell nobody
        anything), and no reply crosses both event loops. Returns a
        concurrent Future, done once the message is written (its error if
        the write failed, e.g. the peer is gone)."""
        if self.worker is None:
            from distributed import get_worker
            self.worker = get_worker()
        from distributed.protocol import to_serialize
        written = concurrent.futures.Future()
        call = self.worker.rpc(peer._address)
        # the tag (a tuple of a str and an int, or an int) and the sender go
        # as msgpack values, bytes as they are; other pieces serialized
        args = [tag, self.index, piece if isinstance(piece, bytes) else to_serialize(piece)]

        async def post():
            try:
                await call.actor_execute(function="receive", actor=peer.key, args=args,
                                         kwargs={"separate_thread": False}, reply=False)
            except BaseException as error:
                written.set_exception(error)
            else:
                written.set_result(None)
        self.worker.loop.add_callback(post)
        return written

    def settle(self):
        """Wait until every send is written (a round's end)."""
        self._settle(wait=True)

    def _settle(self, wait):
        pending = []
        for future in self.sent:
            if wait or future.done():
                future.result()
            else:
                pending.append(future)
        self.sent = pending

    def _take(self, tag, sender):
        with self.arrived:
            self.arrived.wait_for(lambda: (tag, sender) in self.inbox or self.aborted)
            if self.aborted:
                raise RuntimeError("the fit was stopped while this worker waited for the "
                                   "histograms of another worker")
            return self.inbox.pop((tag, sender))

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

    def scan(self, backend, n_nodes, n_bins_non_missing, is_categorical, allowed, missing_bin,
             layout, inv, params):
        """The best split of pool rows [0, n_nodes) over this worker's
        features (arguments as ``find_best_splits``, every feature's): a
        tuple of host arrays (gain, feature (global index), bitset,
        missing_left, left_sums, words), or None when this slice has no feature."""
        _, first, stop = self._own(allowed.shape[1])
        if stop == first:
            return None
        own = slice(first, stop)
        self._ensure_rows(n_nodes, (0,) + self.pool.shape[1:])
        split = backend.find_best_splits(
            self.pool[:n_nodes], np.ascontiguousarray(n_bins_non_missing[own]),
            np.ascontiguousarray(is_categorical[own]), np.ascontiguousarray(allowed[:, own]),
            missing_bin, layout, inv, params)
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
