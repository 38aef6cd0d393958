"""Fingerprints of the models a set of configurations grows: the check that a
refactor or a speed-up changed no model.

Each configuration is fitted through the public API on fixed data; its
fingerprint is a SHA-256 over every field of every fitted tree and over the
bytes of its predictions on held-out rows. Run it before and after a change
and compare::

    python benchmarks/model_hashes.py > before.txt
    ... change ...
    python benchmarks/model_hashes.py --compare before.txt

``--compare`` exits 1 when any fingerprint differs (and names it);
configurations the earlier file does not hold are listed as new.
"""
import argparse
import hashlib
import sys
import warnings
from dataclasses import fields
from pathlib import Path

import numpy as np

# the gputree of this checkout, whatever else is installed: run as a
# script, Python puts benchmarks/ (not the checkout) first on sys.path
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _data(seed=0, n=3000, n_features=8):
    """(X float64 (n, F) with NaNs, binary y, 3-class y, float y, positive y, weights)."""
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, n_features))
    X[:, 3] = rng.randint(0, 6, n)            # few distinct values
    X[rng.rand(n, n_features) < 0.05] = np.nan
    signal = np.nan_to_num(X[:, 0]) + 0.5 * np.nan_to_num(X[:, 1]) ** 2 - 0.3 * np.nan_to_num(X[:, 3])
    y_float = signal + rng.normal(0, 0.3, n)
    y_binary = (y_float > np.median(y_float)).astype(int)
    y_three = np.digitize(y_float, np.quantile(y_float, [1 / 3, 2 / 3]))
    y_count = rng.poisson(np.exp(0.3 * np.clip(signal, -3, 3)))
    weight = rng.uniform(0.2, 3.0, n)
    return X, y_binary, y_three, y_float, y_count, weight


def _frame(X):
    """X as a DataFrame whose column 3 is a pandas category (int codes)."""
    import pandas as pd
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
    frame["f3"] = pd.Categorical(frame["f3"])
    return frame


def _many_categories(X):
    """X as a DataFrame whose column 3 is a pandas category of 720 codes
    (each of its 6 values spread over 120 codes): categorical splits whose
    left sets reach past bin 255."""
    import pandas as pd
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
    spread = np.random.RandomState(7).randint(0, 120, X.shape[0])
    frame["f3"] = pd.Categorical(frame["f3"] * 120 + spread, categories=np.arange(720.0))
    return frame


#: how each X kind of a configuration is presented
X_KINDS = {"X": lambda X: X, "frame": _frame, "many": _many_categories}


def configurations():
    """name -> (estimator factory, target name, fit keyword names, X kind)."""
    import gputree as g
    cpu = dict(device="cpu", random_state=0)
    boost = dict(n_estimators=12, max_depth=5, early_stopping=False, **cpu)
    return {
        "boost_logloss_nan": (lambda: g.GradientBoostingClassifier(**boost), "binary", (), "X"),
        "boost_weights_controls": (lambda: g.GradientBoostingClassifier(
            min_samples_leaf=7, min_child_weight=0.5, reg_alpha=0.3, subsample=0.7, **boost),
            "binary", ("sample_weight",), "X"),
        "boost_softmax": (lambda: g.GradientBoostingClassifier(**boost), "three", (), "X"),
        "boost_softmax_multi_output_tree": (lambda: g.GradientBoostingClassifier(
            multi_strategy="multi_output_tree", **boost), "three", (), "X"),
        "boost_squared_lambda0": (lambda: g.GradientBoostingRegressor(reg_lambda=0.0, **boost),
                                  "float", (), "X"),
        "boost_monotonic": (lambda: g.GradientBoostingRegressor(
            monotonic_cst=[1, -1, 0, 0, 0, 0, 0, 0], **boost), "float", (), "X"),
        "boost_interaction": (lambda: g.GradientBoostingRegressor(
            interaction_cst=[[0, 1], [2, 3, 4]], **boost), "float", (), "X"),
        "boost_huber": (lambda: g.GradientBoostingRegressor(loss="huber", **boost), "float",
                        (), "X"),
        "boost_quantile": (lambda: g.GradientBoostingRegressor(loss="quantile", alpha=0.3,
                                                               **boost), "float", (), "X"),
        "boost_absolute": (lambda: g.GradientBoostingRegressor(loss="absolute_error", **boost),
                           "float", (), "X"),
        "boost_poisson": (lambda: g.GradientBoostingRegressor(loss="poisson", **boost),
                          "count", (), "X"),
        "boost_colsample": (lambda: g.GradientBoostingClassifier(colsample_bytree=0.5, **boost),
                            "binary", (), "X"),
        "boost_weighted_binary": (lambda: g.GradientBoostingClassifier(**boost), "binary",
                                  ("sample_weight",), "X"),
        "boost_friedman": (lambda: g.GradientBoostingClassifier(criterion="friedman_mse",
                                                                **boost), "binary", (), "X"),
        "boost_categorical": (lambda: g.GradientBoostingClassifier(**boost), "three", (),
                              "frame"),
        "boost_wide_bins": (lambda: g.GradientBoostingRegressor(max_bins=1000, **boost),
                            "float", (), "X"),
        "boost_early_stopping": (lambda: g.GradientBoostingClassifier(
            n_estimators=40, max_depth=4, early_stopping=True, validation_fraction=0.2,
            n_iter_no_change=3, **cpu), "binary", (), "X"),
        "boost_many_categories": (lambda: g.GradientBoostingClassifier(
            min_data_per_group=10, cat_smooth=2.0, **boost), "binary", (), "many"),
        "boost_many_categories_exact": (lambda: g.GradientBoostingRegressor(
            categorical_search="exact", **boost), "float", (), "many"),
        "tree_many_categories": (lambda: g.DecisionTreeClassifier(max_depth=6, **cpu), "three",
                                 (), "many"),
        "forest_many_categories": (lambda: g.RandomForestRegressor(n_estimators=4, max_depth=6,
                                                                   **cpu), "float", (), "many"),
        "tree_gini": (lambda: g.DecisionTreeClassifier(max_depth=8, **cpu), "three", (), "X"),
        "tree_entropy_weights": (lambda: g.DecisionTreeClassifier(
            criterion="entropy", min_samples_leaf=5, class_weight="balanced", **cpu), "three",
            ("sample_weight",), "X"),
        "tree_gain_ratio_multiway": (lambda: g.DecisionTreeClassifier(
            criterion="gain_ratio", multiway=True, max_depth=4, **cpu), "three", (), "frame"),
        "tree_squared_pruned": (lambda: g.DecisionTreeRegressor(ccp_alpha=0.01, **cpu),
                                "float", (), "X"),
        "tree_absolute_error": (lambda: g.DecisionTreeRegressor(
            criterion="absolute_error", max_depth=6, **cpu), "float", (), "X"),
        "tree_poisson": (lambda: g.DecisionTreeRegressor(criterion="poisson", max_depth=6,
                                                         **cpu), "count", (), "X"),
        "tree_surrogates": (lambda: g.DecisionTreeClassifier(
            max_depth=5, missing_strategy="surrogate", **cpu), "binary", (), "X"),
        "tree_max_features_leaves": (lambda: g.DecisionTreeClassifier(
            max_features=3, max_leaf_nodes=20, **cpu), "binary", (), "frame"),
        "forest_classifier": (lambda: g.RandomForestClassifier(
            n_estimators=8, max_depth=8, oob_score=True, **cpu), "three", (), "X"),
        "forest_classifier_weights": (lambda: g.RandomForestClassifier(
            n_estimators=5, class_weight="balanced_subsample", **cpu), "binary",
            ("sample_weight",), "X"),
        "forest_regressor": (lambda: g.RandomForestRegressor(
            n_estimators=6, max_depth=8, max_samples=0.5, oob_score=True, **cpu), "float", (),
            "X"),
        "forest_multi_output": (lambda: g.RandomForestRegressor(n_estimators=4, max_depth=6,
                                                                **cpu), "two_floats", (), "X"),
        "forest_absolute_error": (lambda: g.RandomForestRegressor(
            criterion="absolute_error", n_estimators=4, max_depth=6, max_features=0.6,
            oob_score=True, **cpu), "float", (), "X"),
        "forest_friedman_mse": (lambda: g.RandomForestRegressor(
            criterion="friedman_mse", n_estimators=4, max_depth=6, max_samples=1.3, **cpu),
            "float", (), "X"),
        "rank_lambdarank": (lambda: g.GradientBoostingRanker(**boost), "relevance", ("group",),
                            "X"),
        "rank_pairwise_weights": (lambda: g.GradientBoostingRanker(
            loss="rank:pairwise", subsample=0.8, lambdarank_truncation_level=10, **boost),
            "relevance", ("group", "query_weight"), "frame"),
        "tree_random_splitter": (lambda: g.DecisionTreeClassifier(
            splitter="random", max_depth=8, **cpu), "three", (), "frame"),
        "extra_tree_regressor_absolute": (lambda: g.ExtraTreeRegressor(
            criterion="absolute_error", max_depth=6, **cpu), "float", (), "X"),
        "extra_trees_classifier": (lambda: g.ExtraTreesClassifier(
            n_estimators=6, max_depth=8, **cpu), "three", ("sample_weight",), "frame"),
        "extra_trees_regressor_bootstrap": (lambda: g.ExtraTreesRegressor(
            n_estimators=5, max_depth=8, max_features=0.5, bootstrap=True, oob_score=True,
            **cpu), "float", (), "X"),
        "boost_extra_trees": (lambda: g.GradientBoostingClassifier(extra_trees=True, **boost),
                              "binary", (), "frame"),
        "boost_extra_trees_regressor": (lambda: g.GradientBoostingRegressor(
            extra_trees=True, colsample_bytree=0.6, **boost), "float", (), "X"),
        "boost_lossguide": (lambda: g.GradientBoostingClassifier(
            grow_policy="lossguide", **dict(boost, max_depth=None)), "binary", (), "frame"),
        "boost_lossguide_many_categories": (lambda: g.GradientBoostingClassifier(
            grow_policy="lossguide", max_leaf_nodes=15, min_data_per_group=10, cat_smooth=2.0,
            subsample=0.8, **boost), "binary", (), "many"),
        "boost_lossguide_monotonic": (lambda: g.GradientBoostingRegressor(
            grow_policy="lossguide", max_leaf_nodes=12, monotonic_cst=[1, 0, -1, 0, 0, 0, 0, 0],
            interaction_cst=[[0, 1, 2], [3, 4, 5, 6, 7]], **boost), "float", (), "X"),
        "boost_lossguide_limits": (lambda: g.GradientBoostingRegressor(
            grow_policy="lossguide", max_leaf_nodes=24, min_samples_leaf=30,
            min_child_weight=40.0, gamma=0.05, **dict(boost, max_depth=4)), "float", (), "many"),
        "boost_lossguide_multiclass": (lambda: g.GradientBoostingClassifier(
            grow_policy="lossguide", max_leaf_nodes=9, **dict(boost, max_depth=None)),
            "three", (), "frame"),
        "rank_lossguide": (lambda: g.GradientBoostingRanker(
            grow_policy="lossguide", max_leaf_nodes=20, **boost), "relevance", ("group",), "X"),
        "tree_best_first_regressor": (lambda: g.DecisionTreeRegressor(
            max_leaf_nodes=40, min_samples_leaf=3, **cpu), "float", ("sample_weight",), "X"),
        "forest_best_first": (lambda: g.RandomForestClassifier(
            n_estimators=4, max_leaf_nodes=30, **cpu), "three", (), "frame"),
        "extra_trees_best_first": (lambda: g.ExtraTreesRegressor(
            n_estimators=3, max_leaf_nodes=25, **cpu), "float", (), "X"),
    }


#: rows of each query of the ranking configurations
QUERY_ROWS = 30


def _targets(data):
    X, y_binary, y_three, y_float, y_count, weight = data
    return {"binary": y_binary, "three": y_three, "float": y_float, "count": y_count,
            "two_floats": np.stack([y_float, y_float ** 2], axis=1),
            "relevance": np.digitize(y_float, np.quantile(y_float, [0.5, 0.8, 0.95]))}


def _fit_keywords(keywords, data):
    """The fit arguments a configuration names: row weights, or a ranker's
    queries (QUERY_ROWS rows each) and query weights."""
    n_rows = data[0].shape[0]
    extra = {"sample_weight": data[5]} if "sample_weight" in keywords else {}
    if "group" in keywords:
        extra["group"] = np.full(n_rows // QUERY_ROWS, QUERY_ROWS)
    if "query_weight" in keywords:
        extra["sample_weight"] = data[5][::QUERY_ROWS]
    return extra


#: tree fields of categorical splits' words beyond their bitsets: left out of
#: a tree that has none (all its splits in their bitsets), so that models
#: without such splits keep the fingerprints they had before these fields
WORD_FIELDS = ("cat_words", "cat_start", "cat_n_words")


def _fingerprint(model, X_test):
    """SHA-256 (hex) over every tree field and every prediction output."""
    digest = hashlib.sha256()
    for tree in model.model_.trees:
        for f in fields(tree):
            if f.name in WORD_FIELDS and not tree.cat_n_words.any():
                continue
            value = np.ascontiguousarray(getattr(tree, f.name))
            digest.update(f.name.encode() + str(value.dtype).encode() + str(value.shape).encode())
            digest.update(value.tobytes())
    outputs = [model.predict(X_test)]
    if hasattr(model, "predict_proba"):
        outputs.append(model.predict_proba(X_test))
    for attribute in ("oob_score_", "train_score_", "validation_score_", "_baseline"):
        if hasattr(model, attribute):
            outputs.append(np.asarray(getattr(model, attribute), dtype=np.float64))
    for output in outputs:
        digest.update(np.ascontiguousarray(np.asarray(output, dtype=np.float64)).tobytes())
    return digest.hexdigest()


def fingerprints(names=None):
    """name -> fingerprint of every configuration (or of ``names``)."""
    data = _data()
    X = data[0]
    test = _data(seed=1, n=500)[0]
    targets = _targets(data)
    result = {}
    for name, (make, target, keywords, kind) in configurations().items():
        if names and name not in names:
            continue
        train, held_out = X_KINDS[kind](X), X_KINDS[kind](test)
        extra = _fit_keywords(keywords, data)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = make().fit(train, targets[target], **extra)
            result[name] = _fingerprint(model, held_out)
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compare", help="a file written by an earlier run")
    parser.add_argument("names", nargs="*", help="only these configurations")
    args = parser.parse_args(argv)
    current = fingerprints(args.names)
    if not args.compare:
        for name, value in current.items():
            print(f"{name} {value}")
        return 0
    with open(args.compare, encoding="ascii") as stream:
        before = dict(line.split() for line in stream if line.strip())
    new = [name for name in current if name not in before]
    changed = [name for name in current if name in before and before[name] != current[name]]
    for name in current:
        print(f"{'CHANGED' if name in changed else 'new    ' if name in new else 'same   '} "
              f"{name}")
    known = len(current) - len(new)
    print(f"{known - len(changed)} of {known} configurations unchanged"
          + (f" ({len(new)} new, not in {args.compare})" if new else ""))
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
