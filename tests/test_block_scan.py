"""The split scan's block kernel (one thread block per (node, feature):
numba_kernels._find_splits_by_block, boosting's numerical tasks) against the
thread kernel and the CPU backend's scan, bit for bit; a boosting fit
scanned by blocks against the CPU's model; the ``scan_kernel`` option.

The device is ``GPUTREE_TEST_DEVICE`` (default ``cuda-sim``), as in
tests/test_device_parity.py: tests/test_simulated_device.py runs this file
with numba's CUDA simulator on, benchmarks/gpu_check.sh on a GPU; in any
other process the module skips. The simulator runs a Python thread per CUDA
thread and polls them all at every barrier: the histograms are small (16-32
bins) and blocks of 8 threads scan 32 bins in four rounds (the running sums
carried between rounds)."""
import sys

import numpy as np
import pytest

from gputree import GradientBoostingClassifier, GradientBoostingRegressor
from gputree._arrays import to_host
from gputree.backends import get_backend
from gputree.criteria import newton_statistics
from gputree.growth.params import GrowthParams

from simulated.datasets import mixed_frame
from simulated.device import DEVICE, skip_module_without_device
from simulated.test_parity import assert_same_tree

skip_module_without_device()
from gputree.backends.cuda import numba_kernels  # noqa: E402 - needs the device
from gputree.backends.cuda.backend import CUDABackend  # noqa: E402

RUNTIME = "cupy" if DEVICE == "cuda" else "emulator"

#: features of the constructed histograms (see newton_histograms)
RANDOM, MIRRORED, COPY, NO_MISSING, FREE_MISSING, CATEGORICAL = range(6)


@pytest.fixture(autouse=True)
def fast_barriers():
    """A short thread switch interval: the simulator's barriers (a polling
    loop over Python threads) run about 10x faster."""
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-4)
    yield
    sys.setswitchinterval(previous)


def newton_histograms(rng, n_nodes, n_bins):
    """int64 (n_nodes, 6, n_bins, 3) boosting histograms (gradient, hessian,
    count; the last bin missing values) with empty bins, built so that
    candidates tie: MIRRORED's non-missing bins read the same both ways (the
    threshold after bin b and after n_bins - 3 - b give the same gain), COPY
    repeats RANDOM (equal gains across features), FREE_MISSING's missing rows
    carry no gradient or hessian (each threshold's two candidates, missing
    right and left, tie). NO_MISSING has no missing rows; node 1 is too small
    for min_samples_leaf=3 (no valid split)."""
    shape = (n_nodes, 6, n_bins)
    count = rng.randint(0, 4, shape) * (rng.rand(*shape) < 0.7)
    hist = np.stack([rng.randint(-60, 60, shape) * count, rng.randint(1, 20, shape) * count,
                     count], axis=-1).astype(np.int64)
    hist[:, MIRRORED, :-1] += hist[:, MIRRORED, -2::-1]
    hist[:, MIRRORED, -1] = 0
    hist[:, COPY] = hist[:, RANDOM]
    hist[:, NO_MISSING, -1] = 0
    hist[:, FREE_MISSING, -1] = (0, 0, 2)
    hist[1] = 0
    hist[1, :, :4, 2] = 1
    hist[1, :, :4, 1] = 5
    return hist


def scan_arguments(hist, params, stats, split_bin=None):
    """find_best_splits' arguments; the gradient and hessian sums in 1/16."""
    n_nodes, n_features, n_bins, n_channels = hist.shape
    inv = np.ones(n_channels)
    inv[:-1] = 1 / 16
    allowed = np.ones((n_nodes, n_features), np.uint8)
    allowed[-1, NO_MISSING] = 0
    is_categorical = np.zeros(n_features, np.uint8)
    is_categorical[CATEGORICAL] = 1
    return (hist, np.full(n_features, n_bins - 1, np.int32), is_categorical, allowed,
            n_bins - 1, stats.layout, inv, params.criterion_params(), split_bin)


def scan_with(kernel, threads, arguments):
    """The scan's outputs (host arrays) with the kernel ``kernel``."""
    backend = CUDABackend(RUNTIME, scan_kernel=kernel)
    backend.scan_threads = threads
    return [to_host(a) for a in backend.scan_splits(*(
        backend.upload(a) if isinstance(a, np.ndarray) else a for a in arguments))]


def assert_same_outputs(a, b):
    """The scan's outputs equal: gains bit for bit, the rest exactly."""
    for x, y in zip(a, b):
        assert x.dtype == y.dtype and x.shape == y.shape
        assert np.array_equal(x.view(np.int64) if x.dtype == np.float64 else x,
                              y.view(np.int64) if y.dtype == np.float64 else y)


def threshold(bitset, row, n_bins):
    """The last non-missing bin of a threshold split's left set."""
    bits = [(bitset[row, b // 32] >> (b % 32)) & 1 for b in range(n_bins - 1)]
    return max(b for b, bit in enumerate(bits) if bit)


@pytest.mark.parametrize("n_bins,threads,params", [
    (32, 8, GrowthParams(min_samples_leaf=3)),
    (16, None, GrowthParams(min_samples_leaf=3, reg_alpha=0.5, min_weight_leaf=0.3)),
])
def test_block_scan_equals_thread_scan(n_bins, threads, params):
    """Every output of every task equal to the thread kernel's and the CPU
    scan's; the constructed ties go to the first candidate; a random
    threshold draw and a categorical feature (the thread kernel's tasks) and
    a feature not allowed come out as with the thread kernel alone."""
    rng = np.random.RandomState(n_bins)
    stats = newton_statistics(rng.normal(size=(40, 1)), np.full((40, 1), 0.25), np.ones(40))
    hist = newton_histograms(rng, 3, n_bins)
    split_bin = np.full(hist.shape[:2], -1, np.int32)
    split_bin[2, RANDOM] = 3
    arguments = scan_arguments(hist, params, stats, split_bin)
    thread = scan_with("thread", None, arguments)
    block = scan_with("block", threads, arguments)
    assert_same_outputs(block, thread)
    assert_same_outputs(block, get_backend("cpu").scan_splits(*arguments))
    gain, missing_left, bitset = block[0], block[1], block[2]
    found = np.isfinite(gain)
    assert found[[0, 2]][:, :CATEGORICAL].sum() >= 7, "few splits: a weak test"
    assert not found[1].any() and not found[2, NO_MISSING]
    for node in (0, 2):
        b = threshold(bitset[node], MIRRORED, n_bins)
        assert 2 * b <= n_bins - 3, "a mirrored tie went to the later threshold"
        # missing left wins only where missing right breaks min_samples_leaf
        assert (missing_left[node, FREE_MISSING] == 0
                or block[3][node, FREE_MISSING, 2] - 2 < params.min_samples_leaf)
    assert (missing_left[[0, 2], FREE_MISSING] == 0).any(), "no tie at missing: a weak test"
    assert np.isfinite(gain[0, COPY]) and gain[0, COPY] == gain[0, RANDOM]   # a tie across features


def test_block_scan_reads_no_cell_beyond_a_features_bins():
    """Features with fewer bins than the histogram's width: the cells between
    a feature's last bin and the missing bin are not defined (the CPU's
    compact histograms never write them; a pool reuses its rows), so a scan
    must not read them. Filled with garbage here, every output still equals
    the thread kernel's and the CPU scan's."""
    rng = np.random.RandomState(7)
    params = GrowthParams(min_samples_leaf=3)
    stats = newton_statistics(rng.normal(size=(40, 1)), np.full((40, 1), 0.25), np.ones(40))
    hist = newton_histograms(rng, 3, 32)
    arguments = list(scan_arguments(hist, params, stats))
    n_non_missing = np.array([9, 31, 20, 5, 31, 12], np.int32)
    for f, n in enumerate(n_non_missing):
        hist[:, f, n:-1] = rng.randint(-10**6, 10**6, hist[:, f, n:-1].shape)
    arguments[1] = n_non_missing
    thread = scan_with("thread", None, arguments)
    block = scan_with("block", 8, arguments)
    assert_same_outputs(block, thread)
    assert_same_outputs(block, get_backend("cpu").scan_splits(*arguments))
    assert np.isfinite(block[0][0, :CATEGORICAL]).sum() >= 3, "few splits: a weak test"


def test_block_scan_leaves_other_criteria_to_the_thread_kernel():
    """Two outputs: no task is the block kernel's; the outputs equal the
    thread kernel's."""
    rng = np.random.RandomState(5)
    stats = newton_statistics(rng.normal(size=(30, 2)), np.full((30, 2), 0.5), np.ones(30))
    hist = np.abs(rng.randint(-3, 5, (2, 6, 16, 5))).astype(np.int64)
    arguments = scan_arguments(hist, GrowthParams(), stats)
    block = scan_with("block", 8, arguments)
    assert np.isfinite(block[0]).any()
    assert_same_outputs(block, scan_with("thread", None, arguments))


class LaunchSpy:
    """Counts the launches of a kernel it stands in for."""

    def __init__(self, kernel):
        self.kernel, self.launches = kernel, 0

    def __getitem__(self, configuration):
        self.launches += 1
        return self.kernel[configuration]


@pytest.mark.parametrize("estimator", [GradientBoostingRegressor, GradientBoostingClassifier])
def test_boosting_scanned_by_blocks_equals_cpu(estimator, monkeypatch):
    """A boosting fit on the device with scan_kernel "block" (8
    threads a block: several rounds a scan) grows the CPU's trees."""
    X, signal = mixed_frame(200, 4)
    y = signal if estimator is GradientBoostingRegressor else signal > 0.3
    spy = LaunchSpy(numba_kernels._find_splits_by_block)
    monkeypatch.setattr(numba_kernels, "_find_splits_by_block", spy)
    backend = get_backend(DEVICE)
    monkeypatch.setattr(backend, "scan_kernel", "block")
    monkeypatch.setattr(backend, "scan_threads", 8)
    params = dict(n_estimators=2, max_depth=2, max_bins=24, learning_rate=0.5,
                  early_stopping=False, min_samples_leaf=5)
    sim = estimator(device=DEVICE, **params).fit(X, y)
    cpu = estimator(device="cpu", **params).fit(X, y)
    assert spy.launches >= 4
    assert sum(tree.node_count for tree in cpu.model_.trees) >= 10
    for a, b in zip(cpu.model_.trees, sim.model_.trees):
        assert_same_tree(a, b)
    assert np.array_equal(cpu.predict(X), sim.predict(X))


def test_scan_kernel_option(monkeypatch):
    monkeypatch.setenv("GPUTREE_SCAN_KERNEL", "block")
    assert CUDABackend(RUNTIME).scan_kernel == "block"
    monkeypatch.setenv("GPUTREE_SCAN_KERNEL", "warp")
    with pytest.raises(ValueError, match=r"\$GPUTREE_SCAN_KERNEL must be one of auto, thread"):
        CUDABackend(RUNTIME)
    with pytest.raises(ValueError, match="scan_kernel must be one of"):
        CUDABackend(RUNTIME, scan_kernel="blocks")
    backend = CUDABackend(RUNTIME, scan_kernel="thread")
    for threads in (0, 48, 512):
        with pytest.raises(ValueError, match="scan_threads must be a power of two from 1 to 256"):
            backend.scan_threads = threads
    assert numba_kernels.scan_kernel_for("auto", "cupy") == "block"
    assert numba_kernels.scan_kernel_for("thread", "cupy") == "thread"
    assert [numba_kernels.block_scan_threads(n) for n in (4, 25, 34, 35, 256, 1024)] == [
        32, 32, 32, 64, 256, 256]
