// Trace, Tensor and every function of include/kiln/tensor.h, under the same names and argument
// order. The user's location comes from `trace.location` (set by the tracer before each op), not
// from a parameter. Every returned Tensor keeps its first tensor operand alive (keep_alive), and
// through the chain its Trace: a tracer leaked out of a traced function can never point at a
// freed graph.
#include <functional>
#include <limits>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "api/loop_trace.h"
#include "api/runtime_checks.h"
#include "decompose/helpers.h"
#include "ir/ops.h"
#include "ir/printer.h"
#include "kiln/tensor.h"
#include "python/common.h"

namespace kiln::python {

Tensor build_on(const Tensor& x, const std::function<ir::ValueId(ir::Builder&)>& build) {
  detail::Trace& trace = *x.trace();
  trace.builder.set_location(trace.default_location);
  return Tensor(&trace, build(trace.builder));
}

namespace {

// Tensors of `trace` handed to Python: each keeps its trace alive.
nb::list owned_by(nb::handle trace, const std::vector<Tensor>& values) {
  nb::list result;
  for (const Tensor& value : values) {
    nb::object item = nb::cast(value);
    nb::keep_alive_obj(item, trace);
    result.append(item);
  }
  return result;
}

using detail::Trace;

// Two results that keep `x` (and so its Trace) alive, as Keep<1> does for one: a tuple itself
// cannot hold a keep-alive.
nb::tuple pair_keeping(nb::handle x, std::pair<Tensor, Tensor> results) {
  nb::object first = nb::cast(results.first), second = nb::cast(results.second);
  nb::keep_alive_obj(first, x);
  nb::keep_alive_obj(second, x);
  return nb::make_tuple(first, second);
}

const ir::Shape& symbolic_shape(const Tensor& x) { return x.trace()->graph.node(x.id()).shape; }

Tensor reshape_to(const Tensor& x, nb::handle shape) {
  ir::Shape target = shape_from_object(shape);
  if (ir::is_static(target)) return kiln::reshape(x, ir::to_ints(target), kNoWhere);
  return build_on(x, [&](ir::Builder& b) { return b.reshape(x.id(), target); });
}

std::optional<int64_t> optional_index(nb::handle object) {
  if (object.is_none()) return std::nullopt;
  int64_t index = 0;
  if (nb::try_cast<int64_t>(object, index)) return index;
  // A slice bound or step past int64 (x[::2**70]) means what the largest one does, as in
  // NumPy, which clamps them; not nanobind's bare std::bad_cast.
  int overflow = 0;
  PyLong_AsLongLongAndOverflow(object.ptr(), &overflow);
  if (PyErr_Occurred()) PyErr_Clear();
  if (overflow == 0)
    throw Error(ErrorKind::Type, "slice indices must be integers or None or have an __index__ "
                                 "method");
  return overflow > 0 ? std::numeric_limits<int64_t>::max()
                      : -std::numeric_limits<int64_t>::max();
}

// A Python slice or a (start, stop, step) tuple.
Slice slice_from_object(nb::handle object) {
  Slice slice;
  if (PySlice_Check(object.ptr())) {
    slice.start = optional_index(object.attr("start"));
    slice.stop = optional_index(object.attr("stop"));
    std::optional<int64_t> step = optional_index(object.attr("step"));
    slice.step = step.value_or(1);
    return slice;
  }
  nb::tuple items = nb::cast<nb::tuple>(object);
  if (items.size() != 3)
    throw Error(ErrorKind::Type,
                error_message("slice", "", "a slice is a (start, stop, step) tuple"));
  slice.start = optional_index(items[0]);
  slice.stop = optional_index(items[1]);
  slice.step = optional_index(items[2]).value_or(1);
  return slice;
}

Tensor constant_from_array(Trace& trace, nb::handle object) {
  nb::object numpy = nb::module_::import_("numpy");
  // asarray(order="C"), not ascontiguousarray: that one makes 0-d arrays 1-d.
  nb::object contiguous = numpy.attr("asarray")(object, nb::arg("order") = "C");
  auto* array = reinterpret_cast<PyArrayObject*>(contiguous.ptr());
  std::optional<DType> dtype = dtype_of_array(array);
  if (!dtype)
    throw Error(ErrorKind::Type,
                error_message("constant", trace.default_location,
                              "kiln has no dtype for NumPy arrays of " +
                                  nb::cast<std::string>(nb::str(contiguous.attr("dtype")))));
  const auto* bytes = static_cast<const uint8_t*>(PyArray_DATA(array));
  std::vector<uint8_t> data(bytes, bytes + PyArray_NBYTES(array));
  const npy_intp* dims = PyArray_DIMS(array);
  std::vector<int64_t> shape(dims, dims + PyArray_NDIM(array));
  trace.builder.set_location(trace.default_location);
  ir::ValueId id = trace.builder.constant_array(std::move(data), *dtype, ir::from_ints(shape));
  return Tensor(&trace, id);
}

void bind_trace_and_tensor(nb::module_& module) {
  nb::class_<Trace>(module, "Trace", "One graph being recorded.")
      .def(nb::init<>())
      .def(
          "input",
          [](Trace& trace, nb::handle dtype, nb::handle shape) {
            trace.builder.set_location(trace.default_location);
            return Tensor(&trace,
                          trace.builder.parameter(dtype_from_object(dtype), shape_from_object(shape)));
          },
          nb::arg("dtype"), nb::arg("shape"), Keep<1>(),
          "A new graph input, numbered in call order; its shape may hold kiln.Size objects.")
      .def(
          "size_symbol",
          [](Trace& trace, int64_t hint) {
            if (hint < 2) {
              throw Error(ErrorKind::Value, "a size symbol stands for sizes >= 2; its hint is " +
                                                std::to_string(hint));
            }
            return trace.graph.add_symbol(hint);
          },
          nb::arg("hint"),
          "A new size symbol (kiln.Size) for sizes >= 2; `hint` is the size expected most.")
      .def("constant", &constant_from_array, nb::arg("array"), Keep<1>(),
           "Embeds a NumPy array (copied) as a constant.")
      .def_prop_rw(
          "location", [](const Trace& trace) { return trace.default_location; },
          [](Trace& trace, std::string location) { trace.default_location = std::move(location); },
          "The user's file:line stamped on the nodes built next and named in errors.")
      .def_prop_rw(
          "numpy_sizes", [](const Trace& trace) { return trace.builder.count_empty_extents(); },
          [](Trace& trace, bool numpy) { trace.builder.set_count_empty_extents(numpy); },
          "NumPy's size rule: an empty value's other extents still count towards 'array is too "
          "big' (torch allows (0, 2**62)); set by the NumPy front end.")
      .def_prop_ro("node_count", [](const Trace& trace) { return trace.graph.size(); })
      .def("begin_loop_body", &detail::begin_loop_body, nb::arg("start") = nb::none(),
           nb::arg("stop") = nb::none(), nb::arg("step") = 1, Keep<1>(),
           "Opens a loop body (api/loop_trace.h); returns its induction variable. The loop's "
           "bounds, when given, bound the values it takes.")
      .def(
          "loop_placeholder",
          [](Trace& trace, nb::handle dtype, std::vector<int64_t> shape) {
            return detail::loop_placeholder(trace, dtype_from_object(dtype), shape);
          },
          nb::arg("dtype"), nb::arg("shape"), Keep<1>(), "A carried value inside the open body.")
      .def(
          "end_loop",
          [](nb::handle self, const Tensor& start, const Tensor& stop, int64_t step,
             const std::vector<Tensor>& init, const std::vector<Tensor>& results,
             bool while_loop) {
            Trace& trace = nb::cast<Trace&>(self);
            return owned_by(self, detail::end_loop(trace, start, stop, step, init, results,
                                                   while_loop));
          },
          nb::arg("start"), nb::arg("stop"), nb::arg("step"), nb::arg("init"), nb::arg("results"),
          nb::arg("while_loop") = false,
          "Closes the open body as a loop node (while_loop: carried value 0 is the condition); "
          "returns the carried values after the loop.")
      .def("end_cond_side", &detail::end_cond_side, nb::arg("init"), nb::arg("results"),
           "Closes the open body as one side of a branch (api/loop_trace.h).")
      .def(
          "end_cond",
          [](nb::handle self, const Tensor& predicate) {
            return owned_by(self, detail::end_cond(nb::cast<Trace&>(self), predicate));
          },
          nb::arg("predicate"),
          "Makes a cond node of the last two closed sides; returns the carried values after it.")
      .def_prop_ro("cond_side_count", [](const Trace& trace) { return trace.cond_sides.size(); })
      .def(
          "abandon_cond_sides",
          [](Trace& trace, size_t keep) {
            if (keep < trace.cond_sides.size()) trace.cond_sides.resize(keep);
          },
          nb::arg("keep"),
          "Drops the closed sides of branches past the first `keep` (capture gave up on them).")
      .def("abandon_loop_body", &detail::abandon_loop_body,
           "Closes the open body without a loop (capture gave up).")
      .def_prop_ro("check_count", [](const Trace& trace) { return trace.checks.size(); })
      .def(
          "condition_checks",
          [](Trace& trace, size_t first, const Tensor& condition) {
            detail::condition_checks(trace, first, condition.id());
          },
          nb::arg("first"), nb::arg("condition"),
          "Checks recorded from number `first` on apply only where `condition` holds.")
      .def(
          "graph_text",
          [](Trace& trace, const std::vector<Tensor>& outputs) {
            std::vector<ir::ValueId> ids;
            for (const Tensor& output : outputs) ids.push_back(output.id());
            trace.graph.set_outputs(ids);
            return ir::print_graph(trace.graph, true);
          },
          nb::arg("outputs"));

  nb::class_<Tensor>(module, "Tensor", "A symbolic tensor of a Trace.")
      .def_prop_ro("dtype", [](const Tensor& x) { return std::string(dtype_name(x.dtype())); })
      .def_prop_ro("shape", [](const Tensor& x) { return shape_tuple(symbolic_shape(x)); })
      .def_prop_ro("ndim", &Tensor::ndim)
      .def_prop_ro("size", &Tensor::size)
      .def_prop_ro("id", &Tensor::id)
      .def_prop_ro(
          "trace", [](const Tensor& x) { return x.trace(); }, nb::rv_policy::reference,
          "The Trace this tensor belongs to (the same Python object as the one that made it).")
      .def_prop_ro("T", &Tensor::T, Keep<1>())
      .def(
          "astype", [](const Tensor& x, nb::handle dtype) {
            return x.astype(dtype_from_object(dtype), kNoWhere);
          },
          nb::arg("dtype"), Keep<1>())
      .def("reshape", &reshape_to, nb::arg("shape"), Keep<1>())
      .def("__getitem__", [](const Tensor& x, int64_t index) { return x[index]; }, Keep<1>())
      .def("__repr__", [](const Tensor& x) {
        std::string text = "Tensor(%" + std::to_string(x.id()) + ", " +
                           std::string(dtype_name(x.dtype())) + ", (";
        for (const ir::Dim& extent : symbolic_shape(x)) text += extent.to_string() + ",";
        return text + "))";
      });
}

// The op table as Python sees it: (name, public name, kind, promotion, cost, domain) per op,
// so the NumPy front end and the conformance tests are generated from it too.
nb::list op_table() {
  static const char* kKinds[] = {"unary", "binary", "ternary", "reduce", "scan", "structural"};
  static const char* kPromotions[] = {"keep", "math_float", "float64", "bool_to_float"};
  static const char* kCosts[] = {"cheap", "costly", "call"};
  static const char* kDomains[] = {"real", "moderate", "positive", "non_negative",
                                   "above_one", "non_zero", "unit"};
  nb::list rows;
  for (int k = 0; k < static_cast<int>(ir::Op::op_count); ++k) {
    const ir::OpInfo& info = ir::op_info(static_cast<ir::Op>(k));
    rows.append(nb::make_tuple(std::string(info.name), std::string(info.public_name),
                               kKinds[static_cast<int>(info.kind)],
                               kPromotions[static_cast<int>(info.promotion)],
                               kCosts[static_cast<int>(info.cost)],
                               kDomains[static_cast<int>(info.domain)]));
  }
  return rows;
}

void bind_elementwise(nb::module_& module) {
  module.def("op_table", &op_table,
             "(name, public name, kind, promotion, cost, fuzz domain) of every primitive op.");
#define KILN_BIND_UNARY(name) \
  module.def(#name, [](const Tensor& x) { return kiln::name(x, kNoWhere); }, Keep<1>());
#define KILN_BIND_UNARY_OP(op, accepts, result, expression, name, ...) KILN_BIND_UNARY(name)
#define KILN_BIND_BINARY_OP(op, accepts, result, expression, name, ...) KILN_BIND_BINARY(name)
#define KILN_BIND_BINARY(name)                                                                   \
  module.def(#name, [](const Tensor& a, const Tensor& b) { return kiln::name(a, b, kNoWhere); }, \
             Keep<1>());                                                                         \
  module.def(#name, [](const Tensor& a, double b) { return kiln::name(a, b, kNoWhere); },       \
             Keep<1>());                                                                         \
  module.def(#name, [](double a, const Tensor& b) { return kiln::name(a, b, kNoWhere); },       \
             Keep<2>());
  KILN_UNARY_OPS(KILN_BIND_UNARY_OP)
  KILN_FOR_EACH_COMPOSITE_UNARY_FUNCTION(KILN_BIND_UNARY)
  KILN_BINARY_OPS(KILN_BIND_BINARY_OP)
  // Ufuncs that are decompositions (decompose/ufuncs.h): tensors of the loop's dtypes.
#define KILN_BIND_DECOMPOSED_BINARY(name) \
  module.def(#name, [](const Tensor& a, const Tensor& b) { return kiln::name(a, b, kNoWhere); }, Keep<1>());
  KILN_BIND_DECOMPOSED_BINARY(fmod) KILN_BIND_DECOMPOSED_BINARY(logaddexp)
  KILN_BIND_DECOMPOSED_BINARY(logaddexp2) KILN_BIND_DECOMPOSED_BINARY(heaviside)
  KILN_BIND_DECOMPOSED_BINARY(gcd) KILN_BIND_DECOMPOSED_BINARY(lcm)
  KILN_BIND_DECOMPOSED_BINARY(ldexp)
#undef KILN_BIND_DECOMPOSED_BINARY
  KILN_BIND_UNARY(signbit)
  KILN_BIND_UNARY(real) KILN_BIND_UNARY(imag) KILN_BIND_UNARY(conj) KILN_BIND_UNARY(angle)
  module.def("complex", [](const Tensor& re, const Tensor& im) { return kiln::complex(re, im, kNoWhere); },
             Keep<1>());
  module.def("modf", [](nb::handle x) { return pair_keeping(x, kiln::modf(nb::cast<const Tensor&>(x), kNoWhere)); });
  module.def("frexp", [](nb::handle x) { return pair_keeping(x, kiln::frexp(nb::cast<const Tensor&>(x), kNoWhere)); });
#undef KILN_BIND_UNARY_OP
#undef KILN_BIND_BINARY_OP
#undef KILN_BIND_UNARY
#undef KILN_BIND_BINARY

  module.def(
      "gelu", [](const Tensor& x, bool tanh) { return kiln::gelu(x, tanh, kNoWhere); },
      nb::arg("x"), nb::arg("tanh_approximation") = false, Keep<1>());
  module.def(
      "where",
      [](const Tensor& c, const Tensor& a, const Tensor& b) {
        return kiln::where(c, a, b, kNoWhere);
      },
      Keep<1>());
  module.def(
      "where",
      [](const Tensor& c, const Tensor& a, double b) { return kiln::where(c, a, b, kNoWhere); },
      Keep<1>());
  module.def(
      "where",
      [](const Tensor& c, double a, const Tensor& b) { return kiln::where(c, a, b, kNoWhere); },
      Keep<1>());
  module.def(
      "clip",
      [](const Tensor& x, std::optional<double> low, std::optional<double> high) {
        return kiln::clip(x, low, high, kNoWhere);
      },
      nb::arg("x"), nb::arg("low").none(), nb::arg("high").none(), Keep<1>());
  module.def(
      "astype",
      [](const Tensor& x, nb::handle dtype) {
        return kiln::astype(x, dtype_from_object(dtype), kNoWhere);
      },
      nb::arg("x"), nb::arg("dtype"), Keep<1>());
}

void bind_reductions(nb::module_& module) {
#define KILN_BIND_REDUCTION(name)                                                 \
  module.def(                                                                     \
      #name,                                                                      \
      [](const Tensor& x, Axes axis, bool keepdims) {                             \
        return kiln::name(x, std::move(axis), keepdims, kNoWhere);                \
      },                                                                          \
      nb::arg("x"), nb::arg("axis") = Axes{}, nb::arg("keepdims") = false, Keep<1>());
  KILN_BIND_REDUCTION(sum) KILN_BIND_REDUCTION(prod) KILN_BIND_REDUCTION(max)
  KILN_BIND_REDUCTION(min) KILN_BIND_REDUCTION(any) KILN_BIND_REDUCTION(all)
  KILN_BIND_REDUCTION(mean) KILN_BIND_REDUCTION(logsumexp)
#undef KILN_BIND_REDUCTION
  module.def(
      "var",
      [](const Tensor& x, Axes axis, bool keepdims, int64_t ddof) {
        return kiln::var(x, std::move(axis), keepdims, ddof, kNoWhere);
      },
      nb::arg("x"), nb::arg("axis") = Axes{}, nb::arg("keepdims") = false, nb::arg("ddof") = 0,
      Keep<1>());
  module.def(
      "std",
      [](const Tensor& x, Axes axis, bool keepdims, int64_t ddof) {
        return kiln::std(x, std::move(axis), keepdims, ddof, kNoWhere);
      },
      nb::arg("x"), nb::arg("axis") = Axes{}, nb::arg("keepdims") = false, nb::arg("ddof") = 0,
      Keep<1>());
  module.def(
      "argmax",
      [](const Tensor& x, std::optional<int64_t> axis, bool keepdims) {
        return kiln::argmax(x, axis, keepdims, kNoWhere);
      },
      nb::arg("x"), nb::arg("axis").none() = nb::none(), nb::arg("keepdims") = false, Keep<1>());
  module.def(
      "argmin",
      [](const Tensor& x, std::optional<int64_t> axis, bool keepdims) {
        return kiln::argmin(x, axis, keepdims, kNoWhere);
      },
      nb::arg("x"), nb::arg("axis").none() = nb::none(), nb::arg("keepdims") = false, Keep<1>());
  module.def(
      "softmax", [](const Tensor& x, int64_t axis) { return kiln::softmax(x, axis, kNoWhere); },
      nb::arg("x"), nb::arg("axis") = -1, Keep<1>());
  module.def(
      "log_softmax",
      [](const Tensor& x, int64_t axis) { return kiln::log_softmax(x, axis, kNoWhere); },
      nb::arg("x"), nb::arg("axis") = -1, Keep<1>());
  module.def(
      "norm",
      [](const Tensor& x, std::string ord, Axes axis, bool keepdims) {
        return kiln::norm(x, std::move(ord), std::move(axis), keepdims, kNoWhere);
      },
      nb::arg("x"), nb::arg("ord") = "2", nb::arg("axis") = Axes{}, nb::arg("keepdims") = false,
      Keep<1>());
  module.def(
      "masked_mean",
      [](const Tensor& x, const Tensor& mask, Axes axis, bool keepdims) {
        return kiln::masked_mean(x, mask, std::move(axis), keepdims, kNoWhere);
      },
      nb::arg("x"), nb::arg("mask"), nb::arg("axis"), nb::arg("keepdims") = false, Keep<1>());
  module.def(
      "masked_var",
      [](const Tensor& x, const Tensor& mask, Axes axis, bool keepdims, int64_t ddof) {
        return kiln::masked_var(x, mask, std::move(axis), keepdims, ddof, kNoWhere);
      },
      nb::arg("x"), nb::arg("mask"), nb::arg("axis"), nb::arg("keepdims") = false,
      nb::arg("ddof") = 0, Keep<1>());
  module.def(
      "tile", [](const Tensor& x, std::vector<int64_t> reps) { return kiln::tile(x, std::move(reps), kNoWhere); },
      nb::arg("x"), nb::arg("reps"), Keep<1>());
  module.def(
      "repeat",
      [](const Tensor& x, int64_t count, std::optional<int64_t> axis) {
        return kiln::repeat(x, count, axis, kNoWhere);
      },
      nb::arg("x"), nb::arg("count"), nb::arg("axis").none() = nb::none(), Keep<1>());
  module.def(
      "roll",
      [](const Tensor& x, std::vector<int64_t> shifts, Axes axes) {
        return kiln::roll(x, std::move(shifts), std::move(axes), kNoWhere);
      },
      nb::arg("x"), nb::arg("shifts"), nb::arg("axes") = Axes{}, Keep<1>());
  module.def(
      "cumsum", [](const Tensor& x, int64_t axis) { return kiln::cumsum(x, axis, kNoWhere); },
      nb::arg("x"), nb::arg("axis"), Keep<1>());
  module.def(
      "argsort",
      [](const Tensor& x, int64_t axis, bool descending, int64_t k) {
        return kiln::argsort(x, axis, descending, k, kNoWhere);
      },
      nb::arg("x"), nb::arg("axis") = -1, nb::arg("descending") = false, nb::arg("k") = -1,
      Keep<1>(),
      "int64 positions that sort x along axis: stable, NaN last (first when descending); "
      "k >= 0 keeps the first k.");
  module.def(
      "sort",
      [](nb::handle x, int64_t axis, bool descending, int64_t k) {
        return pair_keeping(
            x, kiln::sort(nb::cast<const Tensor&>(x), axis, descending, k, kNoWhere));
      },
      nb::arg("x"), nb::arg("axis") = -1, nb::arg("descending") = false, nb::arg("k") = -1,
      "(values, positions) of one sort of x along axis (see argsort).");
  module.def(
      "take_along_axis",
      [](const Tensor& x, const Tensor& indices, int64_t axis) {
        return kiln::take_along_axis(x, indices, axis, kNoWhere);
      },
      nb::arg("x"), nb::arg("indices"), nb::arg("axis"), Keep<1>());
  module.def(
      "cumprod", [](const Tensor& x, int64_t axis) { return kiln::cumprod(x, axis, kNoWhere); },
      nb::arg("x"), nb::arg("axis"), Keep<1>());
  module.def(
      "cummax", [](const Tensor& x, int64_t axis) { return kiln::cummax(x, axis, kNoWhere); },
      nb::arg("x"), nb::arg("axis"), Keep<1>());
  module.def(
      "cummin", [](const Tensor& x, int64_t axis) { return kiln::cummin(x, axis, kNoWhere); },
      nb::arg("x"), nb::arg("axis"), Keep<1>());
}

void bind_movement(nb::module_& module) {
  module.def(
      "reshape", &reshape_to, nb::arg("x"), nb::arg("shape"), Keep<1>());
  module.def(
      "transpose",
      [](const Tensor& x, Axes permutation) {
        return kiln::transpose(x, std::move(permutation), kNoWhere);
      },
      nb::arg("x"), nb::arg("permutation") = Axes{}, Keep<1>());
  module.def(
      "expand_dims",
      [](const Tensor& x, int64_t axis) { return kiln::expand_dims(x, axis, kNoWhere); },
      nb::arg("x"), nb::arg("axis"), Keep<1>());
  module.def(
      "squeeze",
      [](const Tensor& x, Axes axis) { return kiln::squeeze(x, std::move(axis), kNoWhere); },
      nb::arg("x"), nb::arg("axis") = Axes{}, Keep<1>());
  module.def(
      "broadcast_to",
      [](const Tensor& x, nb::handle shape) {
        ir::Shape target = shape_from_object(shape);
        if (ir::is_static(target)) return kiln::broadcast_to(x, ir::to_ints(target), kNoWhere);
        return build_on(x, [&](ir::Builder& b) { return b.broadcast(x.id(), target); });
      },
      nb::arg("x"), nb::arg("shape"), Keep<1>());
  module.def(
      "slice",
      [](const Tensor& x, nb::sequence slices) {
        std::vector<Slice> converted;
        for (nb::handle item : slices) converted.push_back(slice_from_object(item));
        return kiln::slice(x, std::move(converted), kNoWhere);
      },
      nb::arg("x"), nb::arg("slices"), Keep<1>());
  module.def(
      "slice_sizes",
      [](const Tensor& x, std::vector<int64_t> starts, nb::handle stops,
         std::vector<int64_t> steps) {
        ir::Shape ends = shape_from_object(stops);
        return build_on(x, [&](ir::Builder& b) { return b.slice_to(x.id(), starts, ends, steps); });
      },
      nb::arg("x"), nb::arg("starts"), nb::arg("stops"), nb::arg("steps"), Keep<1>(),
      "Per dimension start:stop:step where stops (and x's shape) may hold kiln.Size objects: "
      "start: and start:stop with step 1 there (ir::Builder::slice).");
  module.def(
      "pad",
      [](const Tensor& x, std::vector<std::pair<int64_t, int64_t>> widths, std::string mode,
         double value) {
        return kiln::pad(x, std::move(widths), std::move(mode), value, kNoWhere);
      },
      nb::arg("x"), nb::arg("widths"), nb::arg("mode") = "constant", nb::arg("value") = 0.0,
      Keep<1>());
  module.def(
      "concatenate",
      [](const std::vector<Tensor>& xs, int64_t axis) {
        return kiln::concatenate(xs, axis, kNoWhere);
      },
      nb::arg("xs"), nb::arg("axis") = 0, Keep<1>());
  module.def(
      "stack",
      [](const std::vector<Tensor>& xs, int64_t axis) { return kiln::stack(xs, axis, kNoWhere); },
      nb::arg("xs"), nb::arg("axis") = 0, Keep<1>());
  module.def(
      "flip", [](const Tensor& x, Axes axis) { return kiln::flip(x, std::move(axis), kNoWhere); },
      nb::arg("x"), nb::arg("axis") = Axes{}, Keep<1>());
}

}  // namespace

void bind_tensor(nb::module_& module) {
  bind_sizes(module);
  bind_trace_and_tensor(module);
  bind_elementwise(module);
  bind_reductions(module);
  bind_movement(module);
  bind_indexing(module);
  bind_linear_algebra_and_creation(module);
  bind_library_ops(module);
}

}  // namespace kiln::python
