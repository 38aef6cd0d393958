"""int64 histograms packed into the bytes their values need, for the wire
between workers: lossless, so that the receiver adds exactly the sender's
integers.

A fixed-point histogram's int64 values use far fewer than 64 bits: a bin
holds a few rows' scaled gradients (the scale leaves the whole fit's sum
room in int64) and a count. Each (node, channel) of a histogram
(n_nodes, n_features, n_bins, n_channels) is sent in ``w`` bytes a value, the
fewest that hold every value of it in two's complement (1 to 8), as ``w``
byte planes (plane ``k`` holds byte ``k`` of every value, low byte first:
the kernels turn a node's channels into runs once and loop over the runs,
which vectorize). The receiver sign-extends and adds the values into its own
histograms in place (:func:`add_packed`).
"""
import numpy as np

from .._threads import kernel_jit


class PackedHistograms:
    """A histogram of ``shape`` (n_nodes, n_features, n_bins, n_channels)
    packed: ``widths`` uint8 (n_nodes, n_channels) bytes a value, ``data``
    uint8 the byte planes, node by node, channel by channel."""

    def __init__(self, shape, widths, data):
        self.shape, self.widths, self.data = tuple(shape), widths, data

    @property
    def nbytes(self):
        return self.widths.nbytes + self.data.nbytes


def pack(hist, buffer=None):
    """hist int64 (n_nodes, n_features, n_bins, n_channels), any strides
    (a feature slice of a level's histograms): its :class:`PackedHistograms`,
    whose data is the start of ``buffer`` uint8 (1-d) where that holds
    :func:`packed_capacity` bytes (fresh memory costs its pages at every
    level)."""
    n_nodes, n_features, n_bins, n_channels = hist.shape
    if buffer is None or buffer.size < packed_capacity(hist.shape):
        buffer = np.empty(packed_capacity(hist.shape), dtype=np.uint8)
    widths = np.empty((n_nodes, n_channels), dtype=np.uint8)
    size = _pack(hist, widths, buffer,
                 np.empty((n_channels, n_features * n_bins), dtype=np.uint64))
    return PackedHistograms(hist.shape, widths, buffer[:size])


def packed_capacity(shape):
    """The most bytes :func:`pack` writes for histograms of ``shape`` (8 a
    value)."""
    return 8 * int(np.prod(shape, dtype=np.int64))


def add_packed(total, packed, out=None, rows=None):
    """total int64 (n_nodes, n_features, n_bins, n_channels) IN/OUT, any
    strides: += the values of ``packed`` (of the same shape), exactly; or,
    with ``out`` int64 (m, n_features, n_bins, n_channels) OUT and ``rows``
    int64 (n_nodes,), out[rows[j]] = total[j] + packed's node j (total IN):
    the sums stored without a pass of their own."""
    if tuple(total.shape) != packed.shape:
        raise ValueError(f"histograms of shape {packed.shape} cannot be added to "
                         f"histograms of shape {tuple(total.shape)}")
    if out is None:
        out, rows = total, np.arange(total.shape[0], dtype=np.int64)
    _, n_features, n_bins, n_channels = packed.shape
    _add_packed(total, out, np.asarray(rows, dtype=np.int64), packed.widths, packed.data,
                np.empty((n_channels, n_features * n_bins), dtype=np.int64))


@kernel_jit()
def _pack(hist, widths, data, values):
    """widths uint8 (n_nodes, C) OUT: the bytes that hold every value of
    each (node, channel) of hist int64 (n_nodes, F, B, C) IN in two's
    complement; data uint8 OUT: their byte planes from its start (see the
    module docstring); returns the bytes written. values uint64 (C, F * B)
    scratch: a node's channels, each in one run (read once from hist), from
    which its widths and its byte planes come (unsigned indices: no
    wraparound checks, so the runs vectorize)."""
    n_nodes, n_features, n_bins, n_channels = hist.shape
    nodes, features = np.uint64(n_nodes), np.uint64(n_features)
    bins, channels = np.uint64(n_bins), np.uint64(n_channels)
    plane = features * bins
    start = np.uint64(0)
    for node in range(nodes):
        for f in range(features):
            row = f * bins
            for b in range(bins):
                for c in range(channels):
                    values[c, row + b] = np.uint64(hist[node, f, b, c])
        for c in range(channels):
            held = np.uint64(0)
            for i in range(plane):
                v = values[c, i]
                # v, or ~v where negative (the sign bit spread over every bit)
                held |= v ^ np.uint64(np.int64(v) >> 63)
            length = 0
            while held != np.uint64(0):
                held >>= np.uint64(1)
                length += 1
            width = np.uint64((length + 8) // 8)         # and a sign bit
            widths[node, c] = width
            for k in range(width):
                shift = np.uint64(8) * k
                first = start + k * plane
                for i in range(plane):
                    data[first + i] = np.uint8((values[c, i] >> shift) & np.uint64(255))
            start += width * plane
    return start


@kernel_jit()
def _add_packed(total, out, rows, widths, data, values):
    """out[rows[j]] int64 (m, F, B, C) OUT = total[j] (int64 (n_nodes, F, B,
    C) IN; ``out`` may be ``total`` with rows 0 .. n_nodes-1) + the
    sign-extended values of the byte planes ``data`` uint8 IN (widths uint8
    (n_nodes, C) IN, as :func:`_pack`); rows int64 IN; values int64 (C, F *
    B) scratch: a node's channels decoded in runs, then added (unsigned
    indices, as :func:`_pack`)."""
    n_nodes, n_features, n_bins, n_channels = total.shape
    nodes, features = np.uint64(n_nodes), np.uint64(n_features)
    bins, channels = np.uint64(n_bins), np.uint64(n_channels)
    plane = features * bins
    start = np.uint64(0)
    for node in range(nodes):
        for c in range(channels):
            width = np.uint64(widths[node, c])
            unused = np.uint64(64) - np.uint64(8) * width
            for i in range(plane):
                values[c, i] = np.int64(data[start + i])
            for k in range(np.uint64(1), width):
                shift = np.uint64(8) * k
                first = start + k * plane
                for i in range(plane):
                    values[c, i] |= np.int64(np.uint64(data[first + i]) << shift)
            for i in range(plane):
                # the top byte's sign bit extended over the unused high bits
                values[c, i] = np.int64(np.uint64(values[c, i]) << unused) >> np.int64(unused)
            start += width * plane
        row_out = np.uint64(rows[node])
        for f in range(features):
            row = f * bins
            for b in range(bins):
                for c in range(channels):
                    out[row_out, f, b, c] = total[node, f, b, c] + values[c, row + b]
