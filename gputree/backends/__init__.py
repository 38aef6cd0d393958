"""Backend selection: ``get_backend(device)`` for "cpu", "cuda", "cuda-sim" or
"auto" (CUDA when cupy finds a usable GPU and the CUDA toolchain works, else
the CPU, with a warning that says why)."""
import warnings

_cache = {}
#: why device="auto" could not start the CUDA backend (tried once per process)
_auto_failure = []


def get_backend(device="auto"):
    """Return the (cached) backend object for ``device`` (the estimators'
    ``device`` parameter), with a clear error for anything else."""
    if not isinstance(device, str):
        raise TypeError(f"device must be a string ('auto', 'cpu', 'cuda', 'cuda-sim'), got {device!r}.")
    if device not in DEVICES:
        raise ValueError(f"device must be one of {DEVICES}, got {device!r}.")
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


def _cpu():
    from .cpu import CPUBackend
    return CPUBackend()


def _cuda(simulated):
    from .cuda import create_cuda_backend
    return create_cuda_backend(simulated)


#: device name -> factory of its backend (a backend's module is imported on
#: first use): a new backend is its package plus one entry here
_FACTORIES = {"cpu": _cpu, "cuda": lambda: _cuda(False), "cuda-sim": lambda: _cuda(True)}
#: every value of the estimators' ``device`` parameter
DEVICES = ("auto",) + tuple(_FACTORIES)


def _create(device):
    return _FACTORIES[device]()
