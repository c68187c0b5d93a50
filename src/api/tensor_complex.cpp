// The C++ Tensor API's complex numbers: the parts of a complex tensor and back (the graph's
// complex / real / imag ops), and NumPy's conj and angle on top of them. Real tensors are
// complex numbers with a zero imaginary part, as in NumPy.
#include "api/trace.h"
#include "decompose/helpers.h"
#include "kiln/tensor.h"

namespace kiln {

using decompose::detail::cast_to;
using detail::Trace;
using detail::trace_for;
using detail::wrap;
using ir::Op;
using ir::ValueId;

namespace {

// The float dtype of a complex number's parts made from `dtype` (NumPy: float32 holds the
// 16-bit floats and small integers; the rest need float64).
DType part_dtype(DType dtype) {
  if (is_complex(dtype)) return component_dtype(dtype);
  if (dtype == DType::Float32 || dtype == DType::Float64) return dtype;
  bool small = dtype == DType::Bool || dtype_size(dtype) <= 2;
  return small ? DType::Float32 : DType::Float64;
}

ValueId zeros_like(ir::Builder& builder, ValueId x) {
  return builder.constant(ir::Scalar::of(0), builder.node(x).dtype, builder.node(x).shape);
}

}  // namespace

Tensor complex(const Tensor& real_part, const Tensor& imaginary_part, Where where) {
  Trace& trace = trace_for(real_part, imaginary_part, "complex", where);
  ir::Builder& builder = trace.builder;
  DType part = part_dtype(promote_types(real_part.dtype(), imaginary_part.dtype()));
  ValueId re = cast_to(builder, real_part.id(), part),
          im = cast_to(builder, imaginary_part.id(), part);
  if (builder.node(re).shape != builder.node(im).shape) {
    ir::Shape shape;
    if (!ir::broadcast_shapes(builder.node(re).shape, builder.node(im).shape, shape))
      throw Error(ErrorKind::Value, error_message("complex", builder.location(),
                                                  "the parts' shapes do not broadcast"));
    re = builder.broadcast(re, shape), im = builder.broadcast(im, shape);
  }
  return wrap(trace, builder.complex(re, im));
}

Tensor real(const Tensor& x, Where where) {
  Trace& trace = trace_for(x, "real", where);
  return is_complex(x.dtype()) ? wrap(trace, trace.builder.real(x.id())) : x;
}

Tensor imag(const Tensor& x, Where where) {
  Trace& trace = trace_for(x, "imag", where);
  ir::Builder& builder = trace.builder;
  return wrap(trace, is_complex(x.dtype()) ? builder.imag(x.id()) : zeros_like(builder, x.id()));
}

Tensor conj(const Tensor& x, Where where) {
  Trace& trace = trace_for(x, "conjugate", where);
  ir::Builder& builder = trace.builder;
  if (!is_complex(x.dtype())) return x;
  return wrap(trace,
              builder.complex(builder.real(x.id()), builder.unary(Op::neg, builder.imag(x.id()))));
}

// np.angle: arctan2(imag, real), in float64 for integer input as NumPy computes it.
Tensor angle(const Tensor& x, Where where) {
  Trace& trace = trace_for(x, "angle", where);
  ir::Builder& builder = trace.builder;
  if (is_complex(x.dtype()))
    return wrap(trace, builder.binary(Op::atan2, builder.imag(x.id()), builder.real(x.id())));
  DType part = is_float(x.dtype()) ? x.dtype() : DType::Float64;
  ValueId re = cast_to(builder, x.id(), part);
  return wrap(trace, builder.binary(Op::atan2, zeros_like(builder, re), re));
}

}  // namespace kiln
