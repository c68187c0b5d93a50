#include "target/target.h"

#include <sched.h>

#include <algorithm>
#include <cstdlib>

#include "kiln/error.h"
#include "runtime/environment_numbers.h"

namespace kiln::target {
namespace {

int usable_cores() {
  cpu_set_t set;
  int cores = 1;
  if (sched_getaffinity(0, sizeof set, &set) == 0) cores = std::max(1, CPU_COUNT(&set));
  if (const char* text = std::getenv("OMP_NUM_THREADS")) {
    int requested = std::atoi(text);  // "4,2" (nested levels) reads as its first level
    if (requested > 0) cores = std::min(cores, requested);
  }
  return cores;
}

void append_field(std::string& key, const std::string& value) {
  key += std::to_string(value.size()) + ":" + value;
}

}  // namespace

int Target::lanes(DType dtype) const {
  return std::max(1, vector_bits / (8 * static_cast<int>(dtype_size(dtype))));
}

std::string Target::key() const {
  std::string key;
  append_field(key, kind == DeviceKind::Cpu ? "cpu" : "cuda");
  append_field(key, isa);
  append_field(key, std::to_string(vector_bits));
  append_field(key, std::to_string(threads));
  append_field(key, std::to_string(parallel_threshold));
  append_field(key, std::to_string(architecture));
  append_field(key, std::to_string(warp_size));
  append_field(key, std::to_string(shared_memory_bytes));
  append_field(key, std::to_string(multiprocessors));
  append_field(key, std::to_string(split_reduction_work));
  append_field(key, std::to_string(block_threads));
  append_field(key, std::to_string(thread_steps));
  return key;
}

std::string Target::description() const {
  if (kind == DeviceKind::Cuda)
    return "cuda sm_" + std::to_string(architecture) + ", " + std::to_string(multiprocessors) +
           " multiprocessors";
  return "cpu " + isa + " (" + std::to_string(vector_bits) + "-bit vectors), " +
         std::to_string(threads) + (threads == 1 ? " thread" : " threads");
}

Target host_cpu(int threads) {
  if (threads < 0)
    throw Error(ErrorKind::Value, "kiln: num_threads must be >= 0 (0: every usable core), got " +
                                      std::to_string(threads));
  Target target;
  target.threads = threads > 0 ? threads : usable_cores();
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) {
    target.isa = "avx512", target.vector_bits = 512;
  } else if (__builtin_cpu_supports("avx2")) {
    target.isa = "avx2", target.vector_bits = 256;
  } else {
    target.isa = "sse2", target.vector_bits = 128;
  }
#elif defined(__aarch64__)
  target.isa = "neon", target.vector_bits = 128;
#endif
  // Set to measure where a second thread pays (bench/parallel_cost.py), or for a machine whose
  // threads wake faster or slower than the one measured.
  target.parallel_threshold = runtime::environment_whole_number(
      "KILN_PARALLEL_THRESHOLD", target.parallel_threshold, 1,
      "is not a positive number of element operations");
  return target;
}

Target cuda_device(int architecture, int multiprocessors, int64_t shared_memory_bytes) {
  Target target;
  target.kind = DeviceKind::Cuda;
  target.isa = "ptx";
  target.architecture = architecture;
  target.multiprocessors = std::max(1, multiprocessors);
  target.shared_memory_bytes = shared_memory_bytes;
  return target;
}

}  // namespace kiln::target
