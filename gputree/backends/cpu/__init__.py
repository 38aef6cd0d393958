"""The CPU backend (:class:`.backend.CPUBackend`): numpy arrays and numba
kernels, split by stage."""
from .backend import CPUBackend

__all__ = ["CPUBackend"]
