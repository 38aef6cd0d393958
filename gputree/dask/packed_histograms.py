"""int64 histograms packed into the bytes their values need, for the wire
between workers: lossless, so that the receiver adds exactly the sender's
integers.

A fixed-point histogram's int64 values use far fewer than 64 bits: a bin
holds a few rows' scaled gradients (the scale leaves the whole fit's sum
room in int64) and a count. Each (node, channel) of a histogram
(n_nodes, n_features, n_bins, n_channels) is sent in ``w`` bytes a value, the
fewest that hold every value of it in two's complement (1 to 8), as ``w``
byte planes (plane ``k`` holds byte ``k`` of every value, low byte first:
the kernels' inner loops run over a feature's bins). The receiver sign-extends
and adds the values into its own histograms in place (:func:`add_packed`).
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
    whose data is the start of ``buffer`` uint8 (1-d) where that is large
    enough (fresh memory costs its pages at every level)."""
    n_nodes, n_features, n_bins, n_channels = hist.shape
    widths = np.empty((n_nodes, n_channels), dtype=np.uint8)
    _widths(hist, widths)
    offsets = _offsets(widths, n_features * n_bins)
    size = int(offsets[-1])
    if buffer is not None and buffer.size >= size:
        data = buffer[:size]
    else:
        data = np.empty(size, dtype=np.uint8)
    _pack(hist, widths, offsets, data)
    return PackedHistograms(hist.shape, widths, data)


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
    plane = packed.shape[1] * packed.shape[2]
    _add_packed(total, out, np.asarray(rows, dtype=np.int64), packed.widths,
                _offsets(packed.widths, plane), packed.data,
                np.empty(packed.shape[2], dtype=np.uint64))


def _offsets(widths, plane):
    """int64 (n_nodes * n_channels + 1,): where each (node, channel)'s
    byte planes start in the packed data (plane: values per plane)."""
    sizes = widths.astype(np.int64).ravel() * plane
    return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)


@kernel_jit()
def _widths(hist, widths):
    """widths uint8 (n_nodes, C) OUT: the bytes that hold every value of
    each (node, channel) of hist int64 (n_nodes, F, B, C) IN in two's
    complement."""
    n_nodes, n_features, n_bins, n_channels = hist.shape
    for node in range(n_nodes):
        for c in range(n_channels):
            bits = np.uint64(0)
            for f in range(n_features):
                for b in range(n_bins):
                    v = hist[node, f, b, c]
                    bits |= np.uint64(v ^ (v >> 63))     # v, or ~v where negative
            length = 0
            while bits != np.uint64(0):
                bits >>= np.uint64(1)
                length += 1
            widths[node, c] = (length + 8) // 8           # and a sign bit


@kernel_jit()
def _pack(hist, widths, offsets, data):
    """data uint8 OUT: the byte planes of hist int64 (n_nodes, F, B, C) IN
    at widths uint8 (n_nodes, C) IN, from offsets int64 IN."""
    n_nodes, n_features, n_bins, n_channels = hist.shape
    plane = n_features * n_bins
    for node in range(n_nodes):
        for c in range(n_channels):
            start = offsets[node * n_channels + c]
            for f in range(n_features):
                row = start + f * n_bins
                for k in range(widths[node, c]):
                    shift = np.uint64(8 * k)
                    first = row + k * plane
                    for b in range(n_bins):
                        data[first + b] = np.uint8((np.uint64(hist[node, f, b, c]) >> shift)
                                                   & np.uint64(255))


@kernel_jit()
def _add_packed(total, out, rows, widths, offsets, data, bits):
    """out[rows[j]] int64 (m, F, B, C) OUT = total[j] (int64 (n_nodes, F, B,
    C) IN; ``out`` may be ``total`` with rows 0 .. n_nodes-1) + the
    sign-extended values of the byte planes ``data`` uint8 IN (widths uint8
    (n_nodes, C), offsets int64 IN, as :func:`_pack`); rows int64 IN; bits
    uint64 (B,) scratch."""
    n_nodes, n_features, n_bins, n_channels = total.shape
    plane = n_features * n_bins
    for node in range(n_nodes):
        row_out = rows[node]
        for c in range(n_channels):
            start = offsets[node * n_channels + c]
            width = widths[node, c]
            unused = np.uint64(64 - 8 * width)
            for f in range(n_features):
                row = start + f * n_bins
                for b in range(n_bins):
                    bits[b] = np.uint64(data[row + b])
                for k in range(1, width):
                    shift = np.uint64(8 * k)
                    first = row + k * plane
                    for b in range(n_bins):
                        bits[b] |= np.uint64(data[first + b]) << shift
                for b in range(n_bins):
                    # the top byte's sign bit extended over the unused high bits
                    out[row_out, f, b, c] = (total[node, f, b, c]
                                             + (np.int64(bits[b] << unused)
                                                >> np.int64(unused)))
