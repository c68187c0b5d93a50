// Differential fuzzing: random well-typed graphs (fuzz_graph_generator.h) are compiled through
// the whole pipeline (passes, schedule, C++ emitter, g++, executable) and compared with the
// reference interpreter. Integers and bools must match exactly, floats within tolerances
// derived from each value's bound and error estimate, NaN positions equal.
//
// Every compile calls g++, so a case packs several random subgraphs into one graph; each
// subgraph counts as one graph. Environment:
//   KILN_FUZZ_GRAPHS=N  graphs to check (default 300)
//   KILN_FUZZ_SEED=S    seed (default fixed, so CI is reproducible)
//   KILN_FUZZ_ONLY=K    check only subgraph K of the seed, alone in its graph (to debug one)
//   KILN_FUZZ_DEVICE=D  compile for device D (cpu, the default; cuda: scripts/gpu-check)
//   KILN_FUZZ_MODE=M    compile in mode M (max-autotune: every compiled graph is tuned first)
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <sstream>

#include "api/compiled_function.h"
#include "fuzz_graph_generator.h"
#include "ir/builder.h"
#include "ir/interpreter.h"
#include "ir/printer.h"

namespace kiln::fuzz {
namespace {

constexpr int kSubgraphsPerCase = 10;

int64_t env_integer(const char* name, int64_t fallback) {
  const char* text = std::getenv(name);
  return text && *text ? std::strtoll(text, nullptr, 0) : fallback;
}

Options fuzz_options() {
  Options options;
  if (const char* device = std::getenv("KILN_FUZZ_DEVICE")) options.device = device;
  if (const char* mode = std::getenv("KILN_FUZZ_MODE")) options.mode = mode;
  return options;
}

double load_float(DType dtype, const char* address) {
  switch (dtype) {
    case DType::Float16: {
      _Float16 half;
      std::memcpy(&half, address, 2);
      return static_cast<double>(half);
    }
    case DType::BFloat16: {
      uint16_t bits;
      std::memcpy(&bits, address, 2);
      uint32_t widened = static_cast<uint32_t>(bits) << 16;
      float single;
      std::memcpy(&single, &widened, 4);
      return single;
    }
    case DType::Float32: {
      float single;
      std::memcpy(&single, address, 4);
      return single;
    }
    default: {
      double value;
      std::memcpy(&value, address, 8);
      return value;
    }
  }
}

// The integer at `address`, printed exactly (uint64 beyond int64 included).
std::string integer_text(DType dtype, const char* address) {
  if (dtype == DType::Bool) return *address != 0 ? "true" : "false";
  if (dtype == DType::UInt64) {
    uint64_t value;
    std::memcpy(&value, address, 8);
    return std::to_string(value);
  }
  int64_t value = 0;
  std::memcpy(&value, address, static_cast<size_t>(dtype_size(dtype)));
  int bits = dtype_size(dtype) * 8;
  if (bits < 64) {
    uint64_t mask = (uint64_t{1} << bits) - 1;
    value &= static_cast<int64_t>(mask);
    if (is_signed_integer(dtype) && (value >> (bits - 1)) != 0)
      value -= static_cast<int64_t>(mask) + 1;
  }
  return std::to_string(value);
}

std::string index_text(const std::vector<int64_t>& shape, int64_t flat) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
  std::string text = "[";
  for (size_t d = 0; d < index.size(); ++d) text += (d ? ", " : "") + std::to_string(index[d]);
  return text + "]";
}

}  // namespace

// Compares one output; returns "" when it passes, else the first mismatching element.
std::string compare_output(const Array& expected, const Array& actual, const OutputCheck& check) {
  if (expected.dtype() != actual.dtype() || expected.shape() != actual.shape()) {
    return "dtype/shape differ: reference " + std::string(dtype_name(expected.dtype())) +
           index_text(expected.shape(), 0) + " vs compiled " +
           std::string(dtype_name(actual.dtype())) + " of rank " + std::to_string(actual.ndim());
  }
  Array reference = expected.contiguous();
  Array compiled = actual.contiguous();
  DType dtype = expected.dtype();
  size_t size = static_cast<size_t>(dtype_size(dtype));
  const char* left = static_cast<const char*>(reference.data());
  const char* right = static_cast<const char*>(compiled.data());
  for (int64_t e = 0; e < reference.size(); ++e) {
    const char* a = left + static_cast<size_t>(e) * size;
    const char* b = right + static_cast<size_t>(e) * size;
    std::ostringstream message;
    message.precision(17);
    if (!is_float(dtype)) {
      bool equal = dtype == DType::Bool ? (*a != 0) == (*b != 0) : std::memcmp(a, b, size) == 0;
      if (equal) continue;
      message << "element " << index_text(expected.shape(), e) << " (flat " << e << ") of "
              << dtype_name(dtype) << ": reference " << integer_text(dtype, a) << ", compiled "
              << integer_text(dtype, b) << " (integers must match exactly)";
      return message.str();
    }
    double want = load_float(dtype, a);
    double got = load_float(dtype, b);
    bool both_nan = std::isnan(want) && std::isnan(got);
    bool ok = both_nan;
    double tolerance = 0;
    if (!ok && !std::isnan(want) && !std::isnan(got)) {
      if (check.exact || std::isinf(want) || std::isinf(got)) {
        ok = want == got;
      } else {
        tolerance = check.absolute + check.relative * std::abs(want);
        ok = std::abs(want - got) <= tolerance;
      }
    }
    if (ok) continue;
    message << "element " << index_text(expected.shape(), e) << " (flat " << e << ") of "
            << dtype_name(dtype) << ": reference " << want << ", compiled " << got
            << (check.exact ? " (must be exact)" : ", tolerance " + std::to_string(tolerance));
    return message.str();
  }
  return "";
}

namespace {

struct Failure {
  int subgraph_position = -1;  // within the case; -1: the whole case
  std::string message;
};

struct CaseResult {
  std::vector<Failure> failures;
  std::string source_path;
};

CaseResult run_case(const FuzzCase& fuzz_case, const Options& options) {
  CaseResult result;
  std::vector<Array> expected;
  try {
    expected = ir::interpret(fuzz_case.graph, fuzz_case.inputs);
  } catch (const std::exception& error) {
    result.failures.push_back({-1, std::string("the interpreter threw: ") + error.what()});
    return result;
  }
  std::vector<Array> actual;
  try {
    CompileStats stats;
    auto compiled = detail::compile_graph(fuzz_case.graph, fuzz_case.input_strides, options, stats);
    result.source_path = compiled->source_path;
    compiled->executable->run(fuzz_case.inputs, actual);
  } catch (const std::exception& error) {
    result.failures.push_back({-1, std::string("compiling or running threw: ") + error.what()});
    return result;
  }
  if (actual.size() != expected.size()) {
    result.failures.push_back({-1, "the executable returned " + std::to_string(actual.size()) +
                                       " outputs, the graph has " +
                                       std::to_string(expected.size())});
    return result;
  }
  std::vector<int> position_of_subgraph;
  for (size_t o = 0; o < expected.size(); ++o) {
    const OutputCheck& check = fuzz_case.checks[o];
    std::string mismatch = compare_output(expected[o], actual[o], check);
    if (mismatch.empty()) continue;
    int position = 0;
    while (fuzz_case.subgraph_numbers[static_cast<size_t>(position)] != check.subgraph) ++position;
    result.failures.push_back(
        {position, "output %" + std::to_string(fuzz_case.graph.outputs()[o]) + ": " + mismatch});
  }
  return result;
}

std::string subgraph_text(const FuzzCase& fuzz_case, int position) {
  std::string text;
  auto [first, last] = fuzz_case.subgraph_nodes[static_cast<size_t>(position)];
  for (ir::ValueId id = first; id < last; ++id)
    text += "  " + ir::print_node(fuzz_case.graph, id) + "\n";
  text += "  outputs:";
  for (ir::ValueId id : fuzz_case.graph.outputs())
    if (id >= first && id < last) text += " %" + std::to_string(id);
  return text + "\n";
}

// A fresh disk cache per test run, kept when something failed (the generated sources stay).
class TemporaryCache {
 public:
  TemporaryCache() {
    std::string pattern = (std::filesystem::temp_directory_path() / "kiln-fuzz-XXXXXX").string();
    path_ = mkdtemp(pattern.data()) ? pattern : "";
  }
  ~TemporaryCache() {
    if (!keep_ && !path_.empty()) std::filesystem::remove_all(path_);
  }
  const std::string& path() const { return path_; }
  void keep() { keep_ = true; }

 private:
  std::string path_;
  bool keep_ = false;
};

// Re-runs one failing subgraph alone, so the report shows a small graph and its own source.
std::string isolate(uint64_t seed, int subgraph, const Options& options) {
  FuzzCase alone = generate_case(seed, subgraph, 1);
  CaseResult result = run_case(alone, options);
  std::string text = "subgraph " + std::to_string(subgraph) + " of seed " + std::to_string(seed) +
                     " (reproduce: KILN_FUZZ_SEED=" + std::to_string(seed) +
                     " KILN_FUZZ_ONLY=" + std::to_string(subgraph) + ")\n";
  text += result.failures.empty() ? "  alone it PASSES (fails only beside other subgraphs)\n"
                                  : "  alone: " + result.failures[0].message + "\n";
  text += ir::print_graph(alone.graph);
  if (!result.source_path.empty()) text += "  generated source: " + result.source_path + "\n";
  return text;
}

}  // namespace

TEST(Fuzz, ComparatorCatchesMismatches) {
  OutputCheck loose;
  loose.absolute = 1e-3;
  Array reference = Array::from_vector<float>({1.0f, NAN, 3.0f}, {3});
  EXPECT_EQ(compare_output(reference, Array::from_vector<float>({1.0005f, NAN, 3.0f}, {3}), loose),
            "");
  EXPECT_NE(compare_output(reference, Array::from_vector<float>({1.01f, NAN, 3.0f}, {3}), loose),
            "");
  EXPECT_NE(compare_output(reference, Array::from_vector<float>({1.0f, 2.0f, 3.0f}, {3}), loose),
            "");
  OutputCheck exact;
  exact.exact = true;
  EXPECT_NE(compare_output(reference, Array::from_vector<float>({1.0005f, NAN, 3.0f}, {3}), exact),
            "");
  Array integers = Array::from_vector<int64_t>({int64_t{1} << 60, -7}, {2});
  std::string message = compare_output(
      integers, Array::from_vector<int64_t>({(int64_t{1} << 60) + 1, -7}, {2}), exact);
  EXPECT_NE(message.find("1152921504606846976"), std::string::npos) << message;
  EXPECT_EQ(compare_output(integers, integers, exact), "");
}

TEST(Fuzz, GeneratorIsDeterministicAndCoversTheOpTable) {
  FuzzCase first = generate_case(7, 0, 20);
  FuzzCase again = generate_case(7, 0, 20);
  EXPECT_EQ(ir::print_graph(first.graph), ir::print_graph(again.graph));
  // Subgraph k alone is the same subgraph as inside its case.
  FuzzCase alone = generate_case(7, 3, 1);
  auto [begin, end] = first.subgraph_nodes[3];
  EXPECT_EQ(end - begin, alone.graph.size());
  std::set<ir::Op> seen;
  std::set<DType> dtypes;
  FuzzCase many = generate_case(11, 0, 60);
  for (const ir::Node& node : many.graph.nodes()) {
    seen.insert(node.op);
    dtypes.insert(node.dtype);
  }
  EXPECT_GE(seen.size(), 60u);
  EXPECT_TRUE(seen.contains(ir::Op::argsort) && seen.contains(ir::Op::sort));
  // Complex values are lowered to real ones before compiling: test_complex.cpp covers them.
  EXPECT_EQ(dtypes.size(), static_cast<size_t>(kRealDTypeCount));
}

TEST(Fuzz, RandomGraphsMatchTheInterpreter) {
  int64_t graphs = env_integer("KILN_FUZZ_GRAPHS", 300);
  uint64_t seed = static_cast<uint64_t>(env_integer("KILN_FUZZ_SEED", 20240611));
  int64_t only = env_integer("KILN_FUZZ_ONLY", -1);
  TemporaryCache cache;
  Options options = fuzz_options();
  options.cache_dir = cache.path();
  int failed_cases = 0;
  int checked = 0;
  for (int64_t first = only >= 0 ? only : 0; first < (only >= 0 ? only + 1 : graphs);
       first += kSubgraphsPerCase) {
    int count =
        only >= 0 ? 1 : static_cast<int>(std::min<int64_t>(kSubgraphsPerCase, graphs - first));
    FuzzCase fuzz_case = generate_case(seed, static_cast<int>(first), count);
    CaseResult result = run_case(fuzz_case, options);
    checked += count;
    if (result.failures.empty()) continue;
    cache.keep();
    std::ostringstream report;
    report << "fuzz case of subgraphs " << first << ".." << first + count - 1 << ", seed " << seed
           << ", source " << result.source_path << "\n";
    std::set<int> reported;
    for (const Failure& failure : result.failures) {
      report << "  " << failure.message << "\n";
      std::vector<int> positions;
      if (failure.subgraph_position >= 0) positions.push_back(failure.subgraph_position);
      for (int p = 0; failure.subgraph_position < 0 && p < count; ++p) positions.push_back(p);
      for (int position : positions) {
        int subgraph = fuzz_case.subgraph_numbers[static_cast<size_t>(position)];
        if (!reported.insert(subgraph).second) continue;
        if (failure.subgraph_position >= 0) report << subgraph_text(fuzz_case, position);
        std::string alone = isolate(seed, subgraph, options);
        // When the whole case failed, only the subgraphs that fail alone are worth reading.
        if (failure.subgraph_position >= 0 || alone.find("PASSES") == std::string::npos)
          report << alone;
      }
    }
    ADD_FAILURE() << report.str();
    if (++failed_cases >= 3) break;  // enough to read; the rest would repeat
  }
  EXPECT_GE(checked, std::min<int64_t>(graphs, only >= 0 ? 1 : graphs));
}

namespace {

// The case's graph as the body of a loop of `trips` iterations: the body computes the graph
// from its inputs (loop invariants, strided as the case makes them) and carries its outputs,
// keeping the first iteration's values (where(i == 0, value, carried)), so every output goes
// through the loop's carried buffers, swaps and, for loops of kernels, a compiled loop.
FuzzCase in_a_loop(FuzzCase fuzz_case, int64_t trips) {
  const ir::Graph& graph = fuzz_case.graph;
  auto body = std::make_shared<ir::Graph>();
  ir::Builder b(*body);
  ir::ValueId index = b.parameter(DType::Int64, {});
  std::vector<ir::ValueId> carried, mapped(static_cast<size_t>(graph.size()), -1);
  for (ir::ValueId output : graph.outputs())
    carried.push_back(b.parameter(graph.node(output).dtype, graph.node(output).shape));
  for (ir::ValueId input : graph.inputs())
    mapped[static_cast<size_t>(input)] =
        b.parameter(graph.node(input).dtype, graph.node(input).shape);
  for (ir::ValueId id = 0; id < graph.size(); ++id) {
    const ir::Node& node = graph.node(id);
    if (node.op == ir::Op::parameter) continue;
    std::vector<ir::ValueId> inputs;
    for (ir::ValueId input : node.inputs) inputs.push_back(mapped[static_cast<size_t>(input)]);
    mapped[static_cast<size_t>(id)] = b.copy_node(node, std::move(inputs));
  }
  ir::ValueId first = b.binary(ir::Op::eq, index, b.constant(ir::Scalar::of_int(0), DType::Int64));
  std::vector<ir::ValueId> next;
  for (size_t k = 0; k < carried.size(); ++k) {
    const ir::Node& value = body->node(mapped[static_cast<size_t>(graph.outputs()[k])]);
    next.push_back(b.where(b.broadcast(first, value.shape),
                           mapped[static_cast<size_t>(graph.outputs()[k])], carried[k]));
  }
  body->set_outputs(next);

  ir::Graph outer;
  ir::Builder o(outer);
  std::vector<ir::ValueId> parameters, initial;
  for (ir::ValueId input : graph.inputs())
    parameters.push_back(o.parameter(graph.node(input).dtype, graph.node(input).shape));
  for (ir::ValueId output : graph.outputs())
    initial.push_back(
        o.constant(ir::Scalar::of_int(0), graph.node(output).dtype, graph.node(output).shape));
  ir::ValueId start = o.constant(ir::Scalar::of_int(0), DType::Int64);
  ir::ValueId stop = o.constant(ir::Scalar::of_int(trips), DType::Int64);
  ir::ValueId loop = o.loop(start, stop, 1, initial, parameters, body);
  std::vector<ir::ValueId> results;
  for (size_t k = 0; k < carried.size(); ++k)
    results.push_back(o.loop_result(loop, static_cast<int64_t>(k)));
  outer.set_outputs(results);
  fuzz_case.graph = std::move(outer);
  return fuzz_case;
}

}  // namespace

TEST(Fuzz, RandomGraphsInsideLoopsMatchTheInterpreter) {
  int64_t graphs = env_integer("KILN_FUZZ_LOOP_GRAPHS", 60);
  uint64_t seed = static_cast<uint64_t>(env_integer("KILN_FUZZ_SEED", 20240611)) + 1;
  TemporaryCache cache;
  Options options = fuzz_options();
  options.cache_dir = cache.path();
  for (int64_t first = 0; first < graphs; first += kSubgraphsPerCase) {
    int count = static_cast<int>(std::min<int64_t>(kSubgraphsPerCase, graphs - first));
    FuzzCase fuzz_case = in_a_loop(generate_case(seed, static_cast<int>(first), count), 3);
    CaseResult result = run_case(fuzz_case, options);
    if (result.failures.empty()) continue;
    cache.keep();
    std::ostringstream report;
    report << "loop fuzz case of subgraphs " << first << ".." << first + count - 1 << ", seed "
           << seed << ", source " << result.source_path << "\n";
    for (const Failure& failure : result.failures) report << "  " << failure.message << "\n";
    ADD_FAILURE() << report.str() << ir::print_graph(fuzz_case.graph);
    break;
  }
}

}  // namespace kiln::fuzz
