"""Packing small arrays for one host<->device copy (backends/transfer.py)
and the backend's accounting of copies and allocated bytes
(backends/accounting.py), checked on numpy arrays."""
import gc

import numpy as np
import pytest

from gputree.backends.cuda.accounting import AllocationTracker, TransferCounter
from gputree.backends.cuda.transfer import ALIGN, pack_device, pack_host, unpack


def _arrays(rng):
    return {"int32": rng.randint(-5, 5, 7).astype(np.int32),
            "uint8 2-d": rng.randint(0, 2, (3, 5)).astype(np.uint8),
            "float64": rng.normal(size=4),
            "empty": np.empty((0, 8), dtype=np.uint32),
            "int64 3-d": rng.randint(-2 ** 40, 2 ** 40, (2, 3, 2)),
            "bool": rng.rand(5) < 0.5,
            "fortran": np.asfortranarray(rng.normal(size=(3, 2)))}


@pytest.mark.parametrize("pack", ["host", "device"])
def test_unpack_returns_every_array_as_it_was(pack):
    arrays = _arrays(np.random.RandomState(0))
    buffer, spec = pack_host(arrays) if pack == "host" else pack_device(np, arrays)
    assert buffer.dtype == np.uint8 and buffer.ndim == 1
    out = unpack(buffer, spec)
    assert list(out) == list(arrays)
    for name, array in arrays.items():
        assert out[name].dtype == array.dtype and out[name].shape == array.shape, name
        np.testing.assert_array_equal(out[name], array, err_msg=name)


def test_segments_are_aligned_and_do_not_overlap():
    arrays = _arrays(np.random.RandomState(1))
    buffer, spec = pack_host(arrays)
    end = 0
    for name, dtype, shape, offset in spec:
        assert offset % ALIGN == 0 and offset >= end, name
        end = offset + int(np.prod(shape)) * dtype.itemsize
    assert end <= buffer.size < end + ALIGN


def test_nothing_to_pack():
    for buffer, spec in (pack_host({}), pack_device(np, {})):
        assert buffer.size == 0 and unpack(buffer, spec) == {}


def test_transfer_counter_counts_copies_bytes_and_waits():
    counter = TransferCounter()
    counter.upload(100)
    counter.upload(20, blocks=3)
    counter.download(8)
    assert counter.copies() == (2, 1)
    assert counter["upload_bytes"] == 120 and counter["download_bytes"] == 8
    assert counter["upload_blocks"] == 4
    assert counter["sync"] == 1


def test_allocation_tracker_follows_live_arrays_and_keeps_the_peak():
    tracker = AllocationTracker()
    a = tracker.track(np.zeros(1000))
    b = tracker.track(np.zeros(500))
    view = a[10:20]
    assert tracker.live == tracker.peak == 12000
    del a
    gc.collect()
    assert tracker.live == 12000          # the view keeps its base's memory
    del view, b
    gc.collect()
    assert tracker.live == 0 and tracker.peak == 12000
    tracker.reset_peak()
    tracker.track(np.zeros(10))
    assert tracker.peak == 80
