"""A Dask fit that loses a worker: it continues on the remaining workers to
the model it fits without the loss (the one-machine model, bit for bit), or
stops with a clear :class:`gputree.dask.WorkerLostError` and no model.

:func:`fit_recovering` runs a fit in attempts. Each attempt builds its
training material from the input collections (X's partitions encoded and
binned where they live, the targets and weights, the validation rows): Dask
recomputes from the collections' graphs whatever the lost worker held, and
the attempt works on the workers there are now, whatever the partitioning
that results. A lost worker (a worker leaving the cluster, a task or an
actor lost with it) stops an attempt with a WorkerLostError
(:mod:`gputree.dask.partitions`); the next attempt keeps what the failed
one finished (:func:`resume_state`):

- the bins learned (:func:`kept_bins`): the partitions are binned with the
  same edges, never learned again;
- an ensemble's finished trees: boosting's completed rounds with their
  scores (those a surviving worker completed in the driver's call under
  way included: :meth:`gputree.dask.worker_boosting.WorkerRowsBackend.completed_rounds`),
  a forest's trees, continued as ``warm_start`` continues them (the
  seed kept; boosting's raw scores recomputed from the kept trees on the
  workers' rows, the sums one machine makes tree after tree); a single tree
  is grown again, and so is an ensemble that had finished no tree, from the
  same seed (a ``numpy.random.RandomState`` given as ``random_state`` is
  rewound to its state at the fit's start; None draws afresh).

Random draws (row subsamples, bootstraps, feature subsets, the bins' row
sample) are defined by the global row index and the seed, never by the
partitioning or the workers, so a continued fit draws what an uninterrupted
one draws.

The fit gives up, restoring the estimator as it was, when the lost data
cannot be recomputed (a piece of an input collection is a future the
cluster lost: scattered data, or data persisted without its graph), when no
worker is left, or after :data:`MAX_LOST_WORKERS` losses.
"""
import time

import numpy as np

from .partitions import WorkerLostError, _cluster_workers, _worker_errors

#: the lost workers a fit continues after; one more stops it with no model
MAX_LOST_WORKERS = 3
#: seconds a continuation waits for the scheduler to drop the lost worker
#: (and, with none left, for a worker to join)
SETTLE_SECONDS = 30.0
_POLL_SECONDS = 0.1


def fit_recovering(estimator, client, inputs, attempt):
    """Fit ``estimator`` by ``attempt()`` (one fit from the input
    collections), continued after each lost worker (see the module
    docstring); ``inputs``: the fit's collections and arguments (X, y, ...:
    anything holding dask collections), checked for data that cannot be
    recomputed. Any failure leaves the estimator as it was."""
    start = _snapshot(estimator.__dict__)
    trees_before = estimator.__dict__.get("_trees")
    rewind = _rewinder(getattr(estimator, "random_state", None))
    losses = []
    try:
        while True:
            try:
                attempt()
                break
            except (WorkerLostError, *_worker_errors()) as exc:
                losses.append(exc)
                _check_continuable(client, inputs, losses)
                estimator.__dict__ = resume_state(estimator.__dict__, start, trees_before)
                if "warm_start" not in estimator.__dict__ or not estimator.warm_start:
                    rewind()
    except BaseException:
        estimator.__dict__ = start
        raise
    estimator.__dict__.pop("_fit_bins", None)
    if "warm_start" in start:
        estimator.warm_start = start["warm_start"]


def kept_bins(estimator):
    """The BinMapper an earlier attempt of this fit learned, or None."""
    return estimator.__dict__.get("_fit_bins")


def keep_bins(estimator, mapper):
    """Keep the fit's learned bins for the attempts after a lost worker."""
    estimator._fit_bins = mapper


def resume_state(state, start, trees_before):
    """The estimator's attributes for the attempt after a lost worker, from
    those when it was lost (``state``), at the fit's start (``start``) and
    the start's tree list (``trees_before``, by identity: a fresh fit makes
    a new one). With finished trees of this fit (or a warm start's), the
    state trimmed to them and ``warm_start`` on; else the start's, with the
    learned bins."""
    warm = bool(start.get("warm_start", False)) and "_trees" in start
    trees = state.get("_trees")
    if trees is None or not (warm or trees is not trees_before):
        resumed = _snapshot(start)
        if "_fit_bins" in state:
            resumed["_fit_bins"] = state["_fit_bins"]
        return resumed
    resumed = _snapshot(state)
    resumed["warm_start"] = True
    if "_scores" in state:                       # boosting: whole recorded rounds only
        resumed.update(_completed_rounds(state))
    return resumed


def _completed_rounds(state):
    """Boosting's trees, round count and scores of the rounds it completed
    and recorded (a round's trees come together; its scores follow)."""
    scores = state["_scores"]
    recorded = [len(scores["train"]) - 1]
    if scores["validation"]:
        recorded.append(len(scores["validation"]) - 1)
    per_round = state["n_trees_per_iteration_"]
    kept = max(0, min(state["n_iter_"], len(state["_trees"]) // per_round, *recorded))
    if kept == 0:          # the next attempt records the starting scores again
        return {"_trees": [], "n_iter_": 0, "_scores": {"train": [], "validation": []}}
    return {"_trees": list(state["_trees"][:kept * per_round]), "n_iter_": kept,
            "_scores": {name: list(values[:kept + 1]) for name, values in scores.items()}}


def _check_continuable(client, inputs, losses):
    """Raise the fit's WorkerLostError where it cannot continue after
    ``losses`` (the attempts' exceptions); otherwise return once the
    scheduler has dropped the lost worker (or after SETTLE_SECONDS)."""
    last = losses[-1]
    _settle(client, getattr(last, "workers", frozenset()), last)
    gone = _lost_inputs(inputs)
    if gone:
        raise WorkerLostError(
            f"A worker was lost during the Dask fit ({last}) and the training data it held "
            f"cannot be recomputed: {len(gone)} piece(s) of the input collections (e.g. "
            f"{gone[0].key!r}) were data the cluster held without a graph to compute them "
            "again (scattered, or persisted from a graph that is gone), and are lost with "
            "it. No model was fitted. Build the collections from a graph Dask can recompute "
            "(dask.array.from_array, dask.dataframe.read_parquet, ...) or replicate "
            "scattered data (client.replicate), and fit again.") from last
    if len(losses) > MAX_LOST_WORKERS:
        raise WorkerLostError(
            f"The Dask fit lost a worker {len(losses)} times (the last: {last}); it "
            f"continues after at most {MAX_LOST_WORKERS} "
            "(gputree.dask.recovery.MAX_LOST_WORKERS), so no model was fitted. Fit again "
            "once the cluster is stable.") from last


def _settle(client, workers, last):
    """Wait until a worker of ``workers`` (the failed attempt's; empty:
    unknown) has left the scheduler's list, at most SETTLE_SECONDS; raise
    where no worker is left."""
    deadline = time.monotonic() + SETTLE_SECONDS
    while True:
        now = _cluster_workers(client)
        if now and (not workers or workers - now):
            return
        if time.monotonic() > deadline:
            break
        time.sleep(_POLL_SECONDS)
    if not now:
        raise WorkerLostError(
            f"A worker was lost during the Dask fit ({last}) and no worker is left in the "
            f"cluster (waited {SETTLE_SECONDS:g} s for one); no model was fitted. Add "
            "workers and fit again.") from last


def _lost_inputs(inputs):
    """The futures in ``inputs`` (dask collections, in any containers) whose
    data the cluster lost for good."""
    from distributed import futures_of
    return [future for future in futures_of(inputs) if future.status in ("cancelled", "lost")]


def _rewinder(random_state):
    """A function that puts ``random_state``, where it is a RandomState, back
    to its state now (an int or None: every fit seeds its own generator)."""
    if not isinstance(random_state, np.random.RandomState):
        return lambda: None
    state = random_state.get_state()
    return lambda: random_state.set_state(state)


def _snapshot(attributes):
    """A copy of an estimator's attributes whose lists and dicts of lists
    (the trees, boosting's scores: grown in place by a fit) are copied."""
    def copied(value):
        if isinstance(value, list):
            return list(value)
        if isinstance(value, dict):
            return {k: list(v) if isinstance(v, list) else v for k, v in value.items()}
        return value
    return {name: copied(value) for name, value in attributes.items()}
