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
