"""The eighth set's programs where kiln unrolled a loop it can capture (each test names the
symptom): searches with a loop's `else` clause, `with np.errstate(...)` in a loop body, star
unpacking of rows (`head, *tail = row`) and other Python objects a body binds, each compiled
once and called with several inputs, agreeing with NumPy on values, dtypes, shapes, Python types
and the arrays updated in place; and that the loops are captured, in a compile time that does
not grow with the data."""
import time
import warnings

import numpy as np

import kiln
from test_numpy_programs_seventh import check_calls
from test_numpy_programs_seventh_loops import loop_kinds


def compile_seconds(function, *arguments):
    start = time.perf_counter()
    kiln.compile(function)(*arguments)
    return time.perf_counter() - start


# ---- a loop's `else` clause ----

def first_over(x, t):
    for i in range(len(x)):
        if x[i] > t:
            idx = i
            break
    else:
        idx = -1
    return idx


def first_over_by_while(x, t):
    i = 0
    while i < len(x):
        if x[i] > t:
            break
        i += 1
    else:
        i = -1
    return i


def prime_table(n):
    primes = np.zeros(n, dtype=bool)
    for k in range(2, n):
        for d in range(2, k):
            if k % d == 0:
                break
        else:
            primes[k] = True
    return primes


def rows_all_below(M, t):
    ok = np.zeros(M.shape[0], dtype=bool)
    for i in range(M.shape[0]):
        for j in range(M.shape[1]):
            if M[i, j] > t:
                break
        else:
            ok[i] = True
    return ok


def newton_or_nan(a, tol, maxit):
    x = a
    for it in range(maxit):
        nx = 0.5 * (x + a / x)
        if abs(nx - x) < tol:
            x = nx
            break
        x = nx
    else:
        x = np.nan  # no convergence
    return x


def doubled_sum(x):
    s = 0.0
    for v in x:
        s += v
    else:
        s = s * 2
    return s


def first_over_or_nan(x, t):
    for i in range(len(x)):
        if x[i] > t:
            return i, x[i]
    else:
        return -1, np.nan


def hits_until_large(x, t):
    hits = 0
    for i in range(len(x)):
        if x[i] < 0:
            continue
        hits += 1
        if x[i] > t:
            break
    else:
        hits = -hits
    return hits


def first_pair_over(x, t):
    for i in range(len(x)):
        if x[i] > t:
            where, value = i, x[i]
            break
    else:
        where, value = -1, 0.0
    return where, value


def test_a_loop_with_an_else_clause_is_captured():
    # refused, "it has an `else` clause": unrolled, a graph break an iteration where the loop
    # breaks on traced data
    rng = np.random.default_rng(20)
    x = rng.random(30)
    check_calls(first_over, [(x, 0.9), (x, 2.0), (x[:0], 0.0), (np.arange(5), 3)])
    check_calls(first_over_by_while, [(x, 0.9), (x, 2.0), (x[:0], 0.0)])
    check_calls(prime_table, [(30,), (3,)])
    check_calls(rows_all_below, [(rng.random((8, 5)), 0.9), (rng.random((3, 2)), 2.0)])
    check_calls(newton_or_nan, [(2.0, 1e-12, 50), (2.0, 1e-12, 2), (np.float64(9.0), 1e-3, 30)])
    check_calls(doubled_sum, [(x,), (x[:0],), (np.arange(4),)])
    check_calls(first_over_or_nan, [(x, 0.9), (x, 2.0)])
    check_calls(hits_until_large, [(x - 0.2, 0.7), (x - 0.2, 2.0)])
    check_calls(first_pair_over, [(x, 0.9), (x, 2.0), (np.arange(4.0), 1.5)])
    for function, arguments in ((first_over, (x, 0.9)), (first_over_by_while, (x, 0.9)),
                                (rows_all_below, (rng.random((8, 5)), 0.9)),
                                (newton_or_nan, (2.0, 1e-12, 50)), (doubled_sum, (x,)),
                                (first_over_or_nan, (x, 0.9)), (hits_until_large, (x, 0.9)),
                                (first_pair_over, (x, 0.9))):
        kinds = loop_kinds(function, *arguments)
        assert "unrolled" not in kinds and "loop" in kinds, (function.__name__, kinds)
    small = compile_seconds(first_over, rng.random(200), 2.0)
    large = compile_seconds(first_over, rng.random(20000), 2.0)
    assert large < 5 * small + 0.5

# ---- `with` blocks in a loop's body ----

def log_sum_of_finite(x):
    total = 0.0
    for v in x:
        with np.errstate(divide="ignore"):
            lv = np.log(v)
        if np.isfinite(lv):
            total += lv
    return total


def safe_ratios(a, b):
    out = np.empty_like(a)
    for i in range(len(a)):
        with np.errstate(divide="ignore", invalid="ignore"):
            r = a[i] / b[i]
        out[i] = r if np.isfinite(r) else 0.0
    return out


def quiet_row_logs(M):
    out = np.zeros(M.shape[0])
    for i in range(M.shape[0]):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            out[i] = np.log(M[i]).sum()
    return out


def count_until_exp_over(x, t):
    n = 0
    for v in x:
        with np.errstate(over="ignore"):
            if np.exp(v) > t:
                break
        n += 1
    return n


ENTERED = []


class Entered:
    def __enter__(self):
        ENTERED.append(1)
        return self

    def __exit__(self, *exception):
        return False


def counted_blocks(x):
    s = 0.0
    for v in x:
        with Entered():
            s += v
    return s, len(ENTERED)


def test_a_with_block_of_numpys_error_state_in_a_loop_is_captured():
    # refused, "it contains a `with` statement": unrolled (4,000 logs: 10 s to compile)
    rng = np.random.default_rng(21)
    check_calls(log_sum_of_finite, [(np.array([0.0, 1.0, 2.0, 3.0]),), (rng.random(10),)])
    check_calls(safe_ratios, [(rng.random(5), np.array([1.0, 0.0, 2.0, 0.0, 3.0])),
                              (np.zeros(3), np.zeros(3))])
    check_calls(quiet_row_logs, [(rng.random((4, 3)) - 0.2,)])
    check_calls(count_until_exp_over, [(rng.random(20) * 5, 20.0), (rng.random(20), 1e9)])
    assert loop_kinds(log_sum_of_finite, rng.random(10)).count("loop") == 1
    assert loop_kinds(safe_ratios, rng.random(5), rng.random(5)).count("loop") == 1
    assert loop_kinds(quiet_row_logs, rng.random((4, 3))) == ["loop"]
    assert "unrolled" not in loop_kinds(count_until_exp_over, rng.random(20), 2.0)
    small = compile_seconds(log_sum_of_finite, rng.random(200))
    large = compile_seconds(log_sum_of_finite, rng.random(8000))
    assert large < 5 * small + 0.5


def test_a_with_block_of_another_manager_still_enters_it_every_iteration():
    x = np.random.default_rng(22).random(30)
    ENTERED.clear()
    got = kiln.compile(counted_blocks)(x)
    ENTERED.clear()
    assert got == counted_blocks(x)
    assert loop_kinds(counted_blocks, x) == ["unrolled"]

# ---- star unpacking, and Python objects a body binds ----

def weighted_tails(M):
    s = 0.0
    for row in M:
        first, *rest = row
        s += first * sum(rest)
    return s


def scaled_tails(M):
    total = np.zeros(M.shape[1] - 1)
    for i in range(M.shape[0]):
        head, *tail = M[i]
        total += head * np.array(tail)
    return total


def coordinates(records):
    out = np.zeros((len(records), 3))
    for k in range(len(records)):
        _, *xyz = records[k]  # (id, x, y, z)
        out[k] = xyz
    return out


def first_columns(M):
    s = 0.0  # np.float64 after the first iteration, which runs on its own
    for row in M:
        parts = list(row)
        s += parts[0] * parts[-1]
    return s


def deleted_after(M):
    s = 0.0
    for i in range(M.shape[0]):
        parts = list(M[i])
        s += parts[0] * parts[-1]
    del parts
    return s


def sum_until(M, t):
    s = 0.0
    i = 0
    while s < t and i < M.shape[0]:
        a, *rest = M[i]
        s += a + rest[-1]
        i += 1
    return s, i


def middle_counts(M):
    acc = 0.0
    for i in range(M.shape[0]):
        a, *mid, b = M[i]
        acc += (b - a) * len(mid)
    return acc, mid  # the list read after the loop: it runs as Python


def previous_row_list(M):
    s = 0.0
    prev = list(M[0])
    for i in range(1, M.shape[0]):
        cur = list(M[i])
        s += cur[0] - prev[0]  # the last iteration's list
        prev = cur
    return s


def test_star_unpacking_and_lists_a_body_binds_are_captured():
    # `head, *tail = row` was refused as "an assignment to an attribute or a subscript"; and a
    # list the body binds refused the loop, "the loop changes the Python value of `parts`",
    # where the first iteration ran on its own (s = 0.0 became np.float64): unrolled
    rng = np.random.default_rng(23)
    check_calls(weighted_tails, [(rng.random((4, 3)),), (np.arange(6).reshape(3, 2),)])
    check_calls(scaled_tails, [(rng.random((4, 3)),), (np.arange(6).reshape(3, 2),)])
    check_calls(coordinates, [(rng.random((6, 4)),)])
    check_calls(first_columns, [(rng.random((5, 3)),),
                                (np.arange(6, dtype=np.int32).reshape(2, 3),)])
    check_calls(deleted_after, [(rng.random((6, 3)),), (rng.random((1, 2)),)])
    check_calls(sum_until, [(rng.random((30, 3)), 5.0), (rng.random((3, 3)), 100.0)])
    check_calls(middle_counts, [(rng.random((5, 4)),), (rng.random((3, 2)),)])
    check_calls(previous_row_list, [(rng.random((6, 3)),)])
    M = rng.random((50, 3))
    for function in (weighted_tails, scaled_tails, first_columns, deleted_after):
        assert loop_kinds(function, M) == ["loop"], function.__name__
    assert loop_kinds(coordinates, rng.random((50, 4))) == ["loop"]
    assert loop_kinds(sum_until, M, 5.0) == ["loop"]
    small = compile_seconds(scaled_tails, rng.random((100, 3)))
    large = compile_seconds(scaled_tails, rng.random((4000, 3)))
    assert large < 5 * small + 0.5


# ---- scalar kinds a loop keeps (programs that pass, kept as guards) ----

def count_above(x, t):
    count = 0
    for v in x:
        if v > t:
            count += 1
    return count


def best_or_zero(x):
    best = 0
    for i in range(len(x)):
        if x[i] > best:
            best = x[i]
    return best


def any_negative_np(x):
    found = False
    for v in x:
        found = found or v < 0
    return found


def float32_accum(x):
    s = 0.0
    for v in x:
        s += v
    return s


def mixed_min(x):
    m = 1e300
    for v in x:
        m = min(m, v)
    return m


def bool_toggle(mask):
    state = np.False_
    out = np.zeros_like(mask)
    for i in range(len(mask)):
        if mask[i]:
            state = ~state
        out[i] = state
    return out, state


def empty_loop_type(x):
    total = 0
    for v in x:
        total = total + v
    return total


def zero_d_inplace(x):
    acc = np.array(0.0)
    for v in x:
        acc += v
    return acc


def nan_aware_max(x):
    best = np.nan
    for v in x:
        if np.isnan(best) or v > best:
            best = v
    return best


def int_pow_mod_np(base, exp, mod):
    result = np.int64(1)
    b = base % mod
    e = exp
    while e > 0:
        if e & 1:
            result = result * b % mod
        b = b * b % mod
        e >>= 1
    return result


def collatz_len(n):
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


def gcd_arr(a, b):
    out = np.empty_like(a)
    for i in range(len(a)):
        x, y = a[i], b[i]
        while y:
            x, y = y, x % y
        out[i] = x
    return out


def test_scalar_kinds_a_loop_keeps():
    rng = np.random.default_rng(40)
    x = rng.random(20)
    check_calls(count_above, [(x, 0.5), (x, 2.0), (x[:0], 0.1)])
    check_calls(best_or_zero, [(x,), (-x,), (np.arange(5),), (x[:0],)])
    check_calls(any_negative_np, [(x,), (x - 0.5,), (x[:0],)])
    check_calls(mixed_min, [(x,), (x[:0],), (np.arange(3),)])
    check_calls(bool_toggle, [(np.array([True, False, True, True]),), (np.zeros(3, bool),)])
    check_calls(empty_loop_type, [(x,), (x[:0],), (np.arange(3),)])
    check_calls(zero_d_inplace, [(x,), (x[:0],), (np.arange(3),)])
    check_calls(nan_aware_max, [(x,), (np.array([np.nan, 1.0, 2.0]),), (x[:0],)])
    check_calls(int_pow_mod_np, [(3, 200, 1000007), (np.int64(7), 13, 97)])
    check_calls(collatz_len, [(27,), (1,), (np.int64(6),)])
    check_calls(gcd_arr, [(np.array([12, 17, 100]), np.array([18, 5, 75])),
                          (np.array([7], np.int32), np.array([0], np.int32))])
    assert "unrolled" not in loop_kinds(count_above, x, 0.5)
    for function in (best_or_zero, nan_aware_max, zero_d_inplace):
        assert "unrolled" not in loop_kinds(function, x), function.__name__


def test_a_python_number_summing_narrow_items_keeps_their_type():
    # NumPy 2 (NEP 50): 0.0 + np.float32 is np.float32, 0 + np.uint8 np.uint8; NumPy 1.x
    # promotes the scalars by value to np.float64, np.int64 (deselected there,
    # scripts/test_numpy1.sh)
    x = np.random.default_rng(41).random(20)
    check_calls(float32_accum, [(x.astype(np.float32),), (x[:0].astype(np.float32),),
                                (np.arange(4, dtype=np.int8),)])
    assert loop_kinds(float32_accum, x.astype(np.float32)) == ["loop"]
    check_calls(empty_loop_type, [(np.arange(3, dtype=np.uint8),),
                                  (np.full(300, 7, dtype=np.uint8),)])
