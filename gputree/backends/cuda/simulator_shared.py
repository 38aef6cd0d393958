"""Thread-safe shared arrays in numba's CUDA simulator (``device="cuda-sim"``).

The simulator runs each CUDA thread of a block as a Python thread and gives
every thread of the block the same array for a ``cuda.shared.array`` call
site, found in a dict keyed by the call's file and line. Its lookup and
insertion are not atomic: when two threads of a block reach a call site
first at the same moment (threads meeting after a barrier), each may make
its own array, and one thread's writes are then invisible to the others (a
block reduction loses that thread's candidate; about one launch in 40 in
tests/test_block_scan.py). A real GPU has no such hazard. :func:`install`
replaces the lookup with the same one under a lock, once per process, only
when the simulator is on.
"""
import sys
import threading

import numpy as np

_LOCK = threading.Lock()


def install():
    """Make FakeCUDAShared.array's static allocations atomic (idempotent;
    does nothing unless numba's CUDA simulator is on)."""
    from numba import config
    if not config.ENABLE_CUDASIM:
        return
    from numba.core import types
    from numba.np import numpy_support
    from numba.cuda.simulator import kernelapi
    shared = kernelapi.FakeCUDAShared
    if getattr(shared, "_locked_allocations", False):
        return
    unlocked = shared.array

    def array(self, shape, dtype, *args, **kwargs):
        if shape == 0:          # dynamic shared memory: one buffer, no lookup
            return unlocked(self, shape, dtype, *args, **kwargs)
        caller = sys._getframe(1)
        key = (caller.f_code.co_filename, caller.f_lineno)
        if isinstance(dtype, types.Type):
            dtype = numpy_support.as_dtype(dtype)
        with _LOCK:
            found = self._allocations.get(key)
            if found is None:
                found = self._allocations[key] = np.empty(shape, dtype)
        return found

    shared.array = array
    shared._locked_allocations = True
