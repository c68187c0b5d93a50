"""A compiled function reading a large Python list, tuple or dict (a lookup table of numbers, a
vocabulary): each item was a leaf of the call's pytree, flattened in Python and guarded at
every call, so a 300,000-number table cost 6 ms a call (Python: microseconds), the first call
of a 3,000,000-number one 20 s, and any item changed compiled the function again. Such a
container is one value now, too large for a guard to watch: the call runs as Python, reading
the container as it is."""
import numpy as np

import kiln

TABLE = [float(i % 97) for i in range(100_000)]


def plus_table_entry(x):
    return x + TABLE[5]


def guard_lines(log, name):
    return [line for line in log.splitlines() if f"{name}'[" in line or f"{name}[" in line]


def test_a_large_global_list_is_one_value_read_as_python_reads_it(capfd):
    compiled = kiln.compile(plus_table_entry)
    kiln.set_logs("guards,graph_breaks")
    try:
        np.testing.assert_array_equal(compiled(np.ones(3)), [6.0, 6.0, 6.0])
        TABLE[5] = 1000.0
        np.testing.assert_array_equal(compiled(np.ones(3)), [1001.0, 1001.0, 1001.0])
    finally:
        TABLE[5] = 5.0
        kiln.set_logs("")
    log = capfd.readouterr().err
    assert not guard_lines(log, "TABLE"), "each item of the table was guarded"
    assert "too large to check at each call" in log


def test_large_arguments_of_every_container_kind():
    def lookup(x, table, index):
        return x * table[index]
    compiled = kiln.compile(lookup)
    numbers = list(range(50_000))
    for table, index in ((numbers, 7), (tuple(numbers), 9), (dict.fromkeys(range(50_000), 2.5), 3)):
        np.testing.assert_array_equal(compiled(np.ones(2), table, index),
                                      lookup(np.ones(2), table, index))
    numbers[7] = -1  # changed in place: read again
    np.testing.assert_array_equal(compiled(np.ones(2), numbers, 7), [-1.0, -1.0])


def test_many_positional_arrays_and_a_long_list_of_arrays_still_give_numpys_results():
    arrays = [np.full(2, float(i)) for i in range(5000)]

    def ends(*items):
        return items[0] + items[-1]
    np.testing.assert_array_equal(kiln.compile(ends)(*arrays), [4999.0, 4999.0])
    compiled = kiln.compile(lambda items: items[0] + items[-1])
    np.testing.assert_array_equal(compiled(arrays), [4999.0, 4999.0])
    arrays[0] += 100  # an array in the list changed in place
    np.testing.assert_array_equal(compiled(arrays), [5099.0, 5099.0])


def test_a_short_list_still_compiles_once(traces):
    short = [float(i) for i in range(100)]
    compiled = kiln.compile(lambda x, table: x + table[3])
    for _ in range(3):
        np.testing.assert_array_equal(compiled(np.ones(2), short), [4.0, 4.0])
    assert len(traces) == 1
