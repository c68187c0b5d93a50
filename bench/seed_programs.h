// The seed programs, written once against kiln's C++ API; the benchmark and the tests use them.
#pragma once
#include <kiln/kiln.h>

namespace kiln::seeds {

// sin(x) + cos(x): call overhead on 0-d arrays, bandwidth on large ones.
inline Tensor sin_cos(Tensor x) { return sin(x) + cos(x); }

// The kmeans assignment step: argmin(norm(X - means[:, None], axis=2), axis=0).
inline Tensor kmeans_step(Tensor X, Tensor means) {
  return argmin(norm(X - expand_dims(means, 1), "2", {2}), 0);
}

// The torch.compile NumPy tutorial's numpy_fn: normalise, broadcast-multiply-sum over the last
// two axes, clip, exp, plus a small regularisation term.
inline Tensor numpy_fn(Tensor X, Tensor Y) {
  Tensor X_mean = mean(X, {0}), X_std = kiln::std(X, {0});
  Tensor Y_mean = mean(Y, {0}), Y_std = kiln::std(Y, {0});
  X_std = where(X_std == 0.0, 1.0, X_std);  // X_std[X_std == 0] = 1
  Y_std = where(Y_std == 0.0, 1.0, Y_std);
  Tensor X_normalized = (X - X_mean) / X_std;
  Tensor Y_normalized = (Y - Y_mean) / Y_std;
  Tensor intermediate =
      sum(expand_dims(X_normalized, 2) * expand_dims(Y_normalized, 1), {-2, -1});
  intermediate = clip(intermediate, -1.0, 1.0);
  Tensor result = exp(intermediate);
  Tensor regularization = 0.001 * sum(square(X_normalized));
  return result + regularization;
}

}  // namespace kiln::seeds
