"""The compile manifest of the background compile (gputree/backends/
compile_manifest.py): read once per process; its addresses and signatures
parsed, never evaluated, so an entry with code in it is refused (and the
code never runs); every shipped entry parses back to itself and names a
kernel with gputree's cache class; a malformed manifest is a clear error,
and a fit that meets one warns and trains without a helper."""
import json

import numpy as np
import pytest

from gputree import _compile_cache
from gputree.backends import compile_manifest, prewarm
from gputree.backends.compile_manifest import ManifestError

#: each would run code (or reach outside gputree's kernels) if evaluated
_BAD_ADDRESSES = [
    "gputree.fixed_point:__import__('os').system('touch {marker}')",
    "os:system",
    "gputree.fixed_point:__builtins__",
    "gputree.backends.cpu.split_scan:split_finder(__import__('os').system('touch {marker}'))",
    "gputree.backends.cpu.split_scan:split_finder[0]",
    "gputree.fixed_point:np.save",                       # not a kernel
    "gputree.fixed_point:np.save((1,),)",                # not a kernel factory
    "gputree.fixed_point:no_such_kernel",
]
_BAD_SIGNATURES = [
    "(__import__('os').system('touch {marker}'),)",
    "(int64, open('{marker}', 'w'))",
    "(Array(int64, 2, 'C', False, aligned=True),",
    "(Array(int64, 2, 'C', False, aligned=1.5),)",
    "(int64.__class__,)",
    "(_Array,)",
    "(Array(**{{}}),)",
    "int64",                                             # not a tuple
    "(Array(int64, 2, 'C'),)",                           # reads back otherwise
]


@pytest.mark.parametrize("kind, text", [("address", text) for text in _BAD_ADDRESSES]
                         + [("signature", text) for text in _BAD_SIGNATURES])
def test_an_entry_with_code_or_no_kernel_is_refused(kind, text, tmp_path):
    """An address that names no kernel (or a factory's call with code in
    it), a signature that is not a tuple of numba types: refused, and the
    code in them never runs."""
    parse = compile_manifest.resolve if kind == "address" else compile_manifest.parse_signature
    marker = tmp_path / "ran"
    with pytest.raises(ManifestError, match=kind):
        parse(text.format(marker=marker))
    assert not marker.exists()


def test_every_shipped_entry_parses_back_to_itself_and_names_a_kernel():
    from numba.core import types
    for profile, entry in compile_manifest.manifest().items():
        assert len(entry["seconds"]) == len(entry["kernels"])
        for address, signature in entry["kernels"]:
            parsed = compile_manifest.parse_signature(signature)
            assert all(isinstance(t, types.Type) for t in parsed)
            assert repr(parsed) == signature
            kernel = compile_manifest.resolve(address)
            assert isinstance(kernel._cache, _compile_cache._GputreeCache), address
            assert compile_manifest.address_of(kernel.py_func) == address, profile


def _write(tmp_path, content):
    path = tmp_path / "manifest.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return str(path)


def _shipped_profile():
    return json.loads(json.dumps(compile_manifest.manifest()["gbdt_c"]))


@pytest.mark.parametrize("breakage, says", [
    (lambda entry: "{not json", "not JSON"),
    (lambda entry: [entry], "not an object of profiles"),
    (lambda entry: {"gbdt_c": dict(entry, kernels="all")}, "'gbdt_c': expected an object"),
    (lambda entry: {"gbdt_c": dict(entry, kernels=[["a", "b", "c"]] + entry["kernels"])},
     "kernel 0: expected"),
    (lambda entry: {"gbdt_c": dict(entry, kernels=entry["kernels"] + [
        ["gputree.fixed_point:exec('1')", entry["kernels"][0][1]]])}, "address"),
    (lambda entry: {"gbdt_c": dict(entry, seconds=entry["seconds"][1:])}, "seconds"),
])
def test_a_malformed_manifest_is_a_clear_error(tmp_path, breakage, says):
    path = _write(tmp_path, breakage(_shipped_profile()))
    with pytest.raises(ManifestError, match=says) as raised:
        compile_manifest.read_manifest(path)
    assert path in str(raised.value) and "compile_profiles" in str(raised.value)


def test_no_manifest_file_is_no_profile(tmp_path):
    assert compile_manifest.read_manifest(str(tmp_path / "absent.json")) == {}


def _large_fit_args():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(prewarm.LARGE_VALUES // 16, 16)).astype(np.float32)
    return X, (X[:, 0] > 0).astype(np.int64)


def test_the_manifest_is_read_once_per_process(monkeypatch):
    import gputree
    reads = []
    read = compile_manifest.read_manifest
    monkeypatch.setattr(compile_manifest, "read_manifest",
                        lambda path: reads.append(path) or read(path))
    monkeypatch.setattr(compile_manifest, "_state", {})
    estimator = gputree.GradientBoostingClassifier(n_estimators=4)
    args = _large_fit_args()
    for _ in range(3):
        assert prewarm.profile_of(estimator, args, {}) == "gbdt_c"
        assert compile_manifest.manifest()["gbdt_c"]["estimator"] == "GradientBoostingClassifier"
    assert reads == [compile_manifest.MANIFEST_FILE]


def test_a_fit_that_meets_a_malformed_manifest_warns_and_starts_no_helper(tmp_path, monkeypatch):
    import gputree
    entry = _shipped_profile()
    entry["kernels"][-2][1] = "(__import__('os'),)"    # the first one a fit parses
    monkeypatch.setattr(compile_manifest, "MANIFEST_FILE", _write(tmp_path, {"gbdt_c": entry}))
    monkeypatch.setattr(compile_manifest, "_state", {})
    monkeypatch.setattr(prewarm, "_spare_core", lambda: True)
    monkeypatch.setenv(prewarm.ENV, "1")
    monkeypatch.setitem(prewarm._state, "helper", None)
    estimator = gputree.GradientBoostingClassifier(n_estimators=4)
    with pytest.warns(RuntimeWarning, match="no background compile.*profile 'gbdt_c'.*signature"):
        assert prewarm.start_for(estimator, _large_fit_args(), {}) is None
    assert prewarm._state["helper"] is None
