"""Where a first fit's compile seconds go: every numba function compiled
during one estimator's first fit in a fresh process with an empty cache
(``NUMBA_CACHE_DIR`` made here), with its own compile seconds (time inside
its compile minus the compiles of the functions it called, which numba
compiles first), its total, each as wall seconds and as the compiling
thread's CPU seconds (steadier on a loaded machine), and each signature
compiled.

    python benchmarks/compile_times.py tree_c gbdt_c     # estimators of first_fit.py
    python benchmarks/compile_times.py forest_r --rows 20000 --top 30

Reports the process's wall and CPU seconds of the fit, the compile seconds
summed over outermost compiles, and a table sorted by own seconds. Functions
compiled under several signatures are marked: each signature is a separate
compile (and cache file).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
from first_fit import ESTIMATORS, data  # noqa: E402


class CompileLog:
    """Every numba compile event in this process: (name, signature, own s,
    total s, and both as the compiling thread's CPU s); own excludes nested
    compiles."""

    def __init__(self):
        from numba.core import event
        self.rows, self.stack = [], []
        log = self

        class Listener(event.Listener):
            def on_start(self, ev):
                log.stack.append([time.perf_counter(), 0.0, time.thread_time(), 0.0])

            def on_end(self, ev):
                started, nested, started_cpu, nested_cpu = log.stack.pop()
                total = time.perf_counter() - started
                total_cpu = time.thread_time() - started_cpu
                if log.stack:
                    log.stack[-1][1] += total
                    log.stack[-1][3] += total_cpu
                dispatcher = ev.data.get("dispatcher")
                function = getattr(dispatcher, "py_func", None)
                name = (f"{getattr(function, '__module__', '?')}."
                        f"{getattr(function, '__qualname__', repr(dispatcher))}")
                args = ev.data.get("args")
                log.rows.append(dict(name=name, signature=str(args), own=total - nested,
                                     total=total, own_cpu=total_cpu - nested_cpu,
                                     total_cpu=total_cpu, outer=not log.stack))

        event.register("numba:compile", Listener())


def child(spec):
    name, settings = ESTIMATORS[spec["estimator"]]
    settings = dict(settings, **spec.get("settings", {}))
    import gputree
    estimator = getattr(gputree, name)
    X, y = data(spec["rows"], spec["features"], name.endswith("Regressor"))
    log = CompileLog()
    wall, cpu = time.perf_counter(), time.process_time()
    estimator(**settings).fit(X, y)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return dict(wall=wall, cpu=cpu, rows=log.rows)


def report(key, out, top):
    rows = out["rows"]
    outer = sum(r["total"] for r in rows if r["outer"])
    outer_cpu = sum(r["total_cpu"] for r in rows if r["outer"])
    print(f"\n## {key}: fit {out['wall']:.2f} s wall, {out['cpu']:.2f} s CPU; "
          f"{len(rows)} compiles, {outer:.2f} s compiling (outermost; "
          f"{outer_cpu:.2f} s CPU); "
          f"load {os.getloadavg()[0]:.2f}")
    by_name = {}
    for r in rows:
        entry = by_name.setdefault(r["name"], dict(own=0.0, total=0.0, own_cpu=0.0,
                                                    signatures=[]))
        entry["own"] += r["own"]
        entry["own_cpu"] += r["own_cpu"]
        entry["total"] += r["total"]
        entry["signatures"].append(r["signature"])
    ranked = sorted(by_name.items(), key=lambda item: -item[1]["own_cpu"])
    print(f"  {'own s':>6} {'total s':>7} {'own cpu':>7} {'sigs':>4}  function")
    for name, entry in ranked[:top]:
        short = name.replace("gputree.", "")
        print(f"  {entry['own']:6.2f} {entry['total']:7.2f} {entry['own_cpu']:7.2f} "
              f"{len(entry['signatures']):4d}  {short}")
    rest = ranked[top:]
    if rest:
        print(f"  {sum(e['own'] for _, e in rest):6.2f} {'':7} "
              f"{sum(e['own_cpu'] for _, e in rest):7.2f}       ({len(rest)} more functions)")
    multi = [(name, e) for name, e in ranked if len(e["signatures"]) > 1]
    for name, entry in multi:
        print(f"  several signatures: {name.replace('gputree.', '')}")
        for signature in entry["signatures"]:
            print(f"      {signature[:150]}")


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        print(json.dumps(child(json.loads(sys.argv[2]))))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("estimators", nargs="*", default=list(ESTIMATORS),
                        help=f"some of {', '.join(ESTIMATORS)} (default: all)")
    parser.add_argument("--rows", type=int, default=300_000)
    parser.add_argument("--features", type=int, default=20)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--settings", default="{}", help="JSON settings for every estimator")
    parser.add_argument("--json", help="also write the raw compile events here")
    args = parser.parse_args()
    raw = {}
    for key in args.estimators:
        with tempfile.TemporaryDirectory(prefix="gputree-compile-times-") as cache:
            spec = dict(estimator=key, rows=args.rows, features=args.features,
                        settings=json.loads(args.settings))
            env = dict(os.environ, NUMBA_CACHE_DIR=cache)
            result = subprocess.run([sys.executable, __file__, "--child", json.dumps(spec)],
                                    env=env, capture_output=True, text=True)
            if result.returncode != 0:
                raise RuntimeError(result.stderr)
            raw[key] = json.loads(result.stdout.strip().splitlines()[-1])
            report(key, raw[key], args.top)
    if args.json:
        Path(args.json).write_text(json.dumps(raw))


if __name__ == "__main__":
    main()
