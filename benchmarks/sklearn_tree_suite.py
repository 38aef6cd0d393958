"""Run scikit-learn's own tree tests (``sklearn/tree/tests/test_tree.py`` of
the installed scikit-learn) against gputree's trees, and print how many pass
and which fail.

The names in ``SUBSTITUTES`` are rebound in ``sklearn.tree`` before the test
module is imported, so its ``from sklearn.tree import DecisionTreeClassifier``
gets gputree's class (machinery shared with the forest suite:
``benchmarks/sklearn_suite.py``).

    python benchmarks/sklearn_tree_suite.py              # counts and failing ids
    python benchmarks/sklearn_tree_suite.py -k missing   # extra pytest arguments

``KNOWN_FAILURES`` lists the tests expected to fail, with why (see the
README); the script exits 1 when any other test fails.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sklearn_suite import Suite, run_suite  # noqa: E402

#: scikit-learn name -> gputree attribute that replaces it
SUBSTITUTES = {
    "DecisionTreeClassifier": "DecisionTreeClassifier",
    "DecisionTreeRegressor": "DecisionTreeRegressor",
    "ExtraTreeClassifier": "ExtraTreeClassifier",
    "ExtraTreeRegressor": "ExtraTreeRegressor",
}

#: scikit-learn trees without a gputree counterpart: their tests are deselected
NOT_PROVIDED = ()

#: test-id prefixes expected to fail, and why (see the README)
KNOWN_FAILURES = {
    "test_almost_constant_feature": "scikit-learn discards a feature whose range in a node is "
                                    "within 1e-7 (its float32 tolerance); gputree splits "
                                    "float64 values of any scale",
    "test_big_input": "expects a ValueError for values beyond float32; gputree bins float64",
    "test_huge_allocations": "expects a MemoryError from preallocating max_leaf_nodes=2**63-1 "
                             "nodes; gputree allocates the nodes it grows",
    "test_missing_value_errors[": "expects sparse X with NaN refused; gputree takes missing "
                                  "values in sparse X as in dense X",
    "test_build_pruned_tree_": "calls scikit-learn's private Cython _build_pruned_tree_py "
                               "(needs a sklearn.tree._tree.Tree)",
    "test_sample_weight_non_uniform[make_regression-": (
        "rows of weight zero take no part in the gains but still place bin edges (histogram "
        "thresholds lie midway between the values of all rows of X), where scikit-learn drops "
        "them: the 14 of 1000 differing predictions are all rows of weight zero lying in a "
        "gap (README)"),
    "test_random_splitter_missing_values_uses_non_missing_min_max[single-non-missing]": (
        "one non-missing value and missing ones: the split 'the value left, missing right' "
        "has threshold +inf (a bin's upper edge, as the best splitter writes it), where "
        "scikit-learn's random splitter writes the value"),
}

SUITE = Suite("sklearn.tree", "test_tree.py", SUBSTITUTES, NOT_PROVIDED, KNOWN_FAILURES)


if __name__ == "__main__":
    sys.exit(run_suite(SUITE, sys.argv[1:]))
