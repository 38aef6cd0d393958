"""Writes the kept model files tests/data/model_v<SCHEMA_VERSION>_<case>.json.

Run once when a schema version is introduced (python tests/data/write_model_fixtures.py);
files of older versions are never rewritten: tests/test_model_io.py checks
that they still load and predict as a refit model does."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), os.path.dirname(os.path.dirname(HERE))]   # tests, root

from model_cases import fitted  # noqa: E402
from gputree.model import SCHEMA_VERSION  # noqa: E402

KEPT = ("tree_classifier", "forest_regressor", "boosting_multiclass")

if __name__ == "__main__":
    for name in KEPT:
        model, _ = fitted(name)
        model.save_model(os.path.join(HERE, f"model_v{SCHEMA_VERSION}_{name}.json"))
