"""Items of a Python dict of arrays that a time-step loop replaces (`state["vel"] =
state["vel"] - dt * state["pos"]`) carried by the loop (kiln._loop_container_items): one loop
node, the dict holding what NumPy's loop leaves in it, its keys in their order. Such loops were
refused ("a Python list, dict or set changes") and unrolled. A dict handed in by the caller
has its items replaced as NumPy's run replaces them."""
import numpy as np

from test_loop_list_items import check, loop_kinds


def leapfrog(p, v, n, dt):
    state = {"pos": p, "vel": v}
    for t in range(n):
        state["vel"] = state["vel"] - dt * state["pos"]
        state["pos"] = state["pos"] + dt * state["vel"]
    return state


def leapfrog_of_callers_dict(state, n, dt):
    for t in range(n):
        state["vel"] = state["vel"] - dt * state["pos"]
        state["pos"] = state["pos"] + dt * state["vel"]
    return float(np.sum(state["pos"] ** 2))


def energy_with_a_counter(p, v, n):
    state = {"steps": 0, "pos": p.astype(np.float32), "vel": v.astype(np.float32),
             "energy": 0.0}
    for t in range(n):
        state["pos"] += 0.01 * state["vel"]  # in place: the same array, updated
        state["vel"] = state["vel"] - 0.01 * state["pos"]
        state["energy"] = 0.5 * float(np.sum(state["vel"].astype(np.float64) ** 2))
        state["steps"] += 1
    return state


def adds_a_key(p, n):
    state = {"pos": p.copy()}
    for t in range(n):
        state["pos"] = state["pos"] * 0.5
        state[f"at{t}"] = state["pos"]
    return state


def test_a_dicts_time_steps_are_one_loop():
    rng = np.random.default_rng(0)
    p, v = rng.standard_normal(40), rng.standard_normal(40)
    for n in (0, 1, 2, 50):
        check(leapfrog, p, v, n, 0.01)
    (kinds, short), (long_kinds, long) = (loop_kinds(leapfrog, p, v, n, 0.01)
                                          for n in (20, 300))
    assert kinds == long_kinds == ["loop"]
    assert long == short


def test_numbers_and_float32_arrays_in_a_dict():
    rng = np.random.default_rng(1)
    p, v = rng.standard_normal(16), rng.standard_normal(16)
    for n in (0, 1, 2, 30):
        check(energy_with_a_counter, p, v, n)
    kinds, _ = loop_kinds(energy_with_a_counter, p, v, 30)
    assert kinds == ["loop"]


def test_the_callers_dict_is_changed_as_numpys():
    rng = np.random.default_rng(2)
    state = {"pos": rng.standard_normal(10), "vel": rng.standard_normal(10)}
    for n in (0, 1, 40):
        check(leapfrog_of_callers_dict, state, n, 0.05, calls=3)
    kinds, _ = loop_kinds(leapfrog_of_callers_dict, state, 40, 0.05)
    assert kinds == ["loop"]


def test_a_body_that_adds_keys_runs_as_written():
    p = np.arange(3.0)
    for n in (0, 1, 4):
        check(adds_a_key, p, n)
