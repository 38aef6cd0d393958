"""gputree.dask.peer_links: the workers' direct links, each driven by the
thread that uses it (here two threads standing for two workers' actor
threads, over TCP and inproc comms): messages arrive whole and by tag in any
order, and a wait ends with a clear error when the peer is gone or the fit
is stopped, never hangs."""
import threading
import time
from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("distributed")

from distributed.comm.core import CommClosedError  # noqa: E402
from distributed.security import Security  # noqa: E402

from gputree.dask.packed_histograms import add_packed, pack  # noqa: E402
from gputree.dask import peer_links  # noqa: E402
from gputree.dask.peer_links import PeerLinks  # noqa: E402
from gputree.dask.peer_sockets import PeerSockets  # noqa: E402


def _linked(scheme):
    """Two PeerLinks, each listening and connected from a thread of its own
    (as every worker's actor thread does at once)."""
    worker = SimpleNamespace(address=f"{scheme}://127.0.0.1:1" if scheme == "tcp"
                             else "inproc://127.0.0.1/1/1", security=Security())
    links = [PeerLinks(worker), PeerLinks(worker)]
    addresses = [None, None]

    def listen(i):
        addresses[i] = links[i].listen()
    _in_threads(listen)
    _in_threads(lambda i: links[i].connect(i, addresses))
    return links


def _in_threads(work):
    """work(0) and work(1) at once, each in its own thread; their errors
    raised here."""
    errors = []

    def run(i):
        try:
            work(i)
        except BaseException as error:   # noqa: BLE001 - re-raised below
            errors.append(error)
    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads), "a link hung"
    if errors:
        raise errors[0]


@pytest.mark.parametrize("scheme", ["tcp", "inproc"])
def test_messages_arrive_whole_by_tag_in_any_order(scheme):
    """Each side sends bytes and packed histograms under several tags, then
    takes the peer's in another order: each piece is the one sent under its
    tag, the histograms exactly (their sum equals the sum of the originals)."""
    links = _linked(scheme)
    rng = np.random.default_rng(0)
    hists = [rng.integers(-2**40, 2**40, size=(3, 5, 7, 2)) for _ in range(2)]
    got = [None, None]

    def exchange(i):
        peer = 1 - i
        for level in range(4):
            links[i].send(peer, ("splits", level), bytes([i, level]) * 1000)
        links[i].send(peer, 99, pack(hists[i]))
        piece = links[i].take(99, peer)
        splits = [links[i].take(("splits", level), peer) for level in (3, 1, 0, 2)]
        total = hists[i].copy()
        add_packed(total, piece)
        got[i] = (splits, total)
        links[i].settle()
    _in_threads(exchange)
    for i in range(2):
        splits, total = got[i]
        assert splits == [bytes([1 - i, level]) * 1000 for level in (3, 1, 0, 2)]
        np.testing.assert_array_equal(total, hists[0] + hists[1])


def test_large_messages_both_ways_at_once_arrive_whole():
    """Over TCP the actor threads write and read the sockets themselves
    (PeerSockets); two workers each sending the other more than the sockets
    hold, then waiting for the peer's, do not block each other, and every
    byte arrives (arrays of several dtypes and shapes, bytes, a pickled
    object, an empty array)."""
    links = _linked("tcp")
    assert all(isinstance(link.transport, PeerSockets) for link in links)
    rng = np.random.default_rng(1)
    pieces = [[rng.integers(0, 255, size=48 << 20, dtype=np.uint8),
               rng.normal(size=(1000, 3, 7)), b"z" * 100_000, {"best": (i, [1.5, 2])},
               np.zeros((0, 4), dtype=np.int64)] for i in range(2)]
    got = [None, None]

    def exchange(i):
        for k, piece in enumerate(pieces[i]):
            links[i].send(1 - i, ("big", k), piece)
        got[i] = [links[i].take(("big", k), 1 - i) for k in range(len(pieces[i]))]
        links[i].settle()
    _in_threads(exchange)
    for i in range(2):
        for sent, came in zip(pieces[1 - i], got[i]):
            if isinstance(sent, np.ndarray):
                assert came.dtype == sent.dtype and came.shape == sent.shape
                assert came.tobytes() == sent.tobytes()
            else:
                assert came == sent


@pytest.mark.parametrize("scheme", ["tcp", "inproc"])
def test_a_large_message_arrives_while_its_sender_does_something_else(scheme):
    """A message larger than the sockets hold, posted by a worker that then
    neither sends nor waits (it computes, or its actor call has returned),
    still reaches the peer whole."""
    links = _linked(scheme)
    big = np.random.default_rng(2).integers(0, 2**60, size=6 << 20)     # 48 MB
    links[0].send(1, "big", big)
    got = []
    _within(60, lambda: got.append(links[1].take("big", 0)))
    assert got[0].tobytes() == big.tobytes()
    links[0].settle()


@pytest.mark.parametrize("scheme", ["tcp", "inproc"])
def test_a_wait_for_a_message_that_never_comes_ends(monkeypatch, scheme):
    """Workers that disagree about the next message (one waits for a tag
    the other never sends) raise after STALL_SECONDS of silence, naming the
    awaited key and the messages held, instead of waiting for ever; a
    message coming meanwhile restarts the count."""
    monkeypatch.setattr(peer_links, "STALL_SECONDS", 0.5)
    links = _linked(scheme)
    links[0].send(1, ("limit", 7), b"x")
    links[0].send(1, "first", b"")
    links[1].take("first", 0)              # the links keep their order: ("limit", 7) came
    later = threading.Timer(0.4, lambda: links[0].send(1, ("splits", 8), b"y"))
    later.start()
    started = time.monotonic()
    with pytest.raises(RuntimeError, match=r"'splits', 7.*'limit', 7"):
        _within(30, lambda: links[1].take(("splits", 7), 0))
    assert time.monotonic() - started >= 0.9      # the message at 0.4 s restarted the count
    later.join()


@pytest.mark.parametrize("scheme", ["tcp", "inproc"])
def test_wait_ends_when_the_fit_is_stopped_or_the_peer_gone(scheme):
    """A take waiting for a peer raises once the fit is stopped (abort, from
    another thread); a take waiting for a peer whose links closed raises
    naming the closed link, a comm's error (CommClosedError: the driver
    takes the fit's workers as lost, as when their actor calls fail)."""
    links = _linked(scheme)
    timer = threading.Timer(0.2, links[1].abort)
    timer.start()
    with pytest.raises(RuntimeError, match="fit was stopped"):
        _within(30, lambda: links[1].take(("splits", 0), 0))
    timer.join()
    links[1].close()
    with pytest.raises(CommClosedError, match="link to another worker closed"):
        _within(30, lambda: links[0].take(("splits", 0), 1))


def _within(seconds, work):
    """work() in a thread of its own; its error raised here, and a failure
    if it has not ended after ``seconds``."""
    errors = []

    def run():
        try:
            work()
        except BaseException as error:   # noqa: BLE001 - re-raised below
            errors.append(error)
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout=seconds)
    assert not thread.is_alive(), "a take hung"
    if errors:
        raise errors[0]
