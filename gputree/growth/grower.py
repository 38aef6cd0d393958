"""Which grower grows a tree of given :class:`gputree.growth.params.GrowthParams`:
best first (:mod:`gputree.growth.bestfirst`) or level by level
(:mod:`gputree.growth.levelwise`; on small data the same tree grown best
first, :mod:`gputree.growth.level_order`); the estimators' one entry point."""
from . import level_order
from .bestfirst import grow_best_first
from .levelwise import grow_tree


def grow(backend, data, stats, growth, rng, pool=None, held_row_bytes=0):
    """Grow one tree (arguments and result as :func:`gputree.growth.levelwise.grow_tree`)."""
    if growth.best_first:
        grower = grow_best_first
    elif level_order.applies(backend, data, stats, growth):
        grower = level_order.grow_in_level_order
    else:
        grower = grow_tree
    return grower(backend, data, stats, growth, rng, pool, held_row_bytes)
