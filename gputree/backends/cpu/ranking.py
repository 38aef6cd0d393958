"""The CPU's ranking pass: every query's LambdaMART gradients and NDCG
(:mod:`gputree.backends.lambdarank`, the code the CUDA backend runs),
parallel over queries; each query is one thread's, so no two threads write
the same row."""
import functools

from numba import prange

from ..kernel_cache import cache_numba_cpu_kernels
from ..lambdarank import make_query_terms
from .jit import plain_jit
from .stages import staged

# the kernel also compiles lambdarank.py and devmath.py: its cache covers them
cache_numba_cpu_kernels(__file__)

#: IEEE division (no zero-divisor check: none of the pass's divisors is 0), which
#: lets the compiler vectorize the pair loop (6.2 -> 3.5 ns a pair, 90k rows)
_query_terms = make_query_terms(functools.partial(plain_jit, error_model="numpy"))


@staged
def query_terms(starts, scores, labels, gains, discounts, inv_ideal, inv_ideal_eval, sigma,
                truncation, eval_k, flags, order, buffer, work, g, h, ndcg):
    """Every query's terms (arguments as lambdarank.make_query_terms)."""
    for q in prange(starts.shape[0] - 1):
        _query_terms(q, starts, scores, labels, gains, discounts, inv_ideal, inv_ideal_eval,
                     sigma, truncation, eval_k, flags, order, buffer, work, g, h, ndcg)
