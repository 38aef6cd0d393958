"""The CUDA device the device-parity files test: ``GPUTREE_TEST_DEVICE``
(default ``cuda-sim``, numba's CUDA simulator; ``cuda`` on a GPU)."""
import os

import pytest

from gputree.backends import get_backend

DEVICE = os.environ.get("GPUTREE_TEST_DEVICE", "cuda-sim")


def skip_module_without_device():
    """Skip the calling test module, with the reason, when DEVICE cannot
    start in this process."""
    try:
        get_backend(DEVICE)
    except Exception as exc:  # noqa: BLE001 - skip with the reason
        pytest.skip(f"device {DEVICE!r} is not available in this process: {exc}",
                    allow_module_level=True)
