#include "ir/serializer.h"

#include "ir/byte_stream.h"
#include "ir/verifier.h"

namespace kiln::ir {
namespace {

constexpr uint32_t kGraphMagic = 0x4b475248;  // "HRGK"
// 3: cond nodes (else_body); 4: convolution attrs; 5: channels-last convolution
// 8: argsort (Attrs::descending); 9: random keys; 10: attention (Attrs::causal)
// 11: the scans cummax and cummin (the op numbers after them moved)
constexpr uint32_t kGraphVersion = 11;
// Loop bodies nest; deeper nesting than this is refused (a crafted file must not exhaust the
// stack).
constexpr int kMaxLoopDepth = 64;

void put_scalar(ByteWriter& out, const Scalar& scalar) {
  out.put(scalar.f);
  out.put(scalar.i);
  out.put<uint8_t>(scalar.is_integer);
}

Scalar get_scalar(ByteReader& in) {
  Scalar scalar;
  scalar.f = in.get<double>();
  scalar.i = in.get<int64_t>();
  scalar.is_integer = in.get_in_range<uint8_t>(0, 2, "a scalar's integer flag");
  return scalar;
}

void put_dim(ByteWriter& out, const Dim& dim) {
  out.put(dim.constant_term());
  out.put<uint64_t>(dim.terms().size());
  for (const SizeTerm& term : dim.terms()) {
    out.put(term.coefficient);
    out.put_vector(term.symbols);
  }
}

Dim get_dim(ByteReader& in) {
  Dim dim = in.get<int64_t>();
  uint64_t terms = in.count(sizeof(int64_t) * 2);
  for (uint64_t t = 0; t < terms; ++t) {
    Dim term = in.get<int64_t>();
    for (int32_t symbol : in.get_vector<int32_t>()) {
      if (symbol < 0 || symbol >= (1 << 20)) in.fail("a size symbol out of range");
      term = term * Dim::symbol(symbol);
    }
    dim = dim + term;
  }
  return dim;
}

void put_attrs(ByteWriter& out, const Attrs& attrs) {
  out.put_vector(attrs.axes);
  out.put<uint8_t>(attrs.keepdims);
  out.put(attrs.axis);
  out.put(attrs.index);
  out.put_vector(attrs.permutation);
  out.put_vector(attrs.starts);
  out.put_vector(attrs.steps);
  out.put_vector(attrs.pad_low);
  out.put_vector(attrs.pad_high);
  out.put(static_cast<uint8_t>(attrs.pad_mode));
  out.put(static_cast<uint8_t>(attrs.scatter_mode));
  put_scalar(out, attrs.scalar);
  out.put(attrs.ddof);
  out.put(attrs.seed);
  out.put_vector(attrs.strides);
  out.put_vector(attrs.padding);
  out.put_vector(attrs.dilation);
  out.put(attrs.groups);
  // A convolution's layout: 0 channels-first, 1 channels-last, 2 channels-last filters too.
  out.put<uint8_t>(attrs.filters_last ? 2 : attrs.channels_last ? 1 : 0);
  out.put<uint8_t>(attrs.relu);
  out.put<uint8_t>(attrs.descending);
  out.put<uint8_t>(attrs.causal);
  put_dim(out, attrs.extent);
  out.put<uint8_t>(attrs.data != nullptr);
  if (attrs.data) out.put_vector(*attrs.data);
  for (const std::shared_ptr<const Graph>* region : {&attrs.body, &attrs.else_body}) {
    out.put<uint8_t>(*region != nullptr);
    if (*region) out.put_string(serialize_graph(**region));
  }
}

Graph read_graph(std::string_view bytes, int depth);

Attrs get_attrs(ByteReader& in, int depth) {
  Attrs attrs;
  attrs.axes = in.get_vector<int64_t>();
  attrs.keepdims = in.get_in_range<uint8_t>(0, 2, "keepdims");
  attrs.axis = in.get<int64_t>();
  attrs.index = in.get<int64_t>();
  attrs.permutation = in.get_vector<int64_t>();
  attrs.starts = in.get_vector<int64_t>();
  attrs.steps = in.get_vector<int64_t>();
  attrs.pad_low = in.get_vector<int64_t>();
  attrs.pad_high = in.get_vector<int64_t>();
  attrs.pad_mode = static_cast<PadMode>(in.get_in_range<uint8_t>(0, 3, "pad mode"));
  attrs.scatter_mode = static_cast<ScatterMode>(in.get_in_range<uint8_t>(0, 2, "scatter mode"));
  attrs.scalar = get_scalar(in);
  attrs.ddof = in.get<int64_t>();
  attrs.seed = in.get<uint64_t>();
  attrs.strides = in.get_vector<int64_t>();
  attrs.padding = in.get_vector<int64_t>();
  attrs.dilation = in.get_vector<int64_t>();
  attrs.groups = in.get<int64_t>();
  const uint8_t layout = in.get_in_range<uint8_t>(0, 3, "a convolution's layout flag");
  attrs.channels_last = layout != 0;
  attrs.filters_last = layout == 2;
  attrs.relu = in.get_in_range<uint8_t>(0, 2, "a matmul's relu flag");
  attrs.descending = in.get_in_range<uint8_t>(0, 2, "an argsort's descending flag");
  attrs.causal = in.get_in_range<uint8_t>(0, 2, "an attention's causal flag");
  attrs.extent = get_dim(in);
  if (in.get_in_range<uint8_t>(0, 2, "a data flag"))
    attrs.data = std::make_shared<const std::vector<uint8_t>>(in.get_vector<uint8_t>());
  for (std::shared_ptr<const Graph>* region : {&attrs.body, &attrs.else_body}) {
    if (!in.get_in_range<uint8_t>(0, 2, "a body flag")) continue;
    if (depth >= kMaxLoopDepth) in.fail("loops nested too deeply");
    *region = std::make_shared<const Graph>(read_graph(in.get_string(), depth + 1));
  }
  return attrs;
}

std::vector<ValueId> get_ids(ByteReader& in, int64_t limit, const char* name) {
  uint64_t count = in.count(sizeof(ValueId));
  std::vector<ValueId> ids;
  for (uint64_t k = 0; k < count; ++k) ids.push_back(in.get_in_range<ValueId>(0, limit, name));
  return ids;
}

}  // namespace

std::string serialize_graph(const Graph& graph) {
  ByteWriter out;
  out.put(kGraphMagic);
  out.put(kGraphVersion);
  out.put<uint64_t>(graph.nodes().size());
  for (const Node& node : graph.nodes()) {
    out.put(static_cast<uint16_t>(node.op));
    out.put(static_cast<uint8_t>(node.dtype));
    out.put<uint64_t>(node.shape.size());
    for (const Dim& dim : node.shape) put_dim(out, dim);
    out.put_vector(node.inputs);
    put_attrs(out, node.attrs);
    out.put_string(node.location);
  }
  out.put_vector(graph.outputs());
  out.put_vector(graph.symbol_hints());
  return out.take();
}

Graph deserialize_graph(std::string_view bytes) { return read_graph(bytes, 0); }

namespace {

Graph read_graph(std::string_view bytes, int depth) {
  ByteReader in(bytes, "a serialised graph");
  if (in.get<uint32_t>() != kGraphMagic) in.fail("not a kiln graph");
  if (in.get<uint32_t>() != kGraphVersion) in.fail("written by another version of kiln");
  Graph graph;
  uint64_t nodes = in.count(16);
  for (uint64_t id = 0; id < nodes; ++id) {
    Node node;
    node.op = static_cast<Op>(
        in.get_in_range<uint16_t>(0, static_cast<int64_t>(Op::op_count), "an op number"));
    node.dtype = static_cast<DType>(in.get_in_range<uint8_t>(0, kDTypeCount, "a dtype"));
    uint64_t rank = in.count(sizeof(int64_t));
    for (uint64_t d = 0; d < rank; ++d) {
      Dim dim = get_dim(in);
      if (dim.is_constant() && dim.constant() < 0) in.fail("a negative dimension");
      node.shape.push_back(dim);
    }
    node.inputs = get_ids(in, static_cast<int64_t>(id), "an operand id");  // topological order
    node.attrs = get_attrs(in, depth);
    node.location = in.get_string();
    graph.append(std::move(node));
  }
  graph.set_outputs(get_ids(in, static_cast<int64_t>(nodes), "an output id"));
  graph.set_symbol_hints(in.get_vector<int64_t>());
  if (!in.at_end()) in.fail("bytes after the end");
  // A region is verified with the graph that owns it (it uses its owner's size symbols).
  if (depth > 0) return graph;
  try {
    verify(graph, "deserialize_graph");
  } catch (const Error& error) {
    in.fail(error.what());
  }
  return graph;
}

}  // namespace

}  // namespace kiln::ir
