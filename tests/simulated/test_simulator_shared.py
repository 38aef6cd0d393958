"""numba's CUDA simulator with gputree's thread-safe shared arrays
(gputree.backends.cuda.simulator_shared): every thread of a block sees one
array per ``cuda.shared.array`` call site, also when the threads reach it
together after a barrier, and two call sites stay two arrays."""
import sys

import numpy as np
import pytest
from numba import config, cuda, int64

pytestmark = pytest.mark.skipif(not config.ENABLE_CUDASIM, reason="needs numba's simulator")

WIDTH = 32


@cuda.jit
def _meet_after_a_barrier(out):
    """Each thread writes its index + 1 into two arrays allocated after a
    barrier (every thread reaches those lines together); thread 0 sums."""
    k = cuda.threadIdx.x
    cuda.syncthreads()
    a = cuda.shared.array(WIDTH, int64)
    b = cuda.shared.array(WIDTH, int64)
    a[k] = k + 1
    b[k] = 2 * (k + 1)
    cuda.syncthreads()
    if k == 0:
        sa, sb = 0, 0
        for j in range(WIDTH):
            sa += a[j]
            sb += b[j]
        out[cuda.blockIdx.x, 0] = sa
        out[cuda.blockIdx.x, 1] = sb


def test_threads_meeting_at_a_call_site_share_one_array():
    from gputree.backends.cuda import simulator_shared
    from numba.cuda.simulator import kernelapi
    simulator_shared.install()
    simulator_shared.install()        # idempotent: the lock is installed once
    assert kernelapi.FakeCUDAShared._locked_allocations
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)       # switch threads as often as the GIL allows
    try:
        for _ in range(40):
            out = np.zeros((2, 2), np.int64)
            _meet_after_a_barrier[2, WIDTH](out)
            expected = WIDTH * (WIDTH + 1) // 2
            assert (out[:, 0] == expected).all() and (out[:, 1] == 2 * expected).all()
    finally:
        sys.setswitchinterval(previous)
