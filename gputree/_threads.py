"""``n_jobs``: the number of CPU threads numba's parallel kernels use during
an estimator's fit and predict calls, set for the call and restored after it.

The threads only split loops whose iterations write disjoint cells (and
histogram sums are integers), so ``n_jobs`` never changes a result. Meaning
as in joblib: None leaves numba's current setting; a positive int asks for
that many threads (at most numba's ``NUMBA_NUM_THREADS``); -1 all of them,
-2 all but one, and so on.
"""
import functools
import numbers
from collections.abc import Iterator
from contextlib import contextmanager

import numba

#: estimator methods that run kernels: they honour n_jobs
THREADED_METHODS = ("fit", "predict", "predict_proba", "predict_log_proba",
                    "decision_function", "apply", "decision_path", "staged_predict",
                    "staged_predict_proba", "staged_decision_function",
                    "cost_complexity_pruning_path")


def resolve_n_jobs(n_jobs):
    """Threads for ``n_jobs`` (int), or None to leave numba's setting."""
    if n_jobs is None:
        return None
    if not isinstance(n_jobs, numbers.Integral) or isinstance(n_jobs, bool) or n_jobs == 0:
        raise ValueError(f"n_jobs must be None or a non-zero int (-1: all cores); got {n_jobs!r}.")
    most = numba.config.NUMBA_NUM_THREADS
    return min(int(n_jobs), most) if n_jobs > 0 else max(1, most + 1 + int(n_jobs))


@contextmanager
def numba_threads(n_jobs):
    """Run the block with numba's thread count for ``n_jobs``, then restore it."""
    threads = resolve_n_jobs(n_jobs)
    if threads is None:
        yield
        return
    before = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        yield
    finally:
        numba.set_num_threads(before)


def _threaded_steps(steps, n_jobs):
    """A generator's steps, each run under ``n_jobs`` threads."""
    while True:
        with numba_threads(n_jobs):
            try:
                item = next(steps)
            except StopIteration:
                return
        yield item


def honours_n_jobs(method):
    """Decorator: run ``method`` (and, for staged predictions, every step of
    the generator it returns) under the estimator's ``n_jobs``."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        n_jobs = getattr(self, "n_jobs", None)
        with numba_threads(n_jobs):
            result = method(self, *args, **kwargs)
        if isinstance(result, Iterator) and n_jobs is not None:
            return _threaded_steps(result, n_jobs)
        return result
    wrapper._honours_n_jobs = True
    return wrapper


def wrap_threaded_methods(cls):
    """Wrap the kernel-running methods ``cls`` defines itself with
    :func:`honours_n_jobs` (called from ``__init_subclass__``)."""
    for name in THREADED_METHODS:
        method = cls.__dict__.get(name)
        if callable(method) and not getattr(method, "_honours_n_jobs", False):
            setattr(cls, name, honours_n_jobs(method))
