"""Fifteenth set, Kaggle-style feature engineering and stateful objects as people write them:
smoothed target encoding, lag and rolling-window features in dicts, date parts from datetime64,
TF-IDF from token ids by np.add.at, string features through np.char, crossed categories by
np.ravel_multi_index, quantile bins with weight of evidence, frequency encoding, group-median
imputation; an epsilon-greedy bandit whose object holds its Generator, a Kalman filter object
stepped by its methods, a float32 EMA, uint8 blending and int16 mixing with saturation. Each
is compiled once and called with several inputs, twice each, agreeing with NumPy."""
import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from test_numpy_programs_eleventh import check_calls


def target_encoding(cat, y, smoothing=5.0):
    values, inverse = np.unique(cat, return_inverse=True)
    counts = np.bincount(inverse)
    sums = np.bincount(inverse, weights=y)
    prior = y.mean()
    enc = (sums + smoothing * prior) / (counts + smoothing)
    return enc[inverse], dict(zip(values.tolist(), enc.tolist()))

def lag_features(series, lags=(1, 2, 7)):
    feats = {}
    for lag in lags:
        shifted = np.full_like(series, np.nan, dtype=float)
        shifted[lag:] = series[:-lag]
        feats[f"lag_{lag}"] = shifted
        feats[f"diff_{lag}"] = series - shifted
    return feats

def rolling_features(x, w):
    win = sliding_window_view(x, w)
    pad = np.full(w - 1, np.nan)
    return {"mean": np.concatenate([pad, win.mean(axis=1)]),
            "std": np.concatenate([pad, win.std(axis=1, ddof=1)]),
            "range": np.concatenate([pad, win.max(axis=1) - win.min(axis=1)])}

def date_parts(dates):
    d = dates.astype("datetime64[D]")
    years = d.astype("datetime64[Y]").astype(int) + 1970
    months = d.astype("datetime64[M]").astype(int) % 12 + 1
    day_of_year = (d - d.astype("datetime64[Y]")).astype(int) + 1
    weekday = (d.astype(int) + 3) % 7
    return np.stack([years, months, day_of_year]), weekday >= 5

def tfidf(doc_ids, token_ids, n_docs, vocab):
    tf = np.zeros((n_docs, vocab))
    np.add.at(tf, (doc_ids, token_ids), 1.0)
    tf /= np.maximum(tf.sum(axis=1, keepdims=True), 1)
    df = (tf > 0).sum(axis=0)
    idf = np.log((1 + n_docs) / (1 + df)) + 1
    m = tf * idf
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    return m / np.where(norms == 0, 1, norms)

def string_features(names):
    lengths = np.char.str_len(names)
    upper = np.char.upper(names)
    starts = np.char.startswith(upper, "A")
    vowels = sum(np.char.count(np.char.lower(names), v) for v in "aeiou")
    return lengths, upper, starts.sum(), vowels

def crossed_categories(a, b, na, nb):
    cross = np.ravel_multi_index((a, b), (na, nb))
    counts = np.bincount(cross, minlength=na * nb).reshape(na, nb)
    return cross, counts, np.unravel_index(np.argmax(counts), counts.shape)

def weight_of_evidence(x, y, n_bins=4):
    edges = np.quantile(x, np.linspace(0, 1, n_bins + 1)[1:-1])
    bins = np.digitize(x, edges)
    good = np.bincount(bins, weights=(y == 0), minlength=n_bins) + 0.5
    bad = np.bincount(bins, weights=(y == 1), minlength=n_bins) + 0.5
    woe = np.log((good / good.sum()) / (bad / bad.sum()))
    iv = np.sum((good / good.sum() - bad / bad.sum()) * woe)
    return woe[bins], iv

def frequency_encoding(cat):
    values, counts = np.unique(cat, return_counts=True)
    pos = np.searchsorted(values, cat)
    return counts[pos] / len(cat)

def impute_group_median(values, groups):
    out = values.copy()
    for gid in np.unique(groups):
        sel = groups == gid
        med = np.nanmedian(values[sel]) if np.any(~np.isnan(values[sel])) else 0.0
        out[sel & np.isnan(values)] = med
    return out


class EpsilonGreedy:
    def __init__(self, n_arms, eps, seed):
        self.counts = np.zeros(n_arms)
        self.values = np.zeros(n_arms)
        self.eps = eps
        self.rng = np.random.default_rng(seed)

    def select(self):
        if self.rng.random() < self.eps:
            return int(self.rng.integers(len(self.values)))
        return int(np.argmax(self.values))

    def update(self, arm, reward):
        self.counts[arm] += 1
        self.values[arm] += (reward - self.values[arm]) / self.counts[arm]


def run_bandit(means, steps, eps, seed):
    agent = EpsilonGreedy(len(means), eps, seed)
    total = 0.0
    for _ in range(steps):
        arm = agent.select()
        reward = agent.rng.normal(means[arm], 1.0)
        agent.update(arm, reward)
        total += reward
    return total, agent.values, agent.counts


class Kalman1D:
    def __init__(self, q, r):
        self.x, self.p, self.q, self.r = 0.0, 1.0, q, r

    def predict(self):
        self.p = self.p + self.q

    def update(self, z):
        k = self.p / (self.p + self.r)
        self.x = self.x + k * (z - self.x)
        self.p = (1 - k) * self.p
        return self.x


def kalman_smooth(zs, q=1e-3, r=0.1):
    kf = Kalman1D(q, r)
    out = np.empty_like(zs)
    for i, z in enumerate(zs):
        kf.predict()
        out[i] = kf.update(z)
    return out, kf.p

def ema_float32(x, alpha):
    a = np.float32(alpha)
    s = x[0]
    out = np.empty_like(x)
    for i in range(len(x)):
        s = a * x[i] + (1 - a) * s
        out[i] = s
    return out

def blend_uint8(a, b, steps):
    frames = []
    for k in range(steps + 1):
        w = k / steps
        frames.append((a * (1 - w) + b * w).astype(np.uint8))
    wrapped = a + b                       # uint8 wraparound, as NumPy does
    return np.stack(frames), wrapped

def mix_int16(tracks, gains):
    acc = np.zeros(tracks.shape[1], dtype=np.int32)
    for t, g in zip(tracks, gains):
        acc += (t.astype(np.int32) * g).astype(np.int32)
    clipped = np.clip(acc, -32768, 32767).astype(np.int16)
    return clipped, int(np.sum(acc != clipped))


def rng(seed=0):
    return np.random.default_rng(seed)


def test_encodings():
    cat = rng(1).integers(0, 4, 20)
    check_calls(target_encoding, [(cat, rng(2).random(20)), (cat[:7], np.arange(7.0), 1.0)])
    check_calls(frequency_encoding, [(cat,), (np.array(["b", "a", "b", "c"]),)])
    check_calls(crossed_categories, [(cat, rng(3).integers(0, 3, 20), 4, 3),
                                     (np.array([0, 1, 1]), np.array([1, 1, 0]), 2, 2)])
    check_calls(weight_of_evidence, [(rng(1).random(40), rng(2).integers(0, 2, 40)),
                                     (rng(3).normal(size=25), rng(4).integers(0, 2, 25), 3)])
    vals = np.where(rng(5).random(15) < 0.3, np.nan, rng(6).random(15))
    check_calls(impute_group_median, [(vals, rng(7).integers(0, 3, 15)),
                                      (np.array([np.nan, 1.0, np.nan]), np.array([0, 0, 1]))])


def test_time_series_and_text_features():
    s = np.cumsum(rng(1).normal(size=20))
    check_calls(lag_features, [(s,), (np.arange(10), (1, 3))])
    check_calls(rolling_features, [(s, 4), (rng(2).random(9), 3)])
    dates = np.datetime64("2023-11-20") + rng(1).integers(0, 500, 12).astype("timedelta64[D]")
    check_calls(date_parts, [(dates,), (dates[:3].astype("datetime64[h]"),)])
    check_calls(tfidf, [(rng(1).integers(0, 3, 30), rng(2).integers(0, 6, 30), 3, 6),
                        (np.array([0, 0, 1]), np.array([1, 1, 2]), 3, 4)])
    names = np.array(["Alice", "bob", "Anna", "eve", "Oscar"])
    check_calls(string_features, [(names,), (names[1:3],)])


def test_stateful_objects():
    check_calls(run_bandit, [(np.array([0.1, 0.5, 0.9]), 50, 0.1, 1),
                             (np.array([1.0, 0.0]), 20, 0.5, 2)])
    check_calls(kalman_smooth, [(np.sin(np.linspace(0, 3, 25)) + 0.1 * rng(1).normal(size=25),),
                                (rng(2).random(10), 0.1, 1.0)])


def test_narrow_dtypes():
    check_calls(ema_float32, [(rng(1).random(20).astype(np.float32), 0.3),
                              (rng(2).random(7).astype(np.float32), 0.9)])
    a, b = rng(1).integers(0, 256, (4, 5), dtype=np.uint8), rng(2).integers(0, 256, (4, 5),
                                                                               dtype=np.uint8)
    check_calls(blend_uint8, [(a, b, 4), (a[:2], b[:2], 2)])
    tracks = rng(3).integers(-30000, 30000, (3, 16)).astype(np.int16)
    check_calls(mix_int16, [(tracks, [1, 2, 1]), (tracks[:2], [3, -2])])
