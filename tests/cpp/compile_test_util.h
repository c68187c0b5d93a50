// Shared helpers of the end-to-end compiler tests (trace -> passes -> schedule -> C++ codegen ->
// g++ -> run), which compare every compiled result with the reference interpreter.
//
// Every compile runs g++, so the tests put many ops into one graph with many outputs: a
// GraphCase collects outputs with a label and a tolerance each, and check() compiles the graph
// once, runs it, and compares every output with ir::interpret element by element.
// One fresh cache directory serves the whole test binary and is removed when it exits.
#pragma once
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "api/compiled_function.h"
#include "api/trace.h"
#include "ir/builder.h"
#include "ir/interpreter.h"
#include "kiln/kiln.h"

namespace kiln::test {

inline const double kNaN = std::numeric_limits<double>::quiet_NaN();
inline const double kInf = std::numeric_limits<double>::infinity();

// ---- the per-binary cache directory ----------------------------------------------------------

// A fresh directory under $TMPDIR, removed (with everything compiled into it) at exit, so that
// every run really compiles and no run depends on another's cache.
class TemporaryDirectory {
 public:
  explicit TemporaryDirectory(const std::string& prefix) {
    std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "XXXXXX")).string();
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    if (mkdtemp(buffer.data()) != nullptr) path_ = buffer.data();
  }
  ~TemporaryDirectory() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  TemporaryDirectory(const TemporaryDirectory&) = delete;
  TemporaryDirectory& operator=(const TemporaryDirectory&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline const std::string& test_cache_directory() {
  static TemporaryDirectory directory("kiln-test-cache-");
  return directory.path();
}


inline Options test_options() {
  Options options;
  options.cache_dir = test_cache_directory();
  return options;
}

// ---- building input arrays -------------------------------------------------------------------

inline uint16_t float16_bits(double value) {
  _Float16 half = static_cast<_Float16>(value);  // one rounding, to nearest even
  uint16_t bits;
  std::memcpy(&bits, &half, sizeof bits);
  return bits;
}

inline uint16_t bfloat16_bits(double value) {
  float single = static_cast<float>(value);
  uint32_t bits;
  std::memcpy(&bits, &single, sizeof bits);
  if (single != single) return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  return static_cast<uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

// Stores `value` at element `index` of a contiguous array: floats rounded to the dtype,
// integers through int64 (so out-of-range values are the caller's mistake, not wrapped here).
inline void store_double(Array& array, int64_t index, double value) {
  char* address = static_cast<char*>(array.data()) + index * dtype_size(array.dtype());
  auto put = [&](auto typed) { std::memcpy(address, &typed, sizeof typed); };
  switch (array.dtype()) {
    case DType::Bool: put(static_cast<uint8_t>(value != 0)); break;
    case DType::Int8: put(static_cast<int8_t>(value)); break;
    case DType::Int16: put(static_cast<int16_t>(value)); break;
    case DType::Int32: put(static_cast<int32_t>(value)); break;
    case DType::Int64: put(static_cast<int64_t>(value)); break;
    case DType::UInt8: put(static_cast<uint8_t>(value)); break;
    case DType::UInt16: put(static_cast<uint16_t>(value)); break;
    case DType::UInt32: put(static_cast<uint32_t>(value)); break;
    case DType::UInt64: put(static_cast<uint64_t>(value)); break;
    case DType::Float16: put(float16_bits(value)); break;
    case DType::BFloat16: put(bfloat16_bits(value)); break;
    case DType::Float32: put(static_cast<float>(value)); break;
    case DType::Float64: put(value); break;
  }
}

// Stores the low bytes of `value` (two's complement): INT64_MIN, UINT64_MAX (as -1) and the
// limits of the narrow types are all spelled exactly.
inline void store_bits(Array& array, int64_t index, int64_t value) {
  char* address = static_cast<char*>(array.data()) + index * dtype_size(array.dtype());
  if (array.dtype() == DType::Bool) value = value != 0;
  std::memcpy(address, &value, static_cast<size_t>(dtype_size(array.dtype())));  // little endian
}

// A contiguous array of `shape` filled with `values` cycled (floats rounded to the dtype).
inline Array make_array(DType dtype, std::vector<int64_t> shape, const std::vector<double>& values) {
  Array array = Array::empty(dtype, std::move(shape));
  for (int64_t i = 0; i < array.size(); ++i) {
    store_double(array, i, values.empty() ? 0 : values[static_cast<size_t>(i) % values.size()]);
  }
  return array;
}

// As above with exact integer bit patterns.
inline Array make_integer_array(DType dtype, std::vector<int64_t> shape,
                                const std::vector<int64_t>& values) {
  Array array = Array::empty(dtype, std::move(shape));
  for (int64_t i = 0; i < array.size(); ++i) {
    store_bits(array, i, values.empty() ? 0 : values[static_cast<size_t>(i) % values.size()]);
  }
  return array;
}

// Deterministic values in [low, high) (a tiny LCG: the tests must not depend on the library's
// std::uniform_real_distribution).
inline std::vector<double> pseudo_random(size_t count, double low, double high, uint64_t seed) {
  std::vector<double> values(count);
  uint64_t state = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (double& value : values) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    value = low + (high - low) * static_cast<double>(state >> 11) * 0x1.0p-53;
  }
  return values;
}

// ---- special values per dtype ----------------------------------------------------------------

inline std::vector<double> float_special_values() {
  return {0.0, -0.0, kNaN, kInf,  -kInf, 1.0, -1.0, 0.5,  -2.5,
          3.0, 7.25, -100.75, 1e30, -1e30, 1e-30, 0.3};
}

inline int64_t integer_bits(DType dtype) { return 8 * dtype_size(dtype); }

// Limits as two's complement bit patterns (UINT64_MAX is -1).
inline int64_t integer_min(DType dtype) {
  if (!is_signed_integer(dtype)) return 0;
  return integer_bits(dtype) == 64 ? std::numeric_limits<int64_t>::min()
                                   : -(int64_t{1} << (integer_bits(dtype) - 1));
}
inline int64_t integer_max(DType dtype) {
  int64_t bits = integer_bits(dtype);
  if (is_signed_integer(dtype)) {
    return bits == 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << (bits - 1)) - 1;
  }
  return bits == 64 ? -1 : (int64_t{1} << bits) - 1;
}

// 0, +-1, small values, shift counts below/at/above the bit width, +-100, MIN, MIN + 1, MAX.
inline std::vector<int64_t> integer_special_values(DType dtype) {
  if (dtype == DType::Bool) return {0, 1};
  int64_t bits = integer_bits(dtype);
  std::vector<int64_t> values = {0, 1, 2, 3, 7, bits - 1, bits, bits + 3, 100};
  if (is_signed_integer(dtype)) {
    for (int64_t value : {int64_t{-1}, int64_t{-3}, int64_t{-8}, int64_t{-100}}) {
      values.push_back(value);
    }
    values.push_back(integer_min(dtype));
    values.push_back(integer_min(dtype) + 1);
  } else {
    values.push_back(integer_max(dtype) - 1);
    values.push_back(integer_bits(dtype) == 64 ? std::numeric_limits<int64_t>::min()
                                               : int64_t{1} << (bits - 1));  // top bit only
  }
  values.push_back(integer_max(dtype));
  return values;
}

// The special values of `dtype` as an array of `count` elements (cycled).
inline Array special_array(DType dtype, std::vector<int64_t> shape) {
  if (is_float(dtype)) return make_array(dtype, std::move(shape), float_special_values());
  return make_integer_array(dtype, std::move(shape), integer_special_values(dtype));
}

inline size_t special_count(DType dtype) {
  return is_float(dtype) ? float_special_values().size() : integer_special_values(dtype).size();
}

// ---- comparing ------------------------------------------------------------------------------

// A float result matches when it is within `ulps` units in the last place of the dtype, or
// within absolute + relative * |expected|. NaN must meet NaN; infinities must be equal.
struct Tolerance {
  double relative = 0;
  double absolute = 0;
  int64_t ulps = 0;
};

// Elementwise defaults: a few ulp (libmvec's vector math is within 4 ulp of glibc's).
inline Tolerance default_tolerance(DType dtype) {
  switch (component_dtype(dtype)) {
    case DType::Float64: return {1e-12, 0, 4};
    case DType::Float32: return {1e-5, 1e-6, 4};
    case DType::Float16:
    case DType::BFloat16: return {1e-2, 0, 1};
    default: return {};  // integers and bool: exact
  }
}

inline int64_t ordered_bits(double value, DType dtype) {
  int64_t bits;
  if (dtype == DType::Float32) {
    float single = static_cast<float>(value);
    int32_t narrow;
    std::memcpy(&narrow, &single, sizeof narrow);
    bits = narrow < 0 ? int64_t{std::numeric_limits<int32_t>::min()} - narrow : narrow;
  } else if (dtype == DType::Float16 || dtype == DType::BFloat16) {
    uint16_t raw = dtype == DType::Float16 ? float16_bits(value) : bfloat16_bits(value);
    int64_t magnitude = raw & 0x7FFF;
    bits = (raw & 0x8000) ? -magnitude : magnitude;
  } else {
    std::memcpy(&bits, &value, sizeof bits);
    if (bits < 0) bits = std::numeric_limits<int64_t>::min() - bits;
  }
  return bits;
}

inline bool floats_match(double actual, double expected, DType dtype, const Tolerance& tolerance) {
  if (std::isnan(expected) || std::isnan(actual)) return std::isnan(expected) && std::isnan(actual);
  if (std::isinf(expected) || std::isinf(actual)) return actual == expected;
  if (actual == expected) return true;
  double difference = std::fabs(actual - expected);
  if (difference <= tolerance.absolute + tolerance.relative * std::fabs(expected)) return true;
  int64_t distance = ordered_bits(actual, dtype) - ordered_bits(expected, dtype);
  return (distance < 0 ? -distance : distance) <= tolerance.ulps;
}

// The element's raw bytes, zero-extended (exact comparison of integers and bool).
inline uint64_t raw_element(const Array& contiguous, int64_t index) {
  uint64_t bits = 0;
  int size = dtype_size(contiguous.dtype());
  std::memcpy(&bits, static_cast<const char*>(contiguous.data()) + index * size,
              static_cast<size_t>(size));
  if (contiguous.dtype() == DType::Bool) bits = bits != 0;
  return bits;
}

inline std::vector<int64_t> unravel(int64_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> index(shape.size(), 0);
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] > 0) {
      index[d] = flat % shape[d];
      flat /= shape[d];
    }
  }
  return index;
}

inline std::string element_text(const Array& contiguous, int64_t index) {
  std::ostringstream text;
  DType dtype = contiguous.dtype();
  uint64_t raw = raw_element(contiguous, index);
  if (is_float(dtype)) {
    text.precision(17);
    text << contiguous.get(unravel(index, contiguous.shape()));
  } else if (is_signed_integer(dtype)) {
    int shift = 64 - 8 * dtype_size(dtype);
    text << (static_cast<int64_t>(raw << shift) >> shift);
  } else {
    text << raw;
  }
  return text.str();
}

// Compares one output with the oracle's: dtype, shape, then every element. Reports at most a
// few mismatching elements (with the flat index) under `label`. Returns whether all matched.
inline bool expect_array_matches(const Array& actual_array, const Array& expected_array,
                                 const Tolerance& tolerance, const std::string& label,
                                 const std::vector<Array>& inputs_for_report = {}) {
  EXPECT_EQ(actual_array.dtype(), expected_array.dtype()) << label;
  EXPECT_EQ(actual_array.shape(), expected_array.shape()) << label;
  if (actual_array.dtype() != expected_array.dtype() ||
      actual_array.shape() != expected_array.shape()) {
    return false;
  }
  if (is_complex(actual_array.dtype()))  // part by part, each with the parts' tolerance
    return expect_array_matches(actual_array.view_as_real(), expected_array.view_as_real(),
                                tolerance, label);
  Array actual = actual_array.contiguous();
  Array expected = expected_array.contiguous();
  DType dtype = actual.dtype();
  int reported = 0;
  int64_t mismatches = 0;
  for (int64_t i = 0; i < actual.size(); ++i) {
    bool match;
    if (is_float(dtype)) {
      std::vector<int64_t> index = unravel(i, actual.shape());
      match = floats_match(actual.get(index), expected.get(index), dtype, tolerance);
    } else {
      match = raw_element(actual, i) == raw_element(expected, i);
    }
    if (match) continue;
    ++mismatches;
    if (reported++ < 4) {
      std::string operands;
      for (size_t k = 0; k < inputs_for_report.size(); ++k) {
        const Array& input = inputs_for_report[k];
        if (input.shape() == actual.shape()) {
          operands += " in" + std::to_string(k) + "=" + element_text(input.contiguous(), i);
        }
      }
      ADD_FAILURE() << label << ": element " << i << " compiled " << element_text(actual, i)
                    << " interpreter " << element_text(expected, i) << operands;
    }
  }
  if (mismatches > 4) ADD_FAILURE() << label << ": " << mismatches << " mismatching elements";
  return mismatches == 0;
}

// ---- compiling a graph and checking it ---------------------------------------------------------

struct CompiledRun {
  std::unique_ptr<detail::CompiledGraph> compiled;
  CompileStats stats;
  std::vector<Array> outputs;
};

// The compile path below kiln::compile: passes, schedule, emit, g++, load, run.
inline CompiledRun compile_and_run(const ir::Graph& graph, const std::vector<Array>& inputs,
                                   const Options& options = test_options()) {
  CompiledRun run;
  std::vector<std::vector<int64_t>> strides;
  for (const Array& input : inputs) {
    strides.push_back(input.is_contiguous() ? std::vector<int64_t>{} : input.strides());
  }
  run.compiled = detail::compile_graph(graph, strides, options, run.stats);
  run.compiled->executable->run(inputs, run.outputs);
  return run;
}

// d = d * d - d, `levels` times: each value read twice by the next level (3^levels paths from
// the last value to the first), kept in one kernel; passes that walk expressions as trees never
// finish on it.
inline ir::ValueId read_twice_at_every_level(ir::Builder& b, ir::ValueId d, int levels) {
  for (int level = 0; level < levels; ++level)
    d = b.binary(ir::Op::sub, b.binary(ir::Op::mul, d, d), d);
  return d;
}

// A graph under test: its builder, and per output a label and a tolerance.
class GraphCase {
 public:
  GraphCase() : builder(graph) { builder.set_location("compile_test.cpp:1"); }
  GraphCase(const GraphCase&) = delete;
  GraphCase& operator=(const GraphCase&) = delete;

  ir::ValueId input(DType dtype, const std::vector<int64_t>& shape, Array value) {
    inputs.push_back(std::move(value));
    return builder.parameter(dtype, ir::from_ints(shape));
  }
  ir::ValueId input(Array value) {
    DType dtype = value.dtype();
    std::vector<int64_t> shape = value.shape();
    return input(dtype, shape, std::move(value));
  }
  void output(ir::ValueId value, std::string label) {
    output(value, std::move(label), default_tolerance(graph.node(value).dtype));
  }
  void output(ir::ValueId value, std::string label, Tolerance tolerance) {
    outputs.push_back(value);
    labels.push_back(std::move(label));
    tolerances.push_back(tolerance);
  }

  // Compiles once, runs, and compares every output with the interpreter's.
  CompiledRun check(const Options& options = test_options()) {
    graph.set_outputs(outputs);
    std::vector<Array> expected = ir::interpret(graph, inputs);
    CompiledRun run = compile_and_run(graph, inputs, options);
    EXPECT_EQ(run.outputs.size(), expected.size());
    for (size_t k = 0; k < expected.size() && k < run.outputs.size(); ++k) {
      expect_array_matches(run.outputs[k], expected[k], tolerances[k], labels[k], inputs);
    }
    return run;
  }

  ir::Graph graph;
  ir::Builder builder;
  std::vector<Array> inputs;
  std::vector<ir::ValueId> outputs;
  std::vector<std::string> labels;
  std::vector<Tolerance> tolerances;
};

// Traces `function` (a callable on kiln::Tensor) on parameters shaped like `inputs`, as
// kiln::compile does, so the traced graph can be handed to the interpreter.
template <class F>
std::unique_ptr<detail::Trace> trace_function(F function, const std::vector<Array>& inputs) {
  constexpr size_t arity = detail::arity<std::decay_t<F>>::value;
  detail::TraceFunction traced =
      detail::make_trace_function(function, std::make_index_sequence<arity>{});
  auto trace = std::make_unique<detail::Trace>();
  std::vector<Tensor> parameters;
  for (const Array& input : inputs) parameters.push_back(trace->input(input.dtype(), input.shape()));
  std::vector<ir::ValueId> outputs;
  for (const Tensor& result : traced(parameters)) outputs.push_back(result.id());
  trace->graph.set_outputs(outputs);
  return trace;
}

// Runs the compiled `compiled` and the interpreter on the trace of `function`, and compares
// every output. Returns the compiled outputs.
template <class F>
std::vector<Array> expect_function_matches(const Function& compiled, F function,
                                           const std::vector<Array>& inputs,
                                           const Tolerance& tolerance, const std::string& label) {
  std::vector<Array> actual = compiled(inputs);
  std::unique_ptr<detail::Trace> trace = trace_function(function, inputs);
  std::vector<Array> expected = ir::interpret(trace->graph, inputs);
  EXPECT_EQ(actual.size(), expected.size()) << label;
  for (size_t k = 0; k < actual.size() && k < expected.size(); ++k) {
    expect_array_matches(actual[k], expected[k], tolerance, label + " output " + std::to_string(k));
  }
  return actual;
}

inline std::string describe(DType dtype) { return std::string(dtype_name(dtype)); }

// Occurrences of `needle` in `text`.
inline int count_occurrences(const std::string& text, const std::string& needle) {
  int count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    ++count;
  }
  return count;
}

}  // namespace kiln::test
