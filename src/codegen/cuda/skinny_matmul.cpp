// Products of few rows on the GPU: a Linear layer at a few tokens (BERT at 1x8: x (8, 768)
// times the transpose of W (768, 768)) is a stream over the weight, 4 bytes of it per 8 to 16
// multiply-adds. cuBLAS's kernels for such shapes (split-K tiles of 32x32, or gemv) moved the
// weight at about a seventh of the memory bandwidth: 11 us where 1 us is the floor. kiln
// generates the product instead: each block of 256 threads takes a few output columns and all
// (up to 8) rows, its threads stride over K with 16-byte loads of the weight, each load used
// for every row, and the partial sums meet in a fixed order (deterministic: a warp's 32 values
// scattered over its lanes in 31 shuffles, then the 8 warps' in shared memory).
#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <sstream>

#include "codegen/cuda/kernel_emitter.h"
#include "extern/matmul_problem.h"

namespace kiln::codegen::cuda_detail {
namespace {

// The device code every skinny product instantiates: ROWS x COLS = 32 sums per thread.
constexpr const char* kSkinnyMatmulText = R"(
// ---- products of few rows (codegen/cuda/skinny_matmul.cpp) -------------------------------
template <bool VEC>
KILN_FN void kiln_skinny_load(float* to, const float* from) {
  if constexpr (VEC) {
    const float4 v = __ldg(reinterpret_cast<const float4*>(from));
    to[0] = v.x, to[1] = v.y, to[2] = v.z, to[3] = v.w;
  } else {
    to[0] = __ldg(from);
  }
}
// Round O of a warp's reduce-scatter of 2 * O values: a lane keeps one half (the upper where
// its bit O is set), adds its partner's copy of that half, and sends the other. After the
// rounds 16, 8, ..., 1, lane l holds the warp's sum of value l.
template <int O>
KILN_FN void kiln_scatter_round(float* v, int lane) {
  if constexpr (O >= 1) {
    const bool upper = (lane & O) != 0;
#pragma unroll
    for (int i = 0; i < O; ++i) {
      const float send = upper ? v[i] : v[i + O];
      const float keep = upper ? v[i + O] : v[i];
      v[i] = keep + __shfl_xor_sync(0xffffffffu, send, O);
    }
    kiln_scatter_round<O / 2>(v, lane);
  }
}
// c (M x N, row-major) = a (M x K, rows LDA apart) times b, whose column n lies contiguous at
// b + n * LDB. Block blockIdx.x: columns COLS * (blockIdx.x % column blocks) onwards, rows
// ROWS * (blockIdx.x / column blocks) onwards; rows and columns past the end are computed from
// the last one and not stored.
template <int M, int N, int K, long long LDA, long long LDB, int ROWS, bool VEC>
KILN_FN void kiln_skinny_matmul(const float* a, const float* b, float* c) {
  constexpr int COLS = 32 / ROWS, THREADS = 256, STEP = VEC ? 4 : 1, STEPS = K / STEP;
  constexpr int COLUMN_BLOCKS = (N + COLS - 1) / COLS;
  const int n0 = (blockIdx.x % COLUMN_BLOCKS) * COLS, r0 = (blockIdx.x / COLUMN_BLOCKS) * ROWS;
  float acc[32];
#pragma unroll
  for (int i = 0; i < 32; ++i) acc[i] = 0.0f;
  // At most 4 steps unrolled: all of a 16-byte-load product's up to K = 4096 (their loads in
  // flight together); the scalar fallback's 12 at K = 3072 took NVRTC 370 ms, not 150.
#pragma unroll 4
  for (int j = 0; j < (STEPS + THREADS - 1) / THREADS; ++j) {
    const int v = threadIdx.x + j * THREADS;
    if (v < STEPS) {
      const long long k = (long long)v * STEP;
      float w[COLS][STEP];
#pragma unroll
      for (int col = 0; col < COLS; ++col)
        kiln_skinny_load<VEC>(w[col], b + (long long)min(n0 + col, N - 1) * LDB + k);
#pragma unroll
      for (int r = 0; r < ROWS; ++r) {
        float x[STEP];
        kiln_skinny_load<VEC>(x, a + (long long)min(r0 + r, M - 1) * LDA + k);
#pragma unroll
        for (int col = 0; col < COLS; ++col)
#pragma unroll
          for (int e = 0; e < STEP; ++e) acc[r * COLS + col] = fmaf(x[e], w[col][e], acc[r * COLS + col]);
      }
    }
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  kiln_scatter_round<16>(acc, lane);
  __shared__ float partial[THREADS / 32][32];
  partial[warp][lane] = acc[0];
  __syncthreads();
  if (warp == 0) {
    float total = 0.0f;
#pragma unroll
    for (int w = 0; w < THREADS / 32; ++w) total += partial[w][lane];
    const int r = r0 + lane / COLS, n = n0 + lane % COLS;
    if (r < M && n < N) c[(long long)r * N + n] = total;
  }
}
)";

constexpr int64_t kMostRows = 16;   // more: cuBLAS's tiles reuse the weight better
constexpr int kSkinnyThreads = 256;

struct SkinnyMatmul {
  int64_t m = 0, n = 0, k = 0, lda = 0, ldb = 0;
  int64_t offset_a = 0, offset_b = 0;  // elements into the operands' buffers
  int rows = 8;                        // per block (ROWS): the rows rounded up to a power of 2
  bool vectors = false;                // 16-byte loads possible (the run checks alignment)
};

// The product an extern matmul step computes, when it is one of few rows in float32 whose
// second operand's columns are contiguous (a Linear layer's weight, transposed).
std::optional<SkinnyMatmul> skinny_matmul(const sched::ExternCall& call,
                                          const std::vector<sched::Buffer>& buffers) {
  if (call.op != ir::Op::matmul || call.inputs.size() != 2) return std::nullopt;
  const sched::Buffer& out = buffers[static_cast<size_t>(call.output)];
  // The operands as extern_operand sees them, with no data: their offsets are baked in.
  auto operand = [&](size_t k, int64_t& offset) {
    const sched::Buffer& buffer = buffers[static_cast<size_t>(call.inputs[k])];
    offset = 0;
    if (k < call.views.size() && call.views[k]) {
      offset = call.views[k]->offset;
      return externs::StridedOperand{nullptr, buffer.dtype, call.views[k]->shape, call.views[k]->strides};
    }
    return externs::StridedOperand{nullptr, buffer.dtype, buffer.shape, buffer.strides};
  };
  SkinnyMatmul s;
  externs::StridedOperand a = operand(0, s.offset_a), b = operand(1, s.offset_b);
  if (a.dtype != DType::Float32 || b.dtype != DType::Float32 || out.dtype != DType::Float32)
    return std::nullopt;
  for (int64_t extent : out.shape)
    if (extent <= 0) return std::nullopt;
  externs::MatmulProblem p = externs::matmul_problem(a, b, out.shape);
  // The kernel takes at most kMostRows rows: sizes of a graph with size symbols follow the
  // choice made at large sizes (ir/size_choices.h) only when theirs are few too.
  const bool few_rows = p.m <= kMostRows;
  const bool chosen = ir::size_choice(few_rows);
  if (!(few_rows && chosen) || p.batches != 1 || p.a_column != 1 || p.b_row != 1 || p.k < 1)
    return std::nullopt;
  if (p.m > 1 && p.a_row < p.k) return std::nullopt;
  if (p.n > 1 && p.b_column < p.k) return std::nullopt;
  // The output: row-major (M, N), as the cuBLAS call writes it.
  int64_t expected = 1;
  for (size_t d = out.shape.size(); d-- > 0;) {
    if (out.shape[d] != 1 && out.strides[d] != expected) return std::nullopt;
    expected *= out.shape[d];
  }
  s.m = p.m, s.n = p.n, s.k = p.k;
  s.lda = p.m > 1 ? p.a_row : p.k, s.ldb = p.n > 1 ? p.b_column : p.k;
  while (s.rows > 1 && s.rows / 2 >= s.m) s.rows /= 2;
  s.vectors = s.k % 4 == 0 && s.lda % 4 == 0 && s.ldb % 4 == 0 && s.offset_a % 4 == 0 &&
              s.offset_b % 4 == 0;
  return s;
}

std::string skinny_matmul_function(const SkinnyMatmul& s, const std::string& symbol) {
  std::ostringstream text;
  const std::string parameters = std::to_string(s.m) + ", " + std::to_string(s.n) + ", " +
                                 std::to_string(s.k) + ", " + std::to_string(s.lda) + "ll, " +
                                 std::to_string(s.ldb) + "ll, " + std::to_string(s.rows);
  text << "// (" << s.m << ", " << s.k << ") x (" << s.k << ", " << s.n
       << ") float32, the second operand's columns contiguous: a product of few rows\n"
       << "extern \"C\" __global__ void __launch_bounds__(" << kSkinnyThreads << ") " << symbol
       << "(const kiln_arg_table<3> kiln_args) {\n"
       << "  const float* a = (const float*)kiln_args[0] + " << s.offset_a << "ll;\n"
       << "  const float* b = (const float*)kiln_args[1] + " << s.offset_b << "ll;\n"
       << "  float* c = (float*)kiln_args[2];\n";
  if (s.vectors)
    text << "  if ((((unsigned long long)a | (unsigned long long)b) & 15) == 0) {\n"
         << "    kiln_skinny_matmul<" << parameters << ", true>(a, b, c);\n"
         << "    return;\n"
         << "  }\n";
  text << "  kiln_skinny_matmul<" << parameters << ", false>(a, b, c);\n}\n\n";
  return text.str();
}

}  // namespace

void add_skinny_matmuls(const Program& program, CudaSource& source) {
  std::map<std::string, size_t> kernel_of_function;  // the same product shares one function
  for (size_t step = 0; step < program.steps.size(); ++step) {
    const sched::Step& s = program.steps[step];
    if (s.kind != sched::StepKind::Extern) continue;
    std::optional<SkinnyMatmul> product = skinny_matmul(s.call, program.buffers);
    if (!product) continue;
    if (kernel_of_function.empty()) source.header += kSkinnyMatmulText;
    runtime::CudaKernelCall call;
    call.arguments = {s.call.inputs[0], s.call.inputs[1], s.call.output};
    call.replaces_step = static_cast<int32_t>(step);
    const std::string function = skinny_matmul_function(*product, "KILN_SKINNY");
    auto found = kernel_of_function.find(function);
    runtime::CudaLaunch launch;
    launch.threads = kSkinnyThreads;
    launch.blocks = (product->n + 32 / product->rows - 1) / (32 / product->rows) *
                    ((product->m + product->rows - 1) / product->rows);
    if (found != kernel_of_function.end()) {
      launch.symbol = source.kernels[found->second].launches[0].symbol;
    } else {
      launch.symbol = "kiln_skinny_matmul_" + std::to_string(step);
      std::string text = function;
      text.replace(text.find("KILN_SKINNY"), std::strlen("KILN_SKINNY"), launch.symbol);
      source.functions.push_back(text);
      kernel_of_function.emplace(function, source.kernels.size());
    }
    call.launches.push_back(launch);
    source.kernels.push_back(call);
  }
}

}  // namespace kiln::codegen::cuda_detail
