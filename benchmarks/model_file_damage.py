"""What happens to a damaged model file: a ``GradientBoostingClassifier``
(5 trees, depth 3) is saved with ``save_model``; copies of the file with a few
random bytes replaced (or inserted, deleted, or the file cut short) are each
loaded with ``gputree.load_model`` and asked for ``predict_proba``; the
outcomes are tabulated (Markdown)::

    python benchmarks/model_file_damage.py                  # 400 copies, 1-5 bytes replaced
    python benchmarks/model_file_damage.py --damage insert --copies 1000 --seed 3

Outcomes: ``ModelFormatError`` at load (the one error a bad file should
give), another exception at load, a model that loads and predicts exactly
as the saved one, one that loads but predicts otherwise (the silent failure),
or one that loads and then raises when it predicts.
"""
import argparse
import collections
import os
import sys
import tempfile
import warnings

import numpy as np

# run as a script, this folder comes first on sys.path: import this checkout's gputree
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

#: kinds of damage: how a copy of the file's bytes is changed
DAMAGES = ("replace", "insert", "delete", "truncate")


def damaged(data, rng, kind, max_bytes, ascii_only=False):
    """A copy of ``data`` (bytes) with 1..max_bytes random bytes replaced,
    inserted or deleted, or cut at a random length (``kind``); new bytes are
    printable ASCII with ``ascii_only``, else any of 0..255."""
    data = bytearray(data)
    low, high = (32, 127) if ascii_only else (0, 256)
    if kind == "truncate":
        return bytes(data[:rng.randint(0, len(data))])
    for _ in range(rng.randint(1, max_bytes + 1)):
        at = rng.randint(0, len(data))
        if kind == "replace":
            data[at] = rng.randint(low, high)
        elif kind == "insert":
            data.insert(at, rng.randint(low, high))
        else:
            del data[at]
    return bytes(data)


def outcome(path, X, expected):
    """One line naming what loading ``path`` and predicting X led to."""
    import gputree
    from gputree.model import ModelFormatError
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = gputree.load_model(path)
    except ModelFormatError:
        return "`ModelFormatError` at load"
    except Exception as exc:  # noqa: BLE001 - tabulated
        return f"`{type(exc).__name__}` at load (not `ModelFormatError`)"
    try:
        proba = model.predict_proba(X)
    except Exception as exc:  # noqa: BLE001 - tabulated
        return f"loaded, then `{type(exc).__name__}` at predict time"
    if proba.shape == expected.shape and proba.tobytes() == expected.tobytes():
        return "loaded, same predictions"
    return "**loaded, different predictions**"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--copies", type=int, default=400)
    parser.add_argument("--max-bytes", type=int, default=5)
    parser.add_argument("--damage", choices=DAMAGES, default="replace")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ascii", action="store_true",
                        help="new bytes are printable ASCII (the file stays UTF-8)")
    args = parser.parse_args(argv)
    import gputree
    rng = np.random.RandomState(args.seed)
    X = rng.normal(size=(2000, 8))
    y = (X[:, 0] + 0.5 * X[:, 1] ** 2 - X[:, 2] + rng.normal(0, 0.5, 2000) > 0.5).astype(int)
    model = gputree.GradientBoostingClassifier(n_estimators=5, max_depth=3, device="cpu",
                                               random_state=0).fit(X, y)
    expected = model.predict_proba(X)
    counts = collections.Counter()
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "model.json")
        model.save_model(path)
        with open(path, "rb") as stream:
            original = stream.read()
        copy = os.path.join(folder, "copy.json")
        for _ in range(args.copies):
            with open(copy, "wb") as stream:
                stream.write(damaged(original, rng, args.damage, args.max_bytes, args.ascii))
            counts[outcome(copy, X, expected)] += 1
    print(f"{type(model).__name__} (5 trees, depth 3), {len(original):,} bytes; "
          f"{args.copies} copies, damage: {args.damage}"
          + ("" if args.damage == "truncate" else f" 1-{args.max_bytes} bytes")
          + (" (printable ASCII)" if args.ascii else "")
          + f", seed {args.seed}\n")
    print("| outcome | copies |\n|---|---|")
    for line, count in counts.most_common():
        print(f"| {line} | {count} |")
    silent = sum(n for line, n in counts.items() if line.startswith(("**", "loaded, then"))
                 or "not `ModelFormatError`" in line)
    return 1 if silent else 0


if __name__ == "__main__":
    sys.exit(main())
