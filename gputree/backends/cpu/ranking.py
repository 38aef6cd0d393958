"""The CPU's ranking pass: every query's LambdaMART gradients and NDCG
(:mod:`gputree.backends.lambdarank`, the code the CUDA backend runs), in
parts that claim runs of queries; each query is one part's, so no two
parts write the same row."""
import functools

from ..kernel_cache import cache_numba_cpu_kernels
from ..lambdarank import make_query_terms
from .intrinsics import fetch_add
from .jit import part_bounds, plain_jit
from .threaded import threaded

# the kernel also compiles lambdarank.py and devmath.py: its cache covers them
cache_numba_cpu_kernels(__file__)

#: IEEE division (no zero-divisor check: none of the pass's divisors is 0), which
#: lets the compiler vectorize the pair loop (6.2 -> 3.5 ns a pair, 90k rows)
_query_terms = make_query_terms(functools.partial(plain_jit, error_model="numpy"))


#: runs of consecutive queries a pass's parts claim, per part: a part that
#: starts late (a pool thread woken while the calling thread's part runs,
#: on a machine whose cores are busy) takes fewer (LETOR, depth 6: the
#: calling thread waited 87 us a pass, of 220, for the pool thread's half)
QUERY_RUNS_PER_PART = 8


@threaded(claimed=True)
def query_terms(starts, scores, labels, gains, discounts, inv_ideal, inv_ideal_eval, sigma,
                truncation, eval_k, flags, order, buffer, work, g, h, ndcg, claims, part,
                n_parts):
    """Every query's terms (arguments as lambdarank.make_query_terms), in
    parts that claim runs of consecutive queries (``claims`` int64 (1,)
    INOUT, 0 before the call) until none is left: each query is one
    run's, whichever part claims it."""
    n_queries = starts.shape[0] - 1
    n_runs = min(n_queries, QUERY_RUNS_PER_PART * n_parts)
    while True:
        run = fetch_add(claims, 0, 1)
        if run >= n_runs:
            break
        first, stop = part_bounds(n_queries, run, n_runs)
        for q in range(first, stop):
            _query_terms(q, starts, scores, labels, gains, discounts, inv_ideal, inv_ideal_eval,
                         sigma, truncation, eval_k, flags, order, buffer, work, g, h, ndcg)
