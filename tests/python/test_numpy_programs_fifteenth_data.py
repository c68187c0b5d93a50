"""Fifteenth set, data handling as people write it: structured arrays sorted by two fields and
grouped by one, record arrays filtered through attributes, datetime64 business days, weekday
histograms, month buckets and session lengths in timedelta64; bytes through np.frombuffer
(hex encoding by a lookup table, base64 decoding, a Vigenere cipher, word counts), TEA and a
Murmur3 finaliser in uint32; robust and rank statistics (isotonic regression by pooling
adjacent violators, the Theil-Sen slope, RANSAC drawing from a Generator, one-way ANOVA, a
chi-square contingency test, Mann-Whitney U with tied ranks, LOWESS, Nadaraya-Watson). Each
is compiled once and called with several inputs, twice each, agreeing with NumPy."""
import numpy as np

from test_numpy_programs_eleventh import check_calls


# ---- structured and record arrays ----

TRADES = np.dtype([("sym", "U4"), ("qty", "i4"), ("px", "f8")])

def trades(seed, n):
    g = np.random.default_rng(seed)
    out = np.zeros(n, dtype=TRADES)
    out["sym"] = g.choice(["AAPL", "MSFT", "IBM"], n)
    out["qty"] = g.integers(1, 100, n)
    out["px"] = np.round(g.random(n) * 100, 2)
    return out

def notional_by_symbol(t):
    order = np.argsort(t, order=["sym", "qty"])
    ordered = t[order]
    symbols, start = np.unique(ordered["sym"], return_index=True)
    notional = ordered["qty"] * ordered["px"]
    totals = np.add.reduceat(notional, start)
    return {str(s): float(v) for s, v in zip(symbols, totals)}, ordered["qty"]

def vwap_records(px, qty, min_qty):
    rec = np.rec.fromarrays([px, qty], names="px,qty")
    big = rec[rec.qty >= min_qty]
    return (big.px * big.qty).sum() / big.qty.sum(), len(big)

def structured_points(n, seed):
    pts = np.zeros(n, dtype=[("x", "f4"), ("y", "f4"), ("label", "i2")])
    g = np.random.default_rng(seed)
    pts["x"] = g.random(n)
    pts["y"] = g.random(n)
    pts["label"] = (pts["x"] > pts["y"]).astype(np.int16)
    centroids = np.zeros((2, 2), dtype=np.float32)
    for k in range(2):
        sel = pts[pts["label"] == k]
        if len(sel):
            centroids[k] = [sel["x"].mean(), sel["y"].mean()]
    return centroids, np.bincount(pts["label"], minlength=2)

# ---- dates and times ----

def business_days(start, end, holidays):
    days = np.arange(start, end, dtype="datetime64[D]")
    weekday = (days.astype("datetime64[D]").view("int64") - 4) % 7   # 1970-01-01 is Thursday
    mask = weekday < 5
    mask &= ~np.isin(days, np.array(holidays, dtype="datetime64[D]"))
    return int(mask.sum()), np.busday_count(start, end, holidays=holidays)

def weekday_histogram(stamps):
    days = stamps.astype("datetime64[D]")
    weekday = (days.view("int64") + 3) % 7                         # Monday = 0
    return np.bincount(weekday, minlength=7)

def monthly_totals(stamps, amounts):
    months = stamps.astype("datetime64[M]")
    first, last = months.min(), months.max()
    n = (last - first).astype(int) + 1
    idx = (months - first).astype(int)
    totals = np.zeros(n)
    np.add.at(totals, idx, amounts)
    return first + np.arange(n), totals

def session_lengths(starts, ends):
    durations = ends - starts
    minutes = durations / np.timedelta64(1, "m")
    long_ones = durations > np.timedelta64(30, "m")
    return minutes, durations.sum(), int(long_ones.sum()), durations.max()

# ---- bytes ----

HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)

def hex_encode(data):
    b = np.frombuffer(data, dtype=np.uint8)
    out = np.empty(2 * len(b), dtype=np.uint8)
    out[0::2] = HEX[b >> 4]
    out[1::2] = HEX[b & 0x0F]
    return out.tobytes()

B64 = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

def base64_decode(text):
    table = np.full(256, 255, dtype=np.uint8)
    table[np.frombuffer(B64, dtype=np.uint8)] = np.arange(64, dtype=np.uint8)
    raw = np.frombuffer(text.rstrip(b"="), dtype=np.uint8)
    vals = table[raw].astype(np.uint32)
    pad = (-len(vals)) % 4
    vals = np.concatenate([vals, np.zeros(pad, dtype=np.uint32)]).reshape(-1, 4)
    n24 = (vals[:, 0] << 18) | (vals[:, 1] << 12) | (vals[:, 2] << 6) | vals[:, 3]
    out = np.stack([(n24 >> 16) & 255, (n24 >> 8) & 255, n24 & 255], axis=1)
    out = out.astype(np.uint8).ravel()
    return out[:len(out) - (pad * 3) // 4].tobytes()

def vigenere(text, key, decrypt=False):
    t = np.frombuffer(text, dtype=np.uint8).astype(np.int16)
    k = np.frombuffer(key, dtype=np.uint8).astype(np.int16) - ord("A")
    letters = (t >= ord("A")) & (t <= ord("Z"))
    shift = np.resize(k, len(t)) * (-1 if decrypt else 1)
    out = np.where(letters, (t - ord("A") + shift) % 26 + ord("A"), t)
    return out.astype(np.uint8).tobytes()

def word_stats(text):
    b = np.frombuffer(text, dtype=np.uint8)
    is_alpha = ((b | 32) >= ord("a")) & ((b | 32) <= ord("z"))
    edges = np.diff(np.concatenate([[0], is_alpha.astype(np.int8), [0]]))
    starts = np.nonzero(edges == 1)[0]
    ends = np.nonzero(edges == -1)[0]
    lengths = ends - starts
    longest = text[starts[np.argmax(lengths)]:ends[np.argmax(lengths)]] if len(starts) else b""
    return len(starts), np.bincount(lengths), longest

def tea_encrypt(v, key, rounds=32):
    v0, v1 = v[:, 0].copy(), v[:, 1].copy()
    delta = np.uint32(0x9E3779B9)
    s = np.uint32(0)
    k0, k1, k2, k3 = (np.uint32(k) for k in key)
    for _ in range(rounds):
        s = s + delta
        v0 = v0 + ((((v1 << np.uint32(4)) + k0) ^ (v1 + s)) ^ ((v1 >> np.uint32(5)) + k1))
        v1 = v1 + ((((v0 << np.uint32(4)) + k2) ^ (v0 + s)) ^ ((v0 >> np.uint32(5)) + k3))
    return np.stack([v0, v1], axis=1)

def murmur_fmix32(h):
    h = h.astype(np.uint32)
    h ^= h >> np.uint32(16)
    h *= np.uint32(0x85EBCA6B)
    h ^= h >> np.uint32(13)
    h *= np.uint32(0xC2B2AE35)
    h ^= h >> np.uint32(16)
    buckets = np.bincount(h % np.uint32(8), minlength=8)
    return h, buckets

# ---- statistics ----

def isotonic_pava(y, w=None):
    w = np.ones_like(y) if w is None else w
    values, weights, counts = [], [], []
    for yi, wi in zip(y, w):
        values.append(yi)
        weights.append(wi)
        counts.append(1)
        while len(values) > 1 and values[-2] > values[-1]:
            v2, w2, c2 = values.pop(), weights.pop(), counts.pop()
            v1, w1, c1 = values.pop(), weights.pop(), counts.pop()
            values.append((v1 * w1 + v2 * w2) / (w1 + w2))
            weights.append(w1 + w2)
            counts.append(c1 + c2)
    return np.repeat(np.array(values), counts)

def theil_sen(x, y):
    i, j = np.triu_indices(len(x), k=1)
    dx = x[j] - x[i]
    keep = dx != 0
    slopes = (y[j] - y[i])[keep] / dx[keep]
    slope = np.median(slopes)
    return slope, np.median(y - slope * x)

def ransac_line(x, y, g, iters=50, threshold=0.1):
    best_inliers = np.zeros(len(x), dtype=bool)
    for _ in range(iters):
        i, j = g.choice(len(x), 2, replace=False)
        if x[i] == x[j]:
            continue
        m = (y[j] - y[i]) / (x[j] - x[i])
        c = y[i] - m * x[i]
        inliers = np.abs(y - (m * x + c)) < threshold
        if inliers.sum() > best_inliers.sum():
            best_inliers = inliers
    A = np.stack([x[best_inliers], np.ones(best_inliers.sum())], axis=1)
    coef = np.linalg.lstsq(A, y[best_inliers], rcond=None)[0]
    return coef, best_inliers

def one_way_anova(groups):
    all_values = np.concatenate(groups)
    grand = all_values.mean()
    ss_between = sum(len(g) * (g.mean() - grand) ** 2 for g in groups)
    ss_within = sum(((g - g.mean()) ** 2).sum() for g in groups)
    df_b, df_w = len(groups) - 1, len(all_values) - len(groups)
    return (ss_between / df_b) / (ss_within / df_w), df_b, df_w

def chi_square(table):
    table = np.asarray(table, dtype=float)
    expected = table.sum(axis=1, keepdims=True) * table.sum(axis=0) / table.sum()
    stat = ((table - expected) ** 2 / expected).sum()
    dof = (table.shape[0] - 1) * (table.shape[1] - 1)
    return stat, dof, expected

def mann_whitney_u(a, b):
    data = np.concatenate([a, b])
    order = np.argsort(data, kind="mergesort")
    ranks = np.empty(len(data))
    ranks[order] = np.arange(1, len(data) + 1)
    sorted_data = data[order]
    i = 0
    while i < len(data):
        j = i
        while j + 1 < len(data) and sorted_data[j + 1] == sorted_data[i]:
            j += 1
        if j > i:
            ranks[order[i:j + 1]] = (i + j + 2) / 2.0
        i = j + 1
    r1 = ranks[:len(a)].sum()
    u1 = r1 - len(a) * (len(a) + 1) / 2
    return u1, len(a) * len(b) - u1

def lowess(x, y, frac=0.5):
    n = len(x)
    r = int(np.ceil(frac * n))
    fitted = np.zeros(n)
    for i in range(n):
        d = np.abs(x - x[i])
        h = np.sort(d)[r - 1]
        w = np.clip(d / max(h, 1e-12), 0.0, 1.0)
        w = (1 - w ** 3) ** 3
        A = np.stack([np.ones(n), x - x[i]], axis=1)
        AtW = A.T * w
        beta = np.linalg.solve(AtW @ A + 1e-12 * np.eye(2), AtW @ y)
        fitted[i] = beta[0]
    return fitted

def nadaraya_watson(x, y, grid, bandwidth):
    u = (grid[:, None] - x[None, :]) / bandwidth
    k = np.exp(-0.5 * u * u)
    return (k @ y) / k.sum(axis=1)


def rng(seed=0):
    return np.random.default_rng(seed)


def test_structured_and_record_arrays():
    check_calls(notional_by_symbol, [(trades(1, 12),), (trades(2, 7),)])
    check_calls(vwap_records, [(rng(1).random(10), rng(2).integers(1, 10, 10), 4),
                               (rng(3).random(6) * 10, np.arange(1, 7), 2)])
    check_calls(structured_points, [(20, 1), (9, 2)])


def test_dates_and_times():
    check_calls(business_days, [("2024-01-01", "2024-02-01", ["2024-01-15"]),
                                ("2023-12-20", "2024-01-05", ["2023-12-25", "2024-01-01"])])
    stamps = np.datetime64("2024-03-01T00:00") + rng(1).integers(0, 60 * 24 * 90, 30) \
        .astype("timedelta64[m]")
    check_calls(weekday_histogram, [(stamps,), (stamps[:11].astype("datetime64[s]"),)])
    check_calls(monthly_totals, [(stamps, rng(2).random(30)),
                                 (stamps[5:9], np.arange(4.0))])
    starts = np.datetime64("2024-05-01T08:00:00") + np.arange(0, 5 * 3600, 1800) \
        .astype("timedelta64[s]")
    ends = starts + rng(3).integers(60, 4000, len(starts)).astype("timedelta64[s]")
    check_calls(session_lengths, [(starts, ends), (starts[:3], ends[:3])])


def test_bytes():
    check_calls(hex_encode, [(b"kiln\x00\xff",), (bytes(range(40)),)])
    check_calls(base64_decode, [(b"aGVsbG8gd29ybGQ=",), (b"TnVtUHk=",), (b"YWJj",)])
    check_calls(vigenere, [(b"ATTACK AT DAWN", b"LEMON"), (b"LXFOPV EF RNHR", b"LEMON", True)])
    check_calls(word_stats, [(b"the quick brown fox, jumps!",), (b"a bb  ccc dddd",)])
    blocks = rng(1).integers(0, 2 ** 32, (4, 2), dtype=np.uint32)
    check_calls(tea_encrypt, [(blocks, (1, 2, 3, 4)), (blocks[:1], (0xDEAD, 0xBEEF, 7, 9), 8)])
    check_calls(murmur_fmix32, [(np.arange(20),), (rng(2).integers(0, 2 ** 31, 13),)])


def test_robust_and_rank_statistics():
    check_calls(isotonic_pava, [(rng(1).random(12),),
                                (np.array([3.0, 1.0, 2.0, 5.0, 4.0]), np.arange(1.0, 6.0))])
    x = rng(1).random(15)
    check_calls(theil_sen, [(x, 2 * x + 0.1 * rng(2).random(15)), (np.arange(6.0), np.ones(6))])
    noisy = 3 * x - 1 + np.where(rng(3).random(15) < 0.2, 5.0, 0.0)
    check_calls(ransac_line, [(x, noisy, rng(4)), (x[:8], noisy[:8], rng(5), 20, 0.5)])
    check_calls(one_way_anova, [([rng(1).random(5), rng(2).random(7) + 0.3],),
                                ([np.arange(4.0), np.ones(3), rng(3).random(6)],)])
    check_calls(chi_square, [([[10, 20], [30, 25]],), (rng(1).integers(1, 50, (3, 4)),)])
    check_calls(mann_whitney_u, [(np.array([1.0, 2, 2, 5]), np.array([2.0, 3, 5, 7, 7])),
                                 (rng(1).random(6), rng(2).random(8))])
    check_calls(lowess, [(np.sort(x), np.sin(6 * np.sort(x))), (np.arange(8.0), rng(6).random(8))])
    check_calls(nadaraya_watson, [(x, np.sin(x), np.linspace(0, 1, 9), 0.2),
                                  (x[:5], x[:5] ** 2, np.array([0.5]), 0.1)])
