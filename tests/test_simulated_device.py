"""Runs tests/simulated/ in a separate process with numba's CUDA simulator on,
so the CUDA backend is exercised end to end on this CPU-only machine."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

SIMULATED_DIR = Path(__file__).parent / "simulated"


#: the simulated suite's files, each run in its own process so that pytest-xdist's
#: workers share them (the simulator runs a Python thread per CUDA thread: slow)
SIMULATED_FILES = sorted(path.name for path in SIMULATED_DIR.glob("test_*.py"))


@pytest.mark.parametrize("name", SIMULATED_FILES)
def test_simulated_device_suite(name):
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
         str(SIMULATED_DIR / name)],
        env=env, capture_output=True, text=True, timeout=1200)
    print(result.stdout[-20000:])
    print(result.stderr[-5000:], file=sys.stderr)
    assert result.returncode == 0, f"simulated-device tests of {name} failed (output above)"
    assert " passed" in result.stdout


def test_cuda_sim_without_simulator_says_how_to_enable_it():
    from numba import config
    if config.ENABLE_CUDASIM:
        pytest.skip("this process runs with the simulator on")
    import numpy as np
    from gputree import DecisionTreeClassifier
    with pytest.raises(ValueError, match="NUMBA_ENABLE_CUDASIM=1"):
        DecisionTreeClassifier(device="cuda-sim").fit(np.zeros((4, 1)), [0, 1, 0, 1])


def test_cuda_without_gpu_says_what_is_missing():
    from gputree.backends import cuda_available
    if cuda_available():
        pytest.skip("a GPU is available here")
    import numpy as np
    from gputree import DecisionTreeClassifier
    with pytest.raises(ValueError, match="device='cuda'"):
        DecisionTreeClassifier(device="cuda").fit(np.zeros((4, 1)), [0, 1, 0, 1])


@pytest.mark.parametrize("name", ["test_device_parity.py", "test_device_budgets.py",
                                  "test_block_scan.py", "test_dask_devices.py"])
def test_device_parity_suite_on_the_simulated_device(name):
    """tests/test_device_parity.py, tests/test_device_budgets.py,
    tests/test_block_scan.py and tests/test_dask_devices.py (the checks a real GPU runs with
    GPUTREE_TEST_DEVICE=cuda) on the simulated device, a process each."""
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", GPUTREE_TEST_DEVICE="cuda-sim")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
         str(Path(__file__).parent / name)],
        env=env, capture_output=True, text=True, timeout=1200)
    print(result.stdout[-20000:])
    print(result.stderr[-5000:], file=sys.stderr)
    assert result.returncode == 0, f"{name} failed on the simulated device"
    assert " passed" in result.stdout and "skipped" not in result.stdout
