"""Attacks of a third round (test_attacks_second.py holds the second): each test is a careless
user's or an attacker's call that gave a wrong answer, a crash or an unclear error."""
import builtins
import functools
import itertools
import sys
from unittest import mock

import numpy as np
import pytest

import kiln
import kiln.cache


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


class _Node:
    def __init__(self, **attributes):
        self.__dict__.update(attributes)


def test_an_object_seven_levels_inside_an_argument_object_is_compared():
    # holder.a[0].b[0].c[0].value: past the snapshot's depth the object was held as itself
    def deep(x, holder):
        return x * holder.a[0].b[0].c[0].value

    compiled = kiln.compile(deep)
    x, holder = np.ones(2), _Node(a=[_Node(b=[_Node(c=[_Node(value=2.0)])])])
    compiled(x, holder)
    holder.a[0].b[0].c[0].value = 5.0
    np.testing.assert_array_equal(compiled(x, holder), deep(x, holder))


def test_an_object_inside_a_list_argument_read_again_after_its_attribute_changed():
    def scaled(x, settings):
        return x * settings[0].value

    compiled = kiln.compile(scaled)
    x, settings = np.ones(2), [_Setting(2.0)]
    compiled(x, settings)
    for value in (3.0, -0.0, float("nan")):
        settings[0].value = value
        np.testing.assert_array_equal(compiled(x, settings), scaled(x, settings))


class _ClassScaled:
    value = 2.0


_SCALE = 1.0


class _PropertyScaled:
    @property
    def value(self):
        return 2.0 * _SCALE


class _FallbackScaled:
    def __getattr__(self, name):
        return 3.0 * _SCALE


def _set_scale(value):
    global _SCALE
    _SCALE = value


@pytest.mark.parametrize("item, change", [
    (_ClassScaled(), lambda: setattr(_ClassScaled, "value", 5.0)),
    (_PropertyScaled(), lambda: _set_scale(4.0)),
    (_FallbackScaled(), lambda: _set_scale(6.0)),
])
def test_a_class_member_of_an_object_inside_an_argument_objects_list_is_read_each_call(item,
                                                                                    change):
    # holder.items[0].value a class attribute, a property or __getattr__ reading a global:
    # the object's snapshot compares its own attributes only, and the call kept the first value
    def scaled(x, holder):
        return x * holder.items[0].value

    original = _ClassScaled.value
    compiled = kiln.compile(scaled)
    x, holder = np.ones(2), _Holder()
    holder.items = [item]
    try:
        np.testing.assert_array_equal(compiled(x, holder), scaled(x, holder))
        change()
        np.testing.assert_array_equal(compiled(x, holder), scaled(x, holder))
    finally:
        _ClassScaled.value = original
        _set_scale(1.0)


class _Layered:
    def __init__(self):
        self.layers = [_ClassScaled()]

    def step(self, x):
        return x * self.layers[0].value


def _closure_over_a_list():
    layers = [_ClassScaled()]
    return lambda x: x * layers[0].value


_GLOBAL_HOLDER = _Layered()


def _global_objects_list(x):
    return x * _GLOBAL_HOLDER.layers[0].value


def _default_list(x, layers=[[_ClassScaled()]]):  # noqa: B006 (the default is the attack)
    return x * layers[0][0].value


@pytest.mark.parametrize("function", [
    _Layered().step, _closure_over_a_list(), _global_objects_list, _default_list,
])
def test_a_class_attribute_of_an_object_in_a_list_of_self_a_closure_a_global_or_default(
        function):
    # self.layers[0].value, value the class's: `_ClassScaled.value = 5.0` went unseen
    original = _ClassScaled.value
    compiled = kiln.compile(function)
    x = np.ones(2)
    try:
        np.testing.assert_array_equal(compiled(x), function(x))
        _ClassScaled.value = 5.0
        np.testing.assert_array_equal(compiled(x), function(x))
    finally:
        _ClassScaled.value = original


_STEP = 2.0


def _step_by_global(x):
    return x * _STEP


def _multiplied(x, factor):
    return x * factor


def _set_step(value):
    global _STEP
    _STEP = value


def _box_reader(box):
    return lambda x: x * box[0]


_BOX = [2.0]


@pytest.mark.parametrize("step, change", [
    (functools.partial(_multiplied, factor=2.0),
     lambda holder: holder.steps[0].keywords.update(factor=5.0)),
    (_step_by_global, lambda holder: _set_step(4.0)),
    (_box_reader(_BOX), lambda holder: _BOX.__setitem__(0, 9.0)),
])
def test_a_callback_in_an_argument_objects_list_is_read_each_call(step, change):
    # holder.steps[0](x): a partial's keywords, a function's global, a closure's list changed
    # after the first call went unseen
    def run(x, holder):
        return holder.steps[0](x)

    compiled = kiln.compile(run)
    x, holder = np.ones(2), _Node(steps=[step])
    try:
        np.testing.assert_array_equal(compiled(x, holder), run(x, holder))
        change(holder)
        np.testing.assert_array_equal(compiled(x, holder), run(x, holder))
    finally:
        _set_step(2.0)
        _BOX[0] = 2.0


# ---- statics equal by == but not the same: a set's items, a tuple's ----

@pytest.mark.parametrize("first, second", [
    ({1, 2}, {1.0, 2}), (frozenset({1, 2}), frozenset({1.0, 2})), ({(1, 2)}, {(1.0, 2)}),
    ({0.0}, {-0.0}), ({1, 2}, {True, 2}),
])
def test_a_set_argument_whose_items_change_type_but_not_value_is_traced_again(first, second):
    # {1.0, 2} == {1, 2}: the guard took one for the other, and np.array(list(s)) kept int64
    def from_items(x, items):
        values = np.array(sorted(items, key=repr))
        return x + values, x / values

    compiled = kiln.compile(from_items)
    x = np.ones(len(first), dtype=np.int8)
    for items in (first, second):
        for got, expected in zip(compiled(x, items), from_items(x, items)):
            assert got.dtype == expected.dtype
            np.testing.assert_array_equal(got, expected)


def test_a_set_inside_an_argument_objects_attribute_is_compared_item_by_item():
    def from_items(x, holder):
        return x + np.array(sorted(holder.levels[0]))

    compiled = kiln.compile(from_items)
    x, holder = np.ones(2, dtype=np.int8), _Holder()
    for levels in ({1, 2}, {1.0, 2}):
        holder.levels = [levels]
        got, expected = compiled(x, holder), from_items(x, holder)
        assert got.dtype == expected.dtype


# ---- builtins patched or shadowed after the first call ----

def _uses_builtins(x):
    return x * len(x) + abs(-2)


def _calls_helper(x):
    return _helper_using_len(x)


def _helper_using_len(x):
    return x * len(x)


_builtin_len, _builtin_abs = len, abs


def _len_of_shaped_plus_one(value):
    return _builtin_len(value) + (1 if hasattr(value, "shape") else 0)


def test_a_builtin_patched_with_mock_is_called_by_the_compiled_function():
    compiled = kiln.compile(_uses_builtins)
    x = np.ones(3)
    compiled(x)
    # (len of anything with a shape counts one more: kiln's own code, NumPy's too, call len)
    with mock.patch("builtins.len", _len_of_shaped_plus_one):
        got, expected = compiled(x), _uses_builtins(x)
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(compiled(x), _uses_builtins(x))  # unpatched again


def test_a_builtin_assigned_on_the_builtins_module_is_called():
    compiled = kiln.compile(_uses_builtins)
    x = np.ones(3)
    compiled(x)
    original = builtins.abs
    builtins.abs = lambda value: 100 if value == -2 else _builtin_abs(value)
    try:
        got, expected = compiled(x), _uses_builtins(x)
    finally:
        builtins.abs = original
    np.testing.assert_array_equal(got, expected)


def test_a_module_global_defined_later_shadows_a_builtin_a_helper_calls():
    compiled = kiln.compile(_calls_helper)
    x = np.ones(3)
    compiled(x)
    module = sys.modules[__name__]
    module.len = _len_of_shaped_plus_one
    try:
        got, expected = compiled(x), _calls_helper(x)
    finally:
        del module.len
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(compiled(x), _calls_helper(x))


# ---- NumPy's size errors: an empty array's other extents still count ----

@pytest.mark.parametrize("make", [
    lambda x: np.broadcast_to(x, (0, 2**62)).sum(axis=1),
    lambda x: np.empty((0, 2**62)) + x[0],
    lambda x: np.broadcast_to(x, (2**62, 0)).mean(axis=0),
    lambda x: np.zeros((0, 2**40, 2**40), dtype=np.int8).sum() + x,
])
def test_an_empty_array_whose_other_extents_overflow_raises_numpys_value_error(make):
    x = np.ones(1)
    with pytest.raises(ValueError, match="array is too big"):
        make(x)
    with pytest.raises(ValueError, match="array is too big"):
        kiln.compile(make)(x)


@pytest.mark.parametrize("reduce", [
    lambda empty: empty.sum(axis=1), lambda empty: empty.mean(axis=1),
    lambda empty: empty.astype(np.bool_).any(axis=1), lambda empty: empty.max(axis=1),
    lambda empty: (empty == 0).all(axis=1),
])
def test_an_empty_array_numpy_allows_is_still_computed(reduce):
    def small(x):  # 2**62 one-byte elements fit intp: NumPy makes them, and reduces them
        return reduce(np.zeros((0, 2**62), dtype=x.dtype))

    x = np.ones(4, dtype=np.int8)
    expected = small(x)
    got = kiln.compile(small)(x)
    assert got.shape == expected.shape and got.dtype == expected.dtype


# ---- results that are iterators or views over the function's arrays ----

@pytest.mark.parametrize("make", [
    lambda a: iter([a, a * 2]), lambda a: {"k": a * 2}.values(), lambda a: {"k": a}.items(),
    lambda a: map(lambda v: v * 2, [a, a]), lambda a: zip(a, a * 2), lambda a: enumerate([a]),
    lambda a: reversed([a, a + 1]), lambda a: filter(lambda v: v.size, [a]),
    lambda a: itertools.chain([a], [a * 3]),
])
def test_an_iterator_or_view_returned_over_traced_arrays_yields_the_values(make):
    # the caller got an iterator over the trace's stand-ins: reading it raised kiln's
    # "a traced array ... was used after its trace ended"
    compiled = kiln.compile(make)
    x = np.arange(3.0)
    for _ in range(2):
        got, expected = list(compiled(x)), list(make(x))
        assert len(got) == len(expected)
        for left, right in zip(got, expected):
            for left_part, right_part in zip(_parts(left), _parts(right), strict=True):
                np.testing.assert_array_equal(np.asarray(left_part), np.asarray(right_part))


def _parts(item):
    return item if isinstance(item, tuple) else (item,)


# ---- python -m kiln.cache on a directory that is not kiln's ----

def test_the_cache_command_on_a_link_to_the_users_files_changes_nothing(tmp_path, capsys):
    # KILN_CACHE_DIR a symbolic link to a project: `clear` removed its two-letter files ("db")
    # and the temporary-looking files of its two-letter directories (not checked: a link)
    project = tmp_path / "project"
    (project / "ab").mkdir(parents=True)
    (project / "db").write_text("precious")
    (project / "ab" / "notes.tmp.1.abc").write_text("precious")
    (project / "notes.txt").write_text("precious")
    link = tmp_path / "cache"
    link.symlink_to(project)
    with kiln.config.patch(cache_dir=str(link)):
        for command in (["clear"], ["verify", "--remove"], ["show"]):
            assert kiln.cache.main(command) == 2
            assert "it is not kiln's cache; nothing was changed" in capsys.readouterr().err
    assert sorted(str(path.relative_to(project)) for path in project.rglob("*")) == [
        "ab", "ab/notes.tmp.1.abc", "db", "notes.txt"]


def test_the_cache_command_on_a_file_or_a_relative_path_says_so(tmp_path, capsys):
    # both were "does not exist yet (nothing compiled)"
    (tmp_path / "file").write_text("")
    with kiln.config.patch(cache_dir=str(tmp_path / "file")):
        assert kiln.cache.main(["show"]) == 2
        assert "file is not a directory" in capsys.readouterr().err
    with kiln.config.patch(cache_dir="relative/cache"):
        assert kiln.cache.main(["clear"]) == 2
        assert "must be an absolute path" in capsys.readouterr().err
