"""Histograms packed for the wire between workers: exact, and as small as
their values allow (the bins that are zero in every channel not sent)."""
import numpy as np
import pytest

from gputree.dask.packed_histograms import add_packed, pack


def _bytes_needed(values):
    """Brute force: the fewest bytes holding every value in two's complement."""
    for width in range(1, 9):
        low, high = -(1 << (8 * width - 1)), (1 << (8 * width - 1)) - 1
        if all(low <= int(v) <= high for v in values.ravel()):
            return width
    raise AssertionError("no width")


def _check_size(packed, piece):
    """Brute force: a node's bins held are those not zero in some channel;
    it takes a mask of a bit a bin, then its widths' bytes for each."""
    held = (piece != 0).any(axis=3).reshape(piece.shape[0], -1).sum(axis=1)
    np.testing.assert_array_equal(packed.held, held)
    mask_bytes = -(-piece.shape[1] * piece.shape[2] // 8)
    expected = sum(mask_bytes + int(packed.widths[node].sum()) * int(held[node])
                   for node in range(piece.shape[0]))
    assert packed.data.size == expected


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_packed_histograms_add_exactly(seed):
    rng = np.random.default_rng(seed)
    whole = np.zeros((6, 9, 17, 3), dtype=np.int64)
    bits = rng.integers(1, 64, size=(6, 3))
    for node in range(6):
        for c in range(3):
            top = 1 << int(bits[node, c] - 1)
            whole[node, ..., c] = rng.integers(-top, top, size=(9, 17), endpoint=False)
    whole[0, 1, 2, 0] = np.iinfo(np.int64).min       # the extremes of int64
    whole[0, 3, 4, 1] = np.iinfo(np.int64).max
    whole[1, ..., 2] = -1                            # one byte: all ones
    whole[2, ..., 1] = 0
    whole[3, 0, 0, 0], whole[3, 0, 1, 0] = 127, -128     # the edges of one byte
    whole[4, 0, 0, 0] = 128                               # two bytes
    piece = whole[:, 2:7]                            # a feature slice: strided
    packed = pack(piece)
    for node in range(6):
        for c in range(3):
            assert packed.widths[node, c] == _bytes_needed(piece[node, ..., c])
    _check_size(packed, piece)
    start = rng.integers(-(1 << 40), 1 << 40, size=whole.shape)
    total = start.copy()
    add_packed(total[:, 2:7], packed)                # in place, into a strided view
    expected = start.copy()
    expected[:, 2:7] += piece                         # int64 wraps alike
    np.testing.assert_array_equal(total, expected)
    # stored into other rows of another array on the way: out[rows] = start + piece
    out = rng.integers(-5, 5, size=(9, 5, 17, 3))
    kept = out.copy()
    rows = np.array([7, 0, 3, 8, 1, 5])
    add_packed(start[:, 2:7], packed, out, rows)
    kept[rows] = start[:, 2:7] + piece
    np.testing.assert_array_equal(out, kept)


@pytest.mark.parametrize("seed", [0, 1])
def test_packed_histograms_sparse(seed):
    """Mostly empty bins (a deep level's nodes), a node with no bin held, a
    bin zero in one channel only and the very last bin held: exact."""
    rng = np.random.default_rng(seed)
    whole = rng.integers(-(1 << 50), 1 << 50, size=(5, 7, 13, 3))
    whole[rng.random(whole.shape[:3]) < 0.8] = 0       # most bins empty in every channel
    whole[2] = 0                                        # a node with no bin held
    whole[3, 1, 4] = [0, 5, 0]                           # held by one channel
    whole[4, -1, -1] = [-1, 1, 1]                        # the mask's last bit
    packed = pack(whole)
    _check_size(packed, whole)
    assert packed.held[2] == 0
    start = rng.integers(-(1 << 40), 1 << 40, size=whole.shape)
    total = start.copy()
    add_packed(total, packed)
    np.testing.assert_array_equal(total, start + whole)


def test_packed_histograms_refuse_another_shape():
    packed = pack(np.zeros((2, 3, 4, 3), dtype=np.int64))
    with pytest.raises(ValueError, match="cannot be added"):
        add_packed(np.zeros((2, 4, 4, 3), dtype=np.int64), packed)
