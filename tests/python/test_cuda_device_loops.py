"""Graph loops of small kernels on the GPU run as one kernel that walks the iterations on the
device (codegen/cuda/device_loops.cpp), not as launches and read-backs from the host.

Without a GPU (CI) the CUDA source kiln would compile for each program is checked for the loop
kernel; on a GPU (scripts/gpu-check) the programs also run there against NumPy."""
import os
import re
import subprocess

import numpy as np
import pytest

import kiln
from kiln.bench import loop_programs
from test_branch_sides_written_arrays import return_in_for

GPU = not kiln._kiln.cuda_unavailable_reason()


def rebound_rows(x):
    # A carried array rebound every iteration (its buffer swapped with the body's): an odd
    # number of iterations leaves it in the partner buffer.
    acc = np.zeros(x.shape[1])
    for i in range(x.shape[0]):
        acc = 0.5 * acc + x[i] * (acc.sum() + 1.0)
    return acc


CASES = [
    (loop_programs.crc32, lambda rng: (rng.integers(0, 256, 37, dtype=np.uint32),)),
    (loop_programs.newton_sqrt, lambda rng: (1 + 100 * rng.random(300),)),
    (rebound_rows, lambda rng: (rng.random((7, 50)) * 0.1,)),
    (rebound_rows, lambda rng: (rng.random((8, 50)) * 0.1,)),
    (loop_programs.sieve, lambda rng: (rng.random(500) > 0.01,)),
    (loop_programs.lcs, lambda rng: (rng.integers(0, 4, 30), rng.integers(0, 4, 25))),
    (loop_programs.levinson, lambda rng: (np.exp(-0.3 * np.arange(20)) + 1e-3 * rng.random(20),)),
    (loop_programs.pair_energy, lambda rng: (rng.random((24, 3)),)),
    (loop_programs.element_branch, lambda rng: (rng.standard_normal(300),)),
]


@pytest.mark.parametrize("fn, make", CASES, ids=[f"{c[0].__name__}{k}" for k, c in enumerate(CASES)])
def test_loops_of_small_kernels_are_one_device_kernel(fn, make, cuda_sources):
    """Each program's loop is one `kiln_loop<step>` kernel in its CUDA source, and its results
    are NumPy's: on the GPU where there is one, on the CPU otherwise (the same graph)."""
    compiled = kiln.compile(fn, device="cuda" if GPU else "cpu")
    rng = np.random.default_rng(5)
    for _ in range(3):
        args = make(rng)
        np.testing.assert_allclose(compiled(*args), fn(*args), rtol=1e-9, atol=1e-12)
    assert cuda_sources, "nothing compiled"
    assert any('__global__ void __launch_bounds__' in s and " kiln_loop" in s for s in cuda_sources), \
        cuda_sources[-1][-3000:]


ONE_THREAD = [
    (loop_programs.crc32, lambda rng: (rng.integers(0, 256, 37, dtype=np.uint32),)),
    (loop_programs.sieve, lambda rng: (rng.random(500) > 0.01,)),
    (loop_programs.lcs, lambda rng: (rng.integers(0, 4, 30), rng.integers(0, 4, 25))),
]


@pytest.mark.parametrize("fn, make", ONE_THREAD, ids=[c[0].__name__ for c in ONE_THREAD])
def test_loops_of_one_threads_work_run_in_one_thread(fn, make, cuda_sources):
    """A loop whose every launch is one element's work (a CRC's bit, a sieve's test, a DP cell)
    runs in the block's first thread alone: no barrier between its launches, its 0-d buffers
    a local array (registers once inlined) rather than shared memory."""
    compiled = kiln.compile(fn, device="cuda" if GPU else "cpu")
    rng = np.random.default_rng(7)
    for _ in range(3):
        args = make(rng)
        np.testing.assert_allclose(compiled(*args), fn(*args), rtol=1e-9, atol=1e-12)
    source = cuda_sources[-1]
    loop = source[re.search(r"__global__ void __launch_bounds__\(\d+\) kiln_loop", source).start():]
    loop = loop[:loop.index("\n}\n")]
    assert "if (threadIdx.x != 0) return;" in loop, loop
    assert "__syncthreads" not in loop and "__shared__" not in loop, loop
    assert "unsigned long long kiln_scalars[" in loop, loop


NVCC = next((p for p in (os.environ.get("KILN_NVCC"), "/usr/local/bin/nvcc", "/usr/local/cuda/bin/nvcc",
                          "/usr/bin/nvcc") if p and os.path.exists(p)), "nvcc")


def loop_ptx(source, tmp_path):
    """The PTX nvcc makes of the loop kernel in `source` for sm_90, with NVRTC's options."""
    (tmp_path / "loop.cu").write_text(source)
    subprocess.run([NVCC, "-arch=sm_90", "-std=c++17", "--fmad=false", "-diag-suppress", "177",
                    "-ptx", "-o", str(tmp_path / "loop.ptx"), str(tmp_path / "loop.cu")],
                   check=True, capture_output=True)
    ptx = (tmp_path / "loop.ptx").read_text()
    entry = ptx[ptx.index(".entry kiln_loop"):]
    return entry[:entry.index("\n}\n")]


@pytest.mark.parametrize("fn, make", [ONE_THREAD[0], (loop_programs.element_branch,
                                                      lambda rng: (rng.standard_normal(300),))],
                         ids=["crc32", "element_branch"])
def test_one_threads_loop_state_stays_in_registers(fn, make, cuda_sources, tmp_path):
    """The loop kernel's PTX (nvcc, as NVRTC compiles it) touches neither local nor shared
    memory and has no barrier: the CRC's state and the induction variable are registers."""
    kiln.compile(fn, device="cuda" if GPU else "cpu")(*make(np.random.default_rng(0)))
    ptx = loop_ptx(cuda_sources[-1], tmp_path)
    for instruction in ("ld.local", "st.local", "ld.shared", "st.shared", "bar.sync"):
        assert instruction not in ptx, ptx


def clipped_squares(x, limit):
    # independent iterations with a 0-d temporary of their own (t), and a branch
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        t = x[i] * x[i]
        if t > limit:
            t = limit
        out[i] = t - x[i]
    return out


@pytest.mark.parametrize("fn, make", [
    (loop_programs.element_branch, lambda rng: (rng.standard_normal(3000),)),
    (clipped_squares, lambda rng: (rng.standard_normal(3000), np.float64(0.5))),
], ids=["element_branch", "clipped_squares"])
def test_independent_iterations_of_one_thread_run_a_thread_each(fn, make, cuda_sources):
    """A loop whose iterations are independent (sched/independent_iterations.h: each writes
    out[i] and 0-d temporaries of its own) runs on a grid, a thread an iteration, each thread's
    temporaries its own registers: one launch, as NumPy's elementwise code would be."""
    compiled = kiln.compile(fn, device="cuda" if GPU else "cpu")
    rng = np.random.default_rng(4)
    for _ in range(3):
        args = make(rng)
        np.testing.assert_allclose(compiled(*args), fn(*args), rtol=1e-12)
    source = cuda_sources[-1]
    loop = source[re.search(r"__global__ void __launch_bounds__\(\d+\) kiln_loop", source).start():]
    assert "= (int64_t)blockIdx.x * blockDim.x + threadIdx.x;" in loop, loop
    assert "if (threadIdx.x != 0) return;" not in loop and "__syncthreads" not in loop, loop


def test_loops_with_a_blocks_work_keep_their_barriers(cuda_sources):
    """pair_energy's launches sum three coordinates across a warp: its loop keeps the block."""
    x = np.random.default_rng(8).random((24, 3))
    compiled = kiln.compile(loop_programs.pair_energy, device="cuda" if GPU else "cpu")
    np.testing.assert_allclose(compiled(x), loop_programs.pair_energy(x), rtol=1e-9)
    loop = cuda_sources[-1][cuda_sources[-1].index(" kiln_loop"):]
    assert "if (threadIdx.x != 0) return;" not in loop and "__syncthreads();" in loop


def test_a_row_solve_is_one_call_and_one_barrier_an_iteration(cuda_sources):
    """Forward substitution's iteration: the block's dot product of a row and the first thread's
    store of the solution are one kernel (sched/kernel_groups.cpp: a scatter of one element ends
    the group of the one-element reduction it reads), one call an iteration, and the barrier
    after it remains (the next row reads the solution). Only the first thread reads the sum, so
    the sum is not broadcast (one barrier in the reduction, none after it), and the store's
    loads of what the kernel never writes (the index, b[i], L[i, i]) are issued before the
    reduction, their latency passing during it."""
    rng = np.random.default_rng(3)
    lower, b = np.tril(rng.random((1000, 1000))) + 1000 * np.eye(1000), rng.random(1000)
    compiled = kiln.compile(loop_programs.forward_substitution, device="cuda" if GPU else "cpu")
    np.testing.assert_allclose(compiled(lower, b), loop_programs.forward_substitution(lower, b),
                               rtol=1e-9)
    source = cuda_sources[-1]
    loop = source[source.index("__global__ void __launch_bounds__(1024) kiln_loop"):]
    lines = [line.strip() for line in loop[:loop.index("\n}\n")].splitlines()]
    # each call: its function's text, whether a barrier follows it
    calls = [(function_text(source, line), lines[k + 1] == "__syncthreads();")
             for k, line in enumerate(lines) if "(kiln_arg_table<" in line]
    assert [barrier for _, barrier in calls] == [True], loop
    function = calls[0][0]
    assert function.count("kiln_team_barrier(") == 1 and "_warps[0] =" not in function, function
    before, after = function.split("acc0 = kiln_identity_sum", 1)
    assert len(re.findall(r"= a\d+\[", before)) == 3, function
    assert after.count("if (threadIdx.x == 0) {") == 1, function  # both stores, in order


def function_text(source, call):
    """The device function a loop kernel's line `call` calls."""
    name = call.split(") ")[-1] if call.startswith("if (") else call
    text = source[source.index("static __device__ void " + name[:name.index("(")] + "("):]
    return text[:text.index("\n}\n")]


def test_a_row_stored_at_the_loops_index_is_stored_by_the_blocks_threads(cuda_sources):
    """row_recurrence's out[i] = 0.9 * out[i - 1] + x[i]: a row stored at one index repeats no
    position, so the block's threads store it together (a vector each), not its first thread
    element by element (256 stores in order: 6 us an iteration on an H100); and each element
    reads row i - 1 in its own column only, so the row is computed as it is stored, one launch
    an iteration (sched/in_place.h)."""
    x = np.random.default_rng(6).random((300, 256))
    compiled = kiln.compile(loop_programs.row_recurrence, device="cuda" if GPU else "cpu")
    np.testing.assert_allclose(compiled(x), loop_programs.row_recurrence(x), rtol=1e-12)
    source = cuda_sources[-1]
    loop = source[re.search(r"__global__ void __launch_bounds__\(\d+\) kiln_loop", source).start():]
    lines = [line.strip() for line in loop[:loop.index("\n}\n")].splitlines()]
    stores = [function_text(source, line) for line in lines if "(kiln_arg_table<" in line]
    assert len(stores) == 1 and "if (threadIdx.x < 1)" not in loop, loop
    assert all("threadIdx.x" in store and "reinterpret_cast<double2*>" in store
               for store in stores), stores


def test_a_loop_prefetches_the_arrays_it_only_reads_into_l2(cuda_sources):
    """row_recurrence's loop reads x (600 KB here) and writes out: the block prefetches x into
    L2 before its first iteration, and not out; crc32's table of 37 words is not worth it."""
    x = np.random.default_rng(6).random((300, 256))
    compiled = kiln.compile(loop_programs.row_recurrence, device="cuda" if GPU else "cpu")
    np.testing.assert_allclose(compiled(x), loop_programs.row_recurrence(x), rtol=1e-12)
    loop = cuda_sources[-1][re.search(r"__global__ void __launch_bounds__\(\d+\) kiln_loop",
                                      cuda_sources[-1]).start():]
    assert re.findall(r"kiln_prefetch_l2\(kiln_args\[\d+\], (\d+)ll\)", loop) == [str(x.nbytes)], loop
    data = np.random.default_rng(1).integers(0, 256, 37, dtype=np.uint32)
    assert kiln.compile(loop_programs.crc32, device="cuda" if GPU else "cpu")(data) == \
        loop_programs.crc32(data)
    assert "kiln_prefetch_l2(" not in cuda_sources[-1][cuda_sources[-1].index(" kiln_loop"):]


def big_body(x):
    for _ in range(3):
        x = np.sin(x) + 0.5
    return x


def test_loops_of_big_kernels_stay_launches_from_the_host(cuda_sources):
    """A body of a million elements a launch would take one multiprocessor far longer than its
    launches take the host: that loop keeps a launch per kernel and iteration."""
    x = np.random.default_rng(0).random(1 << 20)
    np.testing.assert_allclose(kiln.compile(big_body, device="cuda" if GPU else "cpu")(x),
                               big_body(x), rtol=1e-12)
    assert cuda_sources and not any(" kiln_loop" in s for s in cuda_sources)


def test_a_loop_reading_columns_a_lane_a_row_stays_on_the_host(cuda_sources):
    """Gram-Schmidt's Q[:, :j].T @ a[:, j] reads Q's columns, a warp's lanes a row apart: a
    32-byte sector an element, which one block's share of the memory system takes 43 us an
    iteration to move (H100), against 15 us for the iteration's launches over the grid. The
    device loop's cost model counts those sectors: the loop stays on the host."""
    a = np.random.default_rng(2).random((200, 200)) + 200 * np.eye(200)
    compiled = kiln.compile(loop_programs.gram_schmidt, device="cuda" if GPU else "cpu")
    for got, expected in zip(compiled(a), loop_programs.gram_schmidt(a)):
        np.testing.assert_allclose(got, expected, rtol=1e-8, atol=1e-12)
    assert cuda_sources and not any(" kiln_loop" in s for s in cuda_sources)


@pytest.mark.parametrize("size, on_device", [(32, True), (256, False)])
def test_a_loop_streaming_more_than_a_multiprocessor_moves_stays_on_the_host(size, on_device,
                                                                              cuda_sources):
    """A device loop runs in one block, whose loads and stores share one multiprocessor's part
    of the memory system: a Gray-Scott step of 256x256 float64 points (160 bytes a point) takes
    it ~80 us against ~4 us for a launch from the host; at 32x32 the launch costs more than the
    work, and the loop runs on the device."""
    rng = np.random.default_rng(3)
    u, v = 1 - 0.1 * rng.random((size, size)), 0.1 * rng.random((size, size))
    compiled = kiln.compile(loop_programs.reaction_diffusion, device="cuda" if GPU else "cpu")
    np.testing.assert_allclose(compiled(u, v), loop_programs.reaction_diffusion(u, v), rtol=1e-12)
    assert cuda_sources
    assert any(" kiln_loop" in s for s in cuda_sources) == on_device


@pytest.mark.parametrize("mode", ["default", "reduce-overhead"])
def test_device_loops_with_a_while_test_replay_as_cuda_graphs(mode):
    """A while loop's test read on the device: nothing comes back to the host, so the program
    is captured into a CUDA graph and replayed (reduce-overhead), with new data each call (on
    the CPU where there is no GPU)."""
    compiled = kiln.compile(loop_programs.newton_sqrt, device="cuda" if GPU else "cpu", mode=mode)
    rng = np.random.default_rng(9)
    for _ in range(5):
        a = 1 + 100 * rng.random(300)
        np.testing.assert_allclose(compiled(a), loop_programs.newton_sqrt(a), rtol=1e-12)


def test_masked_updates_in_device_loops_visit_their_window(cuda_sources):
    """lcs's `table[i, j] = ...` is a masked update of row i (where(column == j, new, old)):
    in the device loop it stores the one column the mask selects (sched/pin_masked_elements.h),
    not the row (301 elements in one thread per cell: 9.5 us on an H100)."""
    rng = np.random.default_rng(2)
    a, b = rng.integers(0, 4, 300), rng.integers(0, 4, 300)
    compiled = kiln.compile(loop_programs.lcs, device="cuda" if GPU else "cpu")
    assert compiled(a, b) == loop_programs.lcs(a, b)
    loop_part = cuda_sources[-1][cuda_sources[-1].index("a graph loop run on the device"):]
    assert "kiln_flat < 1)" in loop_part and "301;" not in loop_part, loop_part


def sorted_row_picks(x, picks):
    # each row sorted, then the element at a position the data give: an index check in a loop
    # of independent rows
    out = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        out[i] = np.sort(x[i])[picks[i]]
    return out


BLOCK_ITERATIONS = [
    (loop_programs.row_modes, lambda rng: (rng.integers(0, 20, (300, 60)),)),
    (loop_programs.outliers_to_median, lambda rng: (rng.standard_normal((300, 41)),)),
    (sorted_row_picks, lambda rng: (rng.standard_normal((200, 30)), rng.integers(-30, 30, 200))),
]


@pytest.mark.parametrize("fn, make", BLOCK_ITERATIONS,
                         ids=[c[0].__name__ for c in BLOCK_ITERATIONS])
def test_independent_rows_that_sort_run_a_block_each(fn, make, cuda_sources):
    """A loop of independent rows whose body sorts (np.unique, np.median, np.sort) runs on the
    device, a block an iteration over the grid: the sort a function of the loop kernel, each
    block's own arrays in the launch's scratch. The index check of a data-dependent position
    goes to the iteration's slot (no carried "failed so far" chaining the iterations)."""
    compiled = kiln.compile(fn, device="cuda" if GPU else "cpu")
    rng = np.random.default_rng(4)
    for _ in range(2):
        args = make(rng)
        np.testing.assert_allclose(compiled(*args), fn(*args), rtol=1e-12)
    loop = cuda_sources[-1][cuda_sources[-1].index("a graph loop run on the device"):]
    assert re.search(r"for \(int64_t k1 = blockIdx\.x; k1 < trips; k1 \+= gridDim\.x\)", loop), loop
    assert "kiln_bitonic_sort<" in loop, loop


def test_an_index_error_in_a_block_an_iteration_loop_names_the_first_failing_row():
    """Rows 5 and 9 pick past their end: NumPy raises for row 5's position, and so does the
    compiled loop, whose iterations ran at once (the first failing slot's value)."""
    rng = np.random.default_rng(6)
    x, picks = rng.standard_normal((40, 30)), rng.integers(0, 30, 40)
    picks[5], picks[9] = 31, -40
    with pytest.raises(IndexError) as expected:
        sorted_row_picks(x, picks)
    compiled = kiln.compile(sorted_row_picks, device="cuda" if GPU else "cpu")
    with pytest.raises(IndexError) as raised:
        compiled(x, picks)
    assert str(expected.value) in str(raised.value)
    picks[5] = 3
    np.testing.assert_allclose(compiled(x, picks[:40] * 0 + 2), sorted_row_picks(x, picks * 0 + 2))


@pytest.mark.parametrize("device_loops", ["0", "1"])
def test_a_return_inside_a_loop_as_loops_agrees_with_numpy(device_loops, monkeypatch, tmp_path):
    """A return inside a loop captured as loops (flags carried, the rest of the loop skipped):
    its loops' indices, some read and some not, share arena addresses; one read index was left
    unwritten on the GPU where an unread one shared its address (it was skipped by address), and
    every call summed x[0]. Run from the host (0) and on the device (1); the limit changes, so
    the second call compiles it as an input."""
    monkeypatch.setenv("KILN_CUDA_DEVICE_LOOPS", device_loops)
    monkeypatch.setenv("KILN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(kiln._branch_capture, "BRANCH_FORM", "loops")
    compiled = kiln.compile(return_in_for, device="cuda" if GPU else "cpu")
    for seed, limit in enumerate([100.0, 0.5, -100.0, 1.5]):
        x = np.random.default_rng(seed).standard_normal(12)
        (out, acc), (want_out, want_acc) = compiled(x.copy(), limit), return_in_for(x.copy(), limit)
        np.testing.assert_array_equal(out, want_out)
        assert acc == pytest.approx(want_acc, rel=1e-12), (limit, acc, want_acc)
