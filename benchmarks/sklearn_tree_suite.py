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
KNOWN_FAILURES = {}

SUITE = Suite("sklearn.tree", "test_tree.py", SUBSTITUTES, NOT_PROVIDED, KNOWN_FAILURES)


if __name__ == "__main__":
    sys.exit(run_suite(SUITE, sys.argv[1:]))
