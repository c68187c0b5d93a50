// sched/pin_masked_elements.h: x[i, j] = v, traced as row i rewritten through the mask
// column == j, stores one element: the loop the equality bounds runs once, at j clamped to the
// axis, the mask kept (a j outside the axis leaves the row as it was). Structure on the
// scheduled kernel here; results on a GPU against the interpreter, for positions inside and
// outside the axis, in test_cuda_pipeline.cpp (a GPU pass: the CPU trims the loop instead).
#include "compile_test_util.h"
#include "sched/pin_masked_elements.h"
#include "sched/scheduler.h"

namespace kiln::test {
namespace {

using ir::Op;
using ir::ValueId;

// x[index, at] = v on an intermediate (a running sum of x: its own kernel, which the
// assignment then updates in place), as kiln/_indexing.py traces it: row `index` put back
// through the mask column == at; or, for the cases that must not pin, column <= at (a window)
// and column == the row's own value (which reads the loop).
enum class Mask { Equal, AtMost, EqualToRow };

sched::Program element_assignment(Mask mask) {
  ir::Graph graph;
  ir::Builder b(graph);
  ValueId x = b.parameter(DType::Float64, {40, 70});
  ValueId index = b.parameter(DType::Int64, {1});
  ValueId at = b.parameter(DType::Int64, {});
  ValueId v = b.parameter(DType::Float64, {});
  const ir::Shape row_shape{ir::Dim(1), ir::Dim(70)};
  ValueId base = b.scan(Op::cumsum, x, 1);
  ValueId row = b.gather(base, index, 0);
  ValueId columns = b.iota(DType::Int64, row_shape, 1);
  ValueId here = mask == Mask::Equal    ? b.binary(Op::eq, columns, b.broadcast(at, row_shape))
                 : mask == Mask::AtMost ? b.binary(Op::le, columns, b.broadcast(at, row_shape))
                                        : b.binary(Op::eq, columns, b.cast(row, DType::Int64));
  graph.set_outputs({b.scatter(base, index, b.where(here, b.broadcast(v, row_shape), row), 0,
                               ir::ScatterMode::Set)});
  return sched::schedule(graph, {});
}

// The loops of every store nest in `body` whose store is into `buffer`.
void store_loops(const std::vector<sched::Stmt>& body, int32_t buffer,
                 std::vector<sched::Loop> around, std::vector<std::vector<sched::Loop>>& found) {
  for (const sched::Stmt& s : body) {
    if (s.kind == sched::StmtKind::Store && s.buffer == buffer) found.push_back(around);
    if (s.kind != sched::StmtKind::Loop) continue;
    std::vector<sched::Loop> inner = around;
    inner.push_back(s.loop);
    store_loops(s.body, buffer, inner, found);
  }
}

TEST(PinMaskedElements, AnElementAssignmentStoresOneElement) {
  sched::Program program = element_assignment(Mask::Equal);
  sched::Kernel& kernel = program.kernels.back();
  ASSERT_TRUE(sched::pin_masked_elements(kernel, target::Target{}))
      << sched::print_program(program);
  std::vector<std::vector<sched::Loop>> nests;
  store_loops(kernel.body, kernel.buffers_written.at(0), {}, nests);
  ASSERT_FALSE(nests.empty()) << sched::print_program(program);
  for (const std::vector<sched::Loop>& nest : nests)
    for (const sched::Loop& loop : nest) EXPECT_EQ(loop.extent, 1) << sched::print_program(program);
  EXPECT_FALSE(sched::pin_masked_elements(kernel, target::Target{}));  // nothing left to pin
}

TEST(PinMaskedElements, OnlyEqualitiesOfValuesOutsideTheLoopPin) {
  for (Mask mask : {Mask::AtMost, Mask::EqualToRow}) {
    sched::Program program = element_assignment(mask);
    EXPECT_FALSE(sched::pin_masked_elements(program.kernels.back(), target::Target{}))
        << sched::print_program(program);
  }
}

}  // namespace
}  // namespace kiln::test
