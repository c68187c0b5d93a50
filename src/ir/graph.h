// The graph IR: typed SSA. A node is one primitive op applied to earlier nodes; the node's index
// is its value's name (%3). Nodes are appended in topological order and never mutated after
// the builder has checked them; passes build new graphs.
//
// Semantics, written down once:
// - dtypes: operands of an elementwise op share one dtype (frontends insert casts); integer
//   arithmetic wraps (two's complement); integer division or modulo by zero gives 0;
//   float16/bfloat16 values are computed in float32 and rounded on store.
// - NaN: maximum/minimum/max/min propagate NaN; fmax/fmin ignore it; argmax/argmin treat NaN as
//   the extreme and return the first occurrence; comparisons with NaN are false (ne: true).
// - indices: gather/scatter indices are wrapped once if negative, then clamped into range.
// - shapes: the node's shape is the result shape; broadcast follows NumPy.
// - aliasing: none. Every value is a fresh logical tensor; views are a scheduler decision.
// - control flow: a `loop` node owns its body, a graph of its own (ir/loop.h), a `cond` node its
//   two regions (ir/cond.h); regions see only their parameters (no implicit capture: the
//   tracer turns captured values into parameters).
#pragma once
#include <cmath>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "ir/ops.h"
#include "ir/shape.h"
#include "kiln/dtype.h"

namespace kiln::ir {

using ValueId = int32_t;
class Graph;

enum class PadMode : uint8_t { Constant, Edge, Reflect };
enum class ScatterMode : uint8_t { Set, Add };

// A scalar constant that keeps integers exact.
struct Scalar {
  double f = 0;
  int64_t i = 0;
  bool is_integer = false;
  static Scalar of(double value) { return {value, 0, false}; }
  static Scalar of_int(int64_t value) { return {0, value, true}; }
  double as_double() const { return is_integer ? double(i) : f; }
  // The same data: -0.0 and 0.0 differ (1 / x tells them apart), so nothing that interns
  // constants by equality merges them; every NaN is alike. (Numeric tests: as_double().)
  bool operator==(const Scalar& o) const {
    if (is_integer != o.is_integer) return false;
    if (is_integer) return i == o.i;
    if (f != f || o.f != o.f) return f != f && o.f != o.f;
    return f == o.f && std::signbit(f) == std::signbit(o.f);
  }
};

// Op parameters. Each op reads only the fields its op_list.h comment names; the rest keep their
// defaults, and the printer prints only the fields that differ from them.
struct Attrs {
  std::vector<int64_t> axes;         // reductions, flip
  bool keepdims = false;             // reductions
  int64_t axis = 0;                  // scans, concat, gather, scatter, iota
  int64_t index = 0;                 // parameter: position among the graph inputs
  std::vector<int64_t> permutation;  // permute
  std::vector<int64_t> starts;       // slice
  std::vector<int64_t> steps;        // slice
  std::vector<int64_t> pad_low;      // pad
  std::vector<int64_t> pad_high;     // pad
  PadMode pad_mode = PadMode::Constant;
  ScatterMode scatter_mode = ScatterMode::Set;
  Scalar scalar;                     // constant, pad (fill value)
  int64_t ddof = 0;                  // var
  uint64_t seed = 0;                 // random_*
  // convolution: one entry per spatial dimension each (padding on both sides, as in torch)
  std::vector<int64_t> strides;
  std::vector<int64_t> padding;
  std::vector<int64_t> dilation;
  int64_t groups = 1;                // convolution: channel groups
  // convolution: input and result are channels-last, (N, *spatial, C), the layout oneDNN
  // computes in (passes/channels_last.cpp); the weight stays (O, C / groups, *kernel).
  bool channels_last = false;
  // convolution (with channels_last): the weight, and the result of convolution_backward_weight,
  // are (O, *kernel, C / groups) too, cuDNN's native filter layout (passes/channels_last.cpp).
  bool filters_last = false;
  // matmul (with a bias, the third operand): a ReLU after the product and bias, which the GPU
  // library applies as its epilogue (passes/matmul_epilogues.cpp).
  bool relu = false;
  bool descending = false;           // argsort: largest first (NaN first)
  bool causal = false;               // attention: query i sees keys j <= i only
  Dim extent;                        // size: the size whose value the node is
  std::shared_ptr<const std::vector<uint8_t>> data;  // constant_array, row-major bytes
  std::shared_ptr<const Graph> body;       // loop: the body region (ir/loop.h); cond: then
  std::shared_ptr<const Graph> else_body;  // cond: the region run when the predicate is false

  bool operator==(const Attrs& other) const;
};

struct Node {
  Op op;
  DType dtype;
  Shape shape;
  std::vector<ValueId> inputs;
  Attrs attrs;
  std::string location;  // the user's file:line, for error messages and generated comments
};

class Graph {
 public:
  // Appends an already-checked node and returns its id. Use the builder (builder.h) instead:
  // it computes the result type and checks the operands.
  ValueId append(Node node);

  const Node& node(ValueId id) const { return nodes_[static_cast<size_t>(id)]; }
  const std::deque<Node>& nodes() const { return nodes_; }
  int size() const { return static_cast<int>(nodes_.size()); }

  // Graph inputs are the parameter nodes, ordered by attrs.index.
  const std::vector<ValueId>& inputs() const { return inputs_; }
  const std::vector<ValueId>& outputs() const { return outputs_; }
  void set_outputs(std::vector<ValueId> outputs) { outputs_ = std::move(outputs); }

  // Makes node `id` the graph input at position `index`, of its dtype and shape (what it
  // computed is dropped): a graph break's cut (python/compiled_bindings.cpp), where the value
  // comes from the segment run before.
  void make_parameter(ValueId id, int64_t index);

  // Users of each node (computed on demand; graphs are small).
  std::vector<std::vector<ValueId>> users() const;

  // Size symbols (ir/shape.h): a new symbol, and each symbol's hint, the size it is expected to
  // take (what decisions that need a number are made for). A region's graph shares its
  // parent's symbols and has none of its own.
  Dim add_symbol(int64_t hint);
  const std::vector<int64_t>& symbol_hints() const { return symbol_hints_; }
  void set_symbol_hints(std::vector<int64_t> hints) { symbol_hints_ = std::move(hints); }

 private:
  std::vector<int64_t> symbol_hints_;
  // A deque: appending keeps every earlier node where it is, so a reference to a node or its
  // shape (b.broadcast(one, b.node(x).shape)) stays valid while the builder adds nodes.
  std::deque<Node> nodes_;
  std::vector<ValueId> inputs_;
  std::vector<ValueId> outputs_;
};

}  // namespace kiln::ir
