"""Fifteenth set, simulations, graphs and learners as people write them: value iteration and
tabular Q-learning on a grid world, Kosaraju's strongly connected components, a bipartite test
by BFS colouring, the Hungarian algorithm, A* on a grid, Brandes' betweenness; Schelling's
segregation model, a Greenberg-Hastings excitable medium, diffusion-limited aggregation, an
(s, S) inventory policy and an M/M/c queue driven by a Generator, simulated annealing of a tour
by 2-opt moves. Each is compiled once and called with several inputs, twice each, agreeing
with NumPy."""
import numpy as np

from test_numpy_programs_eleventh import check_calls


# ---- reinforcement learning ----

def value_iteration(rewards, walls, gamma=0.9, tol=1e-8, max_iter=500):
    h, w = rewards.shape
    V = np.zeros((h, w))
    moves = [(-1, 0), (1, 0), (0, -1), (0, 1)]
    for it in range(max_iter):
        best = np.full((h, w), -np.inf)
        for dy, dx in moves:
            ys = np.clip(np.arange(h) + dy, 0, h - 1)
            xs = np.clip(np.arange(w) + dx, 0, w - 1)
            target = V[ys][:, xs]
            blocked = walls[ys][:, xs]
            target = np.where(blocked, V, target)
            best = np.maximum(best, rewards + gamma * target)
        best[walls] = 0.0
        delta = np.max(np.abs(best - V))
        V = best
        if delta < tol:
            break
    return V, it

def q_learning(n_states, goal, g, episodes=30, alpha=0.5, gamma=0.95, eps=0.2):
    Q = np.zeros((n_states, 2))
    steps = []
    for _ in range(episodes):
        s = 0
        t = 0
        while s != goal and t < 100:
            if g.random() < eps:
                a = int(g.integers(2))
            else:
                a = int(np.argmax(Q[s]))
            s2 = min(max(s + (1 if a == 1 else -1), 0), n_states - 1)
            r = 1.0 if s2 == goal else -0.01
            Q[s, a] += alpha * (r + gamma * np.max(Q[s2]) * (s2 != goal) - Q[s, a])
            s = s2
            t += 1
        steps.append(t)
    return Q, steps

# ---- graphs ----

def kosaraju_scc(adj):
    n = len(adj)
    visited = np.zeros(n, dtype=bool)
    order = []
    for start in range(n):
        if visited[start]:
            continue
        stack = [(start, 0)]
        visited[start] = True
        while stack:
            v, i = stack.pop()
            nbrs = np.nonzero(adj[v])[0]
            if i < len(nbrs):
                stack.append((v, i + 1))
                u = nbrs[i]
                if not visited[u]:
                    visited[u] = True
                    stack.append((u, 0))
            else:
                order.append(v)
    comp = np.full(n, -1)
    label = 0
    for v in reversed(order):
        if comp[v] >= 0:
            continue
        stack = [v]
        comp[v] = label
        while stack:
            x = stack.pop()
            for u in np.nonzero(adj[:, x])[0]:
                if comp[u] < 0:
                    comp[u] = label
                    stack.append(u)
        label += 1
    return comp, label

def is_bipartite(adj):
    n = len(adj)
    colour = np.full(n, -1, dtype=np.int8)
    for s in range(n):
        if colour[s] != -1:
            continue
        colour[s] = 0
        queue = [s]
        while queue:
            v = queue.pop(0)
            for u in np.flatnonzero(adj[v]):
                if colour[u] == -1:
                    colour[u] = 1 - colour[v]
                    queue.append(u)
                elif colour[u] == colour[v]:
                    return False, colour
    return True, colour

def hungarian(cost):
    n, m = cost.shape
    INF = np.inf
    u = np.zeros(n + 1)
    v = np.zeros(m + 1)
    p = np.zeros(m + 1, dtype=np.int64)
    way = np.zeros(m + 1, dtype=np.int64)
    for i in range(1, n + 1):
        p[0] = i
        j0 = 0
        minv = np.full(m + 1, INF)
        used = np.zeros(m + 1, dtype=bool)
        while True:
            used[j0] = True
            i0 = p[j0]
            delta = INF
            j1 = 0
            for j in range(1, m + 1):
                if not used[j]:
                    cur = cost[i0 - 1, j - 1] - u[i0] - v[j]
                    if cur < minv[j]:
                        minv[j] = cur
                        way[j] = j0
                    if minv[j] < delta:
                        delta = minv[j]
                        j1 = j
            for j in range(m + 1):
                if used[j]:
                    u[p[j]] += delta
                    v[j] -= delta
                else:
                    minv[j] -= delta
            j0 = j1
            if p[j0] == 0:
                break
        while True:
            j1 = way[j0]
            p[j0] = p[j1]
            j0 = j1
            if j0 == 0:
                break
    assignment = np.zeros(n, dtype=np.int64)
    for j in range(1, m + 1):
        if p[j]:
            assignment[p[j] - 1] = j - 1
    return assignment, cost[np.arange(n), assignment].sum()

def astar_grid(grid, start, goal):
    h, w = grid.shape
    g_score = np.full((h, w), np.inf)
    g_score[start] = 0
    closed = np.zeros((h, w), dtype=bool)
    open_mask = np.zeros((h, w), dtype=bool)
    open_mask[start] = True
    ys, xs = np.mgrid[0:h, 0:w]
    heuristic = np.abs(ys - goal[0]) + np.abs(xs - goal[1])
    expanded = 0
    while open_mask.any():
        f = np.where(open_mask, g_score + heuristic, np.inf)
        y, x = np.unravel_index(np.argmin(f), f.shape)
        if (y, x) == goal:
            return g_score[goal], expanded
        open_mask[y, x] = False
        closed[y, x] = True
        expanded += 1
        for dy, dx in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            ny, nx = y + dy, x + dx
            if 0 <= ny < h and 0 <= nx < w and not grid[ny, nx] and not closed[ny, nx]:
                if g_score[y, x] + 1 < g_score[ny, nx]:
                    g_score[ny, nx] = g_score[y, x] + 1
                    open_mask[ny, nx] = True
    return np.inf, expanded

def betweenness(adj):
    n = len(adj)
    cb = np.zeros(n)
    for s in range(n):
        sigma = np.zeros(n)
        sigma[s] = 1
        dist = np.full(n, -1)
        dist[s] = 0
        order = []
        frontier = [s]
        while frontier:
            nxt = []
            for v in frontier:
                order.append(v)
                for u in np.nonzero(adj[v])[0]:
                    if dist[u] < 0:
                        dist[u] = dist[v] + 1
                        nxt.append(u)
                    if dist[u] == dist[v] + 1:
                        sigma[u] += sigma[v]
            frontier = nxt
        delta = np.zeros(n)
        for v in reversed(order):
            preds = np.nonzero(adj[v] & (dist == dist[v] - 1))[0]
            for p in preds:
                delta[p] += sigma[p] / sigma[v] * (1 + delta[v])
            if v != s:
                cb[v] += delta[v]
    return cb / 2

# ---- agent and lattice models ----

def schelling(grid, g, threshold=0.5, steps=5):
    grid = grid.copy()
    h, w = grid.shape
    moved_per_step = []
    for _ in range(steps):
        same = np.zeros((h, w))
        occupied = np.zeros((h, w))
        for dy in (-1, 0, 1):
            for dx in (-1, 0, 1):
                if dy == 0 and dx == 0:
                    continue
                shifted = np.roll(np.roll(grid, dy, axis=0), dx, axis=1)
                same += (shifted == grid) & (grid > 0)
                occupied += shifted > 0
        unhappy = (grid > 0) & (same < threshold * np.maximum(occupied, 1))
        movers = np.flatnonzero(unhappy)
        empties = np.flatnonzero(grid == 0)
        g.shuffle(empties)
        k = min(len(movers), len(empties))
        flat = grid.ravel()
        flat[empties[:k]] = flat[movers[:k]]
        flat[movers[:k]] = 0
        moved_per_step.append(k)
    return grid, moved_per_step

def greenberg_hastings(state, n_states=5, steps=10):
    s = state.copy()
    counts = []
    for _ in range(steps):
        excited = s == 1
        nb = (np.roll(excited, 1, 0) | np.roll(excited, -1, 0) |
              np.roll(excited, 1, 1) | np.roll(excited, -1, 1))
        new = np.where(s > 0, (s + 1) % n_states, 0)
        new[(s == 0) & nb] = 1
        s = new
        counts.append(int((s == 1).sum()))
    return s, counts

def dla(size, walkers, g, max_steps=400):
    grid = np.zeros((size, size), dtype=np.uint8)
    c = size // 2
    grid[c, c] = 1
    stuck = 0
    for _ in range(walkers):
        y, x = g.integers(0, size, 2)
        for _ in range(max_steps):
            if grid[max(y - 1, 0):y + 2, max(x - 1, 0):x + 2].any():
                grid[y, x] = 1
                stuck += 1
                break
            d = g.integers(4)
            y = (y + (d == 0) - (d == 1)) % size
            x = (x + (d == 2) - (d == 3)) % size
    return grid, stuck

# ---- operations research ----

def inventory_sS(s, S, demand_mean, g, days=60, hold=1.0, short=5.0, order_cost=20.0):
    stock = S
    pipeline = np.zeros(days + 3)
    cost = 0.0
    levels = np.zeros(days)
    for day in range(days):
        stock += pipeline[day]
        d = g.poisson(demand_mean)
        sold = min(stock, d)
        stock -= sold
        cost += hold * stock + short * (d - sold)
        if stock + pipeline[day + 1:].sum() <= s:
            pipeline[day + 2] += S - stock
            cost += order_cost
        levels[day] = stock
    return cost / days, levels

def mmc_queue(arrival_rate, service_rate, servers, n_customers, g):
    arrivals = np.cumsum(g.exponential(1 / arrival_rate, n_customers))
    services = g.exponential(1 / service_rate, n_customers)
    free_at = np.zeros(servers)
    waits = np.empty(n_customers)
    for i in range(n_customers):
        k = np.argmin(free_at)
        start = max(arrivals[i], free_at[k])
        waits[i] = start - arrivals[i]
        free_at[k] = start + services[i]
    return waits.mean(), np.percentile(waits, 90), free_at.max()

def anneal_tour(points, g, iters=300, t0=1.0, cooling=0.99):
    n = len(points)
    tour = np.arange(n)
    dist = np.sqrt(((points[:, None, :] - points[None, :, :]) ** 2).sum(-1))

    def length(t):
        return dist[t, np.roll(t, -1)].sum()
    cur = length(tour)
    best = cur
    T = t0
    for _ in range(iters):
        i, j = np.sort(g.choice(n, 2, replace=False))
        cand = tour.copy()
        cand[i:j + 1] = cand[i:j + 1][::-1]
        new = length(cand)
        if new < cur or g.random() < np.exp((cur - new) / T):
            tour, cur = cand, new
            best = min(best, cur)
        T *= cooling
    return tour, cur, best


def rng(seed=0):
    return np.random.default_rng(seed)


def random_graph(seed, n, p, directed=False):
    a = rng(seed).random((n, n)) < p
    np.fill_diagonal(a, False)
    return a if directed else a | a.T


def test_reinforcement_learning():
    walls = np.zeros((4, 5), dtype=bool)
    walls[1, 1:4] = True
    rewards = np.full((4, 5), -0.04)
    rewards[0, 4] = 1.0
    check_calls(value_iteration, [(rewards, walls), (rewards[:3, :3], walls[:3, :3], 0.5)])
    check_calls(q_learning, [(6, 5, rng(1)), (4, 3, rng(2), 10)])


def test_graphs():
    check_calls(kosaraju_scc, [(random_graph(1, 8, 0.2, True),),
                               (random_graph(2, 6, 0.3, True),)])
    cycle = np.roll(np.eye(6, dtype=bool), 1, axis=1)
    check_calls(is_bipartite, [(cycle | cycle.T,), (random_graph(3, 7, 0.3),)])
    check_calls(hungarian, [(rng(1).random((4, 4)),), (rng(2).integers(1, 20, (5, 5)) * 1.0,),
                            (rng(3).random((3, 5)),)])
    maze = rng(1).random((7, 8)) < 0.25
    maze[0, 0] = maze[6, 7] = False
    check_calls(astar_grid, [(maze, (0, 0), (6, 7)), (np.zeros((4, 4), bool), (3, 0), (0, 3))])
    check_calls(betweenness, [(random_graph(4, 7, 0.4),), (random_graph(5, 5, 0.5),)])


def test_agent_and_lattice_models():
    town = rng(1).choice([0, 1, 2], (8, 8), p=[0.2, 0.4, 0.4])
    check_calls(schelling, [(town, rng(2)), (town[:5, :6].copy(), rng(3), 0.3, 3)])
    excitable = rng(1).integers(0, 5, (9, 9))
    check_calls(greenberg_hastings, [(excitable,), (excitable[:5].copy(), 3, 4)])
    check_calls(dla, [(11, 10, rng(4)), (7, 5, rng(5), 50)])


def test_operations_research():
    check_calls(inventory_sS, [(10, 40, 6.0, rng(1)), (5, 20, 3.0, rng(2), 30)])
    check_calls(mmc_queue, [(2.0, 1.0, 3, 50, rng(1)), (1.0, 1.5, 1, 30, rng(2))])
    check_calls(anneal_tour, [(rng(1).random((8, 2)), rng(2)),
                              (rng(3).random((6, 2)), rng(4), 100, 0.5)])
