#include "extern/onednn_matmul.h"

#include <memory>
#include <mutex>

#include "extern/onednn_memory.h"

namespace kiln::externs {
namespace {

using dnnl::memory;

// One problem's primitive, on the caller's layouts as they are (no reorders). `mutex` makes one
// call at a time use its stream.
struct MatmulPrimitive {
  std::mutex mutex;
  dnnl::stream stream;
  memory::desc a, b, out;
  dnnl::matmul matmul;
};

using Cache = PrimitiveCache<MatmulPrimitive>;

std::shared_ptr<MatmulPrimitive> create_primitive(dnnl::engine& engine, int64_t a_row,
                                                  int64_t a_column, int64_t b_row,
                                                  int64_t b_column, int64_t m, int64_t n,
                                                  int64_t k, bool bfloat16) {
  auto p = std::make_shared<MatmulPrimitive>();
  const auto f32 = memory::data_type::f32;
  const auto operands = bfloat16 ? memory::data_type::bf16 : f32;
  p->a = memory::desc({m, k}, operands, {a_row, a_column});
  p->b = memory::desc({k, n}, operands, {b_row, b_column});
  p->out = memory::desc({m, n}, f32, {n, 1});
  p->matmul =
      dnnl::matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(p->a, p->b, p->out), engine));
  p->stream = dnnl::stream(engine);
  return p;
}

}  // namespace

bool prefers_matmul_primitive(int64_t m, int64_t n, int64_t k) {
  return n >= 16 && n <= 768 && k > n && m >= 64 && m <= 2048 && m * n * k >= (int64_t{1} << 26);
}

bool onednn_matmul(const void* a, int64_t a_row, int64_t a_column, const void* b, int64_t b_row,
                   int64_t b_column, float* out, int64_t m, int64_t n, int64_t k, bool bfloat16) {
  // Its brgemm kernels take dense rows of `a` and a dense `b` either way round; other layouts
  // get its generic gemm kernel, no faster than sgemm (128 rows 1100 floats apart by 1024 x
  // 512: 0.45 ms in both) and 20 ms on its first call.
  const bool dense_b = (b_row == n && b_column == 1) || (b_row == 1 && b_column == k);
  if (a_row != k || a_column != 1 || !dense_b) return false;
  std::shared_ptr<MatmulPrimitive> p;
  try {
    p = Cache::instance().find({m, n, k, a_row, a_column, b_row, b_column, bfloat16},
                               [&](dnnl::engine& engine) {
                                 return create_primitive(engine, a_row, a_column, b_row, b_column,
                                                         m, n, k, bfloat16);
                               });
  } catch (const dnnl::error&) {  // a layout the primitive does not take
    return false;
  }
  const dnnl::engine& engine = Cache::instance().engine();
  std::lock_guard<std::mutex> lock(p->mutex);
  // The caller's memory, wrapped (no copy); oneDNN does not write its inputs.
  p->matmul.execute(p->stream, {{DNNL_ARG_SRC, memory(p->a, engine, const_cast<void*>(a))},
                                {DNNL_ARG_WEIGHTS, memory(p->b, engine, const_cast<void*>(b))},
                                {DNNL_ARG_DST, memory(p->out, engine, out)}});
  p->stream.wait();
  return true;
}

}  // namespace kiln::externs
