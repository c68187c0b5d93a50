"""Attacks of a fifth round: what a compiled call runs or reads that can change between calls
unseen: a callable object's class's __call__ replaced, a module or class held by a global
container or by another module, and the loop LU's masked rows meeting inf."""
import types

import numpy as np
import pytest

import kiln


# ---- a callable object's __call__ replaced on its class after a call ----

class _Scaler:
    def __init__(self):
        self.k = 1.0

    def __call__(self, x):
        return x + self.k


class _Negating(_Scaler):
    def __call__(self, x):
        return x - 100.0


def test_a_callable_objects_call_replaced_on_its_class_is_run():
    # kiln compiled obj.__call__ once: `_Scaler.__call__ = other` after a call kept the old one
    klass = type("Local", (_Scaler,), {})
    obj = klass()
    compiled, x = kiln.compile(obj), np.ones(3)
    np.testing.assert_array_equal(compiled(x), [2.0, 2.0, 2.0])
    klass.__call__ = lambda self, x: x * 10.0
    np.testing.assert_array_equal(compiled(x), obj(x))
    klass.__call__ = lambda self, x: x * self.k * 20.0
    np.testing.assert_array_equal(compiled(x), [20.0, 20.0, 20.0])


def test_a_callable_objects_class_assigned_runs_the_new_classs_call():
    obj = _Scaler()
    compiled, x = kiln.compile(obj), np.ones(3)
    np.testing.assert_array_equal(compiled(x), [2.0, 2.0, 2.0])
    obj.__class__ = _Negating
    np.testing.assert_array_equal(compiled(x), [-99.0, -99.0, -99.0])


def test_a_callable_objects_call_replaced_by_a_builtin_is_run_as_python_does():
    klass = type("Local", (_Scaler,), {})
    obj = klass()
    compiled, x = kiln.compile(obj), np.ones(3)
    compiled(x)
    klass.__call__ = np.negative   # not a descriptor: obj(x) is np.negative(x)
    np.testing.assert_array_equal(compiled(x), [-1.0, -1.0, -1.0])


def test_a_callable_objects_own_call_attribute_is_ignored_as_python_does():
    # obj(x) looks __call__ up on the class; kiln compiled the instance's attribute instead
    obj = _Scaler()
    obj.__call__ = lambda x: x * 100.0
    np.testing.assert_array_equal(kiln.compile(obj)(np.ones(3)), obj(np.ones(3)))


# ---- a module or class held by a global container: its attributes read at each call ----

_MODULE = types.ModuleType("_attacks_fifth_config")
_MODULE.k = 2.0
_MODULE.w = np.full(3, 2.0)


class _Config:
    k = 2.0


_CFG = {"m": _MODULE, "c": _Config}
_MODULES = [_MODULE]
_NESTED = {"inner": (_MODULE,)}


def _from_dict(x):
    return x * _CFG["m"].k


def _from_list(x):
    return x * _MODULES[0].k


def _from_nested(x):
    module = _NESTED["inner"][0]
    return x * module.k


def _from_get(x):
    return x * _CFG.get("m").k


def _class_from_dict(x):
    return x * _CFG["c"].k


@pytest.mark.parametrize("f, holder", [(_from_dict, _MODULE), (_from_list, _MODULE),
                                       (_from_nested, _MODULE), (_from_get, _MODULE),
                                       (_class_from_dict, _Config)])
def test_an_attribute_of_a_module_or_class_a_global_container_holds_is_read_each_call(
        f, holder, monkeypatch):
    # CFG["m"].k changed between calls: the first call's 2.0 was a constant of the graph
    monkeypatch.setattr(holder, "k", 2.0)
    compiled, x = kiln.compile(f), np.ones(3)
    np.testing.assert_array_equal(compiled(x), [2.0, 2.0, 2.0])
    monkeypatch.setattr(holder, "k", 5.0)
    np.testing.assert_array_equal(compiled(x), [5.0, 5.0, 5.0])
    monkeypatch.setattr(holder, "k", np.float64(7.0))
    np.testing.assert_array_equal(compiled(x), [7.0, 7.0, 7.0])


def _array_from_dict(x):
    return x * _CFG["m"].w


def test_an_array_of_a_module_a_global_container_holds_changed_in_place_is_seen():
    _MODULE.w[:] = 2.0
    compiled, x = kiln.compile(_array_from_dict), np.ones(3)
    np.testing.assert_array_equal(compiled(x), [2.0, 2.0, 2.0])
    _MODULE.w[:] = 3.0
    np.testing.assert_array_equal(compiled(x), [3.0, 3.0, 3.0])
    _MODULE.w = np.full(3, 4.0)
    np.testing.assert_array_equal(compiled(x), [4.0, 4.0, 4.0])


_INNER = types.ModuleType("_attacks_fifth_inner")
_INNER.k = 2.0
_OUTER = types.ModuleType("_attacks_fifth_outer")
_OUTER.inner = _INNER
_HOLDING_OUTER = {"m": _OUTER}


def _through_a_module(x):
    return x * _OUTER.inner.k


def _through_a_held_module(x):
    return x * _HOLDING_OUTER["m"].inner.k


@pytest.mark.parametrize("f", [_through_a_module, _through_a_held_module])
def test_an_attribute_of_a_module_another_module_holds_is_read_each_call(f, monkeypatch):
    # config.sub.k: only config's own attributes were read, sub.k a constant of the graph
    monkeypatch.setattr(_INNER, "k", 2.0)
    compiled, x = kiln.compile(f), np.ones(3)
    np.testing.assert_array_equal(compiled(x), [2.0, 2.0, 2.0])
    monkeypatch.setattr(_INNER, "k", 7.0)
    np.testing.assert_array_equal(compiled(x), [7.0, 7.0, 7.0])


class _Steps:
    @staticmethod
    def step(x):
        return x + 1.0


_HOLDING_STEPS = {"steps": _Steps}


def _held_class_step(x):
    return _HOLDING_STEPS["steps"].step(x)


def test_a_staticmethod_replaced_on_a_class_a_global_container_holds_is_run(monkeypatch):
    compiled, x = kiln.compile(_held_class_step), np.ones(3)
    np.testing.assert_array_equal(compiled(x), [2.0, 2.0, 2.0])
    monkeypatch.setattr(_Steps, "step", staticmethod(lambda x: x * 50.0))
    np.testing.assert_array_equal(compiled(x), [50.0, 50.0, 50.0])


# ---- the loop LU (det; solve and inv off the CPU): a masked-out weight times inf or NaN ----

@pytest.fixture
def loop_solves(monkeypatch):
    """solve and inv by the loop LU kiln runs on a GPU (no LAPACK there), here on the CPU."""
    monkeypatch.setattr(kiln._numpy_linalg, "_on_cpu", lambda context: False)


_TWO = np.array([[1.0, 2.0], [3.0, 4.0]])
_THREE = np.array([[2.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 4.0]])


@pytest.mark.parametrize("a, b", [(_TWO, np.array([np.inf, 1.0])),
                                  (_TWO, np.array([1.0, np.inf])),
                                  (_THREE, np.array([1.0, np.inf, 1.0]))])
def test_a_solves_inf_or_nan_reaches_only_what_numpys_reaches(loop_solves, a, b):
    # the substitutions summed 0 * y over the rows they masked out: 0 * inf is NaN, so one inf
    # of b made every unknown NaN (NumPy's [-inf, inf] was [nan, nan])
    with np.errstate(all="ignore"):
        expected = np.linalg.solve(a, b)
        got = kiln.compile(lambda a, b: np.linalg.solve(a, b))(a, b)
    np.testing.assert_array_equal(got, expected)

