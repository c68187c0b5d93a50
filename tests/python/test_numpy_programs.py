"""Real NumPy programs written by others: NPBench's NumPy kernels (github.com/spcl/npbench,
BSD-3-Clause, Copyright ETH Zurich and the NPBench authors; PolyBench kernels, stencils,
solvers, small models, loops over rows and time steps), several of them (the CFD solvers from
Barba's lessons, vadv, hdiff) nearly as NPBench writes them, others rewritten in their authors'
idioms: each runs
through kiln.compile and must agree with NumPy on values, dtypes, shapes and the arrays it
updates in place. Sizes are small: the point is what kiln captures and how, not speed
(bench/ measures that). Tolerances: float64 results differ from NumPy only by reassociated sums
and contracted multiply-adds (1e-9 relative); float32 by the same at float32's precision (1e-4:
the programs sum up to a few hundred terms); integers exactly."""
import copy
import re

import numpy as np
import pytest

import kiln

def jacobi_1d(tsteps, A, B):
    for t in range(1, tsteps):
        B[1:-1] = 0.33333 * (A[:-2] + A[1:-1] + A[2:])
        A[1:-1] = 0.33333 * (B[:-2] + B[1:-1] + B[2:])


def jacobi_2d(tsteps, A, B):
    for t in range(1, tsteps):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1]
                               + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1]
                               + B[:-2, 1:-1])


def heat_3d(tsteps, A, B):
    for t in range(1, tsteps):
        B[1:-1, 1:-1, 1:-1] = (
            0.125 * (A[2:, 1:-1, 1:-1] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[:-2, 1:-1, 1:-1])
            + 0.125 * (A[1:-1, 2:, 1:-1] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[1:-1, :-2, 1:-1])
            + 0.125 * (A[1:-1, 1:-1, 2:] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[1:-1, 1:-1, :-2])
            + A[1:-1, 1:-1, 1:-1])
        A[1:-1, 1:-1, 1:-1] = (
            0.125 * (B[2:, 1:-1, 1:-1] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[:-2, 1:-1, 1:-1])
            + 0.125 * (B[1:-1, 2:, 1:-1] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[1:-1, :-2, 1:-1])
            + 0.125 * (B[1:-1, 1:-1, 2:] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[1:-1, 1:-1, :-2])
            + B[1:-1, 1:-1, 1:-1])


def fdtd_2d(TMAX, ex, ey, hz, fict):
    for t in range(TMAX):
        ey[0, :] = fict[t]
        ey[1:, :] -= 0.5 * (hz[1:, :] - hz[:-1, :])
        ex[:, 1:] -= 0.5 * (hz[:, 1:] - hz[:, :-1])
        hz[:-1, :-1] -= 0.7 * (ex[:-1, 1:] - ex[:-1, :-1] + ey[1:, :-1] - ey[:-1, :-1])


def adi(TSTEPS, N, u):
    v = np.empty(u.shape, dtype=u.dtype)
    p = np.empty(u.shape, dtype=u.dtype)
    q = np.empty(u.shape, dtype=u.dtype)
    DX = 1.0 / N
    DY = 1.0 / N
    DT = 1.0 / TSTEPS
    B1 = 2.0
    B2 = 1.0
    mul1 = B1 * DT / (DX * DX)
    mul2 = B2 * DT / (DY * DY)
    a = -mul1 / 2.0
    b = 1.0 + mul2
    c = a
    d = -mul2 / 2.0
    e = 1.0 + mul2
    f = d
    for t in range(1, TSTEPS + 1):
        v[0, 1:N - 1] = 1.0
        p[1:N - 1, 0] = 0.0
        q[1:N - 1, 0] = v[0, 1:N - 1]
        for j in range(1, N - 1):
            p[1:N - 1, j] = -c / (a * p[1:N - 1, j - 1] + b)
            q[1:N - 1, j] = (-d * u[j, 0:N - 2] + (1.0 + 2.0 * d) * u[j, 1:N - 1]
                             - f * u[j, 2:N] - a * q[1:N - 1, j - 1]) / (a * p[1:N - 1, j - 1] + b)
        v[N - 1, 1:N - 1] = 1.0
        for j in range(N - 2, 0, -1):
            v[j, 1:N - 1] = p[1:N - 1, j] * v[j + 1, 1:N - 1] + q[1:N - 1, j]
        u[1:N - 1, 0] = 1.0
        p[1:N - 1, 0] = 0.0
        q[1:N - 1, 0] = u[1:N - 1, 0]
        for j in range(1, N - 1):
            p[1:N - 1, j] = -f / (d * p[1:N - 1, j - 1] + e)
            q[1:N - 1, j] = (-a * v[0:N - 2, j] + (1.0 + 2.0 * a) * v[1:N - 1, j]
                             - c * v[2:N, j] - d * q[1:N - 1, j - 1]) / (d * p[1:N - 1, j - 1] + e)
        u[1:N - 1, N - 1] = 1.0
        for j in range(N - 2, 0, -1):
            u[1:N - 1, j] = p[1:N - 1, j] * u[1:N - 1, j + 1] + q[1:N - 1, j]


def seidel_2d(TSTEPS, N, A):
    for t in range(0, TSTEPS - 1):
        for i in range(1, N - 1):
            A[i, 1:-1] += (A[i - 1, :-2] + A[i - 1, 1:-1] + A[i - 1, 2:] + A[i, 2:]
                           + A[i + 1, :-2] + A[i + 1, 1:-1] + A[i + 1, 2:])
            for j in range(1, N - 1):
                A[i, j] += A[i, j - 1]
                A[i, j] /= 9.0


def lu(A):
    N = A.shape[0]
    for i in range(N):
        for j in range(i):
            A[i, j] -= A[i, :j] @ A[:j, j]
            A[i, j] /= A[j, j]
        for j in range(i, N):
            A[i, j] -= A[i, :i] @ A[:i, j]


def ludcmp(A, b):
    N = A.shape[0]
    x = np.zeros_like(b)
    y = np.zeros_like(b)
    for i in range(N):
        for j in range(i):
            A[i, j] -= A[i, :j] @ A[:j, j]
            A[i, j] /= A[j, j]
        for j in range(i, N):
            A[i, j] -= A[i, :i] @ A[:i, j]
    for i in range(N):
        y[i] = b[i] - A[i, :i] @ y[:i]
    for i in range(N - 1, -1, -1):
        x[i] = (y[i] - A[i, i + 1:] @ x[i + 1:]) / A[i, i]
    return x, y


def cholesky(A):
    A[0, 0] = np.sqrt(A[0, 0])
    for i in range(1, A.shape[0]):
        for j in range(i):
            A[i, j] -= np.dot(A[i, :j], A[j, :j])
            A[i, j] /= A[j, j]
        A[i, i] -= np.dot(A[i, :i], A[i, :i])
        A[i, i] = np.sqrt(A[i, i])


def durbin(r):
    y = np.empty_like(r)
    alpha = -r[0]
    beta = 1.0
    y[0] = -r[0]
    for k in range(1, r.shape[0]):
        beta *= 1.0 - alpha * alpha
        alpha = -(r[k] + np.dot(np.flip(r[:k]), y[:k])) / beta
        y[:k] += alpha * np.flip(y[:k])
        y[k] = alpha
    return y


def gramschmidt(A):
    Q = np.zeros_like(A)
    R = np.zeros((A.shape[1], A.shape[1]), dtype=A.dtype)
    for k in range(A.shape[1]):
        nrm = np.dot(A[:, k], A[:, k])
        R[k, k] = np.sqrt(nrm)
        Q[:, k] = A[:, k] / R[k, k]
        for j in range(k + 1, A.shape[1]):
            R[k, j] = np.dot(Q[:, k], A[:, j])
            A[:, j] -= Q[:, k] * R[k, j]
    return Q, R


def floyd_warshall(path):
    for k in range(path.shape[0]):
        path[:] = np.minimum(path[:], np.add.outer(path[:, k], path[k, :]))


def nussinov(N, seq):
    table = np.zeros((N, N), np.int32)
    for i in range(N - 1, -1, -1):
        for j in range(i + 1, N):
            if j - 1 >= 0:
                table[i, j] = max(table[i, j], table[i, j - 1])
            if i + 1 < N:
                table[i, j] = max(table[i, j], table[i + 1, j])
            if j - 1 >= 0 and i + 1 < N:
                if i < j - 1:
                    table[i, j] = max(table[i, j], table[i + 1, j - 1] + int(seq[i] + seq[j] == 3))
                else:
                    table[i, j] = max(table[i, j], table[i + 1, j - 1])
            for k in range(i + 1, j):
                table[i, j] = max(table[i, j], table[i, k] + table[k + 1, j])
    return table


def deriche(alpha, imgIn):
    k = (1.0 - np.exp(-alpha)) * (1.0 - np.exp(-alpha)) / (
        1.0 + alpha * np.exp(-alpha) - np.exp(2.0 * alpha))
    a1 = a5 = k
    a2 = a6 = k * np.exp(-alpha) * (alpha - 1.0)
    a3 = a7 = k * np.exp(-alpha) * (alpha + 1.0)
    a4 = a8 = -k * np.exp(-2.0 * alpha)
    b1 = 2.0 ** (-alpha)
    b2 = -np.exp(-2.0 * alpha)
    c1 = c2 = 1
    y1 = np.empty_like(imgIn)
    y1[:, 0] = a1 * imgIn[:, 0]
    y1[:, 1] = a1 * imgIn[:, 1] + a2 * imgIn[:, 0] + b1 * y1[:, 0]
    for j in range(2, imgIn.shape[1]):
        y1[:, j] = (a1 * imgIn[:, j] + a2 * imgIn[:, j - 1] + b1 * y1[:, j - 1] + b2 * y1[:, j - 2])
    y2 = np.empty_like(imgIn)
    y2[:, -1] = 0.0
    y2[:, -2] = a3 * imgIn[:, -1]
    for j in range(imgIn.shape[1] - 3, -1, -1):
        y2[:, j] = (a3 * imgIn[:, j + 1] + a4 * imgIn[:, j + 2] + b1 * y2[:, j + 1]
                    + b2 * y2[:, j + 2])
    imgOut = c1 * (y1 + y2)
    y1[0, :] = a5 * imgOut[0, :]
    y1[1, :] = a5 * imgOut[1, :] + a6 * imgOut[0, :] + b1 * y1[0, :]
    for i in range(2, imgIn.shape[0]):
        y1[i, :] = (a5 * imgOut[i, :] + a6 * imgOut[i - 1, :] + b1 * y1[i - 1, :]
                    + b2 * y1[i - 2, :])
    y2[-1, :] = 0.0
    y2[-2, :] = a7 * imgOut[-1, :]
    for i in range(imgIn.shape[0] - 3, -1, -1):
        y2[i, :] = (a7 * imgOut[i + 1, :] + a8 * imgOut[i + 2, :] + b1 * y2[i + 1, :]
                    + b2 * y2[i + 2, :])
    imgOut[:] = c2 * (y1 + y2)
    return imgOut


def correlation(M, float_n, data):
    mean = np.mean(data, axis=0)
    stddev = np.std(data, axis=0)
    stddev[stddev <= 0.1] = 1.0
    data -= mean
    data /= np.sqrt(float_n) * stddev
    corr = np.eye(M, dtype=data.dtype)
    for i in range(M - 1):
        corr[i + 1:M, i] = corr[i, i + 1:M] = data[:, i] @ data[:, i + 1:M]
    return corr


def covariance(M, float_n, data):
    mean = np.mean(data, axis=0)
    data -= mean
    cov = np.zeros((M, M), dtype=data.dtype)
    for i in range(M):
        cov[i:M, i] = cov[i, i:M] = data[:, i] @ data[:, i:M] / (float_n - 1.0)
    return cov


def gemver(alpha, beta, A, u1, v1, u2, v2, w, x, y, z):
    A += np.outer(u1, v1) + np.outer(u2, v2)
    x += beta * y @ A + z
    w += alpha * A @ x


def gesummv(alpha, beta, A, B, x):
    return alpha * A @ x + beta * B @ x


def mvt(x1, x2, y_1, y_2, A):
    x1 += A @ y_1
    x2 += y_2 @ A


def atax(A, x):
    return (A @ x) @ A


def bicg(A, p, r):
    return r @ A, A @ p


def syrk(alpha, beta, C, A):
    for i in range(A.shape[0]):
        C[i, :i + 1] *= beta
        for k in range(A.shape[1]):
            C[i, :i + 1] += alpha * A[i, k] * A[:i + 1, k]


def syr2k(alpha, beta, C, A, B):
    for i in range(A.shape[0]):
        C[i, :i + 1] *= beta
        for k in range(A.shape[1]):
            C[i, :i + 1] += (A[:i + 1, k] * alpha * B[i, k] + B[:i + 1, k] * alpha * A[i, k])


def trmm(alpha, A, B):
    for i in range(B.shape[0]):
        for j in range(B.shape[1]):
            B[i, j] += np.dot(A[i + 1:, i], B[i + 1:, j])
    B *= alpha


def symm(alpha, beta, C, A, B):
    temp2 = np.empty((C.shape[1],), dtype=C.dtype)
    C *= beta
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            C[:i, j] += alpha * B[i, j] * A[i, :i]
            temp2[j] = B[:i, j] @ A[i, :i]
        C[i, :] += alpha * B[i, :] * A[i, i] + alpha * temp2


def doitgen(NR, NQ, NP, A, C4):
    for r in range(NR):
        for q in range(NQ):
            tmp = A[r, q, :] @ C4
            A[r, q, :] = tmp


def k3mm(A, B, C, D):
    return A @ B @ (C @ D)


def k2mm(alpha, beta, A, B, C, D):
    D[:] = alpha * A @ B @ C + beta * D


def conv2d(inp, weights):
    K = weights.shape[0]
    H_out = inp.shape[1] - K + 1
    W_out = inp.shape[2] - K + 1
    out = np.zeros((inp.shape[0], H_out, W_out, weights.shape[3]), dtype=inp.dtype)
    for i in range(H_out):
        for j in range(W_out):
            out[:, i, j, :] = np.sum(inp[:, i:i + K, j:j + K, :, np.newaxis]
                                     * weights[np.newaxis, :, :, :], axis=(1, 2, 3))
    return out


def softmax(x):
    tmp_max = np.max(x, axis=-1, keepdims=True)
    tmp_out = np.exp(x - tmp_max)
    tmp_sum = np.sum(tmp_out, axis=-1, keepdims=True)
    return tmp_out / tmp_sum


def mlp(x, w1, b1, w2, b2, w3, b3):
    x = np.maximum(x @ w1 + b1, 0)
    x = np.maximum(x @ w2 + b2, 0)
    x = x @ w3 + b3
    return softmax(x)


def azimint_naive(data, radius, npt):
    rmax = radius.max()
    res = np.zeros(npt, dtype=np.float64)
    for i in range(npt):
        r1 = rmax * i / npt
        r2 = rmax * (i + 1) / npt
        mask_r12 = np.logical_and((r1 <= radius), (radius < r2))
        values_r12 = data[mask_r12]
        res[i] = values_r12.mean()
    return res


def azimint_hist(data, radius, npt):
    histu = np.histogram(radius, npt)[0]
    histw = np.histogram(radius, npt, weights=data)[0]
    return histw / histu


def arc_distance(theta_1, phi_1, theta_2, phi_2):
    temp = (np.sin((theta_2 - theta_1) / 2) ** 2
            + np.cos(theta_1) * np.cos(theta_2) * np.sin((phi_2 - phi_1) / 2) ** 2)
    return 2 * np.arctan2(np.sqrt(temp), np.sqrt(1 - temp))


def build_up_b(b, rho, dt, u, v, dx, dy):
    b[1:-1, 1:-1] = (rho * (1 / dt * ((u[1:-1, 2:] - u[1:-1, 0:-2]) / (2 * dx)
                                      + (v[2:, 1:-1] - v[0:-2, 1:-1]) / (2 * dy))
                            - ((u[1:-1, 2:] - u[1:-1, 0:-2]) / (2 * dx)) ** 2
                            - 2 * ((u[2:, 1:-1] - u[0:-2, 1:-1]) / (2 * dy)
                                   * (v[1:-1, 2:] - v[1:-1, 0:-2]) / (2 * dx))
                            - ((v[2:, 1:-1] - v[0:-2, 1:-1]) / (2 * dy)) ** 2))


def pressure_poisson(nit, p, dx, dy, b):
    pn = np.empty_like(p)
    pn = p.copy()
    for q in range(nit):
        pn = p.copy()
        p[1:-1, 1:-1] = (((pn[1:-1, 2:] + pn[1:-1, 0:-2]) * dy ** 2
                          + (pn[2:, 1:-1] + pn[0:-2, 1:-1]) * dx ** 2)
                         / (2 * (dx ** 2 + dy ** 2))
                         - dx ** 2 * dy ** 2 / (2 * (dx ** 2 + dy ** 2)) * b[1:-1, 1:-1])
        p[:, -1] = p[:, -2]
        p[0, :] = p[1, :]
        p[:, 0] = p[:, 1]
        p[-1, :] = 0


def cavity_flow(nx, ny, nt, nit, u, v, dt, dx, dy, p, rho, nu):
    un = np.empty_like(u)
    vn = np.empty_like(v)
    b = np.zeros((ny, nx))
    for n in range(nt):
        un = u.copy()
        vn = v.copy()
        build_up_b(b, rho, dt, u, v, dx, dy)
        pressure_poisson(nit, p, dx, dy, b)
        u[1:-1, 1:-1] = (un[1:-1, 1:-1] - un[1:-1, 1:-1] * dt / dx
                         * (un[1:-1, 1:-1] - un[1:-1, 0:-2])
                         - vn[1:-1, 1:-1] * dt / dy * (un[1:-1, 1:-1] - un[0:-2, 1:-1])
                         - dt / (2 * rho * dx) * (p[1:-1, 2:] - p[1:-1, 0:-2])
                         + nu * (dt / dx ** 2 * (un[1:-1, 2:] - 2 * un[1:-1, 1:-1] + un[1:-1, 0:-2])
                                 + dt / dy ** 2 * (un[2:, 1:-1] - 2 * un[1:-1, 1:-1]
                                                   + un[0:-2, 1:-1])))
        v[1:-1, 1:-1] = (vn[1:-1, 1:-1] - un[1:-1, 1:-1] * dt / dx
                         * (vn[1:-1, 1:-1] - vn[1:-1, 0:-2])
                         - vn[1:-1, 1:-1] * dt / dy * (vn[1:-1, 1:-1] - vn[0:-2, 1:-1])
                         - dt / (2 * rho * dy) * (p[2:, 1:-1] - p[0:-2, 1:-1])
                         + nu * (dt / dx ** 2 * (vn[1:-1, 2:] - 2 * vn[1:-1, 1:-1] + vn[1:-1, 0:-2])
                                 + dt / dy ** 2 * (vn[2:, 1:-1] - 2 * vn[1:-1, 1:-1]
                                                   + vn[0:-2, 1:-1])))
        u[0, :] = 0
        u[:, 0] = 0
        u[:, -1] = 0
        u[-1, :] = 1
        v[0, :] = 0
        v[-1, :] = 0
        v[:, 0] = 0
        v[:, -1] = 0


def channel_flow(nit, u, v, dt, dx, dy, p, rho, nu, F):
    udiff = 1
    stepcount = 0
    while udiff > .001:
        un = u.copy()
        vn = v.copy()
        b = np.zeros_like(u)
        b[1:-1, 1:-1] = rho * (1 / dt * ((u[1:-1, 2:] - u[1:-1, 0:-2]) / (2 * dx)
                                         + (v[2:, 1:-1] - v[0:-2, 1:-1]) / (2 * dy))
                               - ((u[1:-1, 2:] - u[1:-1, 0:-2]) / (2 * dx)) ** 2
                               - 2 * ((u[2:, 1:-1] - u[0:-2, 1:-1]) / (2 * dy)
                                      * (v[1:-1, 2:] - v[1:-1, 0:-2]) / (2 * dx))
                               - ((v[2:, 1:-1] - v[0:-2, 1:-1]) / (2 * dy)) ** 2)
        # periodic boundary at x = 2 and x = 0
        b[1:-1, -1] = rho * (1 / dt * ((u[1:-1, 0] - u[1:-1, -2]) / (2 * dx)
                                       + (v[2:, -1] - v[0:-2, -1]) / (2 * dy))
                             - ((u[1:-1, 0] - u[1:-1, -2]) / (2 * dx)) ** 2
                             - 2 * ((u[2:, -1] - u[0:-2, -1]) / (2 * dy)
                                    * (v[1:-1, 0] - v[1:-1, -2]) / (2 * dx))
                             - ((v[2:, -1] - v[0:-2, -1]) / (2 * dy)) ** 2)
        b[1:-1, 0] = rho * (1 / dt * ((u[1:-1, 1] - u[1:-1, -1]) / (2 * dx)
                                      + (v[2:, 0] - v[0:-2, 0]) / (2 * dy))
                            - ((u[1:-1, 1] - u[1:-1, -1]) / (2 * dx)) ** 2
                            - 2 * ((u[2:, 0] - u[0:-2, 0]) / (2 * dy)
                                   * (v[1:-1, 1] - v[1:-1, -1]) / (2 * dx))
                            - ((v[2:, 0] - v[0:-2, 0]) / (2 * dy)) ** 2)
        pn = np.empty_like(p)
        for q in range(nit):
            pn = p.copy()
            p[1:-1, 1:-1] = (((pn[1:-1, 2:] + pn[1:-1, 0:-2]) * dy ** 2
                              + (pn[2:, 1:-1] + pn[0:-2, 1:-1]) * dx ** 2)
                             / (2 * (dx ** 2 + dy ** 2))
                             - dx ** 2 * dy ** 2 / (2 * (dx ** 2 + dy ** 2)) * b[1:-1, 1:-1])
            p[1:-1, -1] = (((pn[1:-1, 0] + pn[1:-1, -2]) * dy ** 2
                            + (pn[2:, -1] + pn[0:-2, -1]) * dx ** 2)
                           / (2 * (dx ** 2 + dy ** 2))
                           - dx ** 2 * dy ** 2 / (2 * (dx ** 2 + dy ** 2)) * b[1:-1, -1])
            p[1:-1, 0] = (((pn[1:-1, 1] + pn[1:-1, -1]) * dy ** 2
                           + (pn[2:, 0] + pn[0:-2, 0]) * dx ** 2)
                          / (2 * (dx ** 2 + dy ** 2))
                          - dx ** 2 * dy ** 2 / (2 * (dx ** 2 + dy ** 2)) * b[1:-1, 0])
            p[-1, :] = p[-2, :]
            p[0, :] = p[1, :]
        u[1:-1, 1:-1] = (un[1:-1, 1:-1] - un[1:-1, 1:-1] * dt / dx
                         * (un[1:-1, 1:-1] - un[1:-1, 0:-2])
                         - vn[1:-1, 1:-1] * dt / dy * (un[1:-1, 1:-1] - un[0:-2, 1:-1])
                         - dt / (2 * rho * dx) * (p[1:-1, 2:] - p[1:-1, 0:-2])
                         + nu * (dt / dx ** 2 * (un[1:-1, 2:] - 2 * un[1:-1, 1:-1] + un[1:-1, 0:-2])
                                 + dt / dy ** 2 * (un[2:, 1:-1] - 2 * un[1:-1, 1:-1]
                                                   + un[0:-2, 1:-1]))
                         + F * dt)
        v[1:-1, 1:-1] = (vn[1:-1, 1:-1] - un[1:-1, 1:-1] * dt / dx
                         * (vn[1:-1, 1:-1] - vn[1:-1, 0:-2])
                         - vn[1:-1, 1:-1] * dt / dy * (vn[1:-1, 1:-1] - vn[0:-2, 1:-1])
                         - dt / (2 * rho * dy) * (p[2:, 1:-1] - p[0:-2, 1:-1])
                         + nu * (dt / dx ** 2 * (vn[1:-1, 2:] - 2 * vn[1:-1, 1:-1] + vn[1:-1, 0:-2])
                                 + dt / dy ** 2 * (vn[2:, 1:-1] - 2 * vn[1:-1, 1:-1]
                                                   + vn[0:-2, 1:-1])))
        u[0, :] = 0
        u[-1, :] = 0
        v[0, :] = 0
        v[-1, :] = 0
        udiff = (np.sum(u) - np.sum(un)) / np.sum(u)
        stepcount += 1
    return stepcount


def nbody_acc(pos, mass, G, softening):
    x = pos[:, 0:1]
    y = pos[:, 1:2]
    z = pos[:, 2:3]
    dx = x.T - x
    dy = y.T - y
    dz = z.T - z
    inv_r3 = (dx ** 2 + dy ** 2 + dz ** 2 + softening ** 2)
    inv_r3[inv_r3 > 0] = inv_r3[inv_r3 > 0] ** (-1.5)
    ax = G * (dx * inv_r3) @ mass
    ay = G * (dy * inv_r3) @ mass
    az = G * (dz * inv_r3) @ mass
    return np.hstack((ax, ay, az))


def nbody_energy(vel, pos, mass, G):
    KE = 0.5 * np.sum(np.sum(mass * vel ** 2))
    x = pos[:, 0:1]
    y = pos[:, 1:2]
    z = pos[:, 2:3]
    dx = x.T - x
    dy = y.T - y
    dz = z.T - z
    inv_r = np.sqrt(dx ** 2 + dy ** 2 + dz ** 2)
    inv_r[inv_r > 0] = 1.0 / inv_r[inv_r > 0]
    PE = G * np.sum(np.sum(np.triu(-(mass * mass.T) * inv_r, 1)))
    return KE, PE


def nbody(mass, pos, vel, N, Nt, dt, G, softening):
    vel -= np.mean(mass * vel, 0) / np.mean(mass)
    acc = nbody_acc(pos, mass, G, softening)
    KE = np.ndarray(Nt + 1, dtype=np.float64)
    PE = np.ndarray(Nt + 1, dtype=np.float64)
    KE[0], PE[0] = nbody_energy(vel, pos, mass, G)
    t = 0.0
    for i in range(Nt):
        vel += acc * dt / 2.0
        pos += vel * dt
        acc = nbody_acc(pos, mass, G, softening)
        vel += acc * dt / 2.0
        t += dt
        KE[i + 1], PE[i + 1] = nbody_energy(vel, pos, mass, G)
    return KE, PE


def go_fast(a):
    trace = 0.0
    for i in range(a.shape[0]):
        trace += np.tanh(a[i, i])
    return a + trace


def mandelbrot1(xmin, xmax, ymin, ymax, xn, yn, maxiter, horizon=2.0):
    X = np.linspace(xmin, xmax, xn, dtype=np.float64)
    Y = np.linspace(ymin, ymax, yn, dtype=np.float64)
    C = X + Y[:, None] * 1j
    N = np.zeros(C.shape, dtype=np.int64)
    Z = np.zeros(C.shape, dtype=np.complex128)
    for n in range(maxiter):
        I = np.less(abs(Z), horizon)
        N[I] = n
        Z[I] = Z[I] ** 2 + C[I]
    N[N == maxiter - 1] = 0
    return Z, N


def mandelbrot2(xmin, xmax, ymin, ymax, xn, yn, itermax, horizon=2.0):
    Xi, Yi = np.mgrid[0:xn, 0:yn]
    X = np.linspace(xmin, xmax, xn, dtype=np.float64)[Xi]
    Y = np.linspace(ymin, ymax, yn, dtype=np.float64)[Yi]
    C = X + Y * 1j
    N_ = np.zeros(C.shape, dtype=np.int64)
    Z_ = np.zeros(C.shape, dtype=np.complex128)
    Xi.shape = Yi.shape = C.shape = xn * yn
    Z = np.zeros(C.shape, np.complex128)
    for i in range(itermax):
        if not len(Z):
            break
        np.multiply(Z, Z, Z)
        np.add(Z, C, Z)
        rem = abs(Z) > horizon
        N_[Xi[rem], Yi[rem]] = i + 1
        Z_[Xi[rem], Yi[rem]] = Z[rem]
        rem = ~rem
        Z = Z[rem]
        Xi, Yi = Xi[rem], Yi[rem]
        C = C[rem]
    return Z_.T, N_.T


def spmv(A_row, A_col, A_val, x):
    y = np.empty(A_row.size - 1, A_val.dtype)
    for i in range(A_row.size - 1):
        cols = A_col[A_row[i]:A_row[i + 1]]
        vals = A_val[A_row[i]:A_row[i + 1]]
        y[i] = vals @ x[cols]
    return y


def crc16(data, poly=0x8408):
    crc = 0xFFFF
    for b in data:
        cur_byte = 0xFF & b
        for _ in range(0, 8):
            if (crc & 0x0001) ^ (cur_byte & 0x0001):
                crc = (crc >> 1) ^ poly
            else:
                crc >>= 1
            cur_byte >>= 1
    crc = (~crc & 0xFFFF)
    crc = (crc << 8) | ((crc >> 8) & 0xFF)
    return crc & 0xFFFF


def compute(array_1, array_2, a, b, c):
    return np.clip(array_1, 2, 10) * a + array_2 * b + c


def contour_integral(NR, NM, slab_per_bc, Ham, int_pts, Y):
    P0 = np.zeros((NR, NM), dtype=np.complex128)
    P1 = np.zeros((NR, NM), dtype=np.complex128)
    for z in int_pts:
        Tz = np.zeros((NR, NR), dtype=np.complex128)
        for n in range(slab_per_bc + 1):
            zz = np.power(z, slab_per_bc / 2 - n)
            Tz += zz * Ham[n]
        if NR == NM:
            X = np.linalg.inv(Tz)
        else:
            X = np.linalg.solve(Tz, Y)
        if abs(z) < 1.0:
            X = -X
        P0 += X
        P1 += z * X
    return P0, P1


def vadv(utens_stage, u_stage, wcon, u_pos, utens, dtr_stage):
    I, J, K = utens_stage.shape[0], utens_stage.shape[1], utens_stage.shape[2]
    ccol = np.ndarray((I, J, K), dtype=utens_stage.dtype)
    dcol = np.ndarray((I, J, K), dtype=utens_stage.dtype)
    data_col = np.ndarray((I, J), dtype=utens_stage.dtype)
    BET_M = 0.5
    BET_P = 0.5
    for k in range(1):
        gcv = 0.25 * (wcon[1:, :, k + 1] + wcon[:-1, :, k + 1])
        cs = gcv * BET_M
        ccol[:, :, k] = gcv * BET_P
        bcol = dtr_stage - ccol[:, :, k]
        correction_term = -cs * (u_stage[:, :, k + 1] - u_stage[:, :, k])
        dcol[:, :, k] = (dtr_stage * u_pos[:, :, k] + utens[:, :, k] + utens_stage[:, :, k]
                         + correction_term)
        divided = 1.0 / bcol
        ccol[:, :, k] = ccol[:, :, k] * divided
        dcol[:, :, k] = dcol[:, :, k] * divided
    for k in range(1, K - 1):
        gav = -0.25 * (wcon[1:, :, k] + wcon[:-1, :, k])
        gcv = 0.25 * (wcon[1:, :, k + 1] + wcon[:-1, :, k + 1])
        as_ = gav * BET_M
        cs = gcv * BET_M
        acol = gav * BET_P
        ccol[:, :, k] = gcv * BET_P
        bcol = dtr_stage - acol - ccol[:, :, k]
        correction_term = -as_ * (u_stage[:, :, k - 1] - u_stage[:, :, k]) - cs * (
            u_stage[:, :, k + 1] - u_stage[:, :, k])
        dcol[:, :, k] = (dtr_stage * u_pos[:, :, k] + utens[:, :, k] + utens_stage[:, :, k]
                         + correction_term)
        divided = 1.0 / (bcol - ccol[:, :, k - 1] * acol)
        ccol[:, :, k] = ccol[:, :, k] * divided
        dcol[:, :, k] = (dcol[:, :, k] - (dcol[:, :, k - 1]) * acol) * divided
    for k in range(K - 1, K):
        gav = -0.25 * (wcon[1:, :, k] + wcon[:-1, :, k])
        as_ = gav * BET_M
        acol = gav * BET_P
        bcol = dtr_stage - acol
        correction_term = -as_ * (u_stage[:, :, k - 1] - u_stage[:, :, k])
        dcol[:, :, k] = (dtr_stage * u_pos[:, :, k] + utens[:, :, k] + utens_stage[:, :, k]
                         + correction_term)
        divided = 1.0 / (bcol - ccol[:, :, k - 1] * acol)
        dcol[:, :, k] = (dcol[:, :, k] - (dcol[:, :, k - 1]) * acol) * divided
    for k in range(K - 1, K - 2, -1):
        datacol = dcol[:, :, k]
        data_col[:] = datacol
        utens_stage[:, :, k] = dtr_stage * (datacol - u_pos[:, :, k])
    for k in range(K - 2, -1, -1):
        datacol = dcol[:, :, k] - ccol[:, :, k] * data_col[:, :]
        data_col[:] = datacol
        utens_stage[:, :, k] = dtr_stage * (datacol - u_pos[:, :, k])


def hdiff(in_field, out_field, coeff):
    I, J, K = out_field.shape[0], out_field.shape[1], out_field.shape[2]
    lap_field = 4.0 * in_field[1:I + 3, 1:J + 3, :] - (
        in_field[2:I + 4, 1:J + 3, :] + in_field[0:I + 2, 1:J + 3, :]
        + in_field[1:I + 3, 2:J + 4, :] + in_field[1:I + 3, 0:J + 2, :])
    res = lap_field[1:, 1:J + 1, :] - lap_field[:-1, 1:J + 1, :]
    flx_field = np.where(
        (res * (in_field[2:I + 3, 2:J + 2, :] - in_field[1:I + 2, 2:J + 2, :])) > 0, 0, res)
    res = lap_field[1:I + 1, 1:, :] - lap_field[1:I + 1, :-1, :]
    fly_field = np.where(
        (res * (in_field[2:I + 2, 2:J + 3, :] - in_field[2:I + 2, 1:J + 2, :])) > 0, 0, res)
    out_field[:, :, :] = in_field[2:I + 2, 2:J + 2, :] - coeff[:, :, :] * (
        flx_field[1:, :, :] - flx_field[:-1, :, :] + fly_field[:, 1:, :] - fly_field[:, :-1, :])


def scattering_self_energies(neigh_idx, dH, G, D, Sigma):
    for k in range(G.shape[0]):
        for E in range(G.shape[1]):
            for q in range(D.shape[0]):
                for w in range(D.shape[1]):
                    for i in range(D.shape[-2]):
                        for j in range(D.shape[-1]):
                            for a in range(neigh_idx.shape[0]):
                                for b in range(neigh_idx.shape[1]):
                                    if E - w >= 0:
                                        dHG = G[k, E - w, neigh_idx[a, b]] @ dH[a, b, i]
                                        dHD = dH[a, b, j] * D[q, w, a, b, i, j]
                                        Sigma[k, E, a] += dHG @ dHD


def fft_vectorized(x):
    # radix-2 decimation in time, one butterfly stage per loop step (Stockham order)
    N = x.shape[0]
    n = np.arange(2)
    M = np.exp(-2j * np.pi * n * n[:, None] / 2)
    X = np.dot(M, x.reshape((2, -1)))
    while X.shape[0] < N:
        X_even = X[:, :X.shape[1] // 2]
        X_odd = X[:, X.shape[1] // 2:]
        factor = np.exp(-1j * np.pi * np.arange(X.shape[0]) / X.shape[0])[:, None]
        X = np.vstack([X_even + factor * X_odd, X_even - factor * X_odd])
    return X.ravel()


def trisolv(L, x, b):
    for i in range(x.shape[0]):
        x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]


def resnet_block(x, w1, w2):
    # 1x1 conv - relu - 1x1 conv + residual, NHWC
    y = np.maximum(x @ w1, 0)
    y = y @ w2
    return np.maximum(y + x, 0)


def gemm(alpha, beta, C, A, B):
    C[:] = alpha * A @ B + beta * C


# ---- inputs: small sizes ----

def _spd(rng, n):
    a = rng.random((n, n))
    return a @ a.T + n * np.eye(n)


def _csr(rng, rows, columns, per_row):
    starts = np.arange(rows + 1, dtype=np.int64) * per_row
    cols = np.concatenate([np.sort(rng.choice(columns, per_row, replace=False))
                           for _ in range(rows)]).astype(np.int64)
    return starts, cols, rng.random(rows * per_row), rng.random(columns)


def _c(rng, *shape):
    return rng.random(shape) + 1j * rng.random(shape)


CASES = {
    "jacobi_1d": (jacobi_1d, lambda r: (8, r.random(40), r.random(40))),
    "jacobi_2d": (jacobi_2d, lambda r: (5, r.random((16, 16)), r.random((16, 16)))),
    "heat_3d": (heat_3d, lambda r: (4, r.random((8, 8, 8)), r.random((8, 8, 8)))),
    "fdtd_2d": (fdtd_2d, lambda r: (4, r.random((12, 14)), r.random((12, 14)), r.random((12, 14)),
                                    r.random(4))),
    "adi": (adi, lambda r: (2, 10, r.random((10, 10)))),
    "seidel_2d": (seidel_2d, lambda r: (3, 8, r.random((8, 8)))),
    "lu": (lu, lambda r: (_spd(r, 10),)),
    "ludcmp": (ludcmp, lambda r: (_spd(r, 10), r.random(10))),
    "cholesky": (cholesky, lambda r: (_spd(r, 10),)),
    "durbin": (durbin, lambda r: (r.random(16) * 0.1,)),
    "gramschmidt": (gramschmidt, lambda r: (r.random((14, 10)),)),
    "floyd_warshall": (floyd_warshall, lambda r: (r.integers(1, 100, (12, 12)).astype(np.int32),)),
    "nussinov": (nussinov, lambda r: (10, r.integers(0, 4, 10).astype(np.int32))),
    "deriche": (deriche, lambda r: (0.25, r.random((12, 16)).astype(np.float32))),
    "correlation": (correlation, lambda r: (10, 14.0, r.random((14, 10)))),
    "covariance": (covariance, lambda r: (10, 14.0, r.random((14, 10)))),
    "gemver": (gemver, lambda r: (1.5, 1.2, r.random((20, 20)), *[r.random(20) for _ in range(8)])),
    "gesummv": (gesummv,
                lambda r: (1.5, 1.2, r.random((20, 20)), r.random((20, 20)), r.random(20))),
    "mvt": (mvt, lambda r: (*[r.random(20) for _ in range(4)], r.random((20, 20)))),
    "atax": (atax, lambda r: (r.random((20, 24)), r.random(24))),
    "bicg": (bicg, lambda r: (r.random((20, 24)), r.random(24), r.random(20))),
    "syrk": (syrk, lambda r: (1.5, 1.2, r.random((10, 10)), r.random((10, 6)))),
    "syr2k": (syr2k,
              lambda r: (1.5, 1.2, r.random((10, 10)), r.random((10, 6)), r.random((10, 6)))),
    "trmm": (trmm, lambda r: (1.5, r.random((10, 10)), r.random((10, 12)))),
    "symm": (symm, lambda r: (1.5, 1.2, r.random((8, 10)), r.random((8, 8)), r.random((8, 10)))),
    "doitgen": (doitgen, lambda r: (4, 5, 6, r.random((4, 5, 6)), r.random((6, 6)))),
    "k3mm": (k3mm, lambda r: tuple(r.random((12, 12)) for _ in range(4))),
    "k2mm": (k2mm, lambda r: (1.5, 1.2, *[r.random((12, 12)) for _ in range(4)])),
    "gemm": (gemm,
             lambda r: (1.5, 1.2, r.random((12, 12)), r.random((12, 12)), r.random((12, 12)))),
    "conv2d": (conv2d, lambda r: (r.random((2, 7, 7, 3)).astype(np.float32),
                                  r.random((3, 3, 3, 4)).astype(np.float32))),
    "softmax": (softmax, lambda r: (r.random((2, 3, 8, 8)).astype(np.float32),)),
    "mlp": (mlp, lambda r: (r.random((4, 16)).astype(np.float32),
                            r.random((16, 256)).astype(np.float32),
                            r.random(256).astype(np.float32),
                            r.random((256, 128)).astype(np.float32),
                            r.random(128).astype(np.float32),
                            r.random((128, 10)).astype(np.float32),
                            r.random(10).astype(np.float32))),
    "resnet_block": (resnet_block, lambda r: (r.random((2, 6, 6, 8)).astype(np.float32),
                                              r.random((8, 4)).astype(np.float32),
                                              r.random((4, 8)).astype(np.float32))),
    "azimint_naive": (azimint_naive, lambda r: (r.random(300), r.random(300), 6)),
    "azimint_hist": (azimint_hist, lambda r: (r.random(300), r.random(300), 6)),
    "arc_distance": (arc_distance, lambda r: tuple(r.random(50) for _ in range(4))),
    "cavity_flow": (cavity_flow, lambda r: (9, 9, 3, 3, np.zeros((9, 9)), np.zeros((9, 9)), 0.001,
                                            0.25, 0.25, np.zeros((9, 9)), 1.0, 0.1)),
    "channel_flow": (channel_flow, lambda r: (3, np.zeros((9, 9)), np.zeros((9, 9)), 0.01, 0.25,
                                              0.25, np.zeros((9, 9)), 1.0, 0.1, 1.0)),
    "nbody": (nbody, lambda r: (r.random((6, 1)) * 3.0, r.standard_normal((6, 3)),
                                r.standard_normal((6, 3)), 6, 3, 0.01, 1.0, 0.1)),
    "go_fast": (go_fast, lambda r: (r.random((12, 12)),)),
    "mandelbrot1": (mandelbrot1, lambda r: (-2.25, 0.75, -1.25, 1.25, 12, 10, 6)),
    "mandelbrot2": (mandelbrot2, lambda r: (-2.25, 0.75, -1.25, 1.25, 12, 10, 6)),
    "spmv": (spmv, lambda r: _csr(r, 12, 10, 3)),
    "crc16": (crc16, lambda r: (r.integers(0, 256, 12).astype(np.uint8),)),
    "compute": (compute,
                lambda r: (r.integers(0, 20, (10, 10)), r.integers(0, 20, (10, 10)), 4, 3, 9)),
    "contour_integral": (contour_integral,
                         lambda r: (4, 2, 2, _c(r, 3, 4, 4), _c(r, 3), _c(r, 4, 2))),
    "vadv": (vadv, lambda r: (r.random((5, 4, 6)), r.random((5, 4, 6)), r.random((6, 4, 6)),
                              r.random((5, 4, 6)), r.random((5, 4, 6)), 0.5)),
    "hdiff": (hdiff, lambda r: (r.random((9, 8, 3)), r.random((5, 4, 3)), r.random((5, 4, 3)))),
    "scattering_self_energies": (scattering_self_energies, lambda r: (
        r.integers(0, 3, (1, 2)), _c(r, 1, 2, 2, 2, 2), _c(r, 1, 2, 3, 2, 2),
        _c(r, 1, 1, 1, 2, 2, 2), np.zeros((1, 2, 1, 2, 2), np.complex128))),
    "fft": (fft_vectorized, lambda r: (r.random(16) + 0j,)),
    "trisolv": (trisolv, lambda r: (np.tril(r.random((10, 10))) + 10 * np.eye(10), np.zeros(10),
                                    r.random(10))),
}


def _leaves(value):
    if isinstance(value, tuple):
        return [leaf for item in value for leaf in _leaves(item)]
    return [value]


def _assert_same(got, expected, what):
    if expected is None:
        assert got is None, what
        return
    if isinstance(expected, (bool, int, float, complex)):
        assert type(got) is type(expected), (what, type(got), type(expected))
    got_array, expected_array = np.asarray(got), np.asarray(expected)
    assert got_array.dtype == expected_array.dtype, (what, got_array.dtype, expected_array.dtype)
    assert got_array.shape == expected_array.shape, (what, got_array.shape, expected_array.shape)
    if expected_array.dtype.kind in "biu":
        np.testing.assert_array_equal(got_array, expected_array, err_msg=what)
    else:
        single = expected_array.dtype in (np.float32, np.complex64)
        tolerance = 1e-4 if single else 1e-9
        np.testing.assert_allclose(got_array, expected_array, rtol=tolerance, atol=tolerance,
                                   err_msg=what)


def check_program(function, arguments, calls=2):
    """kiln.compile(function) agrees with NumPy on `arguments` (copies), on its first call
    (trace and compile) and on a later one (the cached graph): results and updated arguments."""
    compiled = kiln.compile(function)
    for _ in range(calls):
        check_call(compiled, function, arguments)
    return compiled


def check_call(compiled, function, arguments):
    """One call of `compiled` agrees with `function` on copies of `arguments`: results and
    updated arguments."""
    mine, theirs = copy.deepcopy(arguments), copy.deepcopy(arguments)
    got, expected = compiled(*mine), function(*theirs)
    got_leaves, expected_leaves = _leaves(got), _leaves(expected)
    assert len(got_leaves) == len(expected_leaves)
    for n, (a, b) in enumerate(zip(got_leaves, expected_leaves)):
        _assert_same(a, b, f"result {n} of {function.__name__}")
    for n, (a, b) in enumerate(zip(mine, theirs)):
        if isinstance(b, np.ndarray):
            _assert_same(a, b, f"argument {n} (updated in place)")


@pytest.mark.parametrize("name", sorted(CASES))
def test_program_agrees_with_numpy(name):
    function, make = CASES[name]
    check_program(function, make(np.random.default_rng(7)))


def _breaks(function, *arguments):
    report = kiln.explain(kiln.compile(function))(*copy.deepcopy(arguments))
    return report.graph_break_count, report.break_reasons


def test_arrays_made_by_the_ndarray_class_are_traced():
    # vadv allocates its columns with np.ndarray(shape, dtype): each traced value stored into a
    # real ndarray was a graph break (42 of them, 300x NumPy's time)
    arguments = CASES["vadv"][1](np.random.default_rng(1))
    assert _breaks(vadv, *arguments) == (0, [])


from numpy import ndarray  # noqa: E402 - the name bound before the trace, as users import it


def allocated_by_name(x):
    out = ndarray(x.shape, np.float32)
    out[:] = x * 2
    kinds = (isinstance(x, np.ndarray), isinstance(out, ndarray), isinstance(x.sum(), np.ndarray),
             issubclass(np.ndarray, ndarray))
    return out, np.float64(kinds[0] + 2 * kinds[1] + 4 * kinds[2] + 8 * kinds[3])


def test_the_ndarray_class_imported_by_name_is_traced_and_still_a_type():
    x = np.arange(6.0).reshape(2, 3)
    assert _breaks(allocated_by_name, x) == (0, [])
    check_program(allocated_by_name, (x,))


def repeated_mask(x):
    y = x - 0.5
    y[y > 0] = y[y > 0] ** -1.5     # nbody's inv_r3[inv_r3 > 0] = inv_r3[inv_r3 > 0] ** -1.5
    y[0.1 >= y] = 2 * y[0.1 >= y]
    return y


def test_a_mask_computed_twice_is_one_mask():
    x = np.random.default_rng(2).random((5, 7))
    assert _breaks(repeated_mask, x) == (0, [])
    check_program(repeated_mask, (x,))


def different_masks(x):
    y = x.copy()
    y[x > 0.5] = y[x > 0.4]   # another mask: NumPy's placement depends on the data
    return y


def test_different_masks_still_break_the_graph_and_agree_with_numpy():
    x = np.linspace(0.0, 1.0, 11)[None, :].repeat(2, 0)
    with pytest.raises(ValueError):
        different_masks(x.copy())   # NumPy: shapes differ here; kiln must raise the same
    y = np.zeros(4)
    count, reasons = _breaks(different_masks, y)
    assert count == 1 and "other_mask" in str(reasons[0]), reasons
    check_program(different_masks, (y,))


@pytest.mark.parametrize("name", ["lu", "ludcmp", "cholesky", "trisolv"])
def test_loops_bounded_by_an_outer_loops_index_are_captured(name):
    # `for j in range(i)` inside `for i in range(n)`: j's range follows from i's, so the
    # triangle's slices A[i, :j] keep their sign and both loops are one loop node each (the
    # outer one was unrolled: LU at n = 200 compiled for 48 s, then ran eagerly)
    function, make = CASES[name]
    arguments = make(np.random.default_rng(3))
    report = kiln.explain(kiln.compile(function))(*copy.deepcopy(arguments))
    assert report.loops and all(loop.kind == "loop" for loop in report.loops), report.loops
    check_program(function, arguments)


def masked_reductions(x, rows, low):
    inside = x > low
    empty = x > 2.0                           # selects nothing: NumPy's 0, nan, True...
    return (x[inside].sum(), np.mean(x[inside]), x[inside].std(), np.var(x[inside], ddof=1),
            np.prod(x[inside] + 1), x[inside].any(), np.all(x[inside] > 0.3),
            x[inside].mean(axis=0), np.nansum(x[inside]), x[rows].sum(), x[rows].mean(),
            x.astype(np.int32)[inside].sum(), x.astype(np.float32)[inside].mean(),
            x[empty].sum(), x[empty].all(), (2 * x[inside]).sum(), x[rows].sum(axis=0),
            x[rows].mean(0), np.std(x[rows], axis=(1, 0)), x[rows].var(axis=-2, ddof=1),
            np.array([x[rows == k].mean(axis=0) for k in (False, True)]))   # k-means' update


def test_reductions_of_a_masked_selection_stay_in_the_graph():
    # azimint_naive's data[in_bin].mean() per bin: where= reductions, no data-dependent shape
    rng = np.random.default_rng(4)
    arguments = (rng.random((6, 5)) * 3, rng.random(6) > 0.5, 1.0)
    with np.errstate(all="ignore"):
        assert _breaks(masked_reductions, *arguments) == (0, [])
        check_program(masked_reductions, arguments)


def masked_with_keepdims(x):
    rows = x[:, 0] > 0.5
    return x[x > 0.5].sum(keepdims=True), np.sum(x[x > 0.5], axis=0), x[rows].sum(axis=1)


def test_reductions_of_a_masked_selection_keep_numpy_shapes():
    x = np.random.default_rng(5).random((4, 3))
    count, reasons = _breaks(masked_with_keepdims, x)
    assert count >= 1 and "data-dependent" in str(reasons[0]), reasons
    check_program(masked_with_keepdims, (x,))


def sliding_windows(x, w):
    n = x.shape[0] - w.shape[0] + 1
    sums = np.zeros(n)
    smoothed = np.zeros_like(x)
    for i in range(n):
        sums[i] = np.sum(x[i:i + 3] * w)            # a window of fixed length 3 at i
        smoothed[i:i + 3] += w * x[i + 1]            # a fixed-size value added into one
        window = smoothed[i + 1:i + 4]
        window *= 0.5                                # a view: the writes reach smoothed
    return sums, smoothed


def clamped_windows(x):
    out = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        out[i] = x[i:i + 3].sum()                    # shorter at the end: NumPy clamps
    return out


@pytest.mark.parametrize("function, arguments", [
    (sliding_windows, (np.arange(12.0), np.array([0.25, 0.5, 0.25]))),
    (clamped_windows, (np.arange(10.0),)),
    (conv2d, CASES["conv2d"][1](np.random.default_rng(6))),
], ids=["sliding", "clamped", "conv2d"])
def test_slices_of_fixed_length_at_a_loop_index_are_one_loop(function, arguments):
    # x[i:i+K] is a view of fixed shape K while the loop keeps it inside the axis; as a window
    # masking the whole axis it could not meet conv2d's fixed-size weights: both loops were
    # unrolled (at 32x32, a 35 MiB graph that ran eagerly)
    report = kiln.explain(kiln.compile(function))(*copy.deepcopy(arguments))
    assert report.loops and all(loop.kind == "loop" for loop in report.loops), report.loops
    check_program(function, arguments)


def flipped_windows(x, a):
    out = np.zeros(x.shape[0])
    corner = np.zeros(x.shape[0])
    for k in range(1, x.shape[0]):
        out[k] = np.dot(np.flip(x[:k]), x[1:k + 1])         # Levinson-Durbin's reversed prefix
        corner[k] = (np.flip(a[:k, 2:]) * a[:k, 2:]).sum() + np.flip(a[k:, :], axis=1).sum()
    return out, corner


@pytest.mark.parametrize("function, arguments", [
    (durbin, CASES["durbin"][1](np.random.default_rng(8))),
    (flipped_windows, (np.arange(9.0) ** 1.5, np.random.default_rng(9).random((9, 5)))),
], ids=["durbin", "flipped"])
def test_flips_of_loop_varying_slices_are_one_loop(function, arguments):
    report = kiln.explain(kiln.compile(function))(*copy.deepcopy(arguments))
    assert report.loops and all(loop.kind == "loop" for loop in report.loops), report.loops
    check_program(function, arguments)


def relax(p, b):                 # a helper that updates its arguments in place, returns None
    p[1:-1] = 0.5 * (p[2:] + p[:-2]) - b[1:-1]
    p[0] = p[1]


def helper_in_a_time_loop(p, b, steps):
    for _ in range(steps):
        relax(p, b)                          # cavity_flow's build_up_b / pressure_poisson
        np.copyto(b, 0.9 * b)
        scratch = np.empty_like(p)
        scratch.fill(2.0)
        np.add.at(p, [0, 1], scratch[:2] * 0.01)
    return p


SEEN = []


def python_effect_in_a_loop(x, steps):
    for i in range(steps):
        x[i] = x[i] * 2
        SEEN.append(i)                       # must happen on every iteration (NumPy's count)
    return x


def test_call_statements_in_loops_are_captured_where_their_effects_are_traced():
    arguments = (np.linspace(0.0, 1.0, 12), np.linspace(1.0, 0.0, 12) * 0.1, 7)
    report = kiln.explain(kiln.compile(helper_in_a_time_loop))(*copy.deepcopy(arguments))
    assert [loop.kind for loop in report.loops] == ["loop"], report.loops
    check_program(helper_in_a_time_loop, arguments)
    SEEN.clear()
    got = kiln.compile(python_effect_in_a_loop)(np.ones(5), 5)
    assert SEEN == [0, 1, 2, 3, 4] and (got == 2).all()
    report = kiln.explain(kiln.compile(python_effect_in_a_loop))(np.ones(5), 5)
    assert [loop.kind for loop in report.loops] == ["unrolled"], report.loops
    assert "once" in report.loops[0].reason, report.loops


def one_sided_temporary(x, lag):
    total = np.zeros(x.shape[1])
    for i in range(x.shape[0]):
        if i - lag >= 0:
            shifted = x[i - lag] * x[i]              # bound on this side only, read only here
            total += shifted
    return total


def one_sided_and_read_after(x):
    for i in range(x.shape[0]):
        if x[i, 0] > 0.5:
            last = x[i]                              # read after the loop: NumPy's last one
    return last * 2


def test_a_temporary_of_one_side_of_a_branch_does_not_unroll_its_loop():
    # scattering_self_energies: `if E - w >= 0: dHG = ...; dHD = ...; Sigma[...] += dHG @ dHD`
    x = np.random.default_rng(10).random((6, 4))
    report = kiln.explain(kiln.compile(one_sided_temporary))(x, 2)
    assert sorted(loop.kind for loop in report.loops) == ["loop", "select"], report.loops
    check_program(one_sided_temporary, (x, 2))
    report = kiln.explain(kiln.compile(one_sided_and_read_after))(x)
    assert report.loops[0].kind == "unrolled", report.loops
    check_program(one_sided_and_read_after, (x,))


def test_a_loop_nest_updating_an_argument_in_place_copies_it_once(compile_logged):
    # doitgen: `A[r, q, :] = A[r, q, :] @ C4` in two loops. The inner loop updates the outer
    # body's carried array in its own buffer: the outer loop is in place too (it copied the
    # whole array in and back out on every iteration: 4x NumPy's time), and the result is not
    # copied onto itself after the loop
    arguments = CASES["doitgen"][1](np.random.default_rng(11))
    log, _ = compile_logged(doitgen, copy.deepcopy(arguments), "schedule")
    assert "<->" not in log, log
    copies = [line for line in log.splitlines() if "] = " in line and line.count("[") == 2 and
              line.split("] = ")[0].split("[")[0].strip() == line.split("] = ")[1].split("[")[0]]
    assert not copies, copies
    check_program(doitgen, arguments)


def test_a_row_set_in_a_loop_nest_is_one_scatter_of_its_slab(compile_logged):
    # doitgen: A[r, q, :] = v, r and q loop indices. Row q of the slab A[r] is set by a where
    # put back as the slab: a scatter into a copy of the slab, then scattered back, shared one
    # kernel with the product's sum and kept it from vectorising (8x NumPy's time)
    arguments = CASES["doitgen"][1](np.random.default_rng(11))
    log, _ = compile_logged(doitgen, copy.deepcopy(arguments), "graph,schedule")
    assert log.count("= scatter(") == 1, log
    # the where is computed as the scatter writes, in place (no slab computed into a buffer
    # first and copied in: 2x the time), its loop over the rows trimmed to row q: the store
    # writes v, no where left
    assert re.search(r"for i\d+ in 0\.\.5 within \[", log), log
    assert not re.search(r"(b\d+)\[.*\] = where\(.*\1\[", log), log
    check_program(doitgen, arguments)


def test_row_and_column_products_of_one_matrix_keep_their_own_loops(compile_logged):
    # mvt: A @ y1 (along A's rows) and y2 @ A (down its columns) share one pass over A; the
    # column sums' interchange (sched/cpu/interchange_reductions.h) made the row products lanes
    # too, each reading down a column (2.5x NumPy's time): they keep their own loop now
    rng = np.random.default_rng(5)
    arguments = (*[rng.random(100) for _ in range(4)], rng.random((100, 100)))
    log, _ = compile_logged(mvt, copy.deepcopy(arguments), "schedule")
    reductions = [line for line in log.splitlines() if line.lstrip().startswith("reduce")]
    assert len(reductions) == 2 and all(line.count("sum(") == 1 for line in reductions), log
    check_program(mvt, arguments)


def mean_where(x, low):
    inside = (x >= low) & (x < low + 0.25)
    return np.mean(x, where=inside), x[inside].mean(), np.mean(x.astype(np.float32), axis=0,
                                                              where=inside)


def test_a_mean_where_a_mask_holds_is_a_sum_over_a_count(compile_logged):
    # NumPy's way: two plain reductions that vectorise; the fused masked mean ran 5x slower
    # (azimint_naive at 100 bins: 41 ms against NumPy's 6)
    x = np.random.default_rng(12).random((50, 3))
    log, _ = compile_logged(mean_where, (x, 0.5), "graph")
    # the count summed as integers: a bool cast to float64 summed 7x slower than count_nonzero
    assert re.search(r"= sum\(%\d+\).*: int64", log), log
    check_program(mean_where, (x, 0.5))


def mask_fractions(x):
    return (np.mean(x > 0.5), np.sum(x < 0.25, dtype=np.float32), (x > 0.1).astype(np.float64)
            @ x, np.average(x, weights=x > 0.3))


def test_a_mask_cast_to_floats_is_a_select_in_the_generated_code(compile_logged):
    # GCC leaves (double)(bool) scalar in the vector loops; the select vectorises (np.mean of
    # a mask over 1M floats: 0.48 -> 0.08 ms, NumPy 0.47)
    x = np.random.default_rng(13).random(1000)
    log, _ = compile_logged(mask_fractions, (x,), "output_code")
    assert "? 1.0 : 0.0)" in log and "? 1.0f : 0.0f)" in log, log
    check_program(mask_fractions, (x,))
