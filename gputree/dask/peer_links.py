"""Direct links between the workers' actor threads during a fit: one
distributed comm from each worker to each peer, driven by the actor thread
itself on an asyncio event loop of its own.

The per-level messages of a tree grown by the workers together (histogram
pieces, best splits, a round's exchanges: :mod:`gputree.dask.sliced_histograms`)
went through each worker's event loop: the actor thread handed every send to
the loop and the loop woke the actor thread at every arrival, each hand-off
a wait for the other thread to get the GIL and a CPU (150k x 28, 100 trees,
2 workers on 2 cores: a 1.3 kB message ~1 ms from post to arrival, 1.6 ms
more before the waiting thread ran). Here the actor thread writes its
messages to the peers' comms itself and reads the peers' comms itself while
it waits for one: the private loop runs only inside :meth:`PeerLinks.send`,
:meth:`PeerLinks.take` and :meth:`PeerLinks.settle`, in the actor thread, so
no message crosses a thread. A message written while the peer computes
waits in the sockets (and what they do not hold in the stream's buffer,
written while this worker next waits); every call that hands the thread
back to distributed (the end of an actor call) first flushes every link
(:meth:`PeerLinks.settle`), since a peer may wait for what is buffered.

Each link is a comm of distributed's (:func:`distributed.comm.listen`,
:func:`distributed.comm.connect`), with the worker's protocol and security
settings: TCP or TLS between processes, inproc within one.
"""
import asyncio
import threading
import weakref

from distributed.comm import connect, get_address_host, listen, parse_address, unparse_address
from distributed.comm.addressing import unparse_host_port


class PeerLinks:
    """One worker's links to its peers: ``worker`` the distributed Worker
    whose actor thread uses them (its address's protocol and its security
    settings)."""

    def __init__(self, worker):
        self.worker = worker
        self.loop = asyncio.new_event_loop()
        self.mail = _Mailbox()
        self.index, self.outgoing, self.listeners = None, {}, []
        # the listener holds the mailbox (its handler), not this object
        weakref.finalize(self, _close, self.loop, self.outgoing, self.mail, self.listeners)

    def __len__(self):
        """The number of workers linked, this one included."""
        return len(self.outgoing) + 1

    def _run(self, coroutine):
        return self.loop.run_until_complete(coroutine)

    # ------------------------------------------------------------ set-up
    def listen(self):
        """Open this worker's listener; returns its address (str)."""
        return self._run(self._listen())

    async def _listen(self):
        self.mail.arrived = asyncio.Event()
        scheme, _ = parse_address(self.worker.address)
        where = "" if scheme == "inproc" else unparse_host_port(
            get_address_host(self.worker.address), 0)
        listener = listen(unparse_address(scheme, where), self.mail.serve,
                          **self.worker.security.get_listen_args("worker"))
        await listener.start()
        self.listeners.append(listener)
        return listener.contact_address

    def connect(self, index, addresses):
        """Link to every peer (``addresses``: every worker's :meth:`listen`
        address, this one's at ``index``); returns once every peer has
        linked to this one (every worker calls it at once)."""
        self.index = int(index)
        self._run(self._connect(list(addresses)))

    async def _connect(self, addresses):
        args = self.worker.security.get_connection_args("worker")
        for s, address in enumerate(addresses):
            if s != self.index:
                self.outgoing[s] = await connect(address, **args)
                await self.outgoing[s].write({"tag": "hello", "from": self.index,
                                              "piece": None})
        await self._flush()
        hellos = [("hello", s) for s in range(len(addresses)) if s != self.index]
        for key in hellos:
            await self.mail.arrival(key)

    # ---------------------------------------------------------- messages
    def send(self, peer, tag, piece):
        """``piece`` (bytes, or an object distributed serializes) to slice
        ``peer``'s worker under ``tag``; written as far as the socket takes
        it, the rest at this worker's next wait."""
        self._run(self.outgoing[peer].write({"tag": tag, "from": self.index, "piece": piece}))

    def take(self, tag, sender):
        """The piece ``sender`` sent under ``tag``, waited for (reading
        every link meanwhile, and writing what is left of this worker's
        sends)."""
        return self._run(self.mail.arrival((tag, int(sender))))

    def settle(self):
        """Every send written to its socket (before the actor thread goes
        back to distributed: a peer may wait for it)."""
        self._run(self._flush())

    async def _flush(self):
        for comm in self.outgoing.values():
            stream = getattr(comm, "stream", None)     # TCP and TLS; inproc writes at once
            if stream is not None and stream.writing():
                await stream.write(b"")

    def abort(self):
        """Stop waiting for the peers (called from the worker's event loop,
        any thread)."""
        self.mail.aborted = True
        if self.mail.arrived is not None and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self.mail.arrived.set)


class _Mailbox:
    """The messages read from the peers' links, by (tag, sender)."""

    def __init__(self):
        self.inbox = {}
        self.arrived = None      # asyncio.Event on the links' loop: a message or a failure
        self.failure = None      # why a peer's link closed (raised to a waiting take)
        self.aborted = False
        self.incoming = []

    async def serve(self, comm):
        """A peer's link to this worker: its messages kept as they are read
        (while the actor thread runs the loop)."""
        self.incoming.append(comm)
        try:
            while True:
                message = await comm.read()
                tag = message["tag"]
                tag = tuple(tag) if isinstance(tag, list) else tag   # msgpack: lists
                self.inbox[(tag, int(message["from"]))] = message["piece"]
                self.arrived.set()
        except Exception as error:     # noqa: BLE001 - a closed link: told to a take
            self.failure = error
            self.arrived.set()

    async def arrival(self, key):
        """The piece under ``key``, taken out once it has come."""
        while key not in self.inbox:
            if self.aborted:
                raise RuntimeError("the fit was stopped while this worker waited for "
                                   "another worker")
            if self.failure is not None:
                raise RuntimeError("the link to another worker closed while this worker "
                                   f"waited for it: {self.failure!r}") from self.failure
            await self.arrived.wait()
            self.arrived.clear()
        return self.inbox.pop(key)


def _close(loop, outgoing, mail, listeners):
    """Close the links and the listener of a :class:`PeerLinks` no longer
    used (its actor released), and its loop, in a thread of its own (the
    finalizer may run where another event loop runs)."""
    def close():
        for comm in list(outgoing.values()) + mail.incoming:
            comm.abort()
        for listener in listeners:
            listener.stop()
        tasks = asyncio.all_tasks(loop)
        for task in tasks:
            task.cancel()
        if tasks:
            loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
        loop.close()
    threading.Thread(target=close, daemon=True).start()
