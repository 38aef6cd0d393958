"""Which grower grows a tree of given :class:`gputree.growth.params.GrowthParams`:
best first (:mod:`gputree.growth.bestfirst`) or level by level
(:mod:`gputree.growth.levelwise`); the estimators' one entry point."""
from .bestfirst import grow_best_first
from .levelwise import grow_tree


def grow(backend, data, stats, growth, rng, pool=None, held_row_bytes=0):
    """Grow one tree (arguments and result as :func:`gputree.growth.levelwise.grow_tree`)."""
    grower = grow_best_first if growth.best_first else grow_tree
    return grower(backend, data, stats, growth, rng, pool, held_row_bytes)
