// The machine a Program is compiled for. The scheduler proper (fusion, lowering, buffer plan)
// never reads it; the per-target loop-IR passes (sched/loop_passes.h) and the emitter do.
// Everything in it is part of the cache key (key()), so a binary built for one target is
// never loaded for another.
#pragma once
#include <cstdint>
#include <string>

#include "kiln/dtype.h"

namespace kiln::target {

enum class DeviceKind : uint8_t { Cpu, Cuda };

struct Target {
  DeviceKind kind = DeviceKind::Cpu;
  // CPU
  std::string isa = "generic";  // "avx512", "avx2", "sse2", "generic": what -march=native gets
  int vector_bits = 128;        // widest SIMD register the generated loops should fill
  int threads = 1;              // worker threads a parallel loop runs on (1: no OpenMP regions)
  // Element operations below which a loop stays on one thread: waking a second thread costs
  // microseconds on an idle machine and a scheduler time slice on a busy one (measured in
  // bench/oversubscription.md).
  int64_t parallel_threshold = int64_t(1) << 17;
  // CUDA
  int architecture = 0;  // e.g. 90 for sm_90
  int warp_size = 32;
  int64_t shared_memory_bytes = 0;  // per block
  int multiprocessors = 0;          // grids are sized to fill them (grid-stride loops)
  // Whole-array reductions of at least this many elements are shared by the grid (split
  // reductions): one block reads a few hundred GB/s, a fraction of the device's bandwidth.
  int64_t split_reduction_work = int64_t(1) << 15;
  // Launch shapes: the most threads a block runs (a multiple of the warp, at most 1024), and
  // the consecutive steps a thread of an elementwise launch runs per run of its block. Other
  // values are max-autotune's candidates (codegen/cuda/cuda_emitter.h: launch_variants).
  int block_threads = 256;
  int thread_steps = 4;

  // SIMD lanes of one vector register for elements of `dtype` (at least 1).
  int lanes(DType dtype) const;
  // Length-prefixed text of every field: the target's part of the cache key.
  std::string key() const;
  // "cpu avx512 (512-bit vectors), 2 threads": for logs and explain.
  std::string description() const;
};

// The CPU this process runs on; `threads` 0 means the usable cores (the process's affinity
// mask, capped by OMP_NUM_THREADS when that is set).
Target host_cpu(int threads = 0);
// A CUDA device of compute capability `architecture` (90: sm_90) with `multiprocessors` SMs:
// the code generator's view of it (runtime/cuda/cuda_driver.h reads the real device's).
Target cuda_device(int architecture, int multiprocessors, int64_t shared_memory_bytes = 48 << 10);

}  // namespace kiln::target
