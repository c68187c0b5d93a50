#include "runtime/cuda/cuda_blas.h"

#include <climits>
#include <memory>
#include <mutex>
#include <string>

#include "kiln/error.h"
#include "runtime/cuda/cuda_driver.h"
#include "runtime/cuda/cuda_libraries.h"

namespace kiln::runtime::cuda {
namespace {

// cublas_api.h's types and constants, declared by hand (no CUDA header: see cuda_driver.h).
using cublasStatus_t = int;
using cublasHandle_t = struct cublasContext*;
constexpr cublasStatus_t kBlasSuccess = 0;  // CUBLAS_STATUS_SUCCESS
constexpr int kOpN = 0, kOpT = 1;           // CUBLAS_OP_N, CUBLAS_OP_T
constexpr int kGemmDefault = -1;            // CUBLAS_GEMM_DEFAULT
// cudaDataType_t: CUDA_R_32F, CUDA_R_64F, CUDA_R_16F, CUDA_R_16BF
constexpr int kR32F = 0, kR64F = 1, kR16F = 2, kR16BF = 14;
// cublasComputeType_t: CUBLAS_COMPUTE_32F, _32F_FAST_TF32, _64F
constexpr int kCompute32F = 68, kCompute32FFastTF32 = 77, kCompute64F = 70;

struct BlasApi {
  cublasStatus_t (*cublasCreate_v2)(cublasHandle_t* handle);
  cublasStatus_t (*cublasSetStream_v2)(cublasHandle_t handle, void* stream);
  cublasStatus_t (*cublasSetWorkspace_v2)(cublasHandle_t handle, void* workspace, size_t bytes);
  const char* (*cublasGetStatusString)(cublasStatus_t status);
  cublasStatus_t (*cublasGemmStridedBatchedEx)(
      cublasHandle_t handle, int transa, int transb, int m, int n, int k, const void* alpha,
      const void* a, int a_type, int lda, long long stride_a, const void* b, int b_type, int ldb,
      long long stride_b, const void* beta, void* c, int c_type, int ldc, long long stride_c,
      int batch_count, int compute_type, int algo);
};

struct BlasState {
  BlasApi api{};
  std::string unavailable_reason;
};

BlasApi* resolving = nullptr;  // the API the candidate check fills (under call_once)

std::string accept_cublas(void* library) {
  std::string missing;
  BlasApi& api = *resolving;
  bool ok = detail::resolve_symbol(library, "cublasCreate_v2", api.cublasCreate_v2, missing) &&
            detail::resolve_symbol(library, "cublasSetStream_v2", api.cublasSetStream_v2, missing) &&
            detail::resolve_symbol(library, "cublasSetWorkspace_v2", api.cublasSetWorkspace_v2, missing) &&
            detail::resolve_symbol(library, "cublasGetStatusString", api.cublasGetStatusString, missing) &&
            detail::resolve_symbol(library, "cublasGemmStridedBatchedEx", api.cublasGemmStridedBatchedEx, missing);
  return ok ? "" : "lacks " + missing;
}

const BlasApi& blas() {
  static std::once_flag once;
  static BlasState* state = nullptr;  // never destroyed
  std::call_once(once, [] {
    auto* loaded = new BlasState;
    resolving = &loaded->api;
    std::string path, tried;
    if (detail::open_nvidia_library({"libcublas.so.13", "libcublas.so.12", "libcublas.so"},
                                    {"nvidia/cu13/lib", "nvidia/cublas/lib"}, path, tried,
                                    accept_cublas) == nullptr)
      loaded->unavailable_reason =
          "kiln: matmul on device=\"cuda\" needs cuBLAS, not found; tried " + tried +
          ". Install the CUDA toolkit or the pip package nvidia-cublas, and point $CUDA_HOME or "
          "$KILN_NVRTC_DIR (a library folder or site-packages) at it";
    state = loaded;
  });
  if (!state->unavailable_reason.empty())
    throw Error(ErrorKind::Unsupported, state->unavailable_reason);
  return state->api;
}

void check(cublasStatus_t status, const char* call) {
  if (status == kBlasSuccess) return;
  const char* text = blas().cublasGetStatusString(status);
  throw Error(ErrorKind::Internal, std::string("kiln: ") + call + " failed: " +
                                       (text ? text : "cuBLAS status " + std::to_string(status)));
}

// cuBLAS's workspace for its split-K and stream-K kernels: NVIDIA's recommendation for Hopper.
constexpr int64_t kWorkspaceBytes = int64_t(32) << 20;

// One handle per thread (a handle must not be used by two threads at once), made for the
// context current when it is first used: kiln's, which is the device's primary context.
// cublasSetStream resets the workspace to cuBLAS's own pool (allocated on demand, which a CUDA
// graph capture cannot do): the stream is set only when it changes, with kiln's workspace.
cublasHandle_t handle_on(void* stream, std::vector<std::shared_ptr<void>>* kept) {
  struct PerThread {
    cublasHandle_t handle = nullptr;
    void* stream = nullptr;
    std::shared_ptr<void> workspace;
  };
  thread_local PerThread state;
  make_current();
  const BlasApi& api = blas();
  if (state.handle == nullptr) {
    check(api.cublasCreate_v2(&state.handle), "cublasCreate");
    state.workspace = allocate(kWorkspaceBytes);
    state.stream = reinterpret_cast<void*>(-1);  // set below
  }
  if (state.stream != stream) {
    check(api.cublasSetStream_v2(state.handle, stream), "cublasSetStream");
    check(api.cublasSetWorkspace_v2(state.handle, state.workspace.get(),
                                    static_cast<size_t>(kWorkspaceBytes)),
          "cublasSetWorkspace");
    state.stream = stream;
  }
  if (kept) kept->push_back(state.workspace);
  return state.handle;
}

int data_type(DType dtype) {
  switch (dtype) {
    case DType::Float32: return kR32F;
    case DType::Float64: return kR64F;
    case DType::Float16: return kR16F;
    case DType::BFloat16: return kR16BF;
    default: return -1;
  }
}

int narrow(int64_t value, const char* what) {
  if (value < 0 || value > INT_MAX)
    throw Error(ErrorKind::Unsupported,
                std::string("kiln: matmul on device=\"cuda\": ") + what + " " +
                    std::to_string(value) + " is beyond cuBLAS's 32-bit sizes");
  return static_cast<int>(value);
}

}  // namespace

bool blas_computes(DType dtype) { return data_type(dtype) >= 0; }

void gemm(const Gemm& g, void* stream, bool allow_tf32,
          std::vector<std::shared_ptr<void>>* kept) {
  if (!blas_computes(g.dtype))
    throw Error(ErrorKind::Unsupported, "kiln: matmul on device=\"cuda\": cuBLAS has no " +
                                            std::string(dtype_name(g.dtype)) + " product");
  if (g.m == 0 || g.n == 0 || g.batches == 0) return;
  const BlasApi& api = blas();
  cublasHandle_t h = handle_on(stream, kept);
  const bool f64 = g.dtype == DType::Float64;
  const double alpha64 = 1.0, beta64 = 0.0;
  const float alpha32 = 1.0f, beta32 = 0.0f;
  const int compute = f64 ? kCompute64F
                      : g.dtype == DType::Float32 && allow_tf32 ? kCompute32FFastTF32
                                                                : kCompute32F;
  const int type = data_type(g.dtype);
  // k == 0 is beta * C with beta 0: cuBLAS writes zeros.
  check(api.cublasGemmStridedBatchedEx(
            h, g.transpose_a ? kOpT : kOpN, g.transpose_b ? kOpT : kOpN, narrow(g.m, "m"),
            narrow(g.n, "n"), narrow(g.k, "k"), f64 ? static_cast<const void*>(&alpha64) : &alpha32,
            g.a, type, narrow(g.lda, "lda"), g.stride_a, g.b, type, narrow(g.ldb, "ldb"),
            g.stride_b, f64 ? static_cast<const void*>(&beta64) : &beta32, g.c, type,
            narrow(g.ldc, "ldc"), g.stride_c, narrow(g.batches, "the batch"), compute,
            kGemmDefault),
        "cublasGemmStridedBatchedEx");
}

}  // namespace kiln::runtime::cuda
