"""The estimator profiles whose first fit compiles in the background
(:mod:`gputree.backends.prewarm`), and their recording: each profile's fit
in a fresh process on a new cache, with no helper, lists the kernels it
uses and the seconds each took to compile (the helper's order is computed
from them); ``python -m gputree.estimators.compile_profiles`` writes them to the
manifest (after a change of which kernels a fit uses; ``tests/test_prewarm.py``
fails until then).
"""
import json
import os
import subprocess
import sys

from ..backends import compile_manifest, prewarm

#: the recorded profiles: name -> (estimator class, parameters, regression)
PROFILES = {
    "tree_c": ("DecisionTreeClassifier", {}, False),
    "tree_r": ("DecisionTreeRegressor", {}, True),
    "forest_c": ("RandomForestClassifier", {"n_estimators": 4}, False),
    "forest_r": ("RandomForestRegressor", {"n_estimators": 4}, True),
    "gbdt_c": ("GradientBoostingClassifier", {"n_estimators": 4}, False),
    "gbdt_r": ("GradientBoostingRegressor", {"n_estimators": 4}, True),
}


def profile_data(regression, rows=300_000, features=20, dtype="float32"):
    """The data a profile is recorded on: (X, y), a fixed random draw."""
    import numpy as np
    rng = np.random.RandomState(0)
    X = rng.normal(size=(rows, features)).astype(dtype)
    signal_ = X[:, 0] + 0.5 * X[:, 1] * X[:, 2]
    y = signal_ + rng.normal(size=rows) if regression else (signal_ > 0).astype(np.int64)
    return X, y


def record_profile(profile, dtype="float32"):
    """(manifest entry, kernels used) of one profile's fit in this process."""
    from .boosting import GradientBoostingClassifier, GradientBoostingRegressor
    from .forest import RandomForestClassifier, RandomForestRegressor
    from .tree import DecisionTreeClassifier, DecisionTreeRegressor
    classes = (DecisionTreeClassifier, DecisionTreeRegressor, RandomForestClassifier,
               RandomForestRegressor, GradientBoostingClassifier, GradientBoostingRegressor)
    name, params, regression = PROFILES[profile]
    # the free parameters small: the fit uses the same kernels, sooner
    cls = next(cls for cls in classes if cls.__name__ == name)
    estimator = cls(**dict(_RECORD_FREE, **params))
    X, y = profile_data(regression, dtype=dtype)
    kept = {key: value for key, value in estimator.get_params(deep=False).items()
            if key not in prewarm.FREE_PARAMETERS}
    kernels, seconds = prewarm.record(lambda: estimator.fit(X, y))
    # binning meets X's dtype first: the fit compiles it before a helper is up
    kept_kernels = [i for i, entry in enumerate(kernels) if not entry[0].startswith(_BINNING)]
    return dict(estimator=name, params=kept, kernels=[kernels[i] for i in kept_kernels],
                seconds=[seconds[i] for i in kept_kernels])


_BINNING = "gputree.backends.cpu.binning:"
_RECORD_FREE = {"max_depth": 8}


def write_manifest(profiles=tuple(PROFILES)):
    """Record every profile (each in a fresh process on a new, empty cache,
    so that each kernel's compile seconds are measured, with no helper) and
    write the manifest (``compile_manifest.MANIFEST_FILE``)."""
    import tempfile
    recorded = {}
    for profile in profiles:
        with tempfile.TemporaryDirectory(prefix="gputree-prewarm-") as cache:
            env = dict(os.environ, NUMBA_CACHE_DIR=cache, **{prewarm.ENV: "0"})
            result = subprocess.run([sys.executable, "-m", __spec__.name, "--record", profile],
                                    env=env, capture_output=True, text=True, check=True)
            recorded[profile] = json.loads(result.stdout.strip().splitlines()[-1])
    compile_manifest.write_manifest(recorded)
    return recorded


def main(argv):
    if argv and argv[0] == "--record":
        # one profile per fresh process, so each records every kernel it uses
        print(json.dumps(record_profile(*argv[1:])))
        return
    write_manifest(tuple(argv) or tuple(PROFILES))


if __name__ == "__main__":
    main(sys.argv[1:])
