"""Tests of the CUDA backend on the simulated device. They need numba's CUDA
simulator, which must be enabled before numba is imported, so they run in
their own process: tests/test_simulated_device.py starts it with
NUMBA_ENABLE_CUDASIM=1. Collected alone without that variable, they skip."""
import os
from pathlib import Path

import pytest

HERE = Path(__file__).parent

SIMULATED = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"


def pytest_collection_modifyitems(config, items):
    if SIMULATED:
        return
    skip = pytest.mark.skip(reason="needs NUMBA_ENABLE_CUDASIM=1 (run through "
                                   "tests/test_simulated_device.py)")
    for item in items:
        if Path(str(item.fspath)).parent == HERE:
            item.add_marker(skip)
