"""Attacks of a third round (test_attacks_second.py holds the second): each test is a careless
user's or an attacker's call that gave a wrong answer, a crash or an unclear error."""
import numpy as np
import pytest

import kiln


# ---- objects inside the lists, dicts and tuples of an argument object ----

class _Setting:
    def __init__(self, value):
        self.value = value


class _Holder:
    def __init__(self):
        self.items = [_Setting(2.0)]
        self.table = {"k": _Setting(3.0)}
        self.pair = (_Setting(4.0),)
        self.nested = [{"deep": (_Setting(5.0),)}]


def _read_through_containers(x, holder):
    return (x * holder.items[0].value + holder.table["k"].value + holder.pair[0].value
            + holder.nested[0]["deep"][0].value)


@pytest.mark.parametrize("change", [
    lambda holder: setattr(holder.items[0], "value", 7.0),
    lambda holder: setattr(holder.table["k"], "value", 7.0),
    lambda holder: setattr(holder.pair[0], "value", 7.0),
    lambda holder: setattr(holder.nested[0]["deep"][0], "value", 7.0),
    lambda holder: setattr(holder.items[0], "__class__", type("Other", (_Setting,), {})),
])
def test_an_attribute_of_an_object_inside_an_argument_objects_container_is_seen(change):
    # holder.items[0].value = 7.0 after the first call: the call returned the first value
    compiled = kiln.compile(_read_through_containers)
    x, holder = np.ones(3), _Holder()
    np.testing.assert_array_equal(compiled(x, holder), _read_through_containers(x, holder))
    change(holder)
    np.testing.assert_array_equal(compiled(x, holder), _read_through_containers(x, holder))


def test_an_object_inside_a_list_argument_read_again_after_its_attribute_changed():
    def scaled(x, settings):
        return x * settings[0].value

    compiled = kiln.compile(scaled)
    x, settings = np.ones(2), [_Setting(2.0)]
    compiled(x, settings)
    for value in (3.0, -0.0, float("nan")):
        settings[0].value = value
        np.testing.assert_array_equal(compiled(x, settings), scaled(x, settings))
