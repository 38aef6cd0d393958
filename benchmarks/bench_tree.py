"""asv: fit and predict of one DecisionTreeClassifier (depth 10, 255 bins; fit also
with 4095 bins, 16-bit codes)
at 10^4, 10^5 and 10^6 rows x 28 features, per device."""
from .estimator_suite import FitBenchmark, PredictBenchmark

SETTINGS = dict(max_depth=10, max_bins=255, random_state=0)


class TreeFit(FitBenchmark):
    estimator = "DecisionTreeClassifier"
    settings = SETTINGS


class TreePredict(PredictBenchmark):
    estimator = "DecisionTreeClassifier"
    settings = SETTINGS


class TreeFitWideBins(FitBenchmark):
    """The same tree with 4095 bins (16-bit bin codes; compare with TreeFit)."""
    estimator = "DecisionTreeClassifier"
    settings = dict(SETTINGS, max_bins=4095)
