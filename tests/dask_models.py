"""Helpers of the gputree.dask tests: a local cluster, bins learned from a
small row sample, the bit-identity check (a model fitted on Dask is the
one-machine model, every array of every tree, the bins and the recorded
scores), a check that no answer of the workers holds a row-sized array,
a worker that dies mid-fit,
and row-wise custom objectives (LightGBM's ``func(y_true, raw) -> (grad,
hess)``)."""
import contextlib
import dataclasses
import os
import signal

import numpy as np


@contextlib.contextmanager
def cluster_client(n_workers=2, processes=True):
    """A distributed Client of a LocalCluster of ``n_workers`` one-thread
    workers (processes, or threads of this process)."""
    from distributed import Client, LocalCluster
    with LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=processes,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        yield client


def noisy_rows(n, n_features, seed=0):
    """(X float64 (n, n_features) with a tenth of column 1 missing, a
    regression target float64 (n,) of columns 0 and 2 plus noise)."""
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, n_features))
    X[rng.rand(n) < 0.1, 1] = np.nan
    return X, X[:, 0] + 0.5 * X[:, 2] ** 2 + rng.normal(scale=0.3, size=n)


def sample_bins_from(monkeypatch, n_rows):
    """Bins learned from an ``n_rows`` subsample (the default is 200,000):
    the sampled rows must be the same global rows on the cluster."""
    from gputree.data.binning import BinMapper
    defaults = list(BinMapper.__init__.__defaults__)
    defaults[2] = n_rows  # subsample (index 1 is is_categorical)
    monkeypatch.setattr(BinMapper.__init__, "__defaults__", tuple(defaults))


def refuse_driver_path(monkeypatch, n_rows):
    """Fail a fit whose rows reach the driver: no answer of the workers'
    actors holds a row-sized array (:func:`no_rows_answered`, whose
    per-worker row counts are returned), and binned X held by the workers
    is never made a host array (its ``__array__`` refused here too)."""
    from gputree.dask.partitions import RemoteRows

    def refused(*args, **kwargs):
        raise AssertionError("a row-sized array went through the driver")

    monkeypatch.setattr(RemoteRows, "__array__", refused)
    return no_rows_answered(monkeypatch, n_rows)


def trees_of(model):
    return model._trees if hasattr(model, "_trees") else [model.tree_.arrays]


def assert_same_model(dask_model, local):
    """Every array of every tree and the bin thresholds are identical."""
    np.testing.assert_array_equal(dask_model._bin_mapper.bin_thresholds_,
                                  local._bin_mapper.bin_thresholds_)
    ours, theirs = trees_of(dask_model), trees_of(local)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        for field in dataclasses.fields(a):
            x, y = getattr(a, field.name), getattr(b, field.name)
            assert x.dtype == y.dtype, field.name
            np.testing.assert_array_equal(x, y, err_msg=field.name)
    for name in ("train_score_", "validation_score_", "_baseline"):
        if hasattr(local, name):
            np.testing.assert_array_equal(getattr(dask_model, name), getattr(local, name),
                                          err_msg=name)


def die_at_round(victim, round_index):
    """Make the worker ``victim`` (address) SIGKILL itself as it starts
    boosting round ``round_index`` (inside the driver's call of the
    workers' rounds); the nanny starts a new, unpatched worker."""
    def patch():
        from gputree.dask.worker_rows import WorkerRows
        real = WorkerRows.boost_round

        def dying(self, it, *args):
            if it == round_index:
                os.kill(os.getpid(), signal.SIGKILL)
            return real(self, it, *args)
        WorkerRows.boost_round = dying
    victim.client.run(patch, workers=[victim.address])


def no_rows_answered(monkeypatch, n_rows, allowed=()):
    """Make every call to the workers' actors fail when an answer holds an
    array of as many rows as a worker holds (or ``n_rows``), except for the
    methods ``allowed``; returns the per-worker row counts seen."""
    import gputree.dask as gd
    call = gd.worker_boosting.WorkerRowsBackend.call
    seen = []

    def rows_of(value):
        if isinstance(value, np.ndarray):
            yield value.shape[0] if value.ndim else 0
        elif isinstance(value, (list, tuple)):
            for item in value:
                yield from rows_of(item)
        elif dataclasses.is_dataclass(value):
            for field in dataclasses.fields(value):
                yield from rows_of(getattr(value, field.name))

    def checked(self, method, *args, **kwargs):
        answers = call(self, method, *args, **kwargs)
        sizes = {int(r[1] - r[0]) for bounds in self.ranges for r in bounds}
        held = {int(sum(r[1] - r[0] for r in bounds)) for bounds in self.ranges}
        seen.append(held)
        if method not in allowed:
            assert not set(rows_of(answers)) & (held | {n_rows}), (method, held, sizes)
        return answers

    monkeypatch.setattr(gd.worker_boosting.WorkerRowsBackend, "call", checked)
    return seen


def squared_error(y_true, raw):
    """The squared error's derivatives (row-wise)."""
    return raw - y_true, np.ones_like(raw)


def logistic(y_true, raw):
    """The binary log-loss's derivatives in raw scores (row-wise)."""
    p = 1.0 / (1.0 + np.exp(-raw))
    return p - y_true, p * (1.0 - p)


def softmax(y_true, raw):
    """The multinomial log-loss's derivatives (row-wise), raw (n, K)."""
    e = np.exp(raw - raw.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    onehot = np.eye(raw.shape[1])[y_true.astype(int)]
    return p - onehot, p * (1.0 - p)
