"""The CPU's ranking pass: every query's LambdaMART gradients and NDCG
(:mod:`gputree.backends.lambdarank`, the code the CUDA backend runs), in
parts over queries; each query is one part's, so no two parts write the
same row."""
import functools

from ..kernel_cache import cache_numba_cpu_kernels
from ..lambdarank import make_query_terms
from .jit import part_bounds, plain_jit
from .threaded import threaded

# the kernel also compiles lambdarank.py and devmath.py: its cache covers them
cache_numba_cpu_kernels(__file__)

#: IEEE division (no zero-divisor check: none of the pass's divisors is 0), which
#: lets the compiler vectorize the pair loop (6.2 -> 3.5 ns a pair, 90k rows)
_query_terms = make_query_terms(functools.partial(plain_jit, error_model="numpy"))


@threaded
def query_terms(starts, scores, labels, gains, discounts, inv_ideal, inv_ideal_eval, sigma,
                truncation, eval_k, flags, order, buffer, work, g, h, ndcg, part, n_parts):
    """Every query's terms (arguments as lambdarank.make_query_terms), in
    parts over queries."""
    first, stop = part_bounds(starts.shape[0] - 1, part, n_parts)
    for q in range(first, stop):
        _query_terms(q, starts, scores, labels, gains, discounts, inv_ideal, inv_ideal_eval,
                     sigma, truncation, eval_k, flags, order, buffer, work, g, h, ndcg)
