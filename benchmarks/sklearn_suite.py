"""Run one of scikit-learn's own test modules with gputree's estimators in
place of scikit-learn's, and report how many tests pass and which fail: the
machinery shared by ``sklearn_tree_suite.py`` (``sklearn/tree/tests/test_tree.py``)
and ``sklearn_forest_suite.py`` (``sklearn/ensemble/tests/test_forest.py``).

A :class:`Suite` names the scikit-learn package whose classes are rebound
(``substitutes``: scikit-learn name -> gputree attribute) before the test
module is imported, so its ``from sklearn.<package> import X`` gets
gputree's class; the scikit-learn classes gputree does not provide
(``not_provided``), whose tests are deselected: a test whose id names one of
them, or an unparametrised test whose source names one of them and none of
the substituted ones; and the tests expected to fail, with why
(``known_failures``, id prefixes). :func:`run_suite` exits 1 when another
test fails, so a suite script can serve as a check.
"""
import inspect
import os
import sys
import tempfile
from dataclasses import dataclass, field
from importlib import import_module
from pathlib import Path

import pytest

# the gputree of this checkout, not an installed one
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


#: the scikit-learn version the suites' known failures were recorded with
#: (another version's test modules may hold other tests)
RECORDED_WITH = "1.9.1"


@dataclass
class Suite:
    """One scikit-learn test module run against gputree's classes."""

    package: str                    # "sklearn.tree": where the classes are rebound
    test_module: str                # "test_tree.py", in <package>/tests/
    substitutes: dict               # scikit-learn name -> gputree attribute
    not_provided: tuple = ()        # scikit-learn names whose tests are deselected
    known_failures: dict = field(default_factory=dict)   # test-id prefix -> why

    def substitute(self):
        """Rebind ``<package>.<name>`` to gputree's classes."""
        import gputree
        package = import_module(self.package)
        for sklearn_name, gputree_name in self.substitutes.items():
            setattr(package, sklearn_name, getattr(gputree, gputree_name))

    def test_file(self):
        tests = import_module(self.package + ".tests")
        return os.path.join(os.path.dirname(tests.__file__), self.test_module)

    def tests_missing_class(self, item):
        """Whether ``item`` tests a class gputree does not provide."""
        if any(name in item.nodeid for name in self.not_provided):
            return True
        if any(name in item.nodeid for name in self.substitutes):
            return False
        try:
            source = inspect.getsource(item.function)
        except (OSError, TypeError, AttributeError):
            return False
        return (any(name in source for name in self.not_provided)
                and not any(name in source for name in self.substitutes))

    def known_reason(self, test_id):
        for prefix, reason in self.known_failures.items():
            if test_id.startswith(prefix):
                return reason
        return None


class SuitePlugin:
    """Deselects the tests of classes gputree lacks; records the outcomes."""

    def __init__(self, suite):
        self.suite = suite
        self.passed, self.failed, self.skipped = [], [], []

    def pytest_collection_modifyitems(self, config, items):
        dropped = [item for item in items if self.suite.tests_missing_class(item)]
        items[:] = [item for item in items if not self.suite.tests_missing_class(item)]
        config.hook.pytest_deselected(items=dropped)

    def pytest_runtest_logreport(self, report):
        name = report.nodeid.split("::", 1)[-1]
        if report.when == "call" or report.outcome != "passed":
            if report.outcome == "failed" and name not in self.failed:
                self.failed.append(name)
            elif report.when == "call" and report.outcome == "passed":
                self.passed.append(name)
            elif report.outcome == "skipped":
                self.skipped.append(name)


def run_suite(suite, argv):
    """Run ``suite`` (extra pytest arguments ``argv``), print the counts and
    the failing ids; 1 when a test not in ``known_failures`` failed, else 0."""
    suite.substitute()
    plugin = SuitePlugin(suite)
    with tempfile.TemporaryDirectory() as cache:
        pytest.main([suite.test_file(), "-q", "-p", "no:cacheprovider", "--no-header",
                     "-o", f"cache_dir={cache}", "-W", "ignore"] + list(argv),
                    plugins=[plugin])
    total = len(plugin.passed) + len(plugin.failed)
    print(f"\nscikit-learn {import_module('sklearn').__version__} {suite.test_module} with "
          f"gputree's {', '.join(suite.substitutes)}: {len(plugin.passed)} of {total} passed, "
          f"{len(plugin.failed)} failed, {len(plugin.skipped)} skipped")
    unexpected = []
    for name in plugin.failed:
        reason = suite.known_reason(name)
        print(f"  FAILED {name}" + (f"  (expected: {reason})" if reason else ""))
        if reason is None:
            unexpected.append(name)
    return 1 if unexpected else 0
