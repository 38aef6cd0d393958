"""asv: fit and predict of a RandomForestClassifier (10 trees, depth 10,
sqrt features) at 10^4, 10^5 and 10^6 rows x 28 features, per device.

10 trees rather than 100 keep a --quick run of the 10^6 cases to minutes on
two CPU cores; per-tree cost is what the suite tracks, and compare.py runs
100 trees against the peers. Skipped while gputree has no forest.
"""
from .estimator_suite import FitBenchmark, PredictBenchmark

SETTINGS = dict(n_estimators=10, max_depth=10, max_features="sqrt",
                max_bins=255, random_state=0)


class ForestFit(FitBenchmark):
    estimator = "RandomForestClassifier"
    settings = SETTINGS


class ForestPredict(PredictBenchmark):
    estimator = "RandomForestClassifier"
    settings = SETTINGS
