"""Shared fixtures of the core-engine tests. Tests import the plain-numpy
reference implementations as ``reference`` (this folder is on sys.path)."""
import os
import sys
from pathlib import Path

import pytest

# pytest -n 2 on 2 cores oversubscribes them: OpenMP threads that spin-wait
# between numba's parallel launches then cost milliseconds per launch. Set
# before numba starts its threading layer (test modules import it later).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture(scope="session")
def backend():
    """The CPU backend (numba kernels compile once per test process)."""
    from gputree.backends import get_backend
    return get_backend("cpu")
