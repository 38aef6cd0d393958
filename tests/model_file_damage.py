"""What happens to a damaged model file. Run as a script, it saves a
``GradientBoostingClassifier`` (5 trees, depth 3), loads copies of the file
with a few random bytes replaced (or inserted, deleted, or the file cut
short) with ``gputree.load_model``, predicts with each, and tabulates the
outcomes (Markdown)::

    python tests/model_file_damage.py                  # 400 copies, 1-5 bytes replaced
    python tests/model_file_damage.py --damage insert --ascii --copies 1000 --seed 3

Outcomes: ``ModelFormatError`` at load (the one error a bad file should
give), another exception at load, a model that loads and predicts exactly
as the saved one, one that loads but predicts otherwise (the silent failure),
or one that loads and then raises when it predicts. tests/test_model_fuzz.py
runs the same damage on every kind of model.
"""
import argparse
import collections
import os
import sys
import tempfile
import warnings

import numpy as np

#: kinds of damage: how a copy of the file's bytes is changed
DAMAGES = ("replace", "insert", "delete", "truncate")
#: outcomes that are not a failure
SAFE = ("`ModelFormatError` at load", "loaded, same predictions")


def damaged(data, rng, kind, max_bytes=5, ascii_only=False):
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


def outputs(model, X):
    """Every prediction output of a model (predict, predict_proba), as a list of arrays."""
    result = [np.asarray(model.predict(X))]
    if hasattr(model, "predict_proba"):
        result.append(np.asarray(model.predict_proba(X)))
    return result


def outcome(path, X, expected, detail=False):
    """One line naming what loading ``path`` and predicting X led to;
    ``expected``: the saved model's ``outputs``; ``detail``: with the
    message of an exception that is not a ModelFormatError."""
    import gputree
    from gputree.model import ModelFormatError
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = gputree.load_model(path)
    except ModelFormatError:
        return SAFE[0]
    except Exception as exc:  # noqa: BLE001 - tabulated
        return (f"`{type(exc).__name__}` at load (not `ModelFormatError`)"
                + (f": {exc!s:.200}" if detail else ""))
    try:
        got = outputs(model, X)
    except Exception as exc:  # noqa: BLE001 - tabulated
        return (f"loaded, then `{type(exc).__name__}` at predict time"
                + (f": {exc!s:.200}" if detail else ""))
    same = all(a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
               for a, b in zip(got, expected))
    return SAFE[1] if same else "**loaded, different predictions**"


def tabulate(model, X, copies, kind, seed=0, max_bytes=5, ascii_only=False, detail=False):
    """(Counter of the outcomes of ``copies`` damaged copies of ``model``'s
    file, the file's size in bytes)."""
    rng = np.random.RandomState(seed)
    expected = outputs(model, X)
    counts = collections.Counter()
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "model.json")
        model.save_model(path)
        with open(path, "rb") as stream:
            original = stream.read()
        copy = os.path.join(folder, "copy.json")
        for _ in range(copies):
            with open(copy, "wb") as stream:
                stream.write(damaged(original, rng, kind, max_bytes, ascii_only))
            counts[outcome(copy, X, expected, detail)] += 1
    return counts, len(original)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--copies", type=int, default=400)
    parser.add_argument("--max-bytes", type=int, default=5)
    parser.add_argument("--damage", choices=DAMAGES, default="replace")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ascii", action="store_true",
                        help="new bytes are printable ASCII (the file stays UTF-8)")
    args = parser.parse_args(argv)
    # run as a script, tests/ comes first on sys.path: import this checkout's gputree
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import gputree
    rng = np.random.RandomState(args.seed)
    X = rng.normal(size=(2000, 8))
    y = (X[:, 0] + 0.5 * X[:, 1] ** 2 - X[:, 2] + rng.normal(0, 0.5, 2000) > 0.5).astype(int)
    model = gputree.GradientBoostingClassifier(n_estimators=5, max_depth=3, device="cpu",
                                               random_state=0).fit(X, y)
    counts, size = tabulate(model, X, args.copies, args.damage, args.seed, args.max_bytes,
                            args.ascii)
    print(f"{type(model).__name__} (5 trees, depth 3), {size:,} bytes; "
          f"{args.copies} copies, damage: {args.damage}"
          + ("" if args.damage == "truncate" else f" 1-{args.max_bytes} bytes")
          + (" (printable ASCII)" if args.ascii else "") + f", seed {args.seed}\n")
    print("| outcome | copies |\n|---|---|")
    for line, count in counts.most_common():
        print(f"| {line} | {count} |")
    return 0 if set(counts) <= set(SAFE) else 1


if __name__ == "__main__":
    sys.exit(main())
