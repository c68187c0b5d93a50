// The C++ emitter on hand-built loop IR, without compiling: what the printer writes for loops,
// parallel and SIMD marks, reductions, 16-bit floats, and how identical kernels share code.
#include <gtest/gtest.h>

#include "codegen/cpp/cpp_emitter.h"
#include "codegen/cpp/translation_units.h"
#include "ir/builder.h"
#include "ir/size_choices.h"
#include "sched/kernel_builder.h"
#include "sched/cpu/mark_reduction_lanes.h"
#include "sched/scheduler.h"
#include "target/target.h"

namespace kiln::codegen {
namespace {

using ir::Op;
using ir::Scalar;
using sched::Buffer;
using sched::BufferRole;
using sched::KernelBuilder;

int count(const std::string& text, const std::string& needle) {
  int found = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
    ++found;
  return found;
}

Buffer buffer(BufferRole role, int32_t number, DType dtype, int64_t size, std::string name) {
  Buffer b;
  b.role = role;
  b.number = number;
  b.dtype = dtype;
  b.shape = {size};
  b.strides = {1};
  b.name = std::move(name);
  return b;
}

// out<k>[i] = exp(in<k>[i]) for k in [0, copies), each its own kernel over `size` elements.
sched::Program exp_program(int copies, int64_t size, DType dtype, bool parallel, bool simd) {
  sched::Program program;
  for (int k = 0; k < copies; ++k) {
    program.buffers.push_back(buffer(BufferRole::Input, k, dtype, size, "in" + std::to_string(k)));
    program.buffers.push_back(
        buffer(BufferRole::Output, k, dtype, size, "out" + std::to_string(k)));
    sched::Kernel kernel;
    KernelBuilder builder(kernel);
    int32_t i = builder.new_loop(size);
    sched::Stmt store;
    store.kind = sched::StmtKind::Store;
    store.buffer = 2 * k + 1;
    store.index = builder.loop_var(i);
    store.value = builder.elementwise(Op::exp, DType::Float32,
                                      {builder.load(2 * k, dtype, builder.loop_var(i))});
    sched::Stmt loop;
    loop.kind = sched::StmtKind::Loop;
    loop.loop = {i, size};
    loop.parallel = parallel;
    loop.vectorize = simd;
    loop.body.push_back(store);
    kernel.body.push_back(loop);
    kernel.buffers_read = {2 * k};
    kernel.buffers_written = {2 * k + 1};
    kernel.name = "kernel" + std::to_string(k) + "_exp";
    program.kernels.push_back(kernel);
    sched::Step step;
    step.kernel = k;
    program.steps.push_back(step);
    program.output_buffers.push_back(2 * k + 1);
  }
  return program;
}

TEST(Emitter, LoopMarksBecomePragmas) {
  Options options;
  target::Target target = target::host_cpu(2);
  std::string parallel_simd =
      emit_cpp(exp_program(1, 4096, DType::Float32, true, true), options, target).text();
  EXPECT_EQ(count(parallel_simd,
                  "#pragma omp parallel for simd schedule(static) num_threads(kiln_threads)"),
            1);
  std::string simd =
      emit_cpp(exp_program(1, 4096, DType::Float32, false, true), options, target).text();
  EXPECT_EQ(count(simd, "#pragma omp parallel"), 0);
  EXPECT_EQ(count(simd, "#pragma omp simd"), 1);
  std::string plain =
      emit_cpp(exp_program(1, 4, DType::Float32, false, true), options, target).text();
  EXPECT_EQ(count(plain, "#pragma omp simd"), 0);  // too short to be worth a SIMD loop
}

TEST(Emitter, IdenticalKernelsShareOneFunction) {
  Options options;
  CppSource source =
      emit_cpp(exp_program(3, 100, DType::Float32, false, false), options, target::host_cpu(2));
  EXPECT_EQ(count(source.text(), "(char* const* kiln_args) {"), 1);  // one definition
  ASSERT_EQ(source.kernels.size(), 3u);
  for (const runtime::KernelCall& call : source.kernels) EXPECT_EQ(call.symbol, "kernel0_exp");
  EXPECT_EQ(source.kernels[1].arguments, (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(source.kernels[2].arguments, (std::vector<int32_t>{4, 5}));
}

TEST(Emitter, HalfFloatsAreConvertedOnLoadAndStore) {
  Options options;
  std::string text =
      emit_cpp(exp_program(1, 64, DType::Float16, false, false), options, target::host_cpu(1)).text();
  EXPECT_NE(text.find("kiln_f16_to_f32(a0[i0])"), std::string::npos);
  EXPECT_NE(text.find("a1[i0] = kiln_f32_to_f16("), std::string::npos);
}

TEST(Emitter, ReductionLanesFollowTheTargetVectorWidth) {
  ir::Graph graph;
  ir::Builder b(graph);
  graph.set_outputs({b.reduce(Op::sum, b.parameter(DType::Float32, {1 << 16}), {0}, false)});
  sched::Program program = sched::schedule(graph, {});
  Options options;
  target::Target wide = target::host_cpu(1), narrow = target::host_cpu(1);
  wide.vector_bits = 512;
  narrow.vector_bits = 128;
  // Four registers of float32 lanes: 64 with AVX-512, 16 with SSE (the lane pass decides the
  // split for the target, the emitter writes it).
  sched::Program for_wide = program, for_narrow = program;
  EXPECT_TRUE(sched::cpu::mark_reduction_lanes(for_wide.kernels[0], wide));
  EXPECT_TRUE(sched::cpu::mark_reduction_lanes(for_narrow.kernels[0], narrow));
  EXPECT_NE(emit_cpp(for_wide, options, wide).text().find("_lanes[64]"), std::string::npos);
  EXPECT_NE(emit_cpp(for_narrow, options, narrow).text().find("_lanes[16]"), std::string::npos);
  EXPECT_EQ(emit_cpp(program, options, wide).text().find("_lanes["), std::string::npos);
}

// A short row is split across the most registers it fills twice: float32 rows of 100 take two
// registers of 16 lanes with AVX-512, rows of 40 one, rows of 31 none (scalar code ran a
// softmax's row maxima over 100 keys).
TEST(Emitter, ShortRowsSplitAcrossTheRegistersTheyFillTwice) {
  target::Target wide = target::host_cpu(1);
  wide.vector_bits = 512;
  for (auto [length, lanes] : {std::pair<int64_t, int64_t>{100, 32}, {64, 32}, {63, 16},
                               {40, 16}, {32, 16}, {31, 0}}) {
    ir::Graph graph;
    ir::Builder b(graph);
    graph.set_outputs({b.reduce(Op::max, b.parameter(DType::Float32, {8, length}), {1}, false)});
    sched::Program program = sched::schedule(graph, {});
    EXPECT_EQ(sched::cpu::mark_reduction_lanes(program.kernels[0], wide), lanes > 0);
    std::string text = emit_cpp(program, Options{}, wide).text();
    // The whole lanes' end, as arithmetic of the row's length (size-generic code reads it).
    const std::string full = "(" + std::to_string(length) + " / " + std::to_string(lanes) +
                             " * " + std::to_string(lanes) + ")";
    if (lanes == 0) {
      EXPECT_EQ(text.find("_lanes["), std::string::npos) << text;
      continue;
    }
    EXPECT_NE(text.find("_lanes[" + std::to_string(lanes) + "]"), std::string::npos) << text;
    EXPECT_NE(text.find("_block < " + full + "; "), std::string::npos) << text;
  }
}

// The split is a size choice (ir/size_choices.h): a graph with size symbols records it at large
// sizes, and rows of 30 (0 lanes on their own) or 40 (16) then split as rows of 1025 do (64),
// so that every size's code differs in integers alone. Decided per size, a kernel whose
// statements hoist_invariants changed after the split did not follow the recorded program,
// and GPT-2's generate() compiled every cache length past 127 on its own.
TEST(Emitter, LaneSplitsReplayTheRecordedSizesChoice) {
  target::Target wide = target::host_cpu(1);
  wide.vector_bits = 512;
  auto lanes_at = [&](int64_t length) {
    ir::Graph graph;
    ir::Builder b(graph);
    graph.set_outputs({b.reduce(Op::sum, b.parameter(DType::Float32, {8, length}), {1}, false)});
    sched::Program program = sched::schedule(graph, {});
    sched::cpu::mark_reduction_lanes(program.kernels[0], wide);
    return program.kernels[0].body[0].body[0].split_lanes;
  };
  ir::SizeChoices choices(ir::SizeChoices::Mode::Record);
  {
    ir::SizeChoiceScope scope(&choices);
    EXPECT_EQ(lanes_at(1025), 64);
  }
  for (int64_t length : {30, 40, 1025}) {
    choices.replay();
    ir::SizeChoiceScope scope(&choices);
    EXPECT_EQ(lanes_at(length), 64) << length;
    EXPECT_TRUE(choices.replayed_all()) << length;
  }
  EXPECT_EQ(lanes_at(30), 0);  // outside a scope, each size decides
  EXPECT_EQ(lanes_at(40), 16);
}

// A float sum over rows too short to split (24 < two registers of 16 lanes) is still blocked:
// its passes share one register of lanes, whose totals join the pairwise cascade. Left to a SIMD
// reduction clause, each lane chained every row's addition (a (156250, 64) float32 sum 2% off).
TEST(Emitter, FloatSumsOverShortRowsAreBlocked) {
  ir::Graph graph;
  ir::Builder b(graph);
  ir::ValueId rows = b.parameter(DType::Float32, {4096, 24});
  graph.set_outputs({b.reduce(Op::sum, rows, {0, 1}, false)});
  sched::Program program = sched::schedule(graph, {});
  target::Target wide = target::host_cpu(1);
  wide.vector_bits = 512;
  EXPECT_TRUE(sched::cpu::mark_reduction_lanes(program.kernels[0], wide));
  std::string text = emit_cpp(program, Options{}, wide).text();
  EXPECT_NE(text.find("_rest[16]"), std::string::npos);
  EXPECT_NE(text.find("kiln_cascade_push("), std::string::npos);
  EXPECT_EQ(text.find("reduction(+:"), std::string::npos);
}

// A variance's SIMD lanes all take one element a step, so they share one count and its
// reciprocal (one division a step, none an element), keep means and m2 in two arrays (no array
// of structs to shuffle) and fold without a division; the 1000 - 960 elements after the last
// full step go into the row's own Welford state, not into lane 0, whose count would differ.
TEST(Emitter, WelfordLanesShareOneCountAndReciprocal) {
  ir::Graph graph;
  ir::Builder b(graph);
  graph.set_outputs({b.reduce(Op::var, b.parameter(DType::Float32, {8, 1000}), {1}, false)});
  sched::Program program = sched::schedule(graph, {});
  target::Target wide = target::host_cpu(1);
  wide.vector_bits = 512;
  EXPECT_TRUE(sched::cpu::mark_reduction_lanes(program.kernels[0], wide));
  std::string text = emit_cpp(program, Options{}, wide).text();
  EXPECT_NE(text.find("_lanes_count += 1;"), std::string::npos) << text;
  EXPECT_NE(text.find("_lanes_step = float(1) / acc"), std::string::npos) << text;
  EXPECT_NE(text.find("_lanes_mean[lane] += "), std::string::npos) << text;
  EXPECT_EQ(text.find("kiln_welford<float> acc"), std::string::npos) << text;  // no structs
  EXPECT_EQ(count(text, "acc0 = kiln_welford_add("), 1) << text;  // the remainder: the row's
  EXPECT_EQ(text.find("[0] = kiln_welford_add("), std::string::npos) << text;
}

// The 500 - 448 elements of a row after its last full step of 64 lanes are one more SIMD step
// over the first 52 lanes (element 448 + lane into lane `lane`), not a scalar loop into lane 0
// whose exp ran as scalar libm calls; the bound keeps the loops' literals (size-generic code).
// An argmax's remainder alike (in the same pass); a variance's still goes into the row's own
// state (above).
TEST(Emitter, LaneSplitRemaindersAreOnePartialSimdStep) {
  ir::Graph graph;
  ir::Builder b(graph);
  ir::ValueId x = b.parameter(DType::Float32, {4, 500});
  graph.set_outputs({b.reduce(Op::sum, b.unary(Op::exp, x), {1}, false),
                     b.reduce(Op::argmax, x, {1}, false)});
  sched::Program program = sched::schedule(graph, {});
  target::Target wide = target::host_cpu(1);
  wide.vector_bits = 512;
  for (sched::Kernel& kernel : program.kernels)
    EXPECT_TRUE(sched::cpu::mark_reduction_lanes(kernel, wide));
  std::string text = emit_cpp(program, Options{}, wide).text();
  const std::string full = "(500 / 64 * 64)";  // 448, as arithmetic of the row's length
  EXPECT_EQ(count(text, "_block < " + full + "; "), 1) << text;  // one pass computes both
  EXPECT_EQ(count(text, "; lane < 500 - " + full + "; ++lane) {"), 1) << text;
  EXPECT_EQ(count(text, " = " + full + " + lane;"), 1) << text;
  EXPECT_EQ(count(text, "acc0_lanes[lane] = kiln_combine_sum(acc0_lanes[lane], "), 2) << text;
  EXPECT_EQ(count(text, "acc1_lanes_index[lane] = i1;"), 2) << text;
  EXPECT_EQ(count(text, " = " + full + "; "), 0) << text;  // no scalar tail
  EXPECT_EQ(count(text, "_lanes[0] = "), 0) << text;
}

// Pieces are packed in order, never cut; a piece larger than a unit is a unit of its own; one
// unit is the plain text, with no #if.
TEST(TranslationUnits, PiecesArePackedInOrderIntoBoundedUnits) {
  SourceFile one = lay_out_units("P\n", {"a\n", "b\n"}, 100);
  EXPECT_EQ(one.units, 1);
  EXPECT_EQ(one.text, "P\na\nb\n");
  SourceFile split = lay_out_units("P\n", {"aaaa\n", "bb\n", "cccccccccccc\n", "d\n"}, 8);
  EXPECT_EQ(split.units, 3);
  EXPECT_EQ(split.largest_unit, 2u + 13u);
  EXPECT_EQ(split.text,
            "P\n"
            "\n#if !defined(KILN_UNIT) || KILN_UNIT == 0\naaaa\nbb\n#endif  // unit 0\n"
            "\n#if !defined(KILN_UNIT) || KILN_UNIT == 1\ncccccccccccc\n#endif  // unit 1\n"
            "\n#if !defined(KILN_UNIT) || KILN_UNIT == 2\nd\n#endif  // unit 2\n");
}

TEST(TranslationUnits, UnitBytesSettingIsAPositiveNumber) {
  const char* saved_text = getenv("KILN_UNIT_BYTES");
  const std::string saved = saved_text ? saved_text : "";
  unsetenv("KILN_UNIT_BYTES");
  EXPECT_EQ(unit_bytes_setting(), size_t(2) << 20);
  setenv("KILN_UNIT_BYTES", "4096", 1);
  EXPECT_EQ(unit_bytes_setting(), 4096u);
  for (const char* bad : {"0", "-5", " -5", " 7", "12k", "lots", "99999999999999999999999"}) {
    setenv("KILN_UNIT_BYTES", bad, 1);
    EXPECT_THROW(unit_bytes_setting(), Error) << bad;
  }
  if (saved_text) setenv("KILN_UNIT_BYTES", saved.c_str(), 1);
  else unsetenv("KILN_UNIT_BYTES");
}

}  // namespace
}  // namespace kiln::codegen
