"""asv: fit and predict of a GradientBoostingClassifier (10 rounds, depth 8,
learning rate 0.1, lambda 1) at 10^4, 10^5 and 10^6 rows x 28 features,
per device.

10 rounds rather than 100 keep a --quick run of the 10^6 cases to minutes on
two CPU cores; compare.py runs 100 rounds against the peers. Skipped while
gputree has no boosting.
"""
from .estimator_suite import FitBenchmark, PredictBenchmark

SETTINGS = dict(n_estimators=10, learning_rate=0.1, max_depth=8, reg_lambda=1.0,
                max_bins=255, early_stopping=False, random_state=0)


class BoostingFit(FitBenchmark):
    estimator = "GradientBoostingClassifier"
    settings = SETTINGS


class BoostingPredict(PredictBenchmark):
    estimator = "GradientBoostingClassifier"
    settings = SETTINGS
