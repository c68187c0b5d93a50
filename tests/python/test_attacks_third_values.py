"""Attacks of a third round, continued (test_attacks_third.py: the state of held objects): statics
equal by == but not the same, patched builtins, NumPy's size errors, iterator results and the
cache command."""
import builtins
import itertools
import sys
from unittest import mock

import numpy as np
import pytest

import kiln
import kiln.cache


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
    x, holder = np.ones(2, dtype=np.int8), type("Holder", (), {})()
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
