"""Device-array inputs (anything with ``__cuda_array_interface__``): accepted
by every estimator, and predictions come back in the caller's array kind.

No GPU here, so a minimal stand-in for cupy provides the device array type;
the CPU backend copies such inputs to the host (the CUDA backend uses them in
place), and results are converted back with ``cupy.asarray``.
"""
import sys
import types

import numpy as np
import pytest

import gputree


class FakeDeviceArray:
    """A host array dressed as a device array."""

    def __init__(self, data):
        self.data = np.asarray(data)

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.data.shape, "typestr": self.data.dtype.str, "version": 3,
                "data": (self.data.ctypes.data, False)}

    shape = property(lambda self: self.data.shape)
    ndim = property(lambda self: self.data.ndim)
    dtype = property(lambda self: self.data.dtype)

    def get(self):
        return self.data.copy()


@pytest.fixture
def fake_cupy(monkeypatch):
    module = types.ModuleType("cupy")
    module.asarray = lambda a, dtype=None: FakeDeviceArray(
        np.asarray(a.data if isinstance(a, FakeDeviceArray) else a, dtype=dtype))
    module.asnumpy = lambda a: (a.data if isinstance(a, FakeDeviceArray) else np.asarray(a)).copy()
    monkeypatch.setitem(sys.modules, "cupy", module)
    return module


def data(seed=0):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(300, 4))
    X[rng.rand(*X.shape) < 0.05] = np.nan
    y = (np.nan_to_num(X[:, 0]) + 0.5 * rng.normal(size=300) > 0).astype(int)
    return X, y


@pytest.mark.parametrize("estimator", [
    gputree.DecisionTreeClassifier(max_depth=4, device="cpu"),
    gputree.RandomForestClassifier(n_estimators=5, max_depth=3, random_state=0, device="cpu"),
    gputree.GradientBoostingClassifier(n_estimators=5, max_depth=3, device="cpu"),
])
def test_device_inputs_give_device_outputs_equal_to_host_ones(fake_cupy, estimator):
    X, y = data()
    host_model = type(estimator)(**estimator.get_params()).fit(X, y)
    device_model = estimator.fit(FakeDeviceArray(X), FakeDeviceArray(y))
    for method in ("predict", "predict_proba"):
        on_device = getattr(device_model, method)(FakeDeviceArray(X))
        assert isinstance(on_device, FakeDeviceArray), method
        assert np.array_equal(on_device.data, getattr(host_model, method)(X)), method
        on_host = getattr(device_model, method)(X)
        assert isinstance(on_host, np.ndarray), method


def test_staged_predictions_keep_the_input_kind(fake_cupy):
    X, y = data(1)
    model = gputree.GradientBoostingClassifier(n_estimators=3, max_depth=2, device="cpu").fit(X, y)
    staged = list(model.staged_predict_proba(FakeDeviceArray(X)))
    assert len(staged) == 3 and all(isinstance(s, FakeDeviceArray) for s in staged)
    assert np.array_equal(staged[-1].data, model.predict_proba(X))


def test_device_sample_weight_is_accepted(fake_cupy):
    X, y = data(2)
    weight = np.random.RandomState(2).uniform(0.5, 2.0, size=len(y))
    a = gputree.DecisionTreeClassifier(max_depth=3, device="cpu").fit(X, y, sample_weight=weight)
    b = gputree.DecisionTreeClassifier(max_depth=3, device="cpu").fit(
        X, y, sample_weight=FakeDeviceArray(weight))
    assert np.array_equal(a.predict_proba(X), b.predict_proba(X))
