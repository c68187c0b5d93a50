"""kiln.wrap_numpy and the caller's arrays: arguments the function assigns into get their new
values (as NumPy's caller sees them), and calls kiln cannot trace to the end run as NumPy on host
copies, their results back on the device. These need a GPU (scripts/gpu-check); without one,
test_cuda.py's test_wrap_numpy_without_a_gpu_says_why covers wrap_numpy."""
import math
import warnings

import numpy as np
import pytest

import kiln

GPU = not kiln._kiln.cuda_unavailable_reason()


def normalize_in_place(x):
    x -= x.mean(axis=0)
    return np.abs(x).sum()


def clip_negative(x, y):
    x[x < 0] = 0  # an argument assigned into; y only read
    return x * y


@pytest.mark.parametrize("function, count", [(normalize_in_place, 1), (clip_negative, 2)])
def test_arguments_assigned_into_get_their_new_values(function, count):
    if not GPU:
        return  # test_cuda.py: test_wrap_numpy_without_a_gpu_says_why
    torch = pytest.importorskip("torch")
    wrapped = kiln.wrap_numpy(function)
    rng = np.random.default_rng(0)
    for _ in range(3):  # the first call traces, later ones take the torch fast path
        host = [rng.standard_normal((300, 7)) for _ in range(count)]
        device = [torch.from_numpy(a.copy()).cuda() for a in host]
        got = wrapped(*device)
        want = function(*host)
        np.testing.assert_allclose(got.cpu().numpy(), want, rtol=1e-12)
        for argument, expected in zip(device, host):
            np.testing.assert_allclose(argument.cpu().numpy(), expected, rtol=1e-12, atol=1e-15)


def test_numpy_arguments_assigned_into_get_their_new_values():
    if not GPU:
        return  # test_cuda.py: test_wrap_numpy_without_a_gpu_says_why
    torch = pytest.importorskip("torch")
    x = np.linspace(-1, 1, 101)
    y = torch.linspace(1, 2, 101, device="cuda", dtype=torch.float64)
    expected_x = x.copy()
    want = clip_negative(expected_x, y.cpu().numpy())
    got = kiln.wrap_numpy(clip_negative)(x, y)
    np.testing.assert_allclose(got.cpu().numpy(), want, rtol=1e-12)
    np.testing.assert_array_equal(x, expected_x)


def prefixes(x):
    out = x * 1.0
    for k in range(1, 80):  # a value Python's math takes: a break on another prefix each time
        out = out + math.exp(-float(x[:k].sum()) ** 2)
    return out


def test_calls_past_the_graph_limit_run_on_host_copies(monkeypatch):
    if not GPU:
        return  # test_cuda.py: test_wrap_numpy_without_a_gpu_says_why
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(kiln._retrace, "SEGMENT_LIMIT", 8)  # (NVRTC compiles each graph)
    wrapped = kiln.wrap_numpy(prefixes)
    rng = np.random.default_rng(1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            host = rng.standard_normal(100)
            got = wrapped(torch.from_numpy(host).cuda())
            assert isinstance(got, torch.Tensor) and got.is_cuda
            np.testing.assert_allclose(got.cpu().numpy(), prefixes(host), rtol=1e-10)
    said = [str(w.message) for w in caught if "host copies" in str(w.message)]
    assert len(said) == 1  # once per function


def descent_with_losses(X, y):
    w = np.zeros(X.shape[1])
    losses = []
    for _ in range(50):  # captured as one loop node, as kiln.compile captures it
        p = 1.0 / (1.0 + np.exp(-(X @ w)))
        w = w - 0.5 * (X.T @ (p - y)) / len(y)
        losses.append(float(np.mean((p - y) ** 2)))
    return np.concatenate([w, np.array(losses)])


def test_loops_are_captured_as_kiln_compile_captures_them():
    if not GPU:
        return  # test_cuda.py: test_wrap_numpy_without_a_gpu_says_why
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    X, y = rng.standard_normal((200, 5)), (rng.random(200) > 0.5).astype(float)
    wrapped = kiln.wrap_numpy(descent_with_losses)
    got = wrapped(torch.from_numpy(X).cuda(), torch.from_numpy(y).cuda())
    np.testing.assert_allclose(got.cpu().numpy(), descent_with_losses(X, y), rtol=1e-10)
    assert len(wrapped.segments) == 0  # no graph break: one graph, the loop in it


WEIGHTS = np.linspace(0.5, 1.5, 64)
SCALE = 2.0


def _weighted(x):
    return x * WEIGHTS  # a helper's global


def scaled(x):
    return _weighted(x).sum(axis=-1) * SCALE


def _after_each_change_of_the_globals(check, changes):
    """check() twice (the second call takes the fast path where it can) after each change of
    the globals scaled() reads: none, WEIGHTS changed in place, rebound, SCALE rebound, then
    `changes` (callables rebinding WEIGHTS); the globals restored after."""
    global WEIGHTS, SCALE
    saved = WEIGHTS.copy(), SCALE

    def in_place():
        WEIGHTS[...] = WEIGHTS * 3.0

    def rebound():
        global WEIGHTS
        WEIGHTS = np.cos(np.arange(64.0))

    def number():
        global SCALE
        SCALE = -0.25
    try:
        for change in (lambda: None, in_place, rebound, number, *changes):
            change()
            for _ in range(2):
                check()
    finally:
        WEIGHTS, SCALE = saved


def test_globals_are_read_at_every_call():
    """A global array changed in place or rebound, or a global number rebound, is seen by the
    next call (on the torch fast path too), as kiln.compile and NumPy see it: they were baked
    into the graph, and later calls returned the first call's results."""
    if not GPU:
        return  # test_cuda.py: test_wrap_numpy_without_a_gpu_says_why
    torch = pytest.importorskip("torch")
    wrapped = kiln.wrap_numpy(scaled)
    x = torch.linspace(-1, 1, 8 * 64, device="cuda", dtype=torch.float64).reshape(8, 64)

    def check():
        host = WEIGHTS.cpu().numpy() if hasattr(WEIGHTS, "cpu") else WEIGHTS
        want = (x.cpu().numpy() * host).sum(axis=-1) * SCALE
        np.testing.assert_allclose(wrapped(x).cpu().numpy(), want, rtol=1e-12)

    def to_a_tensor():
        global WEIGHTS
        WEIGHTS = torch.from_numpy(np.sin(np.arange(64.0))).cuda()
    _after_each_change_of_the_globals(check, [to_a_tensor])


def test_globals_are_read_at_every_call_on_the_general_path(cpu_stand_in):
    wrapped = kiln.wrap_numpy(scaled)
    x = np.linspace(-1, 1, 8 * 64).reshape(8, 64)
    _after_each_change_of_the_globals(
        lambda: np.testing.assert_allclose(wrapped(x), scaled(x), rtol=1e-12), [])


def widened_or_negated(x):
    try:
        wide = x.astype(np.longdouble)  # a dtype kiln lacks: the trace cannot go on
    except Exception:  # noqa: BLE001
        wide = -x
    return (wide * 2).astype(np.float64)


def test_the_users_handler_never_takes_kilns_own_signal_on_the_general_path(cpu_stand_in):
    # The handler took the break's signal: -2x traced in the graph, where NumPy gives 2x.
    x = np.linspace(-1, 1, 8 * 64).reshape(8, 64)
    np.testing.assert_array_equal(kiln.wrap_numpy(widened_or_negated)(x), 2 * x)


def test_loops_and_assignments_on_the_general_path(cpu_stand_in):
    rng = np.random.default_rng(2)
    X, y = rng.standard_normal((200, 5)), (rng.random(200) > 0.5).astype(float)
    wrapped = kiln.wrap_numpy(descent_with_losses)
    np.testing.assert_allclose(wrapped(X, y), descent_with_losses(X, y), rtol=1e-10)
    assert len(wrapped.segments) == 0  # the loop captured: no graph break
    for function in (normalize_in_place, clip_negative):
        args = [rng.standard_normal((30, 7)) for _ in range(function.__code__.co_argcount)]
        expected = [a.copy() for a in args]
        want = function(*expected)
        np.testing.assert_allclose(kiln.wrap_numpy(function)(*args), want, rtol=1e-12)
        for got, wanted in zip(args, expected):  # the caller's arrays assigned into
            np.testing.assert_allclose(got, wanted, rtol=1e-12, atol=1e-15)


TABLE = [1.0, 2.0]
SETTINGS = type("Settings", (), {})()
SETTINGS.shift = 0.5
BIG = list(range(300))


def table_scaled(x, extra):
    return x * TABLE[0] * extra["factor"] + SETTINGS.shift + len(BIG)


def _after_each_change_in_place(check):
    for value in (1.0, 3.0):
        TABLE[0], SETTINGS.shift = value, value / 2
        BIG.append(value)
        check()


def test_static_containers_changed_in_place_trace_anew_on_the_general_path(cpu_stand_in):
    """A list, dict or object the function reads (an argument, a global) changed in place is
    the same object: the signature keys it by a frozen copy of its contents (kiln/
    _static_keys.py), as kiln.compile's guards compare snapshots; keyed by identity, a call
    returned the first call's values. One too large to copy (BIG, 300 items) runs on host
    copies, with a warning."""
    wrapped = kiln.wrap_numpy(table_scaled)
    x = np.linspace(-1, 1, 16)
    extra = {"factor": 2.0}
    BIG[:] = range(10)

    def check():
        extra["factor"] += 1
        np.testing.assert_allclose(wrapped(x, extra), table_scaled(x, extra), rtol=1e-12)
    _after_each_change_in_place(check)
    BIG[:] = range(300)
    with pytest.warns(RuntimeWarning, match="too large to check"):
        _after_each_change_in_place(check)


def test_static_containers_changed_in_place_on_the_torch_fast_path():
    if not GPU:
        return  # test_cuda.py: test_wrap_numpy_without_a_gpu_says_why
    torch = pytest.importorskip("torch")
    wrapped = kiln.wrap_numpy(lambda x: x * TABLE[0] + SETTINGS.shift)
    x = torch.linspace(-1, 1, 64, device="cuda", dtype=torch.float64)
    for value in (1.0, 3.0, -2.0):
        TABLE[0], SETTINGS.shift = value, value / 2
        np.testing.assert_allclose(wrapped(x).cpu().numpy(),
                                   x.cpu().numpy() * value + value / 2, rtol=1e-12)
