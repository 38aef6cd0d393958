"""Fits with a backend's compiled growth steps and with the general steps
(the backend method that hands them out patched to None), and the check
that both grew the same trees field for field; shared by the tests of the
compiled best-first step and level."""
import dataclasses

import numpy as np

from gputree.backends.cpu.backend import CPUBackend


def fit_both(monkeypatch, make, X, y, steps_class, step_name, backend_method, **fit_args):
    """(trees grown with the compiled steps, trees grown with the general
    steps, compiled calls taken): ``make()`` an estimator, ``steps_class``'s
    ``step_name`` method counted, CPUBackend's ``backend_method`` patched to
    give None for the general fit."""
    calls = []
    step = getattr(steps_class, step_name)

    def counted(self, pool):
        calls.append(1)
        return step(self, pool)

    with monkeypatch.context() as patch:
        patch.setattr(steps_class, step_name, counted)
        compiled = make().fit(X, y, **fit_args)._trees
    with monkeypatch.context() as patch:
        patch.setattr(CPUBackend, backend_method, lambda self, *args: None)
        general = make().fit(X, y, **fit_args)._trees
    return compiled, general, len(calls)


def assert_same_trees(compiled, general):
    assert len(compiled) == len(general)
    for a, b in zip(compiled, general):
        for field in dataclasses.fields(a):
            x, y = getattr(a, field.name), getattr(b, field.name)
            if isinstance(x, np.ndarray):
                assert x.dtype == y.dtype, field.name
                np.testing.assert_array_equal(x, y, err_msg=field.name)
            else:
                assert x == y, field.name
