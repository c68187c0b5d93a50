"""What a careless or hostile caller hands kiln.compile: arrays it may not write, options of
the wrong type, and loops long enough to unroll into huge graphs. Each gets NumPy's answer or a
clear error naming the op and the user's line; what is done before the error is what NumPy does."""
import numpy as np
import pytest

import kiln


def read_only(array):
    array.flags.writeable = False
    return array


def write_first(a):
    a[0] = 5  # line named by the error
    return a * 2


def add_one_to_both(b, a):
    b += 1
    a += 1
    return a


def test_writing_a_read_only_argument_names_the_line():
    with pytest.raises(ValueError, match=r"assignment at test_trust_hostile_inputs.py:\d+: "
                                         "assignment destination is read-only"):
        kiln.compile(write_first)(read_only(np.ones(4)))


def test_a_cached_entry_never_half_writes_when_an_argument_is_read_only():
    compiled = kiln.compile(add_one_to_both)
    compiled(np.zeros(4), np.ones(4))  # cached for writeable arguments
    b = np.zeros(4)
    with pytest.raises(ValueError, match="read-only"):
        compiled(b, read_only(np.ones(4)))
    # b written as NumPy writes it before the failing line, a not at all
    np.testing.assert_array_equal(b, np.ones(4))
    a = np.ones(4)
    np.testing.assert_array_equal(compiled(b, a), np.full(4, 2.0))  # the entry still serves
    np.testing.assert_array_equal(b, np.full(4, 2.0))


def test_arguments_sharing_read_only_memory_are_never_written():
    # Views of an immutable bytes object: traced as one block of memory, still read-only.
    memory = np.frombuffer(np.arange(8.0).tobytes(), np.float64)

    def shift(p, q):
        p += 1
        return p + q
    with pytest.raises(ValueError, match="read-only"):
        kiln.compile(shift)(memory[:6], memory[2:])
    np.testing.assert_array_equal(memory, np.arange(8.0))


def test_read_only_arguments_that_are_only_read_compile():
    x = read_only(np.arange(4.0))
    np.testing.assert_array_equal(kiln.compile(lambda a: a * 2)(x), x * 2)


@pytest.mark.parametrize("options, error, words", [
    ({"mode": 5}, TypeError, "options['mode'] must be a str, got int"),
    ({"mode": None}, TypeError, "options['mode'] must be a str"),
    ({"num_threads": "4"}, TypeError, "options['num_threads'] must be an int, got str"),
    ({"num_threads": 2.5}, TypeError, "options['num_threads'] must be an int, got float"),
    ({"num_threads": True}, TypeError, "options['num_threads'] must be an int, got bool"),
    ({"num_threads": 10**20}, ValueError, "options['num_threads'] is out of range"),
    ({"disk_cache": 0}, TypeError, "options['disk_cache'] must be True or False, got int"),
    ({"allow_reassociation": "yes"}, TypeError, "options['allow_reassociation'] must be True"),
    ({"unsupported_ops": 1}, TypeError, "options['unsupported_ops'] must be a str"),
    ({"cache_dir": 5}, TypeError, "options['cache_dir'] must be a str or os.PathLike, got int"),
    ({"cache_dir": b"/tmp"}, TypeError, "options['cache_dir'] must be a str or os.PathLike"),
    ("default", TypeError, "options must be a dict, got str"),
])
def test_options_of_the_wrong_type_are_errors_naming_the_option(options, error, words):
    with pytest.raises(error, match=words.replace("[", r"\[").replace("]", r"\]")):
        kiln.compile(lambda x: x * 2 + 1, options=options)(np.ones(3))


def test_a_cache_directory_given_as_a_path(tmp_path):
    cache = tmp_path / "a cache"
    result = kiln.compile(lambda x: x * 2 + 1, options={"cache_dir": cache})(np.ones(3))
    np.testing.assert_array_equal(result, np.full(3, 3.0))
    assert cache.is_dir() and any(cache.iterdir())


@pytest.mark.parametrize("function", [
    lambda a: a[::2**70], lambda a: a[::-2**70], lambda a: a[2**70:-2**70:-1],
    lambda a: a[-2**70:2**70],
])
def test_slice_bounds_past_int64_clamp_as_in_numpy(function):
    x = np.arange(5.0)  # were RuntimeError std::bad_cast
    np.testing.assert_array_equal(kiln.compile(function)(x), function(x))


@pytest.fixture
def unrolled():
    with kiln.config.patch(capture_loops=False):  # every step a node, as code without source
        yield


def test_a_long_unrolled_chain_compiles_as_bounded_kernels(unrolled):
    def chain(x):
        for _ in range(3000):
            x = x * 1.0001 + 0.001
        return x
    report = kiln.explain(chain)(np.ones(4))
    np.testing.assert_allclose(report.result, chain(np.ones(4)), rtol=1e-12)
    # 6,000 ops were one function the C++ compiler took seconds on (minutes for longer loops)
    assert report.op_count > 6000
    assert len(report.kernels) >= report.op_count // 1100, report.kernels


def test_a_long_unrolled_loop_of_shared_values_compiles_as_bounded_kernels(unrolled):
    def branches(x, y):
        acc = x
        for i in range(600):
            acc = np.where(acc > y, acc - y, acc + np.sin(y) * (i % 7))
        return acc
    x, y = np.linspace(0, 2, 8), np.full(8, 0.5)
    report = kiln.explain(branches)(x, y)
    np.testing.assert_allclose(report.result, branches(x, y), rtol=1e-12)
    assert len(report.kernels) >= report.op_count // 1100 > 1, report.kernels


def test_a_new_shape_per_call_keeps_a_bounded_number_of_entries(monkeypatch):
    # dynamic=True lifts recompile_limit for shapes: every entry (a loaded library, guards
    # every call walks) was kept, without bound. The least recently used go; they come back.
    monkeypatch.setattr(kiln._call_tracing, "MOST_ENTRIES", 4)
    compiled = kiln.compile(lambda x: np.sin(x) * 2 + x.sum(), dynamic=True)
    for n in [1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 9, 1, 8]:
        x = np.linspace(0, 1, n)
        np.testing.assert_allclose(compiled(x), np.sin(x) * 2 + x.sum(), rtol=1e-12)
        assert len(compiled._kiln_function.cache) <= 4
