// The fuzzer's generator class, shared by fuzz_graph_generator.cpp (inputs, driver),
// fuzz_graph_elementwise.cpp and fuzz_graph_movement.cpp. Internal to the fuzzer.
#pragma once
#include <optional>
#include <random>
#include <vector>

#include "fuzz_graph_generator.h"
#include "ir/builder.h"

namespace kiln::fuzz::detail {


// A generated value with what the tolerance rules need to know about it.
struct Value {
  ir::ValueId id = -1;
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;
  double bound = 0;    // |element| <= bound (integers: may be the type's limit)
  double error = 0;    // floats: absolute error a correct compiler may add
  bool exact = true;   // every correct compiler reproduces it bit for bit
  bool wild = false;   // may hold NaN/Inf: an output only, never an operand
};

// 2^(bits-1) for signed, 2^bits for unsigned types, 1 for bool.
double integer_limit(DType dtype);
// One element of `dtype` from a double (floats) or an int64 (integers wrap, bool is != 0).
void store_element(DType dtype, void* destination, double float_value, int64_t integer_value);

class Generator {
 public:
  Generator(FuzzCase& fuzz_case, uint64_t seed, int subgraph);
  void generate();

 private:
  // randomness
  int64_t uniform(int64_t low, int64_t high);
  double uniform_real(double low, double high);
  bool chance(double probability);
  DType random_dtype();
  template <class T>
  const T& pick(const std::vector<T>& items) {
    return items[static_cast<size_t>(uniform(0, static_cast<int64_t>(items.size()) - 1))];
  }

  // sources
  std::vector<int64_t> random_shape(int max_rank);
  std::vector<int64_t> broadcastable_shape(const std::vector<int64_t>& shape);
  void fill_values(DType dtype, int64_t count, std::vector<double>& floats,
                   std::vector<int64_t>& integers, double& bound);
  Value input(DType dtype, const std::vector<int64_t>& shape);
  Value constant_array(DType dtype, const std::vector<int64_t>& shape);
  Value scalar_constant(DType dtype, double magnitude);
  Value exact_constant(DType dtype, double value);
  Value derived(ir::ValueId id, const Value& like);

  std::optional<Value> random_step();

  // elementwise (fuzz_graph_elementwise.cpp)
  std::optional<Value> unary(const Value& operand);
  std::optional<Value> float_unary(ir::Op op, const Value& operand);
  std::optional<Value> binary(const Value& left);
  std::optional<Value> float_binary(ir::Op op, const Value& left, const Value& right);
  std::optional<Value> where(const Value& operand);
  std::optional<Value> cast(const Value& operand, DType dtype);
  std::optional<Value> partner(const Value& left);
  std::optional<Value> condition(const std::vector<int64_t>& shape);
  void wild(const Value& operand);
  Value guard(const Value& operand, ir::FuzzDomain domain);      // into the op's domain
  Value guard_positive(const Value& operand, double offset);  // abs(x) + offset
  Value guard_tanh(const Value& operand, double scale);        // tanh(x) * scale
  Value finish_float(ir::ValueId id, const Value& like, double bound, double error);

  // reductions, scans and movement (fuzz_graph_movement.cpp)
  std::optional<Value> reduction(const Value& operand);
  // A float sum's bound and error, over `length` elements of `in`.
  static void sum_bounds(Value& result, const Value& in, double length);
  Value sum_last_axis(const Value& in, bool keepdims);
  std::optional<Value> concat_of_sums(const Value& operand);
  std::optional<Value> scan(const Value& operand);
  std::optional<Value> movement(const Value& operand);
  std::optional<Value> gather(const Value& operand);
  std::optional<Value> sort(const Value& operand);
  std::optional<Value> concat(const Value& operand);
  std::vector<int64_t> reshape_target(const std::vector<int64_t>& shape);

  bool fits(const std::vector<int64_t>& shape) const;

  FuzzCase& case_;
  ir::Builder builder_;
  int subgraph_;
  std::mt19937_64 random_;
  int64_t element_limit_ = 1500;
  std::vector<Value> pool_;
  std::vector<Value> wild_;
};

// A float unary op measured on an interval (fuzz_graph_elementwise.cpp).
struct SampledRange {
  double bound = 0;  // max |f| on the interval
  double slope = 0;  // max |f'| on the interval
};
SampledRange sampled_range(ir::Op op, double low, double high);
std::pair<double, double> domain_interval(const Value& in, ir::FuzzDomain domain);

}  // namespace kiln::fuzz::detail
