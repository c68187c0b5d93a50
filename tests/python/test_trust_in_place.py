"""Arguments kiln writes where they live (sched/donated_outputs.h, sched/in_place.h) while the
same call reads them: each must end as NumPy leaves it. A scatter whose values or index are
the very array it scatters into (`a[p] = a`, `np.add.at(a, p, a)`, `a[p] = a[:, :]`, also
inside a captured loop) read elements the scatter had already overwritten. A NumPy function
kiln runs eagerly at a graph break (np.place) got a copy of the traced array for each argument:
`np.place(a, m, a)` read values NumPy's own call, reading what it has written, does not (and
NumPy copies a strided one first: what it reads depends on the caller's layout)."""
import numpy as np
import pytest

import kiln


def assign_self(a, p):
    a[p] = a


def assign_self_view(a, p):
    a[p] = a[:, :]


def add_at_self(a, p):
    np.add.at(a, p, a)


def assign_self_in_a_loop(a, p):
    for _ in range(3):
        a[p] = a


def assign_a_copy(a, p):
    a[p] = a.copy()


def add_at_a_copy(a, p):
    np.add.at(a, p, a.copy())


def assign_a_copy_in_a_loop(a, p):
    for _ in range(3):
        a[p] = a.copy()


@pytest.mark.parametrize("function, reference, make", [
    (assign_self, assign_a_copy, lambda: (np.arange(10.0), np.roll(np.arange(10), 1))),
    (assign_self, assign_a_copy, lambda: (np.arange(20_001.0), np.roll(np.arange(20_001), -7))),
    (assign_self_view, assign_a_copy, lambda: (np.arange(12.0).reshape(4, 3),
                                               np.array([1, 2, 3, 0]))),
    (add_at_self, add_at_a_copy, lambda: (np.arange(10.0), np.roll(np.arange(10), 1))),
    (add_at_self, add_at_a_copy, lambda: (np.arange(6), np.array([0, 0, 1, 1, 5, 5]))),
    (assign_self_in_a_loop, assign_a_copy_in_a_loop, lambda: (np.arange(10.0),
                                                              np.roll(np.arange(10), 1))),
])
def test_a_scatter_of_the_array_into_itself_matches_numpy(function, reference, make):
    # NumPy 2's answer: the values read before any is written (NumPy 1.x's `a[p] = a` reads
    # them as it writes, an answer that depends on its order of writing).
    compiled = kiln.compile(function)
    for _ in range(2):  # the first call and a cached one
        got, want = make(), make()
        compiled(*got)
        reference(*want)
        np.testing.assert_array_equal(got[0], want[0])
        if np.lib.NumpyVersion(np.__version__) >= "2.0.0":
            numpy_args = make()
            function(*numpy_args)
            np.testing.assert_array_equal(numpy_args[0], want[0])


def place_itself(a, m):
    np.place(a, m, a)  # NumPy reads the values as it writes them (its answer is order-bound)
    return a * 2


def place_shifted(a, m):
    np.place(a[1:], m[1:], a)
    return a * 2


def place_in_a_copy(a, m):
    b = a * 1.0
    np.place(b, m, a)  # b and a do not share memory
    return b - a


@pytest.mark.parametrize("function", [place_itself, place_shifted, place_in_a_copy])
@pytest.mark.parametrize("make", [lambda: np.arange(6.0), lambda: np.arange(12.0)[::2]],
                         ids=["contiguous", "strided"])
def test_an_eager_call_writing_an_argument_that_shares_memory_with_another(function, make):
    compiled = kiln.compile(function)
    mask = np.array([True, False, True, True, False, True])
    for _ in range(2):
        got, want = make(), make()
        np.testing.assert_array_equal(compiled(got, mask), function(want, mask))
        np.testing.assert_array_equal(got, want)


def concatenate_into_itself(x):
    np.concatenate([x[:2], x[:2]], out=x[1:5])
    return x


def concatenate_rows_into_itself(x):
    np.concatenate([x[:, :2], x[:, :2]], axis=1, out=x[:, 1:5])
    return x


def stack_into_itself(x):
    np.stack([x[:2], x[1:3]], out=x[1:5].reshape(2, 2))
    return x


def concatenate_an_argument_into_another(x, y):
    np.concatenate([y, y], out=x)
    return x


@pytest.mark.parametrize("function", [concatenate_into_itself, concatenate_rows_into_itself,
                                      stack_into_itself])
def test_joining_into_an_out_that_overlaps_the_inputs_copies_them_in_turn(function):
    """NumPy copies the inputs of np.concatenate / np.stack into out= one after the other, each
    read as the copies before it left the memory: kiln joined them as they were before
    ([0, 0, 1, 0, 1] where NumPy leaves [0, 0, 1, 0, 0])."""
    make = (lambda: np.arange(10.0).reshape(2, 5)) if "rows" in function.__name__ else (
        lambda: np.arange(5.0))
    expected, x = make(), make()
    function(expected)
    np.testing.assert_array_equal(kiln.compile(function)(x), expected)
    np.testing.assert_array_equal(x, expected)
    memory, theirs = np.arange(6.0), np.arange(6.0)
    concatenate_an_argument_into_another(theirs[:4], theirs[1:3])
    kiln.compile(concatenate_an_argument_into_another)(memory[:4], memory[1:3])
    np.testing.assert_array_equal(memory, theirs)
