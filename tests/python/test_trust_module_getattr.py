"""A user's module that makes attributes with a module-level __getattr__ (PEP 562: lazy
loading, deprecation shims): `lazy.W` is in no module dict a guard can read, so kiln baked the
array into the graph and a W changed in place (or a different one returned) went unseen,
silently. Such a read makes the call run eagerly; the module's own attributes still compile."""
import sys
import textwrap

import numpy as np

import kiln

MODULE = textwrap.dedent("""
    import numpy as np
    SCALE = 2.0
    _weights = np.arange(3.0)

    def __getattr__(name):
        if name == "W":
            return _weights
        raise AttributeError(name)
""")


def imported(tmp_path, monkeypatch):
    (tmp_path / "lazy_weights.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "lazy_weights", raising=False)
    import lazy_weights
    return lazy_weights


GLOBAL_MODULE = None  # the imported module, set by the test


def plus_global_module(x):
    return x + GLOBAL_MODULE.W


def test_a_global_modules_computed_attribute_is_read_at_every_call(tmp_path, monkeypatch):
    monkeypatch.setitem(globals(), "GLOBAL_MODULE", imported(tmp_path, monkeypatch))
    assert "__getattr__" in vars(GLOBAL_MODULE)
    compiled = kiln.compile(plus_global_module)
    np.testing.assert_array_equal(compiled(np.ones(3)), [1.0, 2.0, 3.0])
    GLOBAL_MODULE._weights[1] = -4.0
    np.testing.assert_array_equal(compiled(np.ones(3)), [1.0, -3.0, 3.0])


def test_attributes_a_modules_getattr_makes_are_read_at_every_call(tmp_path, monkeypatch):
    lazy_weights = imported(tmp_path, monkeypatch)

    def plus(x):
        return x + lazy_weights.W
    compiled = kiln.compile(plus)
    np.testing.assert_array_equal(compiled(np.ones(3)), [1.0, 2.0, 3.0])
    lazy_weights._weights[0] = 100.0
    np.testing.assert_array_equal(compiled(np.ones(3)), [101.0, 2.0, 3.0])
    report = kiln.explain(plus)(np.ones(3))
    assert "__getattr__" in report.break_reasons[0].reason

    def scaled(x):  # the module's own attribute: read at each call, compiled
        return x * lazy_weights.SCALE
    report = kiln.explain(scaled)(np.ones(3))
    assert report.graph_count == 1 and not report.break_reasons
