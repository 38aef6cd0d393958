"""Every backend implements every primitive the abstract Backend declares
(gputree.backends.base): a missing one fails here, not in the middle of a
fit on the device that lacks it."""
import inspect

import pytest

from gputree.backends.base import Backend


def _backend_classes():
    from gputree.backends.cpu import CPUBackend
    classes = [CPUBackend]
    try:
        from gputree.backends.cuda.backend import CUDABackend
        classes.append(CUDABackend)
    except ImportError:  # pragma: no cover - numba-cuda is a test dependency
        pass
    try:
        from gputree.dask.backend import DistributedBackend
        from gputree.dask.peer_growth import PeerBackend
        classes += [DistributedBackend, PeerBackend]
    except ImportError:  # pragma: no cover - dask is a test dependency
        pass
    return classes


def test_the_contract_declares_the_primitives():
    declared = Backend.__abstractmethods__
    assert {"map_to_bins", "build_histograms", "subtract_histograms", "scan_splits",
            "find_best_splits", "update_positions", "predict_leaves",
            "node_summaries"} <= declared
    for name in declared:
        assert inspect.getdoc(getattr(Backend, name)), f"{name} has no contract text"


@pytest.mark.parametrize("cls", _backend_classes(), ids=lambda c: c.__name__)
def test_every_backend_implements_every_primitive(cls):
    assert not cls.__abstractmethods__, f"{cls.__name__} lacks {sorted(cls.__abstractmethods__)}"
    for name in Backend.__abstractmethods__:
        ours, theirs = inspect.signature(getattr(Backend, name)), inspect.signature(
            getattr(cls, name))
        required = [p for p in ours.parameters.values() if p.default is inspect.Parameter.empty]
        has_varargs = any(p.kind is inspect.Parameter.VAR_POSITIONAL
                          for p in theirs.parameters.values())
        assert has_varargs or all(p.name in theirs.parameters for p in required), (
            f"{cls.__name__}.{name}{theirs} does not take {ours}")
