"""Row partitions of a Dask collection held by the workers of a
``distributed.Client``, in global row order.

A :class:`RowPartitions` is the one place that submits work to the
partitions' workers and waits for it. Each task runs on the worker holding
its partition when that worker is alive (``allow_other_workers``: never a task
pinned to a dead worker). Any worker leaving the cluster while a fit waits,
or a task lost with its worker, stops the fit's current attempt with a
:class:`WorkerLostError` (never a tree grown on part of the rows);
:mod:`gputree.dask.recovery` then continues the fit on the remaining
workers, from partitions recomputed from the collection's graph.

:class:`RemoteRows` is a row-sized array kept on the workers as one future
per partition (binned X, until the workers' actors take it); only its
shape and dtype live on the driver, which never gathers it.
"""
import numpy as np

#: seconds between checks that every worker of the fit is still there
_POLL_SECONDS = 1.0


class WorkerLostError(RuntimeError):
    """A worker left the cluster during a Dask fit. Raised by a fit when it
    cannot continue without it (:mod:`gputree.dask.recovery`): nothing was
    fitted. ``workers``: the addresses the attempt that lost it worked on
    (a set, empty where unknown)."""

    def __init__(self, message, workers=()):
        super().__init__(message)
        self.workers = frozenset(workers)


def _lost_error(detail, workers=()):
    """The WorkerLostError of an attempt that lost a worker (``workers``: the
    attempt's)."""
    return WorkerLostError(f"a worker was lost during the Dask fit: {detail}", workers)


class RowPartitions:
    """Futures of per-partition arrays, their row counts and workers.

    client : distributed.Client;  parts : list of futures, one per partition;
    sizes : int64 (n_partitions,) rows of each partition.
    """

    def __init__(self, client, parts, sizes=None):
        self.client = client
        self.parts = list(parts)
        self.workers = self._holders(self.parts)
        self.fit_workers = _cluster_workers(client)
        if sizes is None:
            sizes = self.gather(self.map(_n_rows, self.parts))
        self.sizes = np.asarray(sizes, dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(self.sizes)]).astype(np.int64)

    @classmethod
    def compute(cls, client, delayed_parts, function, *args):
        """``function(part, *args)`` of every delayed partition, kept on the
        workers; row counts gathered."""
        parts = [function_of(function, part, *args) for part in delayed_parts]
        futures, sizes = computed_with_sizes(client, parts)
        return cls(client, futures, sizes)

    def replace_parts(self, futures):
        """Hold ``futures`` (one per partition) instead of the current parts,
        which are released."""
        for part in self.parts:
            part.release()
        self.parts = list(futures)
        self.workers = self._holders(self.parts)

    def release(self):
        """Release the partitions held."""
        for part in self.parts:
            part.release()
        self.parts = []

    @property
    def n_rows(self):
        return int(self.offsets[-1])

    def _holders(self, futures):
        who = self.client.who_has(futures)
        return [(who.get(f.key) or [None])[0] for f in futures]

    def slices(self, array):
        """Per-partition slices of a host array of one entry per row."""
        return [array[a:b] for a, b in zip(self.offsets[:-1], self.offsets[1:])]

    def map(self, function, *columns, **common):
        """One task per partition: ``function(column_0[p], column_1[p], ...,
        **common)`` on partition p's worker; returns the futures."""
        return [self.client.submit(function, *(column[p] for column in columns), **common,
                                   workers=[self.workers[p]] if self.workers[p] else None,
                                   allow_other_workers=True, pure=False)
                for p in range(len(self.parts))]

    def gather(self, futures):
        """Results of ``futures`` on the driver (see :meth:`wait`)."""
        self.wait(futures)
        try:
            return self.client.gather(futures)
        except _worker_errors() as exc:
            raise self.lost(exc) from exc

    def wait(self, futures):
        """Wait for ``futures``, checking that every worker of the fit is
        still in the cluster (else WorkerLostError)."""
        from distributed import wait
        try:
            while True:
                try:
                    wait(futures, timeout=_POLL_SECONDS)
                    break
                except TimeoutError:
                    self.check_workers()
            self.check_workers()
        except _worker_errors() as exc:
            raise self.lost(exc) from exc

    def check_workers(self):
        """WorkerLostError where a worker of the fit left the cluster."""
        gone = sorted(self.fit_workers - _cluster_workers(self.client))
        if gone:
            raise _lost_error(f"worker(s) {gone} left the cluster", self.fit_workers)

    def lost(self, exc):
        """The WorkerLostError of ``exc``, a failure of this fit's workers."""
        return _lost_error(f"{type(exc).__name__}: {exc}", self.fit_workers)


def _cluster_workers(client):
    """The addresses of the workers in the cluster now, asked of the
    scheduler itself (``client.scheduler_info()`` returns the client's cached
    identity, which its periodic refresh can replace with one that lists no
    worker between the fetch and the return)."""
    return set(client.run_on_scheduler(_scheduler_workers))


def _scheduler_workers(dask_scheduler):
    """Run on the scheduler: its workers' addresses."""
    return list(dask_scheduler.workers)


def _worker_errors():
    from distributed import KilledWorker
    from distributed.comm.core import CommClosedError
    from concurrent.futures import CancelledError
    return (KilledWorker, CommClosedError, CancelledError)


def computed_with_sizes(client, delayed_parts):
    """(futures of the delayed parts, int rows of each), computed in one
    graph: a collection whose data is embedded in its graph (``from_array``
    of a host array) sends that data to the scheduler once, not once a part
    (150k x 28 float32 in 4 parts: 16 MiB, not 64). Waits for every part."""
    import dask
    counts = [dask.delayed(_n_rows, pure=False)(part) for part in delayed_parts]
    futures = client.compute(list(delayed_parts) + counts)
    parts, counts = futures[:len(delayed_parts)], futures[len(delayed_parts):]
    sizes = client.gather(counts)
    for count in counts:
        count.release()
    return parts, sizes


def function_of(function, part, *args):
    import dask
    return dask.delayed(function, pure=False)(part, *args)


def _n_rows(part):
    return int(part.shape[0])


class RemoteRows:
    """A row-sized array held on the workers: one future per partition
    (their rows stacked in partition order make the array)."""

    def __init__(self, partitions, futures, shape, dtype):
        self.partitions = partitions
        self.futures = list(futures)
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)

    @property
    def ndim(self):
        return len(self.shape)

    def __array__(self, dtype=None, copy=None):
        raise TypeError(f"a row-sized array ({self.shape}) held by the Dask workers is never "
                        "gathered to the driver; the workers work on their own rows.")

    def release(self):
        for future in self.futures:
            future.release()
        self.futures = []

