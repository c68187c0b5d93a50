"""Fifteenth set, loops over arrays as people write them, mixing Python numbers with NumPy
scalars: bisection on a vectorised function, a running best that starts as a Python int, a
manual float32 histogram, a sliding-window maximum over a deque, a loan balance in float32, a
random walk until it leaves a disc, a Poisson process, reservoir sampling and a Fisher-Yates
shuffle drawing from a Generator, a bucket sort over lists, Fibonacci by integer matrix powers
modulo m, the Josephus problem by np.delete, Boyer-Moore majority vote, a Dutch-flag partition in
place, COO to CSR by counting, and a price floor of `max(p - step, 0)` in float32. Each is
compiled once and called with several inputs, twice each, agreeing with NumPy."""
import collections

import numpy as np

from test_numpy_programs_eleventh import check_calls


def bisect_all(coeffs, lo, hi, tol=1e-10):
    # a root of each cubic row in [lo, hi], where the signs differ
    a, b = np.full(len(coeffs), lo, float), np.full(len(coeffs), hi, float)

    def f(x):
        return ((coeffs[:, 0] * x + coeffs[:, 1]) * x + coeffs[:, 2]) * x + coeffs[:, 3]
    steps = 0
    while np.max(b - a) > tol:
        m = 0.5 * (a + b)
        left = np.sign(f(a)) == np.sign(f(m))
        a = np.where(left, m, a)
        b = np.where(left, b, m)
        steps += 1
    return 0.5 * (a + b), steps

def running_best(values):
    best = -1
    best_at = None
    record = []
    for i, v in enumerate(values):
        if v > best:
            best = v
            best_at = i
        record.append(best)
    return best, best_at, np.array(record)

def manual_histogram(x, bins):
    counts = np.zeros(bins, dtype=np.int64)
    lo, hi = x.min(), x.max()
    width = (hi - lo) / bins
    for v in x:
        k = int((v - lo) / width) if width > 0 else 0
        counts[min(k, bins - 1)] += 1
    return counts, width

def sliding_max(x, k):
    window = collections.deque()
    out = []
    for i, v in enumerate(x):
        while window and x[window[-1]] <= v:
            window.pop()
        window.append(i)
        if window[0] <= i - k:
            window.popleft()
        if i >= k - 1:
            out.append(x[window[0]])
    return np.array(out)

def loan_balance(principal, rates, payment):
    balance = np.float32(principal)
    history = np.zeros(len(rates), dtype=np.float32)
    months = 0
    for r in rates:
        balance = balance * (1 + r / 12) - payment
        history[months] = balance
        months += 1
        if balance <= 0:
            break
    return balance, months, history[:months]

def walk_until_exit(radius, g, max_steps=10_000):
    pos = np.zeros(2, dtype=np.int64)
    steps = 0
    moves = np.array([[1, 0], [-1, 0], [0, 1], [0, -1]])
    while pos @ pos < radius * radius and steps < max_steps:
        pos += moves[g.integers(4)]
        steps += 1
    return steps, pos

def poisson_process(rate, horizon, g):
    t = 0.0
    times = []
    while True:
        t += g.exponential(1 / rate)
        if t > horizon:
            break
        times.append(t)
    times = np.array(times)
    return len(times), np.diff(times).mean() if len(times) > 1 else np.nan

def reservoir(stream, k, g):
    res = stream[:k].copy()
    for i in range(k, len(stream)):
        j = g.integers(0, i + 1)
        if j < k:
            res[j] = stream[i]
    return res

def fisher_yates(x, g):
    a = x.copy()
    for i in range(len(a) - 1, 0, -1):
        j = g.integers(0, i + 1)
        a[i], a[j] = a[j], a[i]
    return a

def bucket_sort(x, n_buckets=5):
    lo, hi = x.min(), x.max()
    buckets = [[] for _ in range(n_buckets)]
    for v in x:
        k = int((v - lo) / (hi - lo + 1e-12) * n_buckets)
        buckets[min(k, n_buckets - 1)].append(v)
    out = []
    for b in buckets:
        out.extend(sorted(b))
    return np.array(out), [len(b) for b in buckets]

def fib_mod(n, m):
    result = np.eye(2, dtype=np.int64)
    base = np.array([[1, 1], [1, 0]], dtype=np.int64)
    while n:
        if n & 1:
            result = (result @ base) % m
        base = (base @ base) % m
        n >>= 1
    return result[0, 1]

def josephus(n, k):
    people = np.arange(1, n + 1)
    idx = 0
    order = []
    while len(people) > 1:
        idx = (idx + k - 1) % len(people)
        order.append(people[idx])
        people = np.delete(people, idx)
    return people[0], np.array(order)

def majority_vote(x):
    candidate, count = None, 0
    for v in x:
        if count == 0:
            candidate, count = v, 1
        elif v == candidate:
            count += 1
        else:
            count -= 1
    return candidate, int(np.sum(x == candidate)) > len(x) // 2

def dutch_flag(a, pivot):
    lo, mid, hi = 0, 0, len(a) - 1
    while mid <= hi:
        if a[mid] < pivot:
            a[lo], a[mid] = a[mid], a[lo]
            lo += 1
            mid += 1
        elif a[mid] > pivot:
            a[mid], a[hi] = a[hi], a[mid]
            hi -= 1
        else:
            mid += 1
    return lo, hi

def coo_to_csr(rows, cols, vals, n_rows, x):
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    for r in rows:
        indptr[r + 1] += 1
    indptr = np.cumsum(indptr)
    fill = indptr[:-1].copy()
    indices = np.empty(len(rows), dtype=np.int64)
    data = np.empty(len(rows))
    for r, c, v in zip(rows, cols, vals):
        indices[fill[r]] = c
        data[fill[r]] = v
        fill[r] += 1
    y = np.zeros(n_rows)
    for i in range(n_rows):
        for p in range(indptr[i], indptr[i + 1]):
            y[i] += data[p] * x[indices[p]]
    return indptr, indices, y

def price_floor(prices, step):
    out = np.empty_like(prices)
    p = prices[0]
    for i in range(len(prices)):
        p = max(p - step, 0)
        p = max(p, prices[i] * 0.5)
        out[i] = p
    return out, p


def rng(seed=0):
    return np.random.default_rng(seed)


def test_numerics_and_running_values():
    c = rng(1).random((4, 4)) - 0.5
    c[:, 3] = -np.abs(c[:, 3]) - 0.1
    c[:, 0] = np.abs(c[:, 0]) + 1.0
    check_calls(bisect_all, [(c, 0.0, 3.0), (c[:2], 0.0, 5.0, 1e-6)])
    check_calls(running_best, [(rng(1).integers(0, 50, 12),), (rng(2).random(7),),
                               (np.array([-3, -5]),)])
    check_calls(manual_histogram, [(rng(2).normal(size=20), 4), (np.ones(5), 3)])
    check_calls(sliding_max, [(rng(1).random(15), 4), (rng(2).integers(0, 9, 10), 3)])


def test_float32_scalars_meet_python_numbers():
    # np.float32 scalars with Python numbers stay float32 under NumPy 2's promotion (NEP 50);
    # NumPy 1.x makes them float64, which kiln does not follow (README "Limits")
    check_calls(manual_histogram, [(rng(1).random(30).astype(np.float32), 5)])
    check_calls(price_floor, [(rng(1).random(10).astype(np.float32) * 10, 1)])
    check_calls(loan_balance, [(1000.0, np.full(24, 0.05, np.float32), 100.0),
                               (500, rng(1).random(6).astype(np.float32) * 0.1, 50)])


def test_generator_loops():
    check_calls(walk_until_exit, [(5, rng(1)), (3, rng(2))])
    check_calls(poisson_process, [(2.0, 10.0, rng(1)), (0.5, 3.0, rng(2))])
    check_calls(reservoir, [(np.arange(30), 5, rng(1)), (rng(2).random(12), 3, rng(3))])
    check_calls(fisher_yates, [(np.arange(10), rng(1)), (rng(2).random(6), rng(3))])


def test_sorting_and_counting():
    check_calls(bucket_sort, [(rng(1).random(20),), (rng(2).integers(0, 100, 15), 3)])
    check_calls(fib_mod, [(10, 1000), (90, 10 ** 9 + 7), (1, 7)])
    check_calls(josephus, [(7, 3), (10, 2)])
    check_calls(majority_vote, [(np.array([2, 2, 1, 1, 2, 2, 3]),), (rng(1).integers(0, 3, 9),)])
    check_calls(dutch_flag, [(rng(1).integers(0, 5, 12), 2), (rng(2).random(8), 0.5)])
    rows = np.array([0, 2, 1, 0, 2])
    check_calls(coo_to_csr, [(rows, np.array([1, 0, 2, 2, 1]), np.arange(1.0, 6.0), 3,
                              np.ones(3)),
                             (rng(1).integers(0, 4, 8), rng(2).integers(0, 4, 8), rng(3).random(8),
                              4, rng(4).random(4))])
    check_calls(price_floor, [(np.linspace(5, 1, 6), 0.5), (np.array([3.0, 0.1]), 2)])
