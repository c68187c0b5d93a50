#include "ir/specialize.h"

#include <memory>
#include <string>

#include "ir/verifier.h"
#include "kiln/error.h"

namespace kiln::ir {
namespace {

[[noreturn]] void size_error(const std::string& message) {
  throw Error(ErrorKind::Value, error_message("", "", message));
}

std::string symbol_name(size_t symbol) { return "s" + std::to_string(symbol); }

Graph specialize_region(const Graph& graph, const std::vector<int64_t>& values) {
  Graph result;
  for (ValueId id = 0; id < graph.size(); ++id) {
    Node node = graph.node(id);
    for (Dim& dim : node.shape) {
      int64_t value = dim.evaluate(values);
      if (value < 0) {
        throw Error(ErrorKind::Value,
                    error_message(std::string(op_name(node.op)), node.location,
                                  "its size " + dim.to_string() + " is " + std::to_string(value) +
                                      " for these inputs"));
      }
      dim = value;
    }
    if (node.op == Op::size) {  // now a number
      node.op = Op::constant;
      node.attrs.scalar = Scalar::of_int(node.attrs.extent.evaluate(values));
      node.attrs.extent = Dim();
    }
    for (auto* region : {&node.attrs.body, &node.attrs.else_body}) {
      if (*region) *region = std::make_shared<const Graph>(specialize_region(**region, values));
    }
    result.append(std::move(node));
  }
  result.set_outputs(graph.outputs());
  return result;
}

}  // namespace

std::vector<int64_t> bind_sizes(const Graph& graph,
                                const std::vector<std::vector<int64_t>>& input_shapes) {
  const std::vector<ValueId>& parameters = graph.inputs();
  if (input_shapes.size() != parameters.size()) {
    size_error("the graph takes " + std::to_string(parameters.size()) + " inputs, got " +
               std::to_string(input_shapes.size()));
  }
  for (size_t i = 0; i < parameters.size(); ++i) {
    if (input_shapes[i].size() != graph.node(parameters[i]).shape.size()) {
      size_error("input " + std::to_string(i) + " has " + std::to_string(input_shapes[i].size()) +
                 " dimensions, expected shape " + shape_string(graph.node(parameters[i]).shape));
    }
  }
  const size_t count = graph.symbol_hints().size();
  std::vector<int64_t> values(count, -1);
  // A dimension that is exactly one symbol gives it its value.
  for (size_t i = 0; i < parameters.size(); ++i) {
    const Shape& shape = graph.node(parameters[i]).shape;
    for (size_t d = 0; d < shape.size(); ++d) {
      const std::vector<SizeTerm>& terms = shape[d].terms();
      if (shape[d].constant_term() != 0 || terms.size() != 1 || terms[0].coefficient != 1 ||
          terms[0].symbols.size() != 1) {
        continue;
      }
      size_t symbol = static_cast<size_t>(terms[0].symbols[0]);
      int64_t size = input_shapes[i][d];
      if (size < 2) {
        size_error("dimension " + std::to_string(d) + " of input " + std::to_string(i) + " is " +
                   std::to_string(size) + ", but the graph has the size symbol " +
                   symbol_name(symbol) + " there, which stands for sizes >= 2");
      }
      if (symbol < count && values[symbol] < 0) values[symbol] = size;
    }
  }
  for (size_t symbol = 0; symbol < count; ++symbol) {
    if (values[symbol] < 0) {
      size_error("the size symbol " + symbol_name(symbol) +
                 " is not a dimension of any input, so no call can give it a value");
    }
  }
  // Then every dimension must agree with the values (s0 twice, 2*s0, constants).
  for (size_t i = 0; i < parameters.size(); ++i) {
    const Shape& shape = graph.node(parameters[i]).shape;
    for (size_t d = 0; d < shape.size(); ++d) {
      if (shape[d].evaluate(values) != input_shapes[i][d]) {
        std::string bound;
        for (size_t symbol = 0; symbol < count; ++symbol) {
          bound += (symbol ? ", " : " with ") + symbol_name(symbol) + " = " +
                   std::to_string(values[symbol]);
        }
        size_error("dimension " + std::to_string(d) + " of input " + std::to_string(i) + " is " +
                   std::to_string(input_shapes[i][d]) + ", expected " + shape[d].to_string() +
                   bound);
      }
    }
  }
  return values;
}

Graph specialize(const Graph& graph, const std::vector<int64_t>& values) {
  if (values.size() != graph.symbol_hints().size()) {
    size_error("the graph has " + std::to_string(graph.symbol_hints().size()) +
               " size symbols, got " + std::to_string(values.size()) + " values");
  }
  Graph result = specialize_region(graph, values);
  // The symbolic graph was verified: what fails now is a size these values break (a slice
  // past its axis), the caller's error.
  try {
    verify(result, "specialize");
  } catch (const Error& error) {
    std::string bound;
    for (size_t k = 0; k < values.size(); ++k)
      bound += (k ? ", " : "") + symbol_name(k) + " = " + std::to_string(values[k]);
    size_error("the sizes " + bound + " do not fit the graph: " + error.what());
  }
  return result;
}

}  // namespace kiln::ir
