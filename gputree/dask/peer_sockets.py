"""The workers' links as the TCP sockets of distributed's comms, written and
read by the actor thread itself (:class:`PeerSockets`).

Once :mod:`gputree.dask.peer_links` has opened distributed's comms between
the workers (TCP without TLS), it takes over their sockets: each message is
then a few system calls made by the thread that sends or awaits it, with no
event loop, thread switch or serialization between (measured on 2 cores,
150,000 x 28 rows, 100 trees: the links' own thread had cost each worker
~0.8 s of CPU, a quarter of its fit, in handing messages across threads).
A send writes what the socket takes at once; the rest of a message larger
than the socket holds is written by a thread of the socket's own as the
peer reads (:class:`_Outgoing`), so a message goes out whatever the sender
does next, and two workers sending each other more than the sockets hold
never block each other. A wait reads every peer as its data comes.

A message on a link: a 12-byte prefix (payload bytes, header bytes:
little-endian uint64, uint32), the pickled header (tag, sender, kind,
dtype, shape), the payload: bytes as they are, a numpy array's buffer
(received as an array of its dtype and shape), or another object pickled.
"""
import pickle
import select
import socket
import struct
import threading
import time

import numpy as np
from distributed.comm.core import CommClosedError

_PREFIX = struct.Struct("<QI")
_BYTES, _ARRAY, _PICKLED = 0, 1, 2
_READ_EVENTS = select.POLLIN | select.POLLERR | select.POLLHUP
#: buffers given to one sendmsg call
_MOST_BUFFERS = 64


def _frame(tag, sender, piece):
    """(prefix + header bytes, payload buffer) of one message."""
    if isinstance(piece, bytes):
        header, payload = (tag, sender, _BYTES, None, None), piece
    elif isinstance(piece, np.ndarray):
        header = (tag, sender, _ARRAY, piece.dtype.str, piece.shape)
        payload = np.ascontiguousarray(piece).reshape(-1).view(np.uint8)
    else:
        header = (tag, sender, _PICKLED, None, None)
        payload = pickle.dumps(piece, protocol=pickle.HIGHEST_PROTOCOL)
    header = pickle.dumps(header, protocol=pickle.HIGHEST_PROTOCOL)
    return _PREFIX.pack(len(payload), len(header)) + header, memoryview(payload)


def _piece(header, body, start):
    """The piece a message carried (``header`` unpickled; its payload:
    ``body`` uint8 from ``start``)."""
    _, _, kind, dtype, shape = header
    if kind == _ARRAY:
        return np.frombuffer(body, dtype=dtype, offset=start).reshape(shape)
    payload = memoryview(body)[start:]
    return pickle.loads(payload) if kind == _PICKLED else bytes(payload)


class _Reader:
    """One incoming socket's message being read: its prefix, then its body
    (header and payload) in one buffer."""

    def __init__(self, sock):
        self.sock = sock
        self._start()

    def _start(self):
        self.body, self.buffer, self.got = False, np.empty(_PREFIX.size, np.uint8), 0

    def read(self):
        """Read what has come (non-blocking); the messages completed, as
        ((tag, sender), piece) pairs. A closed link raises CommClosedError."""
        done = []
        while True:
            try:
                n = self.sock.recv_into(memoryview(self.buffer)[self.got:])
            except BlockingIOError:
                return done
            except OSError as error:
                raise CommClosedError(f"the link to another worker failed: {error!r}")
            if n == 0:
                raise CommClosedError("the other worker closed its link")
            self.got += n
            if self.got == self.buffer.size:
                done.extend(self._advance())

    def _advance(self):
        """The body's buffer once the prefix is read; the message once the body is."""
        if not self.body:
            n_payload, self.n_header = _PREFIX.unpack(self.buffer)
            # not zeroed: recv fills it
            self.body, self.buffer, self.got = True, np.empty(self.n_header + n_payload, np.uint8), 0
            return []
        body, n_header = self.buffer, self.n_header
        self._start()
        header = pickle.loads(memoryview(body)[:n_header])
        return [((header[0], int(header[1])), _piece(header, body, n_header))]


class _Outgoing:
    """One peer's socket, written in posting order: what the socket takes
    at once by the posting thread, the rest by a writer thread of this
    socket's own (started when first needed), so that a message is written
    out whatever the posting thread does next: a peer never waits for this
    worker's next call to get what it was sent."""

    def __init__(self, sock):
        self.sock = sock
        self.queue = []          # memoryviews not yet written, in order
        self.changed = threading.Condition()
        self.failure = None
        self.thread = None
        self.closed = False
        self.settling = False    # a settle() waits for the queue to empty

    def post(self, buffers):
        """Write ``buffers`` (memoryviews, not changed until written) after
        those posted before."""
        with self.changed:
            if self.failure is not None or self.closed:
                return
            self.queue.extend(buffers)
            if len(self.queue) == len(buffers):      # nothing before them
                self._send()
            if self.queue:
                if self.thread is None:
                    self.thread = threading.Thread(target=self._drain, daemon=True,
                                                   name="gputree-peer-writer")
                    self.thread.start()
                self.changed.notify_all()

    def _send(self):
        """Write queued buffers until the socket is full (holding ``changed``)."""
        try:
            while self.queue:
                n = self.sock.sendmsg(self.queue[:_MOST_BUFFERS])
                while self.queue and n >= self.queue[0].nbytes:
                    n -= self.queue.pop(0).nbytes
                if n:
                    self.queue[0] = self.queue[0][n:]
                    return
        except BlockingIOError:
            return
        except OSError as error:
            self.failure = error
            self.queue.clear()
        if self.settling:        # only then: a writer thread woken for nothing costs a switch
            self.changed.notify_all()

    def _drain(self):
        """The writer thread: whenever buffers are queued, wait until the
        socket takes more and write them."""
        poll = select.poll()
        poll.register(self.sock.fileno(), select.POLLOUT)
        while True:
            with self.changed:
                self.changed.wait_for(lambda: self.queue or self.closed)
                if self.closed:
                    return
            poll.poll(1000)          # the socket has room (or a second passed)
            with self.changed:
                if self.closed:
                    return
                self._send()

    def settle(self, seconds):
        """Wait until everything posted is written (at most ``seconds``)."""
        with self.changed:
            self.settling = True
            try:
                self.changed.wait_for(lambda: not self.queue or self.closed, seconds)
            finally:
                self.settling = False

    def close(self):
        with self.changed:
            self.closed = True
            self.queue.clear()
            self.changed.notify_all()
        self.sock.close()


class PeerSockets:
    """One worker's links over sockets taken from distributed's TCP comms:
    ``outgoing`` {peer slice: socket this worker writes}, ``incoming``
    {peer slice: socket it reads}. Every method but :meth:`stop_waiting`
    runs on the one thread that uses the links (the actor thread)."""

    def __init__(self, outgoing, incoming, stall_seconds):
        self.incoming = incoming
        self.stall_seconds = stall_seconds
        for sock in list(outgoing.values()) + list(incoming.values()):
            sock.setblocking(False)
        self.outgoing = {peer: _Outgoing(sock) for peer, sock in outgoing.items()}
        self.readers = {sock.fileno(): _Reader(sock) for sock in incoming.values()}
        self.inbox = {}
        self.failure, self.aborted = None, False
        self.wake_read, self.wake_write = socket.socketpair()
        self.wake_read.setblocking(False)
        self.poll = select.poll()
        for fd in list(self.readers) + [self.wake_read.fileno()]:
            self.poll.register(fd, _READ_EVENTS)

    def post(self, peer, tag, sender, piece):
        """Send ``piece`` to slice ``peer`` under ``tag`` (not changed until
        the peer has read it); a failed write raises at the next take or
        settle."""
        head, payload = _frame(tag, sender, piece)
        self.outgoing[peer].post([memoryview(head), payload])

    def take(self, key):
        """The piece under ``key`` ((tag, sender)), read once it has come;
        raises as :meth:`gputree.dask.peer_links.PeerLinks.take` says."""
        last = time.monotonic()
        while key not in self.inbox:
            self._check()
            if self._pump(max(0.0, self.stall_seconds - (time.monotonic() - last))):
                last = time.monotonic()
            elif time.monotonic() - last >= self.stall_seconds:
                raise RuntimeError(
                    f"a worker waited {self.stall_seconds} s for another worker's message "
                    f"{key!r} and nothing came (messages held: "
                    f"{sorted(map(repr, self.inbox))}); the workers disagree about the fit's "
                    "next step, or a worker stopped")
        return self.inbox.pop(key)

    def settle(self):
        """Wait until every posted message is written; a failed write raises."""
        for outgoing in self.outgoing.values():
            outgoing.settle(self.stall_seconds)
        self._check()

    def _check(self):
        if self.aborted:
            raise RuntimeError("the fit was stopped while this worker waited for another "
                               "worker")
        failure = self.failure or next(
            (out.failure for out in self.outgoing.values() if out.failure is not None), None)
        if failure is not None:
            self.failure = failure
            raise CommClosedError("the link to another worker closed while this worker "
                                  f"waited for it: {self.failure!r}") from (
                self.failure if isinstance(self.failure, BaseException) else None)

    def _pump(self, timeout):
        """One wait for the incoming sockets (at most ``timeout`` s), what
        came read. Whether a message came."""
        came = False
        for fd, events in self.poll.poll(timeout * 1000.0):
            reader = self.readers.get(fd)
            if reader is not None:
                try:
                    for key, piece in reader.read():
                        self.inbox[key] = piece
                        came = True
                except CommClosedError as error:
                    self.failure = self.failure or error
                    self.poll.unregister(fd)
            else:
                self.wake_read.recv(64)
        return came

    def stop_waiting(self):
        """Stop waiting (any thread: the fit is stopped)."""
        self.aborted = True
        try:
            self.wake_write.send(b"x")
        except OSError:
            pass

    def close(self):
        for outgoing in self.outgoing.values():
            outgoing.close()
        for sock in self.incoming.values():
            sock.close()
        self.wake_read.close()
        self.wake_write.close()
