"""Many small arrays across the host<->device boundary in one copy.

A level of tree growth needs a handful of small arrays on the device (build
slots, rows to zero, feature masks...) and reads a handful back (the best
split of every candidate node). Each copy costs a round trip of tens of
microseconds on a GPU whatever its size, so they travel packed: the arrays'
bytes are laid end to end in one uint8 buffer, every segment starting at a
multiple of :data:`ALIGN` bytes (so that views of any dtype are aligned),
the buffer crosses once, and the segments are viewed back as arrays of their
own dtype and shape on the other side (views, no further copies).

A *spec* is a list of ``(name, dtype, shape, offset)``, one per array, in the
order given; :func:`pack_host` and :func:`pack_device` return it with the
buffer, :func:`unpack` turns a buffer plus its spec back into a dict.
"""
import math

import numpy as np

#: every segment starts at a multiple of this many bytes
ALIGN = 16


def _spec(arrays):
    """(spec, total bytes) of a dict name -> array (anything with dtype, shape)."""
    spec, offset = [], 0
    for name, array in arrays.items():
        dtype = np.dtype(array.dtype)
        spec.append((name, dtype, tuple(array.shape), offset))
        nbytes = math.prod(array.shape) * dtype.itemsize
        offset += -(-nbytes // ALIGN) * ALIGN
    return spec, offset


def pack_host(arrays):
    """(uint8 (n_bytes,) numpy buffer, spec) of a dict name -> host array."""
    arrays = {name: np.ascontiguousarray(a) for name, a in arrays.items()}
    spec, total = _spec(arrays)
    buffer = np.zeros(total, dtype=np.uint8)
    for name, _, _, offset in spec:
        raw = arrays[name].reshape(-1).view(np.uint8)
        buffer[offset:offset + raw.size] = raw
    return buffer, spec


def pack_device(xp, arrays):
    """(uint8 (n_bytes,) buffer in ``xp``, spec) of a dict name -> ``xp``
    array, built on the device (one concatenation)."""
    spec, total = _spec(arrays)
    pieces = []
    for name, dtype, shape, offset in spec:
        raw = xp.ascontiguousarray(arrays[name]).reshape(-1).view(xp.uint8)
        pieces.append(raw)
        padding = -raw.size % ALIGN
        if padding:
            pieces.append(xp.zeros(padding, dtype=xp.uint8))
    if not pieces:
        return xp.zeros(0, dtype=xp.uint8), spec
    return xp.concatenate(pieces), spec


def unpack(buffer, spec):
    """dict name -> view of ``buffer`` (uint8 (n_bytes,), host or device)
    with the dtype and shape of ``spec``."""
    out = {}
    for name, dtype, shape, offset in spec:
        nbytes = math.prod(shape) * dtype.itemsize
        out[name] = buffer[offset:offset + nbytes].view(dtype).reshape(shape)
    return out
