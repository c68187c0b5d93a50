"""The seventh set's programs where kiln was wrong, crashed or unrolled (each test names the
symptom), and more loops as people write them: hashes and generators on fixed-width integers,
sorting and scanning by hand, sparse and banded products, each compiled once and called with
several inputs, agreeing with NumPy on values, dtypes, shapes, Python types and the arrays
updated in place; and where capture is the point, that the loops are captured."""
import numpy as np

import kiln
from test_numpy_programs_seventh import check_calls


def loop_kinds(function, *arguments):
    """The kinds of the loops and branches kiln.explain reports for one call."""
    report = kiln.explain(kiln.compile(function))(*arguments)
    return [loop.kind for loop in report.loops]

# ---- a return directly in a loop's body, after a `continue` or an inner loop's `else` ----

def first_row_over(M, t):
    for i in range(M.shape[0]):
        for j in range(M.shape[1]):
            if M[i, j] > t:
                break
        else:
            continue  # no item over t in this row
        return i, j
    return -1, -1


def first_positive(x):
    for v in x:
        if v <= 0:
            continue
        return v
    return None


def first_positive_by_while(x):
    i = 0
    while i < len(x):
        i += 1
        if x[i - 1] <= 0:
            continue
        return x[i - 1], i
    return 0.0, -1


def test_a_return_at_the_top_of_a_loops_body_is_merged():
    # the merged exit made the loop's `return` a list of statements nested in the body's list:
    # AttributeError: 'list' object has no attribute '_fields', from kiln's rewrite
    rng = np.random.default_rng(10)
    check_calls(first_row_over, [(rng.random((4, 5)), 0.9), (rng.random((4, 5)), 2.0),
                                 (np.arange(6).reshape(2, 3), 3)])
    check_calls(first_positive, [(np.array([-1.0, 0.0, 2.0, 3.0]),), (np.array([-1.0]),),
                                 (np.array([-1, 5]),)])
    check_calls(first_positive_by_while, [(np.array([-1.0, 0.0, 2.0, 3.0]),),
                                          (np.array([-1.0]),)])


# ---- NumPy scalars a loop computes from numbers only ----

def lcg_uniform(seed, n):
    state = np.uint32(seed)
    out = np.empty(n)
    for i in range(n):
        state = state * np.uint32(1664525) + np.uint32(1013904223)  # wraps modulo 2**32
        out[i] = state / 4294967296.0
    return out, state


def xorshift32(seed, n):
    x = np.uint32(seed)
    out = np.zeros(n, dtype=np.uint32)
    for i in range(n):
        x ^= x << np.uint32(13)
        x ^= x >> np.uint32(17)
        x ^= x << np.uint32(5)
        out[i] = x
    return out


def float32_tenths(n):
    s = np.float32(0)
    for _ in range(n):
        s += np.float32(0.1)
    return s


def hashed_steps(n):
    h = 7  # a Python int the first iteration makes a np.uint32
    for k in range(n):
        h = np.uint32(h * 31 + k)
    return h


def widened_by_float64(n):
    s = np.float32(0.1)
    for _ in range(n):
        s = s * np.float64(1.5)
    return s


def test_a_numpy_scalar_computed_from_numbers_in_a_loop_is_carried():
    # the body's NumPy scalar was a new Python value each iteration: the loop unrolled (an
    # LCG of 16,000 draws took 4 s to compile, NumPy runs it in 0.03 s)
    check_calls(lcg_uniform, [(1, 20), (7, 0), (np.uint32(5), 3)])
    check_calls(xorshift32, [(2463534242, 10), (1, 1)])
    check_calls(float32_tenths, [(100,), (0,), (7,)])
    check_calls(hashed_steps, [(5,), (0,), (1,)])
    check_calls(widened_by_float64, [(5,), (0,), (1,)])
    assert loop_kinds(lcg_uniform, 1, 16000) == ["loop"]
    assert loop_kinds(xorshift32, 1, 50) == ["loop"]
    assert loop_kinds(float32_tenths, 50) == ["loop"]


# ---- a branch between a NumPy scalar and a 0-d array ----

def unit(v):
    v = np.asarray(v, dtype=float)
    n = np.sqrt((v * v).sum())
    return v / n if n > 0 else v  # a NumPy scalar, or the 0-d array itself


def clipped_unit(v):
    v = np.asarray(v, dtype=float)
    n = np.abs(v)
    if n > 1:
        v = v / n
    return v


def best_above_zero(x):
    best = np.zeros(())
    for i in range(len(x)):
        if x[i] > best:
            best = x[i]
    return best


def test_a_branch_between_a_numpy_scalar_and_a_0d_array_returns_the_side_taken():
    # the select was a 0-d array whichever side was taken: np.float64 in NumPy came back
    # as a 0-d ndarray
    check_calls(unit, [(5,), (0,), (np.float64(-2),), (np.array(0.0),)])
    check_calls(clipped_unit, [(5,), (0.5,), (-3,)])
    rng = np.random.default_rng(11)
    check_calls(best_above_zero, [(rng.random(50),), (-rng.random(50),), (rng.random(3),)])


# ---- a nested loop's own break and continue ----

def positive_row_sums(M):
    out = np.zeros(M.shape[0])
    for i in range(M.shape[0]):
        for j in range(M.shape[1]):
            if M[i, j] < 0:
                continue
            out[i] += M[i, j]
    return out


def total_of_kept_rows(M):
    total = 0.0
    rows = 0
    for i in range(M.shape[0]):
        if M[i, 0] < 0:
            continue
        rows += 1
        for j in range(M.shape[1]):
            if M[i, j] < 0:
                continue
            total += M[i, j]
    return total, rows


def rows_until_one_has_no_hit(M, t):
    hits = 0
    for i in range(M.shape[0]):
        for j in range(M.shape[1]):
            if M[i, j] > t:
                hits += 1
                break
        else:
            break  # the outer loop's: this row had no hit
    return hits


def test_a_nested_loops_jumps_are_its_own():
    # the outer loop took the inner loop's `continue` for its own, and was refused: unrolled,
    # one inner loop node per row (5000 rows: 5000 nodes)
    rng = np.random.default_rng(12)
    M = rng.normal(size=(60, 7))
    check_calls(positive_row_sums, [(M,), (np.abs(M),), (-np.abs(M[:3]),)])
    check_calls(total_of_kept_rows, [(M,), (np.abs(M),)])
    check_calls(rows_until_one_has_no_hit, [(rng.random((30, 5)), 0.9), (rng.random((30, 5)), 0.1),
                                            (rng.random((30, 5)), 2.0)])
    assert loop_kinds(positive_row_sums, M).count("loop") == 2
    assert loop_kinds(total_of_kept_rows, M).count("unrolled") == 0


# ---- hashes and checksums on fixed-width integers ----

def fnv1a_32(data):
    h = np.uint32(2166136261)
    for b in data:
        h ^= np.uint32(b)
        h *= np.uint32(16777619)
    return h


def djb2(data):
    h = 5381
    for b in data:
        h = ((h << 5) + h + int(b)) & 0xFFFFFFFF
    return h


def adler32(data):
    a, b = 1, 0
    for x in data:
        a = (a + x) % 65521
        b = (b + a) % 65521
    return (b << 16) | a


def int8_running_sum(x):
    acc = np.int8(0)
    for v in x:
        acc += v  # wraps
    return acc


def test_hashes_and_checksums():
    data = np.frombuffer(b"hello world, kiln", dtype=np.uint8).copy()
    check_calls(fnv1a_32, [(data,), (data[:3],)])
    check_calls(djb2, [(data,), (data[:1],)])
    check_calls(adler32, [(data.astype(np.int64),), (np.arange(300),)])
    check_calls(int8_running_sum, [(np.array([100, 100, -50], np.int8),), (np.arange(9, dtype=np.int8),)])
    assert loop_kinds(fnv1a_32, data) == ["loop"]


# ---- sorting and scanning by hand ----

def bubble_sort(x):
    a = x.copy()
    n = len(a)
    for i in range(n):
        swapped = False
        for j in range(n - 1 - i):
            if a[j] > a[j + 1]:
                a[j], a[j + 1] = a[j + 1], a[j]
                swapped = True
        if not swapped:
            break
    return a


def insertion_sort(x):
    a = x.copy()
    for i in range(1, len(a)):
        key = a[i]
        j = i - 1
        while j >= 0 and a[j] > key:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = key
    return a


def binary_search(a, t):
    lo, hi = 0, len(a) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if a[mid] == t:
            return mid
        elif a[mid] < t:
            lo = mid + 1
        else:
            hi = mid - 1
    return -(lo + 1)


def kadane(x):
    best = cur = x[0]
    start = best_start = best_end = 0
    for i in range(1, len(x)):
        if cur + x[i] < x[i]:
            cur = x[i]
            start = i
        else:
            cur = cur + x[i]
        if cur > best:
            best, best_start, best_end = cur, start, i
    return best, best_start, best_end


def max_drawdown(prices):
    peak = prices[0]
    worst = 0.0
    for p in prices:
        if p > peak:
            peak = p
        drawdown = (peak - p) / peak
        if drawdown > worst:
            worst = drawdown
    return worst


def test_sorting_and_scanning_by_hand():
    rng = np.random.default_rng(13)
    check_calls(bubble_sort, [(rng.random(12),), (np.arange(5),), (np.array([3, 1, 2], np.int32),)])
    check_calls(insertion_sort, [(rng.random(12),), (np.arange(5)[::-1].copy(),)])
    check_calls(binary_search, [(np.arange(0, 20, 2), 8), (np.arange(0, 20, 2), 9),
                                (np.arange(0, 20, 2.0), 100)])
    check_calls(kadane, [(rng.normal(size=40),), (np.array([-3, -1, -2]),)])
    check_calls(max_drawdown, [(np.cumprod(1 + rng.normal(0, 0.02, 100)),),
                               (np.array([1, 2, 1, 3, 1]),)])


# ---- sparse, banded and recursive numerics ----

def csr_matvec(data, indices, indptr, x):
    y = np.zeros(len(indptr) - 1)
    for r in range(len(indptr) - 1):
        s = 0.0
        for k in range(indptr[r], indptr[r + 1]):
            s += data[k] * x[indices[k]]
        y[r] = s
    return y


def thomas(a, b, c, d):
    n = len(d)
    cp, dp = np.zeros(n), np.zeros(n)
    cp[0], dp[0] = c[0] / b[0], d[0] / b[0]
    for i in range(1, n):
        m = b[i] - a[i] * cp[i - 1]
        cp[i] = c[i] / m if i < n - 1 else 0.0
        dp[i] = (d[i] - a[i] * dp[i - 1]) / m
    x = np.zeros(n)
    x[-1] = dp[-1]
    for i in range(n - 2, -1, -1):
        x[i] = dp[i] - cp[i] * x[i + 1]
    return x


def conjugate_gradient(A, b, tol):
    x = np.zeros_like(b)
    r = b - A @ x
    p = r.copy()
    rs = r @ r
    for k in range(len(b) * 2):
        Ap = A @ p
        alpha = rs / (p @ Ap)
        x += alpha * p
        r -= alpha * Ap
        rs_new = r @ r
        if np.sqrt(rs_new) < tol:
            break
        p = r + (rs_new / rs) * p
        rs = rs_new
    return x, k


def quicksort(x):
    if len(x) <= 1:
        return x
    pivot = x[len(x) // 2]
    return np.concatenate((quicksort(x[x < pivot]), x[x == pivot], quicksort(x[x > pivot])))


def test_sparse_banded_and_recursive_numerics():
    rng = np.random.default_rng(14)
    check_calls(csr_matvec, [(np.array([1.0, 2.0, 3.0, 4.0]), np.array([0, 2, 1, 0]),
                              np.array([0, 2, 3, 4]), np.array([1.0, 2.0, 3.0]))])
    check_calls(thomas, [(rng.random(30), rng.random(30) + 3, rng.random(30), rng.random(30))])
    A = rng.random((6, 6)) + 6 * np.eye(6)
    check_calls(conjugate_gradient, [(A @ A.T, rng.random(6), 1e-10), (A @ A.T, rng.random(6), 1e-2)])
    check_calls(quicksort, [(rng.random(10),), (np.array([3, 1, 2, 3]),)])
