"""gputree side by side with LightGBM, XGBoost and scikit-learn: the same data
and settings through every library in one run, printing fit and predict
seconds (median of --repeat runs), ratios peer / gputree (above 1: gputree is
faster) and held-out quality (AUC and accuracy, or RMSE).

    python benchmarks/compare.py --list
    python benchmarks/compare.py tree --rows 1000000
    python benchmarks/compare.py gbdt forest --rows 20000 --repeat 1

Scenarios (``SCENARIOS`` below; every one takes ``--rows``):

* ``tree``    (a) one tree of depth 10 on the synthetic task
* ``gbdt``    (b) 100 boosted trees, depth 8, learning rate 0.1, lambda 1
* ``forest``  (c) 100-tree random forests, depth 10, sqrt(features) per split
* ``predict`` (d) predicting with 100 boosted trees on half the rows
* ``memory``  (e) peak memory of one fit, each in its own process
* ``real``    (f) the Titanic data (categorical columns, missing values)
* ``regression`` one regression tree of depth 10 (quality: RMSE)
* ``dask``    boosting on a local Dask cluster of 2 worker processes
  (gputree.dask vs xgboost.dask and LightGBM's DaskLGBMClassifier; X in 4
  partitions; each library on fresh worker processes, the first fit timed
  among the ``--repeat`` ones; fit seconds, and AUC of predictions made on
  the cluster)
* ``rank``    learning to rank (LambdaMART, 100 trees): GradientBoostingRanker
  vs LGBMRanker and XGBRanker on synthetic queries (``--rows``, default
  120,000), or with ``--data DIR`` on LETOR-style files as LightGBM's
  examples/lambdarank ships them (rank.train, rank.test, *.query); quality:
  NDCG@10 and NDCG@5 of the held-out queries (a query without a relevant
  row counts 1, as LightGBM and XGBoost count it)
* ``dask-rank`` LambdaMART on the same cluster (the ``rank`` scenario's
  synthetic queries, partitions of whole queries): DaskGradientBoostingRanker
  vs LightGBM's DaskLGBMRanker and XGBoost's DaskXGBRanker
* ``categories`` a pandas ``category`` column of 2,000 levels (each its own
  effect on y) and one numerical column, 40,000 training rows, 50 boosting
  rounds: gputree (LightGBM's categorical search) vs LightGBM (its
  defaults, and gputree's tree shape: depth 6, 64 leaves) and XGBoost
  (``enable_categorical``); ``categories20k``: 20,000 levels, 400,000 rows

gputree runs on every device usable here (``--devices``), with its numba
kernels compiled on a few rows before any timing. Every library gets
``--threads`` threads (default 2): n_jobs for LightGBM, XGBoost and
scikit-learn's forests, threadpoolctl for OpenMP (scikit-learn's
HistGradientBoosting), ``numba.set_num_threads`` for gputree. A gputree
estimator that does not exist yet is listed as skipped, with the reason.
"""
import argparse
import gc
import importlib
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

if __package__ in (None, ""):      # run as a script: import this folder as a package
    sys.path.append(str(Path(__file__).resolve().parents[1]))
    __package__ = "benchmarks"

from .common import (N_FEATURES, WARM_UP_ROWS, current_rss_bytes,  # noqa: E402
                     device_unavailable, gputree_estimator, peak_rss_bytes,
                     reset_peak_rss, set_threads, warm_up)
from .datasets import (letor_files, many_categories, synthetic, synthetic_ranking,  # noqa: E402
                       titanic)

LIBRARY_NAMES = {"gputree": "gputree", "sklearn": "scikit-learn",
                 "lightgbm": "LightGBM", "xgboost": "XGBoost"}
#: features tried per split in random forests, as a fraction (sqrt of 28)
SQRT_FRACTION = round(math.sqrt(N_FEATURES) / N_FEATURES, 4)


@dataclass(frozen=True)
class Runner:
    """One model of one library: a row of the tables.

    estimator: "package.module.Class" ("gputree.Name" for gputree, which
    gets one row per device); params: its settings; threads: the name of its
    thread-count parameter (None: set process-wide); categorical: "pandas"
    (takes ``category`` columns) or "codes" (float codes, NaN missing).
    """

    label: str
    estimator: str
    params: dict
    threads: str = None
    categorical: str = "pandas"
    queries: str = None             # rankers: how fit takes the queries, "group" or "qid"

    @property
    def library(self):
        return self.estimator.split(".")[0]

    @property
    def title(self):
        return f"{LIBRARY_NAMES[self.library]} {self.label}"

    def settings(self, threads, device=None):
        params = dict(self.params)
        if self.threads:
            params[self.threads] = threads
        if self.library == "gputree":
            params["device"] = device
        return params

    def factory(self, threads, device=None):
        """A no-argument function building a fresh estimator; ImportError
        (saying why) when the estimator is not installed or not written yet."""
        module, _, name = self.estimator.rpartition(".")
        cls = (gputree_estimator(name) if module == "gputree"
               else getattr(importlib.import_module(module), name))
        params = self.settings(threads, device)
        return lambda: cls(**params)

    def describe(self, threads, device=None):
        params = ", ".join(f"{k}={v!r}" for k, v in self.settings(threads, device).items())
        return f"{self.title}: {self.estimator.rpartition('.')[2]}({params})"


@dataclass(frozen=True)
class Group:
    """Runners compared with each other; ratios are to its gputree row."""

    title: str
    runners: tuple


@dataclass(frozen=True)
class Scenario:
    title: str
    groups: tuple
    data: str = "synthetic"        # "synthetic", "regression", "titanic" or "ranking"
    rows: int = 100_000            # default of --rows (rows in all, before the split)
    test_size: float = 0.25
    memory: bool = False           # measure peak memory instead of speed
    cluster: bool = False          # fit dask arrays on a local Dask cluster
    categories: int = 0            # data "categories": levels of its categorical column


SEED = dict(random_state=0)
LIGHTGBM_ONE_TREE = dict(n_estimators=1, learning_rate=1.0, max_depth=10, num_leaves=1024,
                         max_bin=255, min_child_samples=1, reg_lambda=0.0, verbose=-1, **SEED)
XGBOOST_ONE_TREE = dict(n_estimators=1, learning_rate=1.0, max_depth=10, tree_method="hist",
                        max_bin=256, min_child_weight=0.0, reg_lambda=0.0,
                        enable_categorical=True, **SEED)


def one_tree(kind):
    """One depth-10 tree from every library; kind: "Classifier" or "Regressor"."""
    what = "tree" if kind == "Classifier" else "regression tree"
    return Group(f"one {what}, depth 10, 256 bins (255 + missing)", (
        Runner(f"DecisionTree{kind}", f"gputree.DecisionTree{kind}",
               dict(max_depth=10, max_bins=255, **SEED)),
        Runner(f"DecisionTree{kind} (exact)", f"sklearn.tree.DecisionTree{kind}",
               dict(max_depth=10, **SEED), categorical="codes"),
        Runner("1 tree (gbdt, lr 1)", f"lightgbm.LGBM{kind}", LIGHTGBM_ONE_TREE,
               threads="n_jobs"),
        Runner("1 tree (hist, lr 1)", f"xgboost.XGB{kind}", XGBOOST_ONE_TREE,
               threads="n_jobs"),
    ))


ONE_TREE = one_tree("Classifier")
ONE_REGRESSION_TREE = one_tree("Regressor")
GBDT_SETTINGS = dict(n_estimators=100, learning_rate=0.1, max_depth=8)
LIGHTGBM_GBDT = Runner("100 trees, num_leaves=256", "lightgbm.LGBMClassifier",
                       dict(GBDT_SETTINGS, num_leaves=256, reg_lambda=1.0, max_bin=255,
                            verbose=-1, **SEED), threads="n_jobs")
XGBOOST_GBDT = Runner("100 trees (hist)", "xgboost.XGBClassifier",
                      dict(GBDT_SETTINGS, reg_lambda=1.0, tree_method="hist", max_bin=256,
                           enable_categorical=True, **SEED), threads="n_jobs")
GPUTREE_GBDT = Runner("GradientBoostingClassifier", "gputree.GradientBoostingClassifier",
                      dict(GBDT_SETTINGS, reg_lambda=1.0, max_bins=255,
                           early_stopping=False, **SEED))
GBDT = Group("gradient boosting, 100 trees, depth 8, learning rate 0.1, lambda 1", (
    GPUTREE_GBDT,
    LIGHTGBM_GBDT,
    Runner("100 trees, default num_leaves=31", "lightgbm.LGBMClassifier",
           dict(GBDT_SETTINGS, num_leaves=31, reg_lambda=1.0, max_bin=255, verbose=-1,
                **SEED), threads="n_jobs"),
    XGBOOST_GBDT,
    Runner("HistGradientBoostingClassifier",
           "sklearn.ensemble.HistGradientBoostingClassifier",
           dict(max_iter=100, learning_rate=0.1, max_depth=8, max_leaf_nodes=None,
                l2_regularization=1.0, max_bins=255, early_stopping=False, **SEED)),
))
FOREST = Group("random forest, 100 trees, depth 10, sqrt(features) per split", (
    Runner("RandomForestClassifier", "gputree.RandomForestClassifier",
           dict(n_estimators=100, max_depth=10, max_features="sqrt", max_bins=255, **SEED)),
    Runner("RandomForestClassifier (exact)", "sklearn.ensemble.RandomForestClassifier",
           dict(n_estimators=100, max_depth=10, max_features="sqrt", **SEED),
           threads="n_jobs", categorical="codes"),
    Runner(f"rf mode (bagging 0.632, feature_fraction_bynode {SQRT_FRACTION})",
           "lightgbm.LGBMClassifier",
           dict(boosting_type="rf", n_estimators=100, max_depth=10, num_leaves=1024,
                bagging_freq=1, bagging_fraction=0.632, feature_fraction_bynode=SQRT_FRACTION,
                min_child_samples=1, reg_lambda=0.0, max_bin=255, verbose=-1, **SEED),
           threads="n_jobs"),
    Runner(f"XGBRFClassifier (subsample 0.632, colsample_bynode {SQRT_FRACTION})",
           "xgboost.XGBRFClassifier",
           dict(n_estimators=100, max_depth=10, subsample=0.632,
                colsample_bynode=SQRT_FRACTION, tree_method="hist", max_bin=256,
                min_child_weight=0.0, enable_categorical=True, **SEED), threads="n_jobs"),
))
DASK_GBDT = Group("gradient boosting on a 2-worker Dask cluster, 100 trees, depth 8", (
    Runner("DaskGradientBoostingClassifier", "gputree.dask.DaskGradientBoostingClassifier",
           dict(n_estimators=100, max_depth=8, learning_rate=0.1, reg_lambda=1.0,
                min_samples_leaf=1, max_bins=255, **SEED)),
    Runner("DaskXGBClassifier", "xgboost.dask.DaskXGBClassifier",
           dict(n_estimators=100, max_depth=8, learning_rate=0.1, reg_lambda=1.0,
                tree_method="hist", max_bin=256, min_child_weight=0.0, **SEED)),
    Runner("DaskLGBMClassifier", "lightgbm.DaskLGBMClassifier",
           dict(n_estimators=100, max_depth=8, num_leaves=255, learning_rate=0.1,
                reg_lambda=1.0, max_bin=255, min_child_samples=1, verbose=-1, **SEED)),
))
PREDICT = Group("predict with 100 boosted trees of depth 8",
                (GPUTREE_GBDT, XGBOOST_GBDT, LIGHTGBM_GBDT))
RANK_SETTINGS = dict(n_estimators=100, learning_rate=0.1, **SEED)
RANK = Group("LambdaMART, 100 trees, learning rate 0.1, lambda 1, pairs from the top 30", (
    Runner("GradientBoostingRanker (depth 6)", "gputree.GradientBoostingRanker",
           dict(RANK_SETTINGS, max_depth=6, reg_lambda=1.0, max_bins=255,
                lambdarank_truncation_level=30, early_stopping=False), queries="group"),
    Runner("GradientBoostingRanker (depth 6, XGBoost's leaf limits: min_child_weight=1, "
           "min_samples_leaf=1)", "gputree.GradientBoostingRanker",
           dict(RANK_SETTINGS, max_depth=6, reg_lambda=1.0, max_bins=255, min_child_weight=1.0,
                min_samples_leaf=1, lambdarank_truncation_level=30, early_stopping=False),
           queries="group"),
    Runner("GradientBoostingRanker (lossguide: 31 leaves, depth unbounded)",
           "gputree.GradientBoostingRanker",
           dict(RANK_SETTINGS, grow_policy="lossguide", max_depth=None, reg_lambda=1.0,
                max_bins=255, lambdarank_truncation_level=30, early_stopping=False),
           queries="group"),
    Runner("LGBMRanker (default num_leaves=31)", "lightgbm.LGBMRanker",
           dict(RANK_SETTINGS, num_leaves=31, reg_lambda=1.0, max_bin=255,
                lambdarank_truncation_level=30, verbose=-1), threads="n_jobs",
           queries="group"),
    Runner("LGBMRanker (depth 6, num_leaves=64)", "lightgbm.LGBMRanker",
           dict(RANK_SETTINGS, max_depth=6, num_leaves=64, reg_lambda=1.0, max_bin=255,
                lambdarank_truncation_level=30, verbose=-1), threads="n_jobs",
           queries="group"),
    Runner("XGBRanker (rank:ndcg, hist, depth 6)", "xgboost.XGBRanker",
           dict(RANK_SETTINGS, max_depth=6, reg_lambda=1.0, tree_method="hist", max_bin=256,
                objective="rank:ndcg", lambdarank_pair_method="topk",
                lambdarank_num_pair_per_sample=30), threads="n_jobs", queries="qid"),
))

DASK_RANK_SETTINGS = dict(RANK_SETTINGS, max_depth=6, reg_lambda=1.0,
                          lambdarank_truncation_level=30)
DASK_RANK = Group("LambdaMART on a 2-worker Dask cluster, 100 trees of depth 6", (
    Runner("DaskGradientBoostingRanker (depth 6)", "gputree.dask.DaskGradientBoostingRanker",
           dict(DASK_RANK_SETTINGS, max_bins=255), queries="qid"),
    Runner("DaskLGBMRanker (default num_leaves=31)", "lightgbm.DaskLGBMRanker",
           dict(DASK_RANK_SETTINGS, max_depth=-1, num_leaves=31, max_bin=255, verbose=-1),
           queries="group"),
    Runner("DaskLGBMRanker (depth 6, num_leaves=64)", "lightgbm.DaskLGBMRanker",
           dict(DASK_RANK_SETTINGS, num_leaves=64, max_bin=255, verbose=-1), queries="group"),
    Runner("DaskXGBRanker (rank:ndcg, hist, depth 6)", "xgboost.dask.DaskXGBRanker",
           {**{k: v for k, v in DASK_RANK_SETTINGS.items()
               if k != "lambdarank_truncation_level"},
            "tree_method": "hist", "max_bin": 256, "objective": "rank:ndcg",
            "lambdarank_pair_method": "topk", "lambdarank_num_pair_per_sample": 30,
            # qid with dask arrays (partitions of whole queries: none is split)
            "allow_group_split": True},
           queries="qid"),
))

CATEGORY_SETTINGS = dict(n_estimators=50, learning_rate=0.1, **SEED)
CATEGORIES = Group("boosting, 50 rounds, on a high-cardinality categorical column", (
    Runner("GradientBoostingClassifier (depth 6, LightGBM's categorical search)",
           "gputree.GradientBoostingClassifier",
           dict(CATEGORY_SETTINGS, max_depth=6, early_stopping=False)),
    Runner("GradientBoostingClassifier (lossguide: 31 leaves, depth unbounded)",
           "gputree.GradientBoostingClassifier",
           dict(CATEGORY_SETTINGS, grow_policy="lossguide", max_depth=None,
                early_stopping=False)),
    Runner("LGBMClassifier (defaults: num_leaves=31)", "lightgbm.LGBMClassifier",
           dict(CATEGORY_SETTINGS, verbose=-1), threads="n_jobs"),
    Runner("LGBMClassifier (depth 6, num_leaves=64: gputree's tree shape)",
           "lightgbm.LGBMClassifier",
           dict(CATEGORY_SETTINGS, max_depth=6, num_leaves=64, verbose=-1), threads="n_jobs"),
    Runner("XGBClassifier (hist, depth 6, enable_categorical)", "xgboost.XGBClassifier",
           dict(CATEGORY_SETTINGS, max_depth=6, tree_method="hist", enable_categorical=True),
           threads="n_jobs"),
))

SCENARIOS = {
    "tree": Scenario("(a) one tree of depth 10", (ONE_TREE,)),
    "gbdt": Scenario("(b) gradient boosting, 100 trees", (GBDT,)),
    "forest": Scenario("(c) random forest, 100 trees", (FOREST,)),
    "predict": Scenario("(d) predict 100 trees; half of --rows trains, half is predicted",
                        (PREDICT,), rows=200_000, test_size=0.5),
    "memory": Scenario("(e) peak memory of one fit (own process; RSS)",
                       (ONE_TREE, GBDT, FOREST), memory=True),
    "real": Scenario("(f) real data with categorical columns: Titanic",
                     (ONE_TREE, GBDT, FOREST), data="titanic", rows=None),
    "regression": Scenario("one regression tree of depth 10", (ONE_REGRESSION_TREE,),
                           data="regression"),
    "dask": Scenario("boosting on a local Dask cluster (2 worker processes)", (DASK_GBDT,),
                     rows=200_000, cluster=True),
    "rank": Scenario("learning to rank: LambdaMART, 100 trees", (RANK,), data="ranking",
                     rows=120_000),
    "dask-rank": Scenario("learning to rank on a local Dask cluster (2 worker processes)",
                          (DASK_RANK,), data="ranking", rows=120_000, cluster=True),
    "categories": Scenario("a categorical column of 2,000 categories; 40,000 training rows",
                           (CATEGORIES,), data="categories", rows=50_000, test_size=0.2,
                           categories=2000),
    "categories20k": Scenario("a categorical column of 20,000 categories; 400,000 training "
                              "rows", (CATEGORIES,), data="categories", rows=500_000,
                              test_size=0.2, categories=20_000),
}


@dataclass
class Result:
    runner: Runner
    device: str
    fit: float = math.nan
    predict: float = math.nan
    quality: dict = field(default_factory=dict)
    memory: dict = field(default_factory=dict)
    skipped: str = None


# ---------------------------------------------------------------- measuring

def jobs(group, devices):
    """(runner, device) pairs: gputree once per device, peers on the CPU."""
    return [(r, d) for r in group.runners
            for d in (devices if r.library == "gputree" else ["cpu"])]


def measure_speed(runner, device, data, args):
    """Median fit and predict_proba seconds over args.repeat fits (predict
    for regressors and rankers), and the quality of the last fit on the
    held-out rows."""
    result = Result(runner, device)
    try:
        make = runner.factory(args.threads, device)
        X_train, X_test = data.inputs(runner.categorical)
        keywords, first_rows = _fit_keywords(runner, data)
        if runner.library == "gputree":
            seconds = _timed(warm_up, make, X_train, data.y_train, WARM_UP_ROWS, first_rows)[1]
            print(f"  warm-up of {runner.title} on {device} (numba JIT compile, on at most "
                  f"{WARM_UP_ROWS:,} rows): {seconds:.1f} s, not timed")
        fits, predicts = [], []
        for _ in range(args.repeat):
            model = None
            gc.collect()
            model = make()
            fits.append(_timed(lambda: model.fit(X_train, data.y_train, **keywords))[1])
            predict = (model.predict if data.regression or runner.queries
                       else model.predict_proba)
            prediction, seconds = _timed(predict, X_test)
            predicts.append(seconds)
        result.fit, result.predict = statistics.median(fits), statistics.median(predicts)
        result.quality = (ranking_quality(data, prediction) if runner.queries else
                          quality(data.y_test, prediction, getattr(model, "classes_", None)))
    except ImportError as exc:
        result.skipped = f"not available: {exc}"
    except Exception as exc:   # report a library's failure, keep going
        result.skipped = f"error: {type(exc).__name__}: {exc}"
    return result


def _fit_keywords(runner, data):
    """(fit keywords, warm-up's fit_arguments or None): a ranker's queries,
    passed as its library takes them."""
    if not runner.queries:
        return {}, None

    def first_rows(n):
        rows, sizes = data.first_queries(n)
        return rows, data.queries(runner.queries, sizes)
    return data.queries(runner.queries, data.group_train), first_rows


def measure_on_cluster(runner, device, data, args):
    """measure_speed on a LocalCluster of 2 worker processes (args.threads
    threads in all): X and y as dask arrays in 4 partitions; predictions
    made on the cluster. Every library meets fresh worker processes, as a
    user's first fit on a new cluster does (its imports, gputree's kernels
    loaded from numba's disk cache, the peers' own start): gputree's warm-up
    runs on a cluster of its own before, only to compile its kernels into
    that cache once (an install's one-time cost, timed by first_fit.py)."""
    result = Result(runner, device)
    try:
        import dask.array as da
        import distributed  # noqa: F401 - the clusters below
        make = runner.factory(args.threads, device)
    except ImportError as exc:
        result.skipped = f"not available: {exc}"
        return result
    if runner.library == "gputree":
        _on_cluster(args, da, lambda: _warm_up_cluster(make, data, runner, da))
    return _on_cluster(args, da, lambda: _timed_on_cluster(result, make, data, runner, args, da))


def _on_cluster(args, da, work):
    """work() on a new LocalCluster of 2 worker processes."""
    from distributed import Client, LocalCluster
    workers = 2
    with LocalCluster(n_workers=workers, threads_per_worker=max(1, args.threads // workers),
                      processes=True, dashboard_address=None) as cluster, Client(cluster):
        return work()


#: partitions of the training rows on the cluster
CLUSTER_PARTITIONS = 4


def _cluster_inputs(data, runner, da):
    """(X_train, X_test, y_train, fit keywords) as dask arrays of
    CLUSTER_PARTITIONS partitions; a ranker's partitions hold whole queries
    (each cut at the query boundary nearest an equal share of the rows) and
    its queries go as its library takes them on Dask: ``qid`` a dask vector
    of the training partitions, ``group`` a dask vector of the query sizes
    with one chunk per partition (LightGBM's DaskLGBMRanker)."""
    n = len(data.y_train)
    chunks, keywords = (-(-n // CLUSTER_PARTITIONS),), {}
    if runner.queries:
        ends = np.cumsum(data.group_train)
        cuts = np.unique(np.searchsorted(ends, [n * k / CLUSTER_PARTITIONS for k in
                                                range(1, CLUSTER_PARTITIONS)]))
        query_chunks = tuple(np.diff(np.concatenate([[0], cuts + 1, [len(ends)]])))
        chunks = (tuple(np.diff(np.concatenate([[0], ends[cuts], [n]]))),)
        if runner.queries == "qid":
            qid = np.repeat(np.arange(len(data.group_train)), data.group_train)
            keywords = {"qid": da.from_array(qid, chunks=chunks)}
        else:
            keywords = {"group": da.from_array(np.asarray(data.group_train),
                                               chunks=(query_chunks,))}
    X_train, X_test = (np.asarray(x) for x in data.inputs(runner.categorical))
    X_test = da.from_array(X_test, chunks=(-(-X_test.shape[0] // CLUSTER_PARTITIONS),
                                           X_test.shape[1]))
    return (da.from_array(X_train, chunks=chunks + (X_train.shape[1],)), X_test,
            da.from_array(np.asarray(data.y_train), chunks=chunks), keywords)


def _warm_up_cluster(make, data, runner, da):
    """A 2-tree fit on rows of every partition (every worker compiles or
    loads the kernels it uses), not timed; a ranker's on all its rows (its
    partitions hold whole queries)."""
    X_train, _, y_train, keywords = _cluster_inputs(data, runner, da)
    if runner.queries:
        make().set_params(n_estimators=2).fit(X_train, y_train, **keywords)
        return
    step = -(-X_train.shape[0] // min(WARM_UP_ROWS, X_train.shape[0]))
    make().set_params(n_estimators=2).fit(X_train[::step], y_train[::step])


def _timed_on_cluster(result, make, data, runner, args, da):
    """result with the median of args.repeat fits (the first on fresh
    workers) and the last fit's prediction seconds and quality (a ranker's
    scores by ``predict``, the others' probabilities)."""
    X_train, X_test, y_train, keywords = _cluster_inputs(data, runner, da)
    try:
        fits = []
        for _ in range(args.repeat):
            model = make()
            fits.append(_timed(lambda: model.fit(X_train, y_train, **keywords))[1])
            predict = model.predict if runner.queries else model.predict_proba
            prediction, seconds = _timed(lambda: np.asarray(predict(X_test).compute()))
        result.fit, result.predict = statistics.median(fits), seconds
        result.quality = (ranking_quality(data, prediction) if runner.queries else
                          quality(data.y_test, prediction, np.unique(data.y_train)))
    except Exception as exc:   # report a library's failure, keep going
        result.skipped = f"error: {type(exc).__name__}: {exc}"
    return result


def ranking_quality(data, scores):
    """NDCG@10 and NDCG@5 of the held-out queries."""
    return {f"NDCG@{k}": mean_ndcg(scores, data.y_test, data.group_test, k) for k in (10, 5)}


def mean_ndcg(scores, labels, group, k):
    """Mean NDCG@k over queries (consecutive rows, ``group`` their sizes):
    gains 2**label - 1, discounts 1 / log2(rank + 2), ties in scores in row
    order; a query without a relevant row counts 1 (LightGBM's and
    XGBoost's convention)."""
    scores, labels = np.asarray(scores, dtype=np.float64), np.asarray(labels)
    discounts = 1.0 / np.log2(np.arange(k) + 2.0)
    values = []
    for start, stop in zip(np.cumsum(group) - group, np.cumsum(group)):
        gains = 2.0 ** labels[start:stop] - 1.0
        order = np.argsort(-scores[start:stop], kind="stable")[:k]
        ideal = np.sort(gains)[::-1][:k] @ discounts[:min(k, stop - start)]
        dcg = gains[order] @ discounts[:order.shape[0]]
        values.append(dcg / ideal if ideal > 0 else 1.0)
    return float(np.mean(values))


def _timed(function, *arguments):
    start = time.perf_counter()
    value = function(*arguments)
    return value, time.perf_counter() - start


def quality(y_true, prediction, classes):
    """Held-out RMSE (regression: ``classes`` is None), or accuracy and, for
    two classes, AUC of the predicted probabilities."""
    from sklearn.metrics import roc_auc_score
    prediction = np.asarray(prediction)
    if classes is None:
        return {"RMSE": float(np.sqrt(np.mean((prediction - y_true) ** 2)))}
    scores = {"accuracy": float(np.mean(classes[prediction.argmax(axis=1)] == y_true))}
    if prediction.shape[1] == 2:
        scores["AUC"] = float(roc_auc_score(y_true, prediction[:, 1]))
    return scores


def measure_memory(runner, device, data, args):
    """Fit once in a fresh process; peak RSS during the fit vs X's size."""
    result = Result(runner, device)
    with tempfile.TemporaryDirectory() as folder:
        np.save(os.path.join(folder, "X.npy"), data.X_train)
        np.save(os.path.join(folder, "y.npy"), data.y_train)
        job = dict(runner=runner.title, threads=args.threads, device=device, folder=folder)
        child = subprocess.run([sys.executable, __file__, "--memory-child", json.dumps(job)],
                               capture_output=True, text=True)
    lines = child.stdout.strip().splitlines()
    if child.returncode != 0 or not lines:
        tail = (child.stderr or child.stdout).strip().splitlines()[-1:] or ["no output"]
        result.skipped = f"error (exit {child.returncode}): {tail[0]}"
        return result
    report = json.loads(lines[-1])
    if "skipped" in report:
        result.skipped = report["skipped"]
    else:
        result.memory, result.fit = report, report["fit_seconds"]
    return result


def memory_child(job):
    """In the child process: load X, warm up, reset the peak, fit once."""
    runner = next(r for s in SCENARIOS.values() for g in s.groups for r in g.runners
                  if r.title == job["runner"])
    set_threads(job["threads"])
    try:
        make = runner.factory(job["threads"], job["device"])
    except ImportError as exc:
        print(json.dumps({"skipped": f"not available: {exc}"}))
        return
    X = np.load(os.path.join(job["folder"], "X.npy"))
    y = np.load(os.path.join(job["folder"], "y.npy"))
    if runner.library == "gputree":
        warm_up(make, X, y)
    model = make()
    gc.collect()
    before = current_rss_bytes()
    exact = reset_peak_rss()
    _, seconds = _timed(model.fit, X, y)
    print(json.dumps({"x_bytes": X.nbytes, "rss_before": before, "peak": peak_rss_bytes(),
                      "peak_since_fit": exact, "fit_seconds": seconds}))


# ---------------------------------------------------------------- reporting

def format_table(headers, rows):
    """A Markdown pipe table with aligned columns."""
    widths = [max(len(str(x)) for x in column) for column in zip(headers, *rows)]
    line = lambda cells: "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"
    return "\n".join([line(headers), line(["-" * w for w in widths])] + [line(r) for r in rows])


def _reference(results):
    """The gputree result ratios are taken to (CUDA first, then CPU)."""
    timed = [r for r in results if r.runner.library == "gputree" and not r.skipped]
    timed.sort(key=lambda r: r.device != "cuda")
    return timed[0] if timed else None


def _ratio(value, reference):
    if reference is None or math.isnan(value) or not reference > 0:
        return "n/a"
    return f"{value / reference:.3g}"


QUALITY_METRICS = ("AUC", "accuracy", "RMSE", "NDCG@10", "NDCG@5")


def _table(results, headers, cells):
    """Rows of ``results``: library, model, device, then ``cells(result)``
    (blank cells after "skipped" for a result that did not run)."""
    rows = [[LIBRARY_NAMES[r.runner.library], r.runner.label, r.device]
            + (["skipped"] + [""] * (len(headers) - 1) if r.skipped else cells(r))
            for r in results]
    return format_table(["library", "model", "device"] + headers, rows)


def speed_table(results):
    ref = _reference(results)
    metrics = [m for m in QUALITY_METRICS if any(m in r.quality for r in results)]
    cells = lambda r: ([f"{r.fit:.4f}", _ratio(r.fit, ref and ref.fit), f"{r.predict:.4f}",
                        _ratio(r.predict, ref and ref.predict)]
                       + [f"{r.quality[m]:.4f}" for m in metrics])
    headers = ["fit s", "fit ratio", "predict s", "predict ratio"] + metrics
    note = (f"ratios: seconds of the row / seconds of gputree on {ref.device} "
            "(above 1: gputree is faster)" if ref else "ratios: n/a (no gputree row ran)")
    return _table(results, headers, cells) + "\n" + note


def memory_table(results):
    mb = lambda b: f"{b / 2 ** 20:,.1f}"

    def cells(r):
        m = r.memory
        extra = m["peak"] - m["rss_before"]
        return [mb(m["x_bytes"]), mb(m["rss_before"]), mb(m["peak"]), mb(extra),
                f"{extra / m['x_bytes']:.2f}", f"{r.fit:.2f}"]
    headers = ["X MB", "RSS before fit MB", "peak MB", "peak - before MB",
               "(peak - before) / X", "fit s"]
    exact = all(r.memory.get("peak_since_fit", True) for r in results)
    note = ("peak: the process's peak RSS during fit (reset just before it, after "
            "loading X and, for gputree, compiling its kernels)" if exact else
            "peak: the process's peak RSS since it started (could not be reset here)")
    return _table(results, headers, cells) + "\n" + note


def machine_lines(threads):
    """CPU model, cores, memory, load, GPU and library versions."""
    from importlib.metadata import PackageNotFoundError, version
    cpu = _cpu_model()
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2 ** 30
    versions = []
    for package in ("gputree", "numpy", "numba", "scikit-learn", "lightgbm", "xgboost",
                    "pandas", "cupy"):
        try:
            versions.append(f"{package} {version(package)}")
        except PackageNotFoundError:
            pass
    return [f"machine: {cpu}; {os.cpu_count()} logical CPUs, {memory:.0f} GiB RAM; "
            f"{platform.system()} {platform.release()}",
            f"load average (1, 5, 15 min) at start: {_load()}",
            f"GPU: {_gpu_name()}",
            f"python {platform.python_version()}; " + ", ".join(versions),
            f"threads per library: {threads}; numba threading layer: {_threading_layer()}; "
            f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', '(unset)')}"]


def _threading_layer():
    import numba
    try:
        return numba.threading_layer()
    except ValueError:            # no parallel region has run yet
        return numba.config.THREADING_LAYER


def _load():
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _gpu_name():
    if device_unavailable("cuda") is not None:
        return "none usable (gputree's cuda rows are skipped)"
    import cupy
    name = cupy.cuda.runtime.getDeviceProperties(0)["name"]
    return name.decode() if isinstance(name, bytes) else name


# ---------------------------------------------------------------- driving

def load_data(scenario, rows, folder=None):
    if scenario.data == "titanic":
        return titanic(rows, scenario.test_size)
    if scenario.data == "categories":
        return many_categories(rows, scenario.categories, scenario.test_size)
    if scenario.data == "ranking":
        return letor_files(folder) if folder else synthetic_ranking(rows, scenario.test_size)
    return synthetic(rows, scenario.test_size, regression=scenario.data == "regression")


def run_scenario(name, args):
    scenario = SCENARIOS[name]
    rows = args.rows or scenario.rows
    data = load_data(scenario, rows, args.data)
    print(f"\n## {name}: {scenario.title}\n")
    print(f"data: {data.describe()}")
    if not scenario.memory:
        print(f"times: median of {args.repeat} fits, and of as many predictions of the "
              "held-out rows (predict_proba for classifiers); quality on the held-out rows")
    for group in scenario.groups:
        pairs = [(r, d) for r, d in jobs(group, args.devices) if _selected(r, args)]
        if not pairs:
            continue
        print(f"\n### {group.title}\n")
        for runner, device in pairs:
            print(f"  settings: {runner.describe(args.threads, device)}")
        results = [_run_job(runner, device, data, scenario, args) for runner, device in pairs]
        print()
        print(memory_table(results) if scenario.memory else speed_table(results))
        for r in results:
            if r.skipped:
                print(f"skipped: {r.runner.title} on {r.device}: {r.skipped}")
        print(f"load average (1, 5, 15 min) now: {_load()}")
        sys.stdout.flush()


def _selected(runner, args):
    names = f"{runner.title} {runner.estimator}".lower()
    return not args.models or any(m.lower() in names for m in args.models)


def _run_job(runner, device, data, scenario, args):
    reason = device_unavailable(device)
    if reason is not None:
        return Result(runner, device, skipped=reason)
    if scenario.cluster:
        return measure_on_cluster(runner, device, data, args)
    measure = measure_memory if scenario.memory else measure_speed
    return measure(runner, device, data, args)


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description="gputree vs LightGBM, XGBoost and scikit-learn on the same data.",
        epilog="scenarios: " + "; ".join(f"{k}: {s.title}" for k, s in SCENARIOS.items()))
    parser.add_argument("scenarios", nargs="*", metavar="SCENARIO",
                        help=f"one or more of {', '.join(SCENARIOS)}, or all")
    parser.add_argument("--rows", type=int, default=None,
                        help="rows in all, before the held-out split (default per "
                             "scenario: 100,000; predict 200,000; rank 120,000; real: all 1,309)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="fits per model; times are medians (default 3)")
    parser.add_argument("--threads", type=int, default=2,
                        help="threads for every library (default 2)")
    parser.add_argument("--devices", nargs="+", default=["cpu", "cuda"],
                        help="gputree devices to try (default: cpu cuda; unusable ones "
                             "are listed as skipped)")
    parser.add_argument("--models", nargs="+", default=None,
                        help="only rows whose 'library model' or estimator path (e.g. "
                             "sklearn.tree) contains one of these words")
    parser.add_argument("--data", default=None, metavar="DIR",
                        help="rank: a folder with LETOR-style files (rank.train, rank.test, "
                             "rank.train.query, rank.test.query, as LightGBM's "
                             "examples/lambdarank) instead of synthetic queries")
    parser.add_argument("--list", action="store_true", help="list the scenarios and exit")
    parser.add_argument("--memory-child", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if args.memory_child:
        return memory_child(json.loads(args.memory_child))
    if args.list or not args.scenarios:
        for name, scenario in SCENARIOS.items():
            print(f"{name:8s} {scenario.title}")
        return None
    names = list(SCENARIOS) if args.scenarios == ["all"] else args.scenarios
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        raise SystemExit(f"unknown scenario(s) {unknown}; choose from {list(SCENARIOS)}")
    set_threads(args.threads)
    print("\n".join(machine_lines(args.threads)))
    print("gputree is warmed up (numba JIT compile on a few rows) before anything is timed.")
    for name in names:
        run_scenario(name, args)
    return None


if __name__ == "__main__":
    main()
