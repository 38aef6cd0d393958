"""Backend selection: ``get_backend(device)`` for "cpu", "cuda", "cuda-sim" or
"auto" (CUDA when cupy finds a usable GPU, else CPU)."""

_VALID_DEVICES = ("auto", "cpu", "cuda", "cuda-sim")
_cache = {}


def get_backend(device="auto"):
    """Return the (cached) backend object for ``device``."""
    if device not in _VALID_DEVICES:
        raise ValueError(f"device must be one of {_VALID_DEVICES}, got {device!r}.")
    if device == "auto":
        device = "cuda" if cuda_available() else "cpu"
    if device not in _cache:
        _cache[device] = _create(device)
    return _cache[device]


def cuda_available():
    """True when cupy imports and sees at least one GPU."""
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def _create(device):
    if device == "cpu":
        from .cpu import CPUBackend
        return CPUBackend()
    from .cuda import create_cuda_backend
    return create_cuda_backend(simulated=(device == "cuda-sim"))
