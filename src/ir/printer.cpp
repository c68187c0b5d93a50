// The canonical graph text. It keys the compile cache, so it must be deterministic and exact:
// attributes in a fixed order, only those that differ from their defaults, doubles in their
// shortest round-trip form, constant arrays as a content hash (short text, distinct arrays
// print differently).
#include "ir/printer.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <cstdio>

namespace kiln::ir {
namespace {

std::string list_text(const std::vector<int64_t>& values) {
  std::string text = "[";
  for (size_t i = 0; i < values.size(); ++i) text += (i ? ", " : "") + std::to_string(values[i]);
  return text + "]";
}

// Shortest decimal that reads back to the same double; ".0" keeps floats apart from integer
// scalars (3.0 vs 3), and every NaN prints alike since all NaNs compare equal as attributes.
std::string double_text(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
  char buffer[64];
  auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  std::string text(buffer, result.ptr);
  if (text.find_first_not_of("-0123456789") == std::string::npos) text += ".0";
  return text;
}

std::string scalar_text(const Scalar& scalar) {
  return scalar.is_integer ? std::to_string(scalar.i) : double_text(scalar.f);
}

bool is_default_scalar(const Scalar& scalar) {
  double zero = 0;
  // Bitwise: -0.0 is not the default.
  return !scalar.is_integer && scalar.i == 0 && std::memcmp(&scalar.f, &zero, sizeof zero) == 0;
}

std::string hash_text(const std::vector<uint8_t>& bytes) {
  uint64_t hash = 14695981039346656037ull;  // FNV-1a, 64 bit
  for (uint8_t byte : bytes) {
    hash ^= byte;
    hash *= 1099511628211ull;
  }
  char buffer[17];
  std::snprintf(buffer, sizeof buffer, "%016llx", static_cast<unsigned long long>(hash));
  return buffer;
}

const char* pad_mode_name(PadMode mode) {
  switch (mode) {
    case PadMode::Constant: return "constant";
    case PadMode::Edge: return "edge";
    case PadMode::Reflect: return "reflect";
  }
  return "?";
}

}  // namespace

std::string print_attrs(const Node& node) {
  const Attrs& attrs = node.attrs;
  const Attrs defaults;
  std::vector<std::string> fields;
  if (!attrs.axes.empty()) fields.push_back("axes=" + list_text(attrs.axes));
  if (attrs.keepdims) fields.push_back("keepdims=true");
  if (attrs.axis != defaults.axis) fields.push_back("axis=" + std::to_string(attrs.axis));
  if (attrs.index != defaults.index) fields.push_back("index=" + std::to_string(attrs.index));
  if (!attrs.permutation.empty()) fields.push_back("permutation=" + list_text(attrs.permutation));
  if (!attrs.starts.empty()) fields.push_back("starts=" + list_text(attrs.starts));
  if (!attrs.steps.empty()) fields.push_back("steps=" + list_text(attrs.steps));
  if (!attrs.pad_low.empty()) fields.push_back("pad_low=" + list_text(attrs.pad_low));
  if (!attrs.pad_high.empty()) fields.push_back("pad_high=" + list_text(attrs.pad_high));
  if (attrs.pad_mode != defaults.pad_mode) {
    fields.push_back(std::string("pad_mode=") + pad_mode_name(attrs.pad_mode));
  }
  if (attrs.scatter_mode != defaults.scatter_mode) fields.push_back("scatter_mode=add");
  if (!is_default_scalar(attrs.scalar)) fields.push_back("scalar=" + scalar_text(attrs.scalar));
  if (attrs.ddof != defaults.ddof) fields.push_back("ddof=" + std::to_string(attrs.ddof));
  if (attrs.seed != defaults.seed) fields.push_back("seed=" + std::to_string(attrs.seed));
  if (!attrs.strides.empty()) fields.push_back("strides=" + list_text(attrs.strides));
  if (!attrs.padding.empty()) fields.push_back("padding=" + list_text(attrs.padding));
  if (!attrs.dilation.empty()) fields.push_back("dilation=" + list_text(attrs.dilation));
  if (attrs.groups != defaults.groups) fields.push_back("groups=" + std::to_string(attrs.groups));
  if (attrs.relu) fields.push_back("relu");
  if (attrs.descending) fields.push_back("descending");
  if (attrs.causal) fields.push_back("causal");
  if (attrs.extent != defaults.extent) fields.push_back("extent=" + attrs.extent.to_string());
  if (attrs.channels_last) fields.push_back("channels_last");
  if (attrs.filters_last) fields.push_back("filters_last");
  if (attrs.data) {
    fields.push_back("data=<" + std::to_string(attrs.data->size()) + " bytes, fnv1a " +
                     hash_text(*attrs.data) + ">");
  }
  // Regions are indented, so that the graph text stays one unambiguous canonical form.
  auto print_region = [&](const char* name, const Graph& region) {
    std::string body = print_graph(region), indented = "{\n";
    for (size_t start = 0; start < body.size();) {
      size_t end = body.find('\n', start);
      indented += "    " + body.substr(start, end - start) + "\n";
      start = end + 1;
    }
    fields.push_back(name + indented + "  }");
  };
  if (attrs.body) print_region("body=", *attrs.body);
  if (attrs.else_body) print_region("else_body=", *attrs.else_body);
  if (fields.empty()) return "";
  std::string text = "{";
  for (size_t i = 0; i < fields.size(); ++i) text += (i ? ", " : "") + fields[i];
  return text + "}";
}

std::string print_node(const Graph& graph, ValueId id, bool with_location) {
  const Node& node = graph.node(id);
  std::string text = "%" + std::to_string(id) + " = " + std::string(op_name(node.op)) + "(";
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    text += (i ? ", %" : "%") + std::to_string(node.inputs[i]);
  }
  text += ")";
  std::string attrs = print_attrs(node);
  if (!attrs.empty()) text += " " + attrs;
  text += " : " + std::string(dtype_name(node.dtype)) + shape_string(node.shape);
  if (with_location && !node.location.empty()) text += "  # " + node.location;
  return text;
}

std::string print_graph(const Graph& graph, bool with_locations) {
  std::string text;
  // Size symbols and their hints: "sizes s0 ~ 8, s1 ~ 128".
  for (size_t k = 0; k < graph.symbol_hints().size(); ++k) {
    text += (k ? ", s" : "sizes s") + std::to_string(k) + " ~ " +
            std::to_string(graph.symbol_hints()[k]);
  }
  if (!graph.symbol_hints().empty()) text += "\n";
  for (ValueId id = 0; id < graph.size(); ++id) {
    text += print_node(graph, id, with_locations) + "\n";
  }
  text += "return";
  for (size_t i = 0; i < graph.outputs().size(); ++i) {
    text += (i ? ", %" : " %") + std::to_string(graph.outputs()[i]);
  }
  return text + "\n";
}

}  // namespace kiln::ir
