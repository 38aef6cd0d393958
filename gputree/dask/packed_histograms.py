"""int64 histograms packed into the bytes their values need, for the wire
between workers: lossless, so that the receiver adds exactly the sender's
integers.

A fixed-point histogram's int64 values use far fewer than 64 bits: a bin
holds a few rows' scaled gradients (the scale leaves the whole fit's sum
room in int64) and a count; and most bins of a deep level's nodes hold no
row at all (150k x 28 rows, 100 trees of depth 8, two workers: 61% of the
bins sent are zero in every channel). Each node of a histogram (n_nodes,
n_features, n_bins, n_channels) is sent as a bit mask of its bins that are
not zero in every channel (bit ``i`` of byte ``i // 8``, ``i = feature *
n_bins + bin``), then, channel by channel, those bins' values in ``w``
bytes a value, the fewest that hold every value of that (node, channel) in
two's complement (1 to 8), as ``w`` byte planes (plane ``k`` holds byte
``k`` of every value, low byte first: the kernels gather a node's channels
into runs once and loop over the runs, which vectorize). The receiver
sign-extends the values and adds them at the masked bins into its own
histograms in place (:func:`add_packed`).
"""
import numpy as np

from .._threads import kernel_jit


class PackedHistograms:
    """A histogram of ``shape`` (n_nodes, n_features, n_bins, n_channels)
    packed: ``widths`` uint8 (n_nodes, n_channels) bytes a value, ``held``
    int64 (n_nodes,) bins sent a node (its mask's bits set), ``data`` uint8
    node by node: its mask, then its channels' byte planes."""

    def __init__(self, shape, widths, held, data):
        self.shape, self.widths, self.held, self.data = tuple(shape), widths, held, data

    @property
    def nbytes(self):
        return self.widths.nbytes + self.held.nbytes + self.data.nbytes


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
    held = np.empty(n_nodes, dtype=np.int64)
    size = _pack(hist, widths, held, buffer,
                 np.empty((n_channels, n_features * n_bins), dtype=np.uint64))
    return PackedHistograms(hist.shape, widths, held, buffer[:size])


def _mask_bytes(n_features, n_bins):
    """Bytes of a node's mask of n_features * n_bins bits."""
    return (n_features * n_bins + 7) // 8


def packed_capacity(shape):
    """The most bytes :func:`pack` writes for histograms of ``shape`` (a
    node's mask and 8 bytes a value)."""
    n_nodes, n_features, n_bins, n_channels = (int(s) for s in shape)
    return n_nodes * (_mask_bytes(n_features, n_bins) + 8 * n_features * n_bins * n_channels)


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
    # one value past the bins: the masked gather below reads it for a node's last bins
    _add_packed(total, out, np.asarray(rows, dtype=np.int64), packed.widths, packed.held,
                packed.data, np.zeros((n_channels, n_features * n_bins + 1), dtype=np.int64))


@kernel_jit()
def _pack(hist, widths, held, data, values):
    """widths uint8 (n_nodes, C) OUT: the bytes that hold every value of
    each (node, channel) of hist int64 (n_nodes, F, B, C) IN in two's
    complement; held int64 (n_nodes,) OUT: each node's bins not zero in
    every channel; data uint8 OUT: node by node its mask of those bins and
    their values' byte planes (see the module docstring); returns the bytes
    written. values uint64 (C, F * B) scratch: a node's held bins, channel
    by channel, gathered once from hist (branch-free: every bin is written
    at the next free place, which moves on only past a held bin)."""
    n_nodes, n_features, n_bins, n_channels = hist.shape
    nodes, features = np.uint64(n_nodes), np.uint64(n_features)
    bins, channels = np.uint64(n_bins), np.uint64(n_channels)
    mask_bytes = (features * bins + np.uint64(7)) // np.uint64(8)
    start = np.uint64(0)
    for node in range(nodes):
        for i in range(mask_bytes):
            data[start + i] = np.uint8(0)
        count = np.uint64(0)
        for f in range(features):
            row = f * bins
            for b in range(bins):
                nonzero = np.uint64(0)
                for c in range(channels):
                    v = np.uint64(hist[node, f, b, c])
                    values[c, count] = v
                    nonzero |= v
                bit = np.uint64(nonzero != np.uint64(0))
                i = row + b
                at = start + (i >> np.uint64(3))
                data[at] = np.uint8(np.uint64(data[at]) | (bit << (i & np.uint64(7))))
                count += bit
        held[node] = count
        start += mask_bytes
        for c in range(channels):
            seen = np.uint64(0)
            for i in range(count):
                v = values[c, i]
                # v, or ~v where negative (the sign bit spread over every bit)
                seen |= v ^ np.uint64(np.int64(v) >> 63)
            length = 0
            while seen != np.uint64(0):
                seen >>= np.uint64(1)
                length += 1
            width = np.uint64((length + 8) // 8)         # and a sign bit
            widths[node, c] = width
            for k in range(width):
                shift = np.uint64(8) * k
                first = start + k * count
                for i in range(count):
                    data[first + i] = np.uint8((values[c, i] >> shift) & np.uint64(255))
            start += width * count
    return start


@kernel_jit()
def _add_packed(total, out, rows, widths, held, data, values):
    """out[rows[j]] int64 (m, F, B, C) OUT = total[j] (int64 (n_nodes, F, B,
    C) IN; ``out`` may be ``total`` with rows 0 .. n_nodes-1) + the
    sign-extended values of ``data`` uint8 IN at its masks' bins (widths
    uint8 (n_nodes, C), held int64 (n_nodes,) IN, as :func:`_pack`); rows
    int64 IN; values int64 (C, F * B + 1) scratch: a node's held values
    decoded in runs, then added at the bins whose bit is set (branch-free:
    the next value, times the bit)."""
    n_nodes, n_features, n_bins, n_channels = total.shape
    nodes, features = np.uint64(n_nodes), np.uint64(n_features)
    bins, channels = np.uint64(n_bins), np.uint64(n_channels)
    mask_bytes = (features * bins + np.uint64(7)) // np.uint64(8)
    start = np.uint64(0)
    for node in range(nodes):
        mask = start
        count = np.uint64(held[node])
        start += mask_bytes
        for c in range(channels):
            width = np.uint64(widths[node, c])
            unused = np.uint64(64) - np.uint64(8) * width
            for i in range(count):
                values[c, i] = np.int64(data[start + i])
            for k in range(np.uint64(1), width):
                shift = np.uint64(8) * k
                first = start + k * count
                for i in range(count):
                    values[c, i] |= np.int64(np.uint64(data[first + i]) << shift)
            for i in range(count):
                # the top byte's sign bit extended over the unused high bits
                values[c, i] = np.int64(np.uint64(values[c, i]) << unused) >> np.int64(unused)
            start += width * count
        row_out = np.uint64(rows[node])
        k = np.uint64(0)
        for f in range(features):
            row = f * bins
            for b in range(bins):
                i = row + b
                bit = (np.uint64(data[mask + (i >> np.uint64(3))]) >> (i & np.uint64(7))) & \
                    np.uint64(1)
                for c in range(channels):
                    out[row_out, f, b, c] = total[node, f, b, c] + \
                        values[c, k] * np.int64(bit)
                k += bit
    return start
