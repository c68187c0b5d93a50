#include "sched/program_serializer.h"

#include <optional>

#include "ir/byte_stream.h"

namespace kiln::sched {
namespace {

using ir::ByteReader;
using ir::ByteWriter;

constexpr uint32_t kProgramMagic = 0x4b505247;  // "GRPK"
// 5: extern call parameters; 6: operand views; 7: convolution layout parameter
// 10: a reduction's split is its lane count; 11: scatter-adds into disjoint slices
constexpr uint32_t kProgramVersion = 11;
constexpr int kMaxNesting = 256;  // statements nest this deep at most (recursion bound)

void put_expr(ByteWriter& out, const Expr& e) {
  out.put(static_cast<uint8_t>(e.kind));
  out.put(static_cast<uint8_t>(e.dtype));
  out.put(static_cast<uint16_t>(e.op));
  out.put_vector(e.operands);
  out.put(e.buffer);
  out.put(e.variable);
  out.put(e.constant.f);
  out.put(e.constant.i);
  out.put<uint8_t>(e.constant.is_integer);
  out.put(e.seed);
}

void put_loop(ByteWriter& out, const Loop& loop) {
  out.put(loop.variable);
  out.put(loop.extent);
  out.put(loop.begin);
  out.put(loop.end);
}

void put_stmt(ByteWriter& out, const Stmt& s) {
  out.put(static_cast<uint8_t>(s.kind));
  put_loop(out, s.loop);
  out.put(s.guard);
  out.put<uint8_t>(s.parallel);
  out.put<uint8_t>(s.disjoint_adds);
  out.put<uint8_t>(s.vectorize);
  out.put<uint16_t>(static_cast<uint16_t>(s.split_lanes));
  out.put<uint8_t>(s.blocked_sum);
  out.put<uint64_t>(s.reduce_loops.size());
  for (const Loop& loop : s.reduce_loops) put_loop(out, loop);
  out.put<uint64_t>(s.accumulations.size());
  for (const Accumulation& a : s.accumulations) {
    out.put(a.local);
    out.put(static_cast<uint16_t>(a.op));
    out.put(static_cast<uint8_t>(a.dtype));
    out.put(a.value);
    out.put(a.position);
    out.put(a.ddof);
  }
  put_loop(out, s.lanes_loop);
  out.put<uint8_t>(s.accumulate);
  out.put<uint8_t>(s.to_local_array);
  out.put(s.buffer);
  out.put(s.index);
  out.put(s.value);
  out.put<uint64_t>(s.body.size());
  for (const Stmt& child : s.body) put_stmt(out, child);
}

void put_kernel(ByteWriter& out, const Kernel& k) {
  out.put_string(k.name);
  out.put<uint64_t>(k.comments.size());
  for (const std::string& comment : k.comments) out.put_string(comment);
  out.put<uint64_t>(k.exprs.size());
  for (const Expr& e : k.exprs) put_expr(out, e);
  out.put<uint64_t>(k.body.size());
  for (const Stmt& s : k.body) put_stmt(out, s);
  out.put_vector(k.loop_extents);
  out.put<uint64_t>(k.local_dependencies.size());
  for (const auto& loops : k.local_dependencies) out.put_vector(loops);
  out.put<uint64_t>(k.local_arrays.size());
  for (const Kernel::LocalArray& array : k.local_arrays) {
    out.put(static_cast<uint8_t>(array.dtype));
    out.put(array.size);
  }
  out.put_vector(k.buffers_read);
  out.put_vector(k.buffers_written);
  out.put(k.ordered_from);
}

void put_buffer(ByteWriter& out, const Buffer& b, ConstantBytes constants) {
  out.put(static_cast<uint8_t>(b.role));
  out.put(b.number);
  out.put(static_cast<uint8_t>(b.dtype));
  out.put_vector(b.shape);
  out.put_vector(b.strides);
  out.put(b.arena_offset);
  out.put_string(b.name);
  out.put_string(b.origin);
  // 0: no data; 1: the bytes follow; 2: the bytes travel elsewhere.
  uint8_t data = b.constant_data == nullptr ? 0 : constants == ConstantBytes::Included ? 1 : 2;
  out.put(data);
  if (data == 1) out.put_vector(*b.constant_data);
}

size_t operand_count(const Expr& e) {
  switch (e.kind) {
    case ExprKind::Constant:
    case ExprKind::LoopVar:
    case ExprKind::Local:
      return 0;
    case ExprKind::Load:
    case ExprKind::Cast:
    case ExprKind::ArrayLoad:
      return 1;
    case ExprKind::Select:
      return 3;
    case ExprKind::Elementwise:
      return ir::is_elementwise(e.op) ? static_cast<size_t>(ir::op_info(e.op).arity) : SIZE_MAX;
    default:
      return 2;  // index arithmetic and comparison; Random's flat index and key
  }
}

// Reading: every id is checked against what it indexes once the containing object is read.
class ProgramReader {
 public:
  explicit ProgramReader(std::string_view bytes) : in_(bytes, "a serialised program") {}

  Program read() {
    if (in_.get<uint32_t>() != kProgramMagic) in_.fail("not a kiln program");
    if (in_.get<uint32_t>() != kProgramVersion) in_.fail("written by another version of kiln");
    Program p;
    for (uint64_t n = in_.count(8); n-- > 0;) p.buffers.push_back(buffer());
    buffers_ = static_cast<int64_t>(p.buffers.size());
    for (uint64_t n = in_.count(8); n-- > 0;) p.kernels.push_back(kernel());
    for (uint64_t n = in_.count(8); n-- > 0;) {
      Step step;
      step.kind = static_cast<StepKind>(in_.get_in_range<uint8_t>(0, 4, "a step kind"));
      step.kernel = step.kind == StepKind::Kernel
                        ? in_.get_in_range<int32_t>(0, static_cast<int64_t>(p.kernels.size()),
                                                    "a kernel number")
                        : in_.get<int32_t>();
      step.call.op = op();
      step.call.inputs = buffer_ids();
      for (int32_t input : step.call.inputs) step.call.views.push_back(view(p.buffers, input));
      step.call.output = buffer_id();
      step.call.parameters = in_.get_vector<int64_t>();
      step.loop.start = buffer_id();
      step.loop.stop = buffer_id();
      step.loop.start_value = in_.get<int64_t>();
      step.loop.stop_value = in_.get<int64_t>();
      step.loop.step = in_.get<int64_t>();
      step.loop.induction = buffer_id();
      step.loop.condition = buffer_id();
      step.loop.partner = in_.get<int32_t>();
      step.loop.compiled = flag();
      step.loop.parallel = flag();
      step.loop.private_buffers = buffer_ids();
      for (uint64_t pairs = in_.count(8); pairs-- > 0;) {
        int32_t carried = buffer_id();
        step.loop.swaps.emplace_back(carried, buffer_id());
      }
      p.steps.push_back(step);
    }
    check_loops(p);
    p.arena_bytes = in_.get<int64_t>();
    if (p.arena_bytes < 0) in_.fail("a negative arena size");
    p.output_buffers = buffer_ids();
    for (const Buffer& b : p.buffers)
      if (b.role == BufferRole::Intermediate && b.arena_offset > p.arena_bytes)
        in_.fail("an arena offset past the arena");
    if (!in_.at_end()) in_.fail("bytes after the end");
    return p;
  }

 private:
  // The lowest and highest element offsets a strided layout touches (128 bits: no overflow).
  struct Reach {
    __int128 low = 0, high = 0;
    bool empty = false;
  };
  static std::optional<Reach> reach(int64_t offset, const std::vector<int64_t>& shape,
                                    const std::vector<int64_t>& strides) {
    if (shape.size() != strides.size()) return std::nullopt;
    Reach result{offset, offset, false};
    for (size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] < 0) return std::nullopt;
      if (shape[d] == 0) result.empty = true;
      __int128 step = static_cast<__int128>(shape[d] > 0 ? shape[d] - 1 : 0) * strides[d];
      (step < 0 ? result.low : result.high) += step;
    }
    return result;
  }

  // An extern operand's view of its buffer, checked to stay inside it: a damaged entry must not
  // make a library kernel read past the buffer.
  std::optional<StridedView> view(const std::vector<Buffer>& buffers, int32_t input) {
    if (in_.get<uint8_t>() == 0) return std::nullopt;
    StridedView view;
    view.offset = in_.get<int64_t>();
    view.shape = in_.get_vector<int64_t>();
    view.strides = in_.get_vector<int64_t>();
    if (view.shape.size() != view.strides.size()) in_.fail("a view's strides and shape differ");
    if (input < 0) in_.fail("a view of no buffer");
    const Buffer& buffer = buffers[static_cast<size_t>(input)];
    std::optional<Reach> inside = reach(0, buffer.shape, buffer.strides);
    std::optional<Reach> read = reach(view.offset, view.shape, view.strides);
    if (!inside || !read) in_.fail("a negative extent, or shape and strides that differ");
    if (read->empty) return view;
    if (inside->empty || read->low < inside->low || read->high > inside->high)
      in_.fail("a view reaches outside its buffer");
    return view;
  }

  bool flag() { return in_.get_in_range<uint8_t>(0, 2, "a flag"); }

  // Loop steps pair up and nest; bounds and induction variables are int64 0-d buffers; a swap
  // exchanges two intermediates of one type. The executable trusts all of this.
  void check_loops(const Program& p) {
    auto scalar_index = [&](int32_t b) {
      return b >= 0 && p.buffers[static_cast<size_t>(b)].dtype == DType::Int64 &&
             p.buffers[static_cast<size_t>(b)].shape.empty();
    };
    std::vector<int32_t> open;
    for (size_t s = 0; s < p.steps.size(); ++s) {
      const Step& step = p.steps[s];
      if (step.kind == StepKind::LoopBegin) {
        bool bounds = (step.loop.start < 0 || scalar_index(step.loop.start)) &&
                      (step.loop.stop < 0 || scalar_index(step.loop.stop));
        bool condition = step.loop.condition < 0 ||
                         (p.buffers[static_cast<size_t>(step.loop.condition)].dtype == DType::Bool &&
                          p.buffers[static_cast<size_t>(step.loop.condition)].shape.empty());
        if (!bounds || !condition || !scalar_index(step.loop.induction) || step.loop.step == 0)
          in_.fail("a loop with bad bounds");
        open.push_back(static_cast<int32_t>(s));
      } else if (step.kind == StepKind::LoopEnd) {
        if (open.empty() || step.loop.partner != open.back() ||
            p.steps[static_cast<size_t>(open.back())].loop.partner != static_cast<int32_t>(s) ||
            step.loop.induction != p.steps[static_cast<size_t>(open.back())].loop.induction)
          in_.fail("loop steps that do not pair up");
        open.pop_back();
        for (const auto& [carried, next] : step.loop.swaps) {
          if (carried < 0 || next < 0) in_.fail("a swap of no buffer");
          const Buffer& a = p.buffers[static_cast<size_t>(carried)];
          const Buffer& b = p.buffers[static_cast<size_t>(next)];
          if (a.role != BufferRole::Intermediate || b.role != BufferRole::Intermediate ||
              a.dtype != b.dtype || a.shape != b.shape)
            in_.fail("a swap of unlike buffers");
        }
      }
    }
    if (!open.empty()) in_.fail("a loop without an end");
  }
  DType dtype() { return static_cast<DType>(in_.get_in_range<uint8_t>(0, kDTypeCount, "a dtype")); }
  Op op() {
    return static_cast<Op>(
        in_.get_in_range<uint16_t>(0, static_cast<int64_t>(Op::op_count), "an op"));
  }
  int32_t buffer_id() { return in_.get_in_range<int32_t>(-1, buffers_, "a buffer id"); }
  std::vector<int32_t> buffer_ids() {
    std::vector<int32_t> ids;
    for (uint64_t n = in_.count(4); n-- > 0;)
      ids.push_back(in_.get_in_range<int32_t>(0, buffers_, "a buffer id"));
    return ids;
  }
  std::vector<int64_t> extents() {
    std::vector<int64_t> values = in_.get_vector<int64_t>();
    for (int64_t value : values)
      if (value < 0) in_.fail("a negative extent");
    return values;
  }

  Buffer buffer() {
    Buffer b;
    b.role = static_cast<BufferRole>(in_.get_in_range<uint8_t>(0, 4, "a buffer role"));
    b.number = in_.get<int32_t>();
    b.dtype = dtype();
    b.shape = extents();
    b.strides = in_.get_vector<int64_t>();
    if (b.strides.size() != b.shape.size()) in_.fail("strides do not match the shape");
    b.arena_offset = in_.get<int64_t>();
    b.name = in_.get_string();
    b.origin = in_.get_string();
    uint8_t data = in_.get_in_range<uint8_t>(0, 3, "a data flag");
    if (data == 1)
      b.constant_data = std::make_shared<const std::vector<uint8_t>>(in_.get_vector<uint8_t>());
    if (b.role == BufferRole::Constant && data == 0) in_.fail("a constant without data");
    return b;
  }

  Loop loop() {
    Loop l;
    l.variable = in_.get<int32_t>();
    l.extent = in_.get<int64_t>();
    if (l.extent < 0) in_.fail("a negative loop extent");
    l.begin = in_.get<int32_t>();
    l.end = in_.get<int32_t>();
    return l;
  }

  Stmt stmt(const Kernel& k, int depth) {
    if (depth > kMaxNesting) in_.fail("statements nest too deep");
    Stmt s;
    s.kind = static_cast<StmtKind>(in_.get_in_range<uint8_t>(0, 5, "a statement kind"));
    s.loop = loop();
    s.guard = in_.get<int32_t>();
    s.parallel = flag();
    s.disjoint_adds = flag();
    s.vectorize = flag();
    s.split_lanes = in_.get_in_range<uint16_t>(0, 1025, "a lane count");
    if (s.split_lanes & (s.split_lanes - 1)) in_.fail("a lane count that is not a power of two");
    s.blocked_sum = flag();
    for (uint64_t n = in_.count(12); n-- > 0;) s.reduce_loops.push_back(loop());
    for (uint64_t n = in_.count(20); n-- > 0;) {
      Accumulation a;
      a.local = in_.get<int32_t>();
      a.op = op();
      a.dtype = dtype();
      a.value = expr_id(k, -1);
      a.position = expr_id(k, -1);
      a.ddof = in_.get<int64_t>();
      s.accumulations.push_back(a);
    }
    s.lanes_loop = loop();
    s.accumulate = flag();
    s.to_local_array = flag();
    s.buffer = in_.get<int32_t>();
    // Local array ids are checked once the kernel's arrays are read (check_ids).
    bool local = s.to_local_array || s.kind == StmtKind::LocalArray;
    if (s.buffer < (local ? 0 : -1) || (!local && s.buffer >= buffers_))
      in_.fail("a buffer id is out of range");
    s.index = expr_id(k, -1);
    s.value = expr_id(k, -1);
    for (uint64_t n = in_.count(8); n-- > 0;) s.body.push_back(stmt(k, depth + 1));
    return s;
  }

  ExprId expr_id(const Kernel& k, ExprId low) {
    return in_.get_in_range<ExprId>(low, static_cast<int64_t>(k.exprs.size()), "an expression id");
  }

  Kernel kernel() {
    Kernel k;
    k.name = in_.get_string();
    for (uint64_t n = in_.count(8); n-- > 0;) k.comments.push_back(in_.get_string());
    for (uint64_t n = in_.count(8); n-- > 0;) {
      Expr e;
      e.kind = static_cast<ExprKind>(in_.get_in_range<uint8_t>(
          0, static_cast<int64_t>(ExprKind::ArrayLoad) + 1, "an expression kind"));
      e.dtype = dtype();
      e.op = op();
      // Operands come before their users: the emitter's recursion cannot loop.
      for (uint64_t m = in_.count(4); m-- > 0;) e.operands.push_back(expr_id(k, 0));
      if (e.operands.size() != operand_count(e)) in_.fail("an expression has the wrong operands");
      e.buffer = in_.get<int32_t>();
      if (e.kind == ExprKind::Load && (e.buffer < 0 || e.buffer >= buffers_))
        in_.fail("a load from a buffer that does not exist");
      e.variable = in_.get<int32_t>();
      e.constant.f = in_.get<double>();
      e.constant.i = in_.get<int64_t>();
      e.constant.is_integer = flag();
      e.seed = in_.get<uint64_t>();
      k.exprs.push_back(std::move(e));
    }
    // Statements are read before the local arrays they declare; their ids are checked after.
    std::vector<Stmt> body;
    for (uint64_t n = in_.count(8); n-- > 0;) body.push_back(stmt(k, 0));
    k.body = std::move(body);
    k.loop_extents = extents();
    for (uint64_t n = in_.count(8); n-- > 0;)
      k.local_dependencies.push_back(in_.get_vector<int32_t>());
    for (uint64_t n = in_.count(9); n-- > 0;) {
      Kernel::LocalArray array{dtype(), in_.get<int64_t>()};
      if (array.size < 0) in_.fail("a negative local array size");
      k.local_arrays.push_back(array);
    }
    k.buffers_read = buffer_ids();
    k.buffers_written = buffer_ids();
    k.ordered_from = in_.get<int32_t>();
    check_ids(k, k.body);
    return k;
  }

  // Loop variables, locals and local arrays index tables read after the statements.
  void check_ids(const Kernel& k, const std::vector<Stmt>& body) {
    auto expr_ok = [&](ExprId id) { return id >= -1 && id < static_cast<int64_t>(k.exprs.size()); };
    auto loop_ok = [&](const Loop& l) {
      return (l.variable == -1 ||
              (l.variable >= 0 && l.variable < static_cast<int64_t>(k.loop_extents.size()))) &&
             expr_ok(l.begin) && expr_ok(l.end);
    };
    for (const Stmt& s : body) {
      bool ok = loop_ok(s.loop) && loop_ok(s.lanes_loop) && expr_ok(s.guard);
      for (const Loop& l : s.reduce_loops) ok = ok && loop_ok(l);
      for (const Accumulation& a : s.accumulations)
        ok = ok && a.local >= 0 && a.local < static_cast<int64_t>(k.local_dependencies.size()) &&
             a.value >= 0;
      if ((s.to_local_array || s.kind == StmtKind::LocalArray) &&
          s.buffer >= static_cast<int64_t>(k.local_arrays.size()))
        ok = false;
      if (!ok) in_.fail("a statement refers to a loop, local or array that does not exist");
      check_ids(k, s.body);
    }
    for (const Expr& e : k.exprs) {
      bool ok = true;
      if (e.kind == ExprKind::LoopVar)
        ok = e.variable >= 0 && e.variable < static_cast<int64_t>(k.loop_extents.size());
      if (e.kind == ExprKind::Local)
        ok = e.variable >= 0 && e.variable < static_cast<int64_t>(k.local_dependencies.size());
      if (e.kind == ExprKind::ArrayLoad)
        ok = e.buffer >= 0 && e.buffer < static_cast<int64_t>(k.local_arrays.size());
      if (!ok) in_.fail("an expression refers to a loop, local or array that does not exist");
    }
  }

  ByteReader in_;
  int64_t buffers_ = 0;
};

}  // namespace

std::string serialize_program(const Program& p, ConstantBytes constants) {
  ByteWriter out;
  out.put(kProgramMagic);
  out.put(kProgramVersion);
  out.put<uint64_t>(p.buffers.size());
  for (const Buffer& b : p.buffers) put_buffer(out, b, constants);
  out.put<uint64_t>(p.kernels.size());
  for (const Kernel& k : p.kernels) put_kernel(out, k);
  out.put<uint64_t>(p.steps.size());
  for (const Step& step : p.steps) {
    out.put(static_cast<uint8_t>(step.kind));
    out.put(step.kernel);
    out.put(static_cast<uint16_t>(step.call.op));
    out.put_vector(step.call.inputs);
    for (const std::optional<StridedView>& view : step.call.views) {
      out.put<uint8_t>(view.has_value());
      if (!view) continue;
      out.put(view->offset);
      out.put_vector(view->shape);
      out.put_vector(view->strides);
    }
    out.put(step.call.output);
    out.put_vector(step.call.parameters);
    out.put(step.loop.start);
    out.put(step.loop.stop);
    out.put(step.loop.start_value);
    out.put(step.loop.stop_value);
    out.put(step.loop.step);
    out.put(step.loop.induction);
    out.put(step.loop.condition);
    out.put(step.loop.partner);
    out.put<uint8_t>(step.loop.compiled);
    out.put<uint8_t>(step.loop.parallel);
    out.put_vector(step.loop.private_buffers);
    out.put<uint64_t>(step.loop.swaps.size());
    for (const auto& [carried, next] : step.loop.swaps) {
      out.put(carried);
      out.put(next);
    }
  }
  out.put(p.arena_bytes);
  out.put_vector(p.output_buffers);
  return out.take();
}

Program deserialize_program(std::string_view bytes) { return ProgramReader(bytes).read(); }

std::string serialize_kernel(const Kernel& kernel) {
  Kernel code = kernel;
  code.name.clear();
  code.comments.clear();
  ByteWriter out;
  put_kernel(out, code);
  return out.take();
}

}  // namespace kiln::sched
