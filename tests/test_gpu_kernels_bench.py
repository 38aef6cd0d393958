"""benchmarks/gpu_kernels.py's planning on the CPU: the level shapes it takes
from a real fit, the arrays it builds for them, and its refusal without a GPU
(its timings need one)."""
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import gpu_kernels as bench  # noqa: E402


@pytest.fixture(scope="module")
def tree():
    return bench.shape_tree(4000)


def test_scaled_sizes_keep_the_proportions_and_the_total():
    rng = np.random.default_rng(0)
    for n_rows in (1, 999, 7_040_000):
        fractions = rng.dirichlet(np.ones(37)) * 0.9
        sizes = bench.scaled_sizes(fractions, n_rows)
        assert sizes.sum() == round(0.9 * n_rows) or abs(sizes.sum() - 0.9 * n_rows) <= 1
        assert np.all(np.abs(sizes - fractions * n_rows) < 1)


def test_the_smaller_sibling_is_built():
    sizes = np.array([5, 9, 7, 7, 10, 2])
    assert bench.smaller_siblings(sizes, 3).tolist() == [True, False, True, False, False, True]
    assert bench.smaller_siblings(np.array([11]), 0).tolist() == [True]


def test_level_shapes_follow_the_tree(tree):
    assert tree.depth.max() == bench.SHAPE_DEPTH
    previous = None
    for level in range(bench.SHAPE_DEPTH):
        shape = bench.level_shape(tree, level, 7_040_000)
        counts = tree.n_node_samples[tree.depth == level]
        assert shape.sizes.size == counts.size
        assert np.all(np.abs(shape.sizes - counts * 7_040_000 / tree.n_node_samples[0]) < 1)
        built = shape.sizes[shape.built]
        assert shape.rows_built == built.sum() <= shape.sizes.sum() // 2 + 1 or level == 0
        if previous is not None:  # a level holds at most the rows of the one above
            assert shape.sizes.sum() <= previous.sizes.sum() + shape.sizes.size
        previous = shape


@pytest.mark.parametrize("stats_kind, n_channels", [("newton", 3), ("counts", 2)])
def test_level_arrays_put_each_node_its_rows(tree, stats_kind, n_channels):
    shape = bench.level_shape(tree, 4, 5000)
    X, stats, positions, node_to_build, n_build = bench.level_arrays(shape, 5000, 6, 300,
                                                                     stats_kind)
    assert X.dtype == np.uint16 and X.flags.f_contiguous and X.max() < 300
    assert stats.stats.shape == (5000, n_channels) and stats.stats.dtype == np.int64
    for k, size in enumerate(shape.sizes):
        assert (positions == shape.level_start + k).sum() == size
    assert (positions == -1).sum() == 5000 - shape.sizes.sum()
    assert sorted(node_to_build[shape.built]) == list(range(n_build))
    assert (node_to_build[~shape.built] == -1).all()


def test_byte_model_reads_fewer_rows_by_node(tree):
    shape = bench.level_shape(tree, 7, 1_000_000)
    walk = bench.histogram_bytes("global", shape, 1_000_000, 28, 1, 3)
    by_node = bench.histogram_bytes("node", shape, 1_000_000, 28, 1, 3)
    assert by_node == shape.rows_built * (28 + 24 + 8) < walk
    assert bench.partition_bytes(shape) == 32 * shape.sizes.sum()


def test_refuses_clearly_without_a_gpu(capsys):
    from gputree.backends import cuda_available
    if cuda_available():
        pytest.skip("a GPU is usable here")
    assert bench.main(["--rows", "1000"]) == 2
    assert "needs an NVIDIA GPU" in capsys.readouterr().err


def test_rejects_levels_beyond_the_shape_tree():
    with pytest.raises(SystemExit):
        bench.parse_args(["--levels", "8"])
