"""Shared pieces of the benchmarks (the asv suite and ``compare.py``).

One synthetic task (``make_classification``, 28 float32 features, binary),
device availability, loading gputree estimators that may not exist yet,
the numba warm-up, and peak-memory helpers (Linux: peak RSS can be reset
through ``/proc/self/clear_refs`` so a peak belongs to one call).
"""
import os
import resource

import numpy as np

#: rows of the asv cases; compare.py picks its own with --rows
ROWS = [10_000, 100_000, 1_000_000]
#: devices of the asv cases; "cuda" skips where no GPU is usable
DEVICES = ["cpu", "cuda"]
N_FEATURES = 28
#: the synthetic task, as passed to sklearn.datasets.make_classification
TASK = dict(n_features=N_FEATURES, n_informative=10, n_redundant=4,
            n_classes=2, random_state=0)
#: the synthetic regression task, for sklearn.datasets.make_regression
REGRESSION_TASK = dict(n_features=N_FEATURES, n_informative=10, noise=10.0, random_state=0)
#: rows used to compile gputree's numba kernels before anything is timed
WARM_UP_ROWS = 2_000


def classification_data(n_rows):
    """(X float32 (n_rows, 28), y int32 (n_rows,)) of the synthetic task."""
    from sklearn.datasets import make_classification
    X, y = make_classification(n_samples=n_rows, **TASK)
    return X.astype(np.float32), y.astype(np.int32)


def regression_data(n_rows):
    """(X float32 (n_rows, 28), y float64 (n_rows,)) of the regression task."""
    from sklearn.datasets import make_regression
    X, y = make_regression(n_samples=n_rows, **REGRESSION_TASK)
    return X.astype(np.float32), y


def device_unavailable(device):
    """Why gputree cannot run on ``device`` here, or None when it can."""
    if device == "cpu":
        return None
    from gputree.backends import cuda_available
    if device == "cuda" and not cuda_available():
        return "no usable GPU (cupy missing or no CUDA device)"
    return None


def available_devices(devices=("cpu", "cuda")):
    """The devices of ``devices`` that gputree can use on this machine."""
    return [d for d in devices if device_unavailable(d) is None]


def gputree_estimator(name):
    """The class ``gputree.<name>``; ImportError saying why when absent."""
    import gputree
    try:
        return getattr(gputree, name)
    except AttributeError:
        raise ImportError(f"gputree has no {name}") from None


def set_threads(n_threads):
    """Cap numba's and OpenMP/BLAS thread pools at ``n_threads``."""
    import numba
    numba.set_num_threads(min(n_threads, numba.config.NUMBA_NUM_THREADS))
    try:
        from threadpoolctl import threadpool_limits
        threadpool_limits(n_threads)
    except ImportError:
        pass


def warm_up(make_estimator, X, y, rows=WARM_UP_ROWS, fit_arguments=None):
    """Fit and predict on a few rows, reading binned X as it is and then
    from the column-major copy that large fits' moves read (the kernels'
    other signature): compiles, or loads from numba's cache, the kernels
    the timed runs use (not timed). ``fit_arguments(n)``: (rows to use, fit
    keywords) for the first ``n`` rows (a ranker's whole queries)."""
    from gputree.backends.cpu import binned_cache
    for stage in range(2):
        saved = binned_cache._COLUMN_COPY_VALUES
        binned_cache._COLUMN_COPY_VALUES = 0 if stage else saved
        n, keywords = fit_arguments(rows) if fit_arguments else (rows, {})
        try:
            make_estimator().fit(X[:n], y[:n], **keywords).predict(X[:n])
        finally:
            binned_cache._COLUMN_COPY_VALUES = saved


def reset_peak_rss():
    """Make the process's peak RSS restart from its current RSS (Linux).

    Returns False where the kernel does not allow it; peaks then count from
    the start of the process.
    """
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def peak_rss_bytes():
    """Peak resident memory of this process (since start or last reset).

    Reads VmHWM on Linux: ``ru_maxrss`` would also count the parent's peak,
    which Linux hands to a process started by fork + exec.
    """
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def current_rss_bytes():
    """Resident memory of this process now."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return peak_rss_bytes()
