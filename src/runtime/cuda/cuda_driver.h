// The CUDA driver layer: the driver (libcuda.so.1) and the runtime compiler (NVRTC), both opened
// with dlopen on first use, so one build of kiln runs on machines with and without a GPU (Halide
// src/runtime/cuda.cpp does the same). No CUDA header is included anywhere: handles cross this
// interface as void* (a CUfunction, a CUstream, a device pointer).
//
// Every function that talks to the device first makes kiln's device's primary context current on
// the calling thread; the primary context is the one PyTorch, CuPy and JAX use, so device
// pointers pass freely between them and kiln. Without a usable driver and device those functions
// throw Error(Unsupported, "kiln: device=\"cuda\" needs an NVIDIA GPU and its driver: <why>").
// A failed driver call throws Error(Internal) naming the call and the CUDA error.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace kiln::runtime::cuda {

// Whether a CUDA driver and at least one device are usable here (dlopen "libcuda.so.1",
// cuInit(0), cuDeviceGetCount > 0, $KILN_CUDA_DEVICE names a device). Never throws; cheap after
// the first call. Creates no context.
bool available();
// Why not (empty when available), e.g. "libcuda.so.1 not found (no NVIDIA driver): ...".
std::string unavailable_reason();

struct DeviceInfo {
  int ordinal = 0;
  int architecture = 0;  // compute capability major*10 + minor, e.g. 90
  std::string name;      // "NVIDIA H100 80GB HBM3"
  int multiprocessors = 0;
  int64_t shared_memory_per_block = 0;         // the default (48 KiB) limit
  int64_t shared_memory_per_block_optin = 0;   // the most set_max_dynamic_shared may ask for
  int max_threads_per_block = 0;
  int warp_size = 32;
  int driver_version = 0;  // cuDriverGetVersion, e.g. 13000
  int64_t total_memory = 0;
};

// The device kiln runs on: device 0, or $KILN_CUDA_DEVICE.
const DeviceInfo& device();
// Makes the device's primary context current on this thread (retained on first use, never
// released). Cheap when it is current already.
void make_current();

// NVRTC, opened on first use from the places listed in cuda_nvrtc.cpp (the system's library
// path, $CUDA_HOME/lib64, /usr/local/cuda/lib64, pip's nvidia-cuda-nvrtc under the
// site-packages folders in $KILN_NVRTC_DIR). Missing: Error(Unsupported) listing what was tried.
// NVRTC needs no GPU: kernels compile on any machine that has the library.
//
// Compiles `source` (self-contained CUDA C++, no #include) for sm_<architecture> and returns
// the CUBIN. `name` is the program's file name in messages. The options are
// --gpu-architecture=sm_<architecture>, kernel_options() and `extra_options`. A compile error
// throws Error(Internal, "kiln: NVRTC could not compile <name>: <log>").
std::string compile_cubin(const std::string& source, const std::string& name, int architecture,
                          const std::vector<std::string>& extra_options = {});
// The options every kernel compiles with, beside its architecture. Never --use_fast_math (kiln
// keeps IEEE division, square root and denormals), and --fmad=false: NVRTC contracts a * b + c
// into one fused rounding by default, where NumPy and kiln's C++ kernels (-ffp-contract=off)
// round twice.
const std::vector<std::string>& kernel_options();
// NVRTC's version, major*1000 + minor*10 (13000 for 13.0).
int nvrtc_version();
// NVRTC's version and kernel_options(), for the cubins' cache keys.
std::string compiler_identity();
// compile_cubin of the file `source_path` into the private file `object_path`, in this
// process (nvrtc_helpers.h compiles in helper processes).
void compile_cubin_file(const std::string& source_path, const std::string& object_path,
                        int architecture, const std::vector<std::string>& extra_options = {});
// kiln-nvrtc's path, or "" when this build has none beside libkiln.so.
const std::string& nvrtc_helper_path();
// The NVRTC library file this process loaded (helpers load the same); throws as compile_cubin
// does without NVRTC.
const std::string& nvrtc_library_path();
// For kiln-nvrtc: load NVRTC from exactly this file (before its first use).
void use_nvrtc_library(const std::string& path);

// A loaded cubin; unloaded when the last owner goes.
class Module {
 public:
  static std::shared_ptr<Module> load(const std::string& cubin);
  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // The kernel (a CUfunction) named `name`; Error(Internal) naming it when it is missing.
  void* function(const std::string& name) const;
  // The same, or null when this module has no such kernel.
  void* find(const std::string& name) const;

 private:
  explicit Module(void* module) : module_(module) {}
  void* module_;  // a CUmodule
};

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};
// cuLaunchKernel; `what` (the kernel's name) is named in the error. A null stream is the legacy
// default stream. A grid or block with a zero extent is Error(Value).
void launch(void* function, Dim3 grid, Dim3 block, unsigned shared_bytes, void* stream,
            void** params, const std::string& what);
// Lets `function` use up to `bytes` of dynamic shared memory (needed above 48 KiB); more than
// device().shared_memory_per_block_optin is Error(Value).
void set_max_dynamic_shared(void* function, int bytes);

// Device memory, from a process-wide caching allocator (cuda_allocator.cpp): sizes are rounded up
// (to 512 bytes up to 1 MiB, to 2 MiB above), a freed block goes to a free list of its size and
// is reused, and an allocation that finds the GPU full frees the cached blocks and tries once
// more before throwing Error(Memory, "kiln: out of GPU memory allocating N bytes ...").
// Blocks are reused in host order: a block freed while a kernel on one stream still uses it may
// go to work queued on the same stream only (kiln queues its work on one stream).
std::shared_ptr<void> allocate(int64_t bytes);  // never null, also for 0 bytes
void release_cached_blocks();                   // cuMemFree every cached block
int64_t cached_bytes();                         // bytes in the free lists

// Copies. A null stream is the legacy default stream. copy_to_host returns once the data is on
// the host; copy_to_device returns once `host_src` may be reused.
void copy_to_device(void* device_dst, const void* host_src, int64_t bytes, void* stream);
void copy_to_host(void* host_dst, const void* device_src, int64_t bytes, void* stream);
// Queued on `stream` (`host_dst` pinned: allocate_pinned); the data is there once the stream
// reaches this point (an Event recorded after it).
void copy_to_host_async(void* host_dst, const void* device_src, int64_t bytes, void* stream);
void copy_device_to_device(void* device_dst, const void* device_src, int64_t bytes,
                           void* stream);
void memset_zero(void* device_dst, int64_t bytes, void* stream);
// An int64 written on `stream` from no host memory (cuStreamWriteValue64, or two 32-bit memsets
// where the device lacks 64-bit stream memory operations): queued, never waited for, and a CUDA
// graph captures it (a loop's induction variable each iteration; a copy from
// the host's stack cost a pageable transfer an iteration).
void write_int64(void* device_dst, int64_t value, void* stream);
void synchronize(void* stream);  // cuStreamSynchronize

// Milliseconds that `work` (which queues kernels on `stream`) takes on the GPU, measured with
// CUDA events recorded on `stream` before and after it. Waits for the work to finish.
double time_ms(void* stream, const std::function<void()>& work);

// Page-locked host memory (cuMemAllocHost): the target of asynchronous copies to the host.
std::shared_ptr<void> allocate_pinned(int64_t bytes);

// A CUDA event without timing: marks a point in a stream's work for the host to wait for.
class Event {
 public:
  explicit Event(bool timing = false);  // timing: seconds_between may read it
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  void record(void* stream);  // the point: after the work queued on `stream` so far
  void wait();                // returns once the work before the point is done
  bool done();                // whether that work is done, without waiting
  // Queues on `stream` a wait for the point: its later work starts after that work is done
  // (the host does not wait). A stream of another library: CU_STREAM_LEGACY (1) and
  // CU_STREAM_PER_THREAD (2) as DLPack numbers them.
  void queue_wait(void* stream);
  // The GPU's time from `start`'s point to `end`'s, both recorded and done, timing events.
  static double seconds_between(const Event& start, const Event& end);

 private:
  void* event_;  // a CUevent
};

// A CUDA graph: the work one function queued, captured once and replayed by one launch
// (reduce-overhead: a model's hundreds of launches cost one).
class Graph {
 public:
  // Captures what `work(stream)` queues on `stream`, a stream of kiln's own (the legacy default
  // stream, torch's usual one, cannot be captured), in relaxed mode (work may allocate). Memory
  // the work uses must outlive the graph: its owner keeps it.
  static std::shared_ptr<Graph> capture(const std::function<void(void*)>& work);
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  // Queues the captured work on `stream` (any stream, the legacy default one included).
  void launch(void* stream);

 private:
  explicit Graph(void* exec) : exec_(exec) {}
  void* exec_;  // a CUgraphExec
};

// Whether `pointer` is device memory of the CUDA driver (cuPointerGetAttribute's memory type);
// false on any error and when no GPU is available. For DLPack inputs.
bool is_device_pointer(const void* pointer);

}  // namespace kiln::runtime::cuda
