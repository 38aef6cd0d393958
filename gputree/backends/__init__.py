"""Backend selection: ``get_backend(device)`` for "cpu", "cuda", "cuda-sim" or
"auto" (CUDA when cupy finds a usable GPU and the CUDA toolchain works, else
the CPU, with a warning that says why)."""
import warnings

_VALID_DEVICES = ("auto", "cpu", "cuda", "cuda-sim")
_cache = {}
#: why device="auto" could not start the CUDA backend (tried once per process)
_auto_failure = []


def get_backend(device="auto"):
    """Return the (cached) backend object for ``device``."""
    if device not in _VALID_DEVICES:
        raise ValueError(f"device must be one of {_VALID_DEVICES}, got {device!r}.")
    if device == "auto":
        device = _auto_device()
    if device not in _cache:
        _cache[device] = _create(device)
    return _cache[device]


def _auto_device():
    """"cuda" when a GPU is there and its backend starts, else "cpu" (with a
    warning when a GPU is there but the backend could not start)."""
    if "cuda" in _cache:
        return "cuda"
    if _auto_failure or not cuda_available():
        return "cpu"
    try:
        _cache["cuda"] = _create("cuda")
    except Exception as exc:  # noqa: BLE001 - any failure: fall back, saying why
        _auto_failure.append(exc)
        warnings.warn(f"device='auto' found a GPU but uses the CPU: {exc}", RuntimeWarning,
                      stacklevel=3)
        return "cpu"
    return "cuda"


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
