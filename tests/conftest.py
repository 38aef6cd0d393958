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

# numba's CUDA simulator runs a block's CUDA threads as Python threads that
# hand the GIL to one another thousands of times a launch, and its launching
# thread polls them. Across CPUs every handoff wakes an idle CPU, which on a
# VM is slow when the machine is otherwise idle (a simulated test file took
# 150 s there against 12 s on one CPU). A simulated-device test process (see
# tests/test_simulated_device.py) is kept on one CPU: pytest-xdist's worker
# number picks which, so two workers' simulated processes use two CPUs.
if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1" and hasattr(os, "sched_setaffinity"):
    _cpus = sorted(os.sched_getaffinity(0))
    _worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")[2:]
    os.sched_setaffinity(0, {_cpus[int(_worker) % len(_cpus) if _worker.isdigit() else 0]})


@pytest.fixture(scope="session")
def backend():
    """The CPU backend (numba kernels compile once per test process)."""
    from gputree.backends import get_backend
    return get_backend("cpu")


#: tests that run for tens of seconds to minutes each (a process on the
#: simulated device, a cold numba compile, PTX compiles): run first, so that
#: pytest-xdist's workers share them from the start rather than one worker
#: running them alone while the other has finished
SLOW_FIRST = ("test_simulated_device.py::", "test_first_fit.py::test_a_later_process",
              "test_exact_device_code.py::", "test_boosting.py::test_simulated_device",
              "test_nvcc_compile.py::")


def pytest_collection_modifyitems(config, items):
    """Move the SLOW_FIRST tests to the front (stable: the rest keep their order)."""
    items.sort(key=lambda item: not any(part in item.nodeid for part in SLOW_FIRST))
