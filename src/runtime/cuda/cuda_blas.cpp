#include "runtime/cuda/cuda_blas.h"

#include <climits>
#include <map>
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

// cublasLt.h's types and constants, declared by hand as above.
using cublasLtHandle_t = struct cublasLtContext*;
using cublasLtMatmulDesc_t = struct cublasLtMatmulDescOpaque_t*;
using cublasLtMatrixLayout_t = struct cublasLtMatrixLayoutOpaque_t*;
using cublasLtMatmulPreference_t = struct cublasLtMatmulPreferenceOpaque_t*;
struct cublasLtMatmulAlgo_t {
  uint64_t data[8];
};
struct cublasLtMatmulHeuristicResult_t {
  cublasLtMatmulAlgo_t algo;
  size_t workspaceSize;
  cublasStatus_t state;
  float wavesCount;
  int reserved[4];
};
// cublasLtMatmulDescAttributes_t, cublasLtMatrixLayoutAttribute_t, cublasLtEpilogue_t,
// cublasLtMatmulPreferenceAttributes_t
constexpr int kDescTransA = 3, kDescTransB = 4, kDescEpilogue = 7, kDescBiasPointer = 8;
constexpr int kLayoutBatchCount = 5, kLayoutBatchOffset = 6;
constexpr uint32_t kEpilogueDefault = 1, kEpilogueBias = 4, kEpilogueReluBias = 6;
constexpr int kPreferenceMaxWorkspace = 1;

struct LtApi {
  cublasStatus_t (*cublasLtCreate)(cublasLtHandle_t* handle);
  cublasStatus_t (*cublasLtMatmulDescCreate)(cublasLtMatmulDesc_t* desc, int compute_type,
                                             int scale_type);
  cublasStatus_t (*cublasLtMatmulDescSetAttribute)(cublasLtMatmulDesc_t desc, int attribute,
                                                   const void* value, size_t bytes);
  cublasStatus_t (*cublasLtMatrixLayoutCreate)(cublasLtMatrixLayout_t* layout, int type,
                                               uint64_t rows, uint64_t columns, int64_t leading);
  cublasStatus_t (*cublasLtMatrixLayoutSetAttribute)(cublasLtMatrixLayout_t layout, int attribute,
                                                     const void* value, size_t bytes);
  cublasStatus_t (*cublasLtMatmulPreferenceCreate)(cublasLtMatmulPreference_t* preference);
  cublasStatus_t (*cublasLtMatmulPreferenceSetAttribute)(cublasLtMatmulPreference_t preference,
                                                         int attribute, const void* value,
                                                         size_t bytes);
  cublasStatus_t (*cublasLtMatmulAlgoGetHeuristic)(
      cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a,
      cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
      cublasLtMatmulPreference_t preference, int requested, cublasLtMatmulHeuristicResult_t* results,
      int* returned);
  cublasStatus_t (*cublasLtMatmul)(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                   const void* alpha, const void* a, cublasLtMatrixLayout_t a_layout,
                                   const void* b, cublasLtMatrixLayout_t b_layout, const void* beta,
                                   const void* c, cublasLtMatrixLayout_t c_layout, void* d,
                                   cublasLtMatrixLayout_t d_layout, const cublasLtMatmulAlgo_t* algo,
                                   void* workspace, size_t workspace_bytes, void* stream);
};

struct LtState {
  LtApi api{};
  std::string unavailable_reason;
};

LtApi* resolving_lt = nullptr;  // the API the candidate check fills (under call_once)

std::string accept_cublas_lt(void* library) {
  std::string missing;
  LtApi& api = *resolving_lt;
  bool ok =
      detail::resolve_symbol(library, "cublasLtCreate", api.cublasLtCreate, missing) &&
      detail::resolve_symbol(library, "cublasLtMatmulDescCreate", api.cublasLtMatmulDescCreate, missing) &&
      detail::resolve_symbol(library, "cublasLtMatmulDescSetAttribute", api.cublasLtMatmulDescSetAttribute, missing) &&
      detail::resolve_symbol(library, "cublasLtMatrixLayoutCreate", api.cublasLtMatrixLayoutCreate, missing) &&
      detail::resolve_symbol(library, "cublasLtMatrixLayoutSetAttribute", api.cublasLtMatrixLayoutSetAttribute, missing) &&
      detail::resolve_symbol(library, "cublasLtMatmulPreferenceCreate", api.cublasLtMatmulPreferenceCreate, missing) &&
      detail::resolve_symbol(library, "cublasLtMatmulPreferenceSetAttribute", api.cublasLtMatmulPreferenceSetAttribute, missing) &&
      detail::resolve_symbol(library, "cublasLtMatmulAlgoGetHeuristic", api.cublasLtMatmulAlgoGetHeuristic, missing) &&
      detail::resolve_symbol(library, "cublasLtMatmul", api.cublasLtMatmul, missing);
  return ok ? "" : "lacks " + missing;
}

const LtApi& blas_lt() {
  static std::once_flag once;
  static LtState* state = nullptr;  // never destroyed
  std::call_once(once, [] {
    auto* loaded = new LtState;
    resolving_lt = &loaded->api;
    std::string path, tried;
    if (detail::open_nvidia_library({"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"},
                                    {"nvidia/cu13/lib", "nvidia/cublas/lib"}, path, tried,
                                    accept_cublas_lt) == nullptr)
      loaded->unavailable_reason =
          "kiln: a matmul with a bias or ReLU epilogue on device=\"cuda\" needs cuBLASLt, not "
          "found; tried " + tried + ". Install the CUDA toolkit or the pip package nvidia-cublas";
    state = loaded;
  });
  if (!state->unavailable_reason.empty())
    throw Error(ErrorKind::Unsupported, state->unavailable_reason);
  return state->api;
}

void check_lt(cublasStatus_t status, const char* call) {
  if (status == kBlasSuccess) return;
  throw Error(ErrorKind::Internal, std::string("kiln: ") + call + " failed: cuBLAS status " +
                                       std::to_string(status));
}

// One product's cuBLASLt descriptors and the algorithm its heuristic chose, made on the first
// call of a problem (a model calls the same few every run) and kept by thread.
struct LtPlan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  size_t workspace_bytes = 0;
};

// The alignment (16, 8, 4, 2 bytes) every pointer of `g` has: cuBLASLt's heuristic chooses by it.
int common_alignment(const Gemm& g) {
  uintptr_t bits = reinterpret_cast<uintptr_t>(g.a) | reinterpret_cast<uintptr_t>(g.b) |
                   reinterpret_cast<uintptr_t>(g.c) | reinterpret_cast<uintptr_t>(g.bias);
  int alignment = 16;
  while (alignment > 1 && (bits & uintptr_t(alignment - 1)) != 0) alignment /= 2;
  return alignment;
}

const LtPlan& lt_plan(const Gemm& g, int compute, cublasLtHandle_t handle) {
  thread_local std::map<std::vector<int64_t>, LtPlan> plans;
  const std::vector<int64_t> key = {static_cast<int64_t>(g.dtype), g.transpose_a, g.transpose_b,
                                    g.m, g.n, g.k, g.lda, g.ldb, g.ldc, g.stride_a, g.stride_b,
                                    g.stride_c, g.batches, g.bias != nullptr, g.relu, compute,
                                    common_alignment(g), g.candidate};
  auto found = plans.find(key);
  if (found != plans.end()) return found->second;
  const LtApi& api = blas_lt();
  LtPlan plan;
  const int type = data_type(g.dtype);
  check_lt(api.cublasLtMatmulDescCreate(&plan.desc, compute, kR32F), "cublasLtMatmulDescCreate");
  const int32_t op_a = g.transpose_a ? kOpT : kOpN, op_b = g.transpose_b ? kOpT : kOpN;
  const uint32_t epilogue =
      g.bias == nullptr ? kEpilogueDefault : g.relu ? kEpilogueReluBias : kEpilogueBias;
  check_lt(api.cublasLtMatmulDescSetAttribute(plan.desc, kDescTransA, &op_a, sizeof op_a), "cublasLtMatmulDescSetAttribute");
  check_lt(api.cublasLtMatmulDescSetAttribute(plan.desc, kDescTransB, &op_b, sizeof op_b), "cublasLtMatmulDescSetAttribute");
  check_lt(api.cublasLtMatmulDescSetAttribute(plan.desc, kDescEpilogue, &epilogue, sizeof epilogue), "cublasLtMatmulDescSetAttribute");
  auto layout = [&](cublasLtMatrixLayout_t& out, int64_t rows, int64_t columns, int64_t leading,
                    int64_t stride) {
    check_lt(api.cublasLtMatrixLayoutCreate(&out, type, static_cast<uint64_t>(rows),
                                            static_cast<uint64_t>(columns), leading),
             "cublasLtMatrixLayoutCreate");
    if (g.batches == 1) return;
    const int32_t count = narrow(g.batches, "the batch");
    check_lt(api.cublasLtMatrixLayoutSetAttribute(out, kLayoutBatchCount, &count, sizeof count), "cublasLtMatrixLayoutSetAttribute");
    check_lt(api.cublasLtMatrixLayoutSetAttribute(out, kLayoutBatchOffset, &stride, sizeof stride), "cublasLtMatrixLayoutSetAttribute");
  };
  layout(plan.a, g.transpose_a ? g.k : g.m, g.transpose_a ? g.m : g.k, g.lda, g.stride_a);
  layout(plan.b, g.transpose_b ? g.n : g.k, g.transpose_b ? g.k : g.n, g.ldb, g.stride_b);
  layout(plan.c, g.m, g.n, g.ldc, g.stride_c);
  cublasLtMatmulPreference_t preference = nullptr;
  check_lt(api.cublasLtMatmulPreferenceCreate(&preference), "cublasLtMatmulPreferenceCreate");
  const uint64_t workspace = static_cast<uint64_t>(kWorkspaceBytes);
  check_lt(api.cublasLtMatmulPreferenceSetAttribute(preference, kPreferenceMaxWorkspace, &workspace,
                                                    sizeof workspace),
           "cublasLtMatmulPreferenceSetAttribute");
  cublasLtMatmulHeuristicResult_t results[kGemmCandidates]{};
  int returned = 0;
  check_lt(api.cublasLtMatmulAlgoGetHeuristic(handle, plan.desc, plan.a, plan.b, plan.c, plan.c,
                                              preference, g.candidate + 1, results, &returned),
           "cublasLtMatmulAlgoGetHeuristic");
  if (returned == 0)
    throw Error(ErrorKind::Unsupported,
                "kiln: matmul on device=\"cuda\": cuBLASLt has no kernel for this product with "
                "its epilogue (" + std::to_string(g.m) + "x" + std::to_string(g.n) + "x" +
                std::to_string(g.k) + ")");
  // A candidate past those offered (fewer for this product, or another cuBLAS than the one a
  // recorded choice was timed with) is the last offered.
  const cublasLtMatmulHeuristicResult_t& result = results[std::min(g.candidate, returned - 1)];
  plan.algo = result.algo;
  plan.workspace_bytes = result.workspaceSize;
  return plans.emplace(key, plan).first->second;
}

// The product through cuBLASLt (its epilogue, or another of its candidates), with the
// workspace of the cuBLAS handle.
void gemm_with_epilogue(const Gemm& g, void* stream, bool allow_tf32,
                        std::vector<std::shared_ptr<void>>* kept) {
  if (g.dtype == DType::Float64)
    throw Error(ErrorKind::Unsupported,
                "kiln: matmul on device=\"cuda\": no float64 product with an epilogue");
  const LtApi& api = blas_lt();
  thread_local cublasLtHandle_t handle = nullptr;
  thread_local std::shared_ptr<void> workspace;
  make_current();
  if (handle == nullptr) {
    check_lt(api.cublasLtCreate(&handle), "cublasLtCreate");
    workspace = allocate(kWorkspaceBytes);
  }
  if (kept) kept->push_back(workspace);
  const int compute = g.dtype == DType::Float32 && allow_tf32 ? kCompute32FFastTF32 : kCompute32F;
  const LtPlan& plan = lt_plan(g, compute, handle);
  if (g.bias != nullptr)
    check_lt(api.cublasLtMatmulDescSetAttribute(plan.desc, kDescBiasPointer, &g.bias, sizeof g.bias),
             "cublasLtMatmulDescSetAttribute");
  const float alpha = 1.0f, beta = 0.0f;
  check_lt(api.cublasLtMatmul(handle, plan.desc, &alpha, g.a, plan.a, g.b, plan.b, &beta, g.c,
                              plan.c, g.c, plan.c, &plan.algo, workspace.get(),
                              plan.workspace_bytes, stream),
           "cublasLtMatmul");
}

}  // namespace

bool blas_computes(DType dtype) { return data_type(dtype) >= 0; }

void gemm(const Gemm& g, void* stream, bool allow_tf32,
          std::vector<std::shared_ptr<void>>* kept) {
  if (!blas_computes(g.dtype))
    throw Error(ErrorKind::Unsupported, "kiln: matmul on device=\"cuda\": cuBLAS has no " +
                                            std::string(dtype_name(g.dtype)) + " product");
  if (g.m == 0 || g.n == 0 || g.batches == 0) return;
  if (g.relu && g.bias == nullptr)
    throw Error(ErrorKind::Internal, "kiln: matmul on device=\"cuda\": a ReLU epilogue without a bias");
  // An empty product (k == 0: cuBLAS writes zeros) and float64 have cuBLAS's one candidate.
  const bool candidates = g.candidate > 0 && g.k > 0 && g.dtype != DType::Float64;
  if (g.bias != nullptr || candidates) return gemm_with_epilogue(g, stream, allow_tf32, kept);
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
