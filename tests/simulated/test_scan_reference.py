"""The numba.cuda split-scan kernel, run by numba's CUDA simulator, against
the plain-numpy brute-force reference on random small datasets (NaNs,
categoricals, weights, every criterion) — the same check as the CPU scan's."""
from hypothesis import given, settings

import reference
from gputree.backends import get_backend
from test_splitting import check_scan_against_brute_force


@settings(max_examples=15, deadline=None, derandomize=True)
@given(case=reference.small_datasets())
def test_simulated_scan_equals_brute_force(case):
    check_scan_against_brute_force(get_backend("cuda-sim"), case)
