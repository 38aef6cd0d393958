"""gputree benchmarks: an airspeed-velocity (asv) suite (``bench_*.py``, run
with ``asv run --python=same --quick`` from the repository root) and
``compare.py``, gputree side by side with LightGBM, XGBoost and scikit-learn.
See the Performance section of the README."""
