"""Direct links between the workers during a fit: one distributed comm from
each worker to each peer, written and read by a thread of the links' own
in every worker, which hands the actor thread the messages by tag.

The per-level messages of a tree grown by the workers together (histogram
pieces, best splits, a round's exchanges: :mod:`gputree.dask.sliced_histograms`)
went through each worker's event loop as distributed actor calls: the loop
ran the call's machinery for every message, between heartbeats and the
worker's other duties, and the actor thread waited for it (150k x 28, 100
trees, 2 workers on 2 cores: a 1.3 kB message ~1 ms from post to arrival,
1.6 ms more before the waiting thread ran). Written and read on the actor
thread itself (a loop of its own, run for each send and wait), the comms'
Python work lay on the critical path of every level (~0.8 ms a message in
all). Here a thread per worker runs an asyncio loop that holds the links:
it writes what the actor thread posts (:meth:`PeerLinks.send`, in posting
order) and reads the peers' messages as they come, while the actor thread
computes; a waiting actor thread (:meth:`PeerLinks.take`, a condition)
holds no GIL, so the links' thread runs at once, and between two waits the
actor thread mostly runs kernels that release the GIL.

Each link is a comm of distributed's (:func:`distributed.comm.listen`,
:func:`distributed.comm.connect`), with the worker's protocol and security
settings: TCP or TLS between processes, inproc within one. Links over TCP
without TLS are then taken over as sockets, written and read by the actor
thread itself (:mod:`gputree.dask.peer_sockets`: no thread switch a
message); TLS and inproc links stay with the links' thread.
"""
import asyncio
import concurrent.futures
import threading
import weakref

from distributed.comm import connect, get_address_host, listen, parse_address, unparse_address
from distributed.comm.addressing import unparse_host_port
from distributed.comm.core import CommClosedError
from distributed.comm.tcp import TCP, TLS
from distributed.protocol import to_serialize

from .peer_sockets import PeerSockets


#: a worker that receives nothing for this long while it waits for a peer's
#: message raises (:meth:`_Mailbox.take`): a level's histograms of the
#: largest data take seconds, not minutes
STALL_SECONDS = 600
#: the longest wait for the peers' links at set-up
CONNECT_SECONDS = 60


def _takes_socket(comm):
    """Whether a comm's socket is taken over (TCP without TLS)."""
    return isinstance(comm, TCP) and not isinstance(comm, TLS)


class PeerLinks:
    """One worker's links to its peers: ``worker`` the distributed Worker
    whose actor thread uses them (its address's protocol and its security
    settings)."""

    def __init__(self, worker):
        self.worker = worker
        self.mail = _Mailbox()
        self.transport = self.mail        # or PeerSockets, once connected over TCP
        self.index, self.n_workers = None, 1
        # the links' thread holds the mailbox, not this object
        self.sockets = []
        weakref.finalize(self, _close, self.mail, self.sockets)

    def __len__(self):
        """The number of workers linked, this one included."""
        return self.n_workers

    # ------------------------------------------------------------ set-up
    def listen(self):
        """Start the links' thread and its listener; returns the listener's
        address (str)."""
        scheme, _ = parse_address(self.worker.address)
        where = "" if scheme == "inproc" else unparse_host_port(
            get_address_host(self.worker.address), 0)
        return self.mail.start(unparse_address(scheme, where),
                               self.worker.security.get_listen_args("worker"))

    def connect(self, index, addresses):
        """Link to every peer (``addresses``: every worker's :meth:`listen`
        address, this one's at ``index``)."""
        self.index, self.n_workers = int(index), len(addresses)
        taken = self.mail.call(self.mail.connect(
            self.index, list(addresses), self.worker.security.get_connection_args("worker")))
        if taken:
            self.transport = PeerSockets(*taken, STALL_SECONDS)
            self.sockets.append(self.transport)

    # ---------------------------------------------------------- messages
    def send(self, peer, tag, piece):
        """``piece`` (bytes or a numpy array, not changed until the peer
        has read it) to slice ``peer``'s worker under ``tag``: written on
        this thread over a taken-over socket, else by the links' thread."""
        self.transport.post(peer, tag, self.index, piece)

    def take(self, tag, sender):
        """The piece ``sender`` sent under ``tag``, waited for; a
        RuntimeError when nothing has come for :data:`STALL_SECONDS` or the
        fit was stopped, a CommClosedError when a link closed."""
        return self.transport.take((tag, int(sender)))

    def settle(self):
        """Wait until every message posted is written (a round's end); a
        failed write raises."""
        self.transport.settle()

    def abort(self):
        """Stop waiting for the peers (called from the worker's event loop,
        any thread)."""
        self.transport.stop_waiting()

    def close(self):
        """Close the links (this worker's end)."""
        _close(self.mail, self.sockets)


class _Mailbox:
    """The links' thread: its loop writes this worker's messages and reads
    the peers' as they come, kept by (tag, sender) for the actor thread."""

    def __init__(self):
        self.inbox = {}
        self.arrived = threading.Condition()
        self.failure = None      # why a link failed (raised to a waiting take)
        self.aborted = False
        self.loop, self.outgoing, self.incoming, self.listeners = None, {}, [], []
        self.greeted = {}        # peer slice -> its incoming comm, to be taken over
        self.expected = None     # how many peers link to this worker (known at connect)
        self.all_greeted = None  # an asyncio.Event: every peer's link is here
        self.writing = set()     # the writes posted and not done
        self.came = False        # a message came since the last check of a long wait
        self.stopped = False     # stop() ran

    def start(self, address, listen_args):
        """The reader thread, its loop and its listener on ``address``;
        returns the listener's address."""
        started = concurrent.futures.Future()
        self.loop = asyncio.new_event_loop()

        def read():
            asyncio.set_event_loop(self.loop)
            try:
                started.set_result(self.loop.run_until_complete(self._listen(address,
                                                                             listen_args)))
            except BaseException as error:   # noqa: BLE001 - raised to listen()
                started.set_exception(error)
                return
            self.loop.run_forever()
            tasks = asyncio.all_tasks(self.loop)      # after stop(): the links' reads
            for task in tasks:
                task.cancel()
            try:
                self.loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
            except RuntimeError:     # the loop stopped again meanwhile: the reads are cancelled
                pass
            self.loop.close()
        threading.Thread(target=read, name="gputree-peer-links", daemon=True).start()
        return started.result()

    async def _listen(self, address, listen_args):
        listener = listen(address, self.serve, **listen_args)
        await listener.start()
        self.listeners.append(listener)
        return listener.contact_address

    def call(self, coroutine):
        """Run ``coroutine`` on the links' loop, waited for."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()

    async def connect(self, index, addresses, connection_args):
        """Connect to every peer and greet it with this worker's slice
        ``index``; over TCP without TLS, once every peer's link to this
        worker has come, take over every link's socket: returns (outgoing,
        incoming) {peer slice: socket}, else None (the comms stay)."""
        self.all_greeted, self.expected = asyncio.Event(), len(addresses) - 1
        for s, address in enumerate(addresses):
            if s != index:
                comm = await connect(address, **connection_args)
                comm.allow_offload = False     # written in posting order, on this thread
                self.outgoing[s] = comm
                await comm.write(["hello", index, None])
        self._check_greeted()
        if not self.outgoing or not all(map(_takes_socket, self.outgoing.values())):
            return None
        await asyncio.wait_for(self.all_greeted.wait(), CONNECT_SECONDS)
        for comm in self.outgoing.values():
            await comm.stream.write(b"")       # the greeting written out of tornado's buffer
        return ({s: _taken(comm) for s, comm in self.outgoing.items()},
                {s: _taken(comm) for s, comm in self.greeted.items()})

    def _check_greeted(self):
        if self.expected is not None and len(self.greeted) >= self.expected:
            self.all_greeted.set()

    def post(self, peer, tag, sender, piece):
        """Write ``piece`` under ``tag`` to slice ``peer``'s link, on the
        links' loop (in posting order); a failed write is told to the next
        take."""
        if not isinstance(piece, bytes):
            piece = to_serialize(piece)
        self.loop.call_soon_threadsafe(self._write, peer, [tag, sender, piece])

    def settle(self):
        self.call(self.written())

    def _write(self, peer, message):
        task = self.loop.create_task(self.outgoing[peer].write(message))
        self.writing.add(task)
        task.add_done_callback(self._written)

    def _written(self, task):
        self.writing.discard(task)
        if not task.cancelled() and task.exception() is not None:
            self._failed(task.exception())

    async def written(self):
        """Once every write posted is done (its error raised)."""
        if self.writing:
            await asyncio.gather(*self.writing)

    def _failed(self, error):
        with self.arrived:
            self.failure = error
            self.arrived.notify_all()

    async def serve(self, comm):
        """A peer's link to this worker: its messages kept as they are read."""
        self.incoming.append(comm)
        try:
            _, sender, _ = await comm.read()          # the peer's greeting
            if _takes_socket(comm):   # its socket is taken over: read no more here
                self.greeted[int(sender)] = comm
                self._check_greeted()
                return
            while True:
                tag, sender, piece = await comm.read()
                tag = tuple(tag) if isinstance(tag, list) else tag   # msgpack: lists
                with self.arrived:
                    self.inbox[(tag, int(sender))] = piece
                    self.came = True
                    self.arrived.notify_all()
        except Exception as error:     # noqa: BLE001 - a closed link: told to a take
            self._failed(error)

    def take(self, key):
        """The piece under ``key``, taken out once it has come; a
        RuntimeError saying what was awaited and what had come instead when
        nothing has come for :data:`STALL_SECONDS` (the workers would
        otherwise wait for each other for ever)."""
        with self.arrived:
            self.came = False
            while not self.arrived.wait_for(lambda: key in self.inbox or self.aborted
                                            or self.failure is not None, STALL_SECONDS):
                if not self.came:
                    raise RuntimeError(
                        f"a worker waited {STALL_SECONDS} s for another worker's message "
                        f"{key!r} and nothing came (messages held: "
                        f"{sorted(map(repr, self.inbox))}); the workers disagree about "
                        "the fit's next step, or a worker stopped")
                self.came = False
            if key in self.inbox:
                return self.inbox.pop(key)
            if self.aborted:
                raise RuntimeError("the fit was stopped while this worker waited for "
                                   "another worker")
            # a comm's error: the driver takes the fit's workers as lost
            raise CommClosedError("the link to another worker closed while this worker "
                                  f"waited for it: {self.failure!r}") from self.failure

    def stop_waiting(self):
        with self.arrived:
            self.aborted = True
            self.arrived.notify_all()

    def stop(self):
        """Close the links and the listener, and end the links' thread (run
        on its loop; once: a second call does nothing)."""
        if self.stopped:
            return
        self.stopped = True
        for comm in list(self.outgoing.values()) + self.incoming:
            comm.abort()
        for listener in self.listeners:
            listener.stop()
        self.loop.stop()


def _taken(comm):
    """The socket of a TCP comm, which the comm no longer uses (a duplicate
    of its file descriptor; the comm is closed without shutting the
    connection down)."""
    sock = comm.stream.socket.dup()
    comm.abort()
    return sock


def _close(mail, sockets):
    """End the links of a :class:`PeerLinks` no longer used (its actor
    released): its sockets, and its thread's comms on that thread."""
    for transport in sockets:
        transport.close()
    sockets.clear()
    if mail.loop is not None and not mail.loop.is_closed():
        mail.loop.call_soon_threadsafe(mail.stop)
