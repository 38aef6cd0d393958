"""Same answer whatever the thread count or the cut of the work: histogram
passes cut into any (row block, feature block) tasks equal the numpy
reference exactly, and fits with 1, 2 and 3 numba threads (a subprocess, as
numba's thread count is fixed when it starts; every job of a staged kernel,
cpu_stages, on its parallel version) give bit-identical trees, predictions
and training scores."""
import hashlib
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import reference
from gputree.backends import cpu

ROOT = Path(__file__).resolve().parents[1]


def _level(rng, n, n_features, n_bins, n_level):
    X_binned = np.asfortranarray(rng.randint(0, n_bins, (n, n_features)).astype(np.uint8))
    stats = rng.randint(-2**40, 2**40, (n, 3)).astype(np.int64)
    positions = rng.randint(3, 3 + n_level, n).astype(np.int32)
    positions[rng.rand(n) < 0.1] = -1
    return X_binned, stats, positions


@pytest.mark.parametrize("n_blocks", [1, 2, 3, 7])
@pytest.mark.parametrize("per_task", [1, 3, 7])
@pytest.mark.parametrize("n_level", [1, 4])
def test_any_cut_of_a_histogram_pass_gives_the_reference(backend, monkeypatch, n_blocks,
                                                         per_task, n_level):
    rng = np.random.RandomState(n_blocks * 100 + per_task * 10 + n_level)
    n, n_features, n_bins = 1000, 8, 33
    X_binned, stats, positions = _level(rng, n, n_features, n_bins, n_level)
    monkeypatch.setattr(cpu, "histogram_cut", lambda *shape: (n_blocks, per_task))
    node_to_build = np.full(n_level, -1, dtype=np.int32)
    built = np.arange(0, n_level, 2)
    node_to_build[built] = np.arange(built.size)[::-1] + 1   # rows of a larger array
    out = rng.randint(-9, 9, (built.size + 2, n_features, n_bins, 3)).astype(np.int64)
    out[node_to_build[built]] = 0
    expected = out.copy()
    rows = node_to_build[built]
    expected[rows] = reference.build_histograms(X_binned, stats, positions, 3, node_to_build,
                                                built.size + 2, n_bins)[rows]
    backend.build_histograms(X_binned, stats, positions, 3, node_to_build, built.size + 2,
                             n_bins, out=out)
    np.testing.assert_array_equal(out, expected)
    # the root: every row in order
    root = np.zeros(n, dtype=np.int32)
    got = backend.build_histograms(X_binned, stats, root, 0, np.zeros(1, np.int32), 1, n_bins)
    np.testing.assert_array_equal(got, reference.build_histograms(
        X_binned, stats, root, 0, np.zeros(1, np.int32), 1, n_bins))


def test_histogram_cut_gives_every_thread_work_and_stays_affordable():
    for threads in (1, 2, 3, 16, 64):
        for n_rows, n_build in ((7_000_000, 1), (7_000_000, 8), (1_000_000, 64), (500, 1)):
            blocks, per_task = cpu.histogram_cut(n_rows, n_build, 28, 256, threads)
            tasks = blocks * -(-28 // per_task)
            assert blocks >= 1 and 1 <= per_task <= cpu.histogram_task_features(n_build)
            affordable = blocks == 1 or n_rows // blocks >= cpu._ROWS_PER_BIN * n_build * 256
            assert affordable
            assert tasks >= min(2 * threads, n_rows // (cpu._ROWS_PER_BIN * n_build * 256)
                                * -(-28 // per_task))


_FITS = """
import hashlib, sys
import numba, numpy as np
from gputree import DecisionTreeClassifier
from gputree.boosting import GradientBoostingClassifier
from gputree.backends import cpu_stages
cpu_stages.LARGE_WORK = cpu_stages.PARALLEL_WORK = 0   # every job in parallel
rng = np.random.RandomState(0)
X = rng.normal(size=(6000, 10)).astype(np.float32)
X[rng.rand(*X.shape) < 0.05] = np.nan
y = (X[:, 0] + np.nan_to_num(X[:, 1]) * X[:, 2] > 0.3).astype(int)
for threads in (1, 2, 3):
    numba.set_num_threads(threads)
    assert numba.get_num_threads() == threads
    digest = hashlib.sha256()
    boost = GradientBoostingClassifier(n_estimators=5, max_depth=5, early_stopping=False,
                                       random_state=0, device="cpu").fit(X, y)
    tree = DecisionTreeClassifier(max_depth=8, random_state=0, device="cpu").fit(X, y)
    for t in list(boost._trees) + [tree.tree_.arrays]:   # tree_ wraps the TreeArrays
        for name, value in sorted(vars(t).items()):
            digest.update(np.ascontiguousarray(value).tobytes())
    for array in (boost.predict_proba(X), boost.train_score_, tree.predict_proba(X)):
        digest.update(np.ascontiguousarray(array).tobytes())
    print(threads, digest.hexdigest())
"""


def test_fits_are_bit_identical_with_1_2_and_3_threads():
    env = dict(os.environ, NUMBA_NUM_THREADS="3", PYTHONPATH=str(ROOT))
    result = subprocess.run([sys.executable, "-c", _FITS], env=env, capture_output=True,
                            text=True, timeout=900)
    assert result.returncode == 0, result.stderr
    digests = dict(line.split() for line in result.stdout.split("\n") if line.strip())
    assert sorted(digests) == ["1", "2", "3"]
    assert len(set(digests.values())) == 1, digests
