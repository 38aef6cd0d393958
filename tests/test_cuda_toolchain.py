"""The CUDA toolchain's failure modes give clear answers: an incompatible set
of versions raises an error naming them and the fix, device="auto" falls back
to the CPU instead of failing, and the numpy-compatibility shim leaves numpy
as it found it."""
import warnings

import numpy as np
import pytest

from gputree import backends
from gputree.backends.cuda import toolchain as cuda_compile


@pytest.fixture
def fresh_prepare():
    cuda_compile.prepare.cache_clear()
    yield
    cuda_compile.prepare.cache_clear()


def test_broken_toolchain_error_names_versions_and_fix(monkeypatch, fresh_prepare):
    from numba import config
    monkeypatch.setattr(config, "ENABLE_CUDASIM", 0)

    def broken():
        raise AttributeError("module 'numpy' has no attribute 'row_stack'")

    monkeypatch.setattr(cuda_compile, "_import_numpy_support", broken)
    with pytest.raises(cuda_compile.CudaToolchainError) as info:
        cuda_compile.prepare()
    message = str(info.value)
    assert f"numpy {np.__version__}" in message and "numba-cuda" in message
    assert "row_stack" in message and "gputree[cuda]" in message and "device='cpu'" in message


def test_auto_falls_back_to_cpu_once_with_a_warning(monkeypatch):
    monkeypatch.setattr(backends, "cuda_available", lambda: True)
    monkeypatch.setattr(backends, "_auto_failure", [])
    monkeypatch.setattr(backends, "_cache", {})
    calls = []

    def create(device):
        calls.append(device)
        if device == "cuda":
            raise cuda_compile.CudaToolchainError("numba-cuda does not work here")
        return object()

    monkeypatch.setattr(backends, "_create", create)
    with pytest.warns(RuntimeWarning, match="numba-cuda does not work here"):
        first = backends.get_backend("auto")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        second = backends.get_backend("auto")
    assert first is second and calls == ["cuda", "cpu"]


def test_explicit_cuda_does_not_fall_back(monkeypatch):
    monkeypatch.setattr(backends, "_cache", {})

    def create(device):
        raise cuda_compile.CudaToolchainError("numba-cuda does not work here")

    monkeypatch.setattr(backends, "_create", create)
    with pytest.raises(cuda_compile.CudaToolchainError):
        backends.get_backend("cuda")


def test_numpy_shim_leaves_numpy_unchanged(monkeypatch):
    """Where numpy lacks row_stack (numpy >= 2.5) the alias is lent only
    while numba's registrations import; numpy is left as found either way."""
    pytest.importorskip("numba.cuda")
    monkeypatch.delattr(np, "row_stack", raising=False)  # as numpy 2.5 has it
    seen = []
    real_import = __builtins__["__import__"] if isinstance(__builtins__, dict) else __builtins__.__import__

    def spy(name, *args, **kwargs):
        if name == "numba.cuda.np":
            seen.append(hasattr(np, "row_stack"))
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr("builtins.__import__", spy)
    cuda_compile._import_numpy_support()
    assert not hasattr(np, "row_stack")
    assert seen == [True]  # the alias existed while the registrations imported


def test_gputree_ir_detection():
    assert cuda_compile._mentions_gputree(["define void @_ZN7gputree8backends4cuda"])
    assert not cuda_compile._mentions_gputree("define void @_ZN4user6kernel")
