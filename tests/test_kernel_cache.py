"""The backends' numba kernels are cached on disk (CPU and CUDA), and the
cache of a kernel file is invalidated by edits to any backend source it
compiles code from, not only by edits to its own file."""
import os

import pytest

from gputree.backends import kernel_cache


def _locator(dispatcher):
    return dispatcher._cache._impl._locator


def test_cpu_scan_kernels_are_cached_with_a_stamp_over_every_backend_source():
    from gputree.backends.cpu import split_scan
    from gputree.backends.formulas import IMPURITY_GINI, KIND_CLASSIFICATION
    finder = split_scan.split_finder((KIND_CLASSIFICATION, IMPURITY_GINI), False, False)
    locator = _locator(finder.compiled)
    assert type(locator).__name__.startswith("Gputree")
    sources = kernel_cache.backend_sources()
    names = {os.path.basename(p) for p in sources}
    assert {"scan.py", "formulas.py", "devmath.py", "summaries.py", "split_scan.py",
            "numba_kernels.py"} <= names
    assert locator.get_source_stamp() == tuple(
        (os.stat(p).st_mtime, os.stat(p).st_size) for p in sources)


def test_cuda_kernels_are_cached_with_the_same_stamp():
    from numba import config
    if config.ENABLE_CUDASIM:
        pytest.skip("numba's CUDA simulator compiles (and caches) nothing")
    from gputree.backends.cuda import numba_kernels
    for kernel in (numba_kernels._find_splits, numba_kernels._node_summaries):
        locator = _locator(kernel)
        assert type(locator).__name__.startswith("Gputree")
        assert locator.get_source_stamp() == _locator(
            numba_kernels._find_splits).get_source_stamp()


def test_locators_are_found_by_the_names_of_older_and_newer_numba():
    """numba before 0.62 (and numba-cuda 0.30) name the cache locators
    ``_InTreeCacheLocator`` etc., later numba ``InTreeCacheLocator``: either
    is found (without it, older numba recompiled the scan kernels in every
    process), the public one where both exist."""
    import types
    older = types.SimpleNamespace(_InTreeCacheLocator=int)
    newer = types.SimpleNamespace(InTreeCacheLocator=float, _InTreeCacheLocator=int)
    assert kernel_cache._public_or_private(older, "InTreeCacheLocator") is int
    assert kernel_cache._public_or_private(newer, "InTreeCacheLocator") is float
    with pytest.raises(AttributeError):
        kernel_cache._public_or_private(types.SimpleNamespace(), "InTreeCacheLocator")


def test_the_stamp_follows_an_edit_of_a_file_the_kernels_compile(tmp_path, monkeypatch):
    """A locator for a kernel file in a scratch folder: touching another
    source of that folder changes the stamp."""
    from numba.core import caching
    kernel, other = tmp_path / "kernels.py", tmp_path / "scan.py"
    kernel.write_text("def f():\n    return 1\n")
    other.write_text("x = 1\n")
    monkeypatch.setattr(kernel_cache, "_HERE", str(tmp_path))
    impl = type("Impl", (), {"_locator_classes": list(caching.CacheImpl._locator_classes)})
    kernel_cache.cover_backend_sources(impl, (caching.InTreeCacheLocator,), str(kernel))
    namespace = {}
    exec(compile(kernel.read_text(), str(kernel), "exec"), namespace)
    locator = impl._locator_classes[0].from_function(namespace["f"], str(kernel))
    assert impl._locator_classes[0].from_function(namespace["f"], str(other)) is None
    before = locator.get_source_stamp()
    os.utime(other, (1, 1))
    assert locator.get_source_stamp() != before


def test_the_cpu_kernels_cache_where_numba_cache_dir_says(tmp_path):
    """NUMBA_CACHE_DIR, when set, holds the kernels (numba's own rule), not
    the package folder nor the user's cache folder."""
    import subprocess
    import sys
    from pathlib import Path
    code = ("from gputree.backends.cpu import split_scan\n"
            "print(split_scan.split_finder((0, 0), False, False).compiled._cache._impl._locator."
            "_cache_path)\n")
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path),
               PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().startswith(str(tmp_path))


def test_two_signatures_saved_at_once_keep_their_own_compilations(tmp_path):
    """Two processes save two signatures of one staged kernel at once: both
    read the index before either writes, and one writes its data after the
    other is done. Every signature the index then lists loads its own
    compilation (numba's numbering gave both the file number 1)."""
    from numba.core import caching
    from gputree import _compile_cache
    keyed = _compile_cache._keyed_file_class(caching.IndexDataCacheFile)
    first, second = (keyed(str(tmp_path), "kernel", ("stamp",)) for _ in range(2))
    second._load_index = lambda: {}              # read before the first saved
    held = []
    first._save_data = lambda name, data: held.append((name, data))
    first.save(("uint8 C",), "code for uint8 C")
    second.save(("uint16 F",), "code for uint16 F")
    keyed._save_data(first, *held[0])            # the first's data lands last
    reader = keyed(str(tmp_path), "kernel", ("stamp",))
    listed = reader._load_index()
    assert listed
    for key in listed:
        assert reader.load(key) == f"code for {key[0]}"


def test_a_gputree_kernel_saves_its_compilations_under_keyed_names(tmp_path, monkeypatch):
    """gputree's cache class names each saved compilation's data file by
    its key (never numba's first free number), the name its index lists,
    and a second save of the same key from a fresh start takes the same name."""
    from numba import config
    from gputree._compile_cache import cached_kernel
    monkeypatch.setattr(config, "CACHE_DIR", str(tmp_path / "one"))

    def add_one(x):
        return x + 1

    kernel = cached_kernel()(add_one)
    assert kernel(1) == 2 and kernel(1.5) == 2.5
    cache_file = kernel._cache._cache_file
    listed = cache_file._load_index()
    assert len(listed) == 2
    numbered = {cache_file._data_name(i) for i in (1, 2)}
    assert not set(listed.values()) & numbered
    assert sorted(p.name for p in (tmp_path / "one").rglob("*.nbc")) == sorted(listed.values())
    monkeypatch.setattr(config, "CACHE_DIR", str(tmp_path / "two"))
    again = cached_kernel()(add_one)
    assert again(1.5) == 2.5                      # this key alone: numba would take number 1
    assert set(again._cache._cache_file._load_index().items()) <= set(listed.items())
