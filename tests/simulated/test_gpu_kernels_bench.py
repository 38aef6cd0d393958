"""benchmarks/gpu_kernels.py end to end on the simulated device (its times are
the CPU's and mean nothing; this checks that the GPU run's table will come
out: every primitive and variant of every level, "auto" marked)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from benchmarks import gpu_kernels  # noqa: E402
from gputree.backends import get_backend  # noqa: E402


def test_the_table_has_every_primitive_and_variant(capsys):
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-4)     # the simulator's barriers (the block scan's) run faster
    try:
        assert gpu_kernels.main(["--device", "cuda-sim", "--rows", "2000", "--levels", "0",
                                 "2", "--repeat", "1", "--shape-rows", "2000", "--bins", "16",
                                 "--scan-threads", "8"]) == 0
    finally:
        sys.setswitchinterval(previous)
    lines = capsys.readouterr().out.splitlines()
    rows = [line.split(" | ") for line in lines[3:]]
    for level in ("0", "2"):
        cells = [(r[4], r[5]) for r in rows if r[1] == level]
        expected = [("build_histograms", v) for v in gpu_kernels.HISTOGRAM_VARIANTS]
        expected += [("partition_rows", "")] if level != "0" else []
        expected += [("update_positions", "")]
        expected += [("find_best_splits", v) for v in ("thread", "block")]
        assert cells == expected
        # the simulated device's "auto" scans thread by thread (a GPU's by block)
        assert [r[5] for r in rows if r[1] == level and r[9] == "<- auto"] == ["node", "thread"]
        assert [r[10].split(" x ")[1] for r in rows if r[1] == level and r[5] == "block"] == [
            "8 threads"]
    assert all(float(r[6]) > 0 for r in rows)


def test_the_forest_table_times_each_batch_option(capsys):
    rows = gpu_kernels.bench_forest(get_backend("cuda-sim"), 300, 3, 2, [1, 2, "all"])
    assert [r["batch"] for r in rows] == [1, 2, "all"]
    assert [r["chosen"] for r in rows] == [1, 2, 3]
    assert all(r["same"] for r in rows)
    # a histogram launch per wide level: 2 levels, 3, 2 and 1 batches
    assert [r["builds"] for r in rows] == [6, 4, 2]
    gpu_kernels.print_forest_table(rows)
    assert len(capsys.readouterr().out.splitlines()) == 2 + len(rows)
