"""A functools.cached_property of a global object that the first call computes: kiln found the
object's attributes when kiln.compile ran, before the property was stored in the object's
dict, so the array it cached was a constant of the graph and a change made to it in place
went unseen, silently."""
import functools

import numpy as np

import kiln


BASE = np.arange(3.0)


class Settings:
    @functools.cached_property
    def table(self):
        return BASE * 2.0


SETTINGS = Settings()


def plus_table(x):
    return x + SETTINGS.table


def test_a_cached_property_computed_by_the_first_call_is_read_at_every_call():
    vars(SETTINGS).pop("table", None)
    compiled = kiln.compile(plus_table)
    for _ in range(2):
        np.testing.assert_array_equal(compiled(np.ones(3)), [1.0, 3.0, 5.0])
    assert "table" in vars(SETTINGS)  # cached by the call, as Python's would
    SETTINGS.table[0] = 50.0
    np.testing.assert_array_equal(compiled(np.ones(3)), [51.0, 3.0, 5.0])
    SETTINGS.table = np.zeros(3)  # assigned over the cache
    np.testing.assert_array_equal(compiled(np.ones(3)), [1.0, 1.0, 1.0])
