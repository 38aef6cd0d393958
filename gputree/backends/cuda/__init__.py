"""The CUDA backend: device arrays (cupy), CUDA C kernels from ``kernels/``
(:mod:`.c_kernels`) and ``numba.cuda`` kernels (:mod:`.numba_kernels`), or
the same on the CPU (``device="cuda-sim"``: the emulator and numba's CUDA
simulator). :func:`create_cuda_backend` starts one, with a clear error
saying what is missing."""
from .backend import CUDABackend
from .toolchain import prepare


_SIMULATOR_HINT = (
    "device='cuda-sim' runs the numba.cuda kernels in numba's CUDA simulator, which must be "
    "switched on before numba is first imported: run with the environment variable "
    "NUMBA_ENABLE_CUDASIM=1 (e.g. `NUMBA_ENABLE_CUDASIM=1 python train.py`), or use "
    "device='cpu'.")


def create_cuda_backend(simulated):
    """The real (cupy) or simulated (numpy + emulator) CUDA backend."""
    if simulated:
        from numba import config
        if not config.ENABLE_CUDASIM:
            raise ValueError(_SIMULATOR_HINT)
        return CUDABackend("emulator")
    _require_gpu()
    prepare()
    return CUDABackend("cupy")


def _require_gpu():
    """Raise a ValueError that says what is missing for device='cuda'."""
    try:
        import cupy
    except ImportError as exc:
        raise ValueError("device='cuda' needs cupy, which is not installed: "
                         "pip install 'gputree[cuda]' (CUDA 12), or use device='cpu'.") from exc
    try:
        n_devices = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # no driver, no device
        raise ValueError(f"device='cuda' found no usable NVIDIA GPU ({exc}). Check the driver "
                         "with nvidia-smi, or use device='cpu'.") from exc
    if n_devices == 0:
        raise ValueError("device='cuda' found no NVIDIA GPU; use device='cpu'.")
