"""Arguments kiln writes where they live (sched/donated_outputs.h, sched/in_place.h) while the
same call reads them: each must end as NumPy leaves it. A scatter whose values or index are
the very array it scatters into (`a[p] = a`, `np.add.at(a, p, a)`, `a[p] = a[:, :]`, also
inside a captured loop) read elements the scatter had already overwritten."""
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


@pytest.mark.parametrize("function, make", [
    (assign_self, lambda: (np.arange(10.0), np.roll(np.arange(10), 1))),
    (assign_self, lambda: (np.arange(20_001.0), np.roll(np.arange(20_001), -7))),
    (assign_self_view, lambda: (np.arange(12.0).reshape(4, 3), np.array([1, 2, 3, 0]))),
    (add_at_self, lambda: (np.arange(10.0), np.roll(np.arange(10), 1))),
    (add_at_self, lambda: (np.arange(6), np.array([0, 0, 1, 1, 5, 5]))),
    (assign_self_in_a_loop, lambda: (np.arange(10.0), np.roll(np.arange(10), 1))),
])
def test_a_scatter_of_the_array_into_itself_matches_numpy(function, make):
    compiled = kiln.compile(function)
    for _ in range(2):  # the first call and a cached one
        got, want = make(), make()
        compiled(*got)
        function(*want)
        np.testing.assert_array_equal(got[0], want[0])
