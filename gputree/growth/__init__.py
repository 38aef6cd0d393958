"""Growing one tree from binned data and fixed-point statistics through a
backend: level-wise binary growth (:mod:`.levelwise`), multiway splits
(:mod:`.multiway`), exact absolute-error splits (:mod:`.median`), and what
they share (:mod:`.params`, :mod:`.policy`, :mod:`.histogram_pool`); the
trees' surrogate splits, pruning and boosting constraints."""
