"""Shared fixtures of the core-engine tests. Tests import the plain-numpy
reference implementations as ``reference`` (this folder is on sys.path)."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture(scope="session")
def backend():
    """The CPU backend (numba kernels compile once per test process)."""
    from gputree.backends import get_backend
    return get_backend("cpu")
