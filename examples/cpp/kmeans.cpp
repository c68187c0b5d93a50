// The assignment step of k-means, compiled by kiln: label each 2-D point with its nearest mean.
//
//   kmeans [N]     N points (default 20,000,000) scattered around two means
//
// Written against the installed public API only (kiln/kiln.h), so it doubles as the check that
// an installed kiln is usable from another CMake project (scripts/test_install.sh). The labels
// are compared with a plain C++ loop; the exit status is non-zero on any real mismatch.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <random>
#include <string>
#include <vector>

#include "kiln/kiln.h"

namespace {

constexpr int64_t kDefaultPointCount = 20'000'000;
constexpr int64_t kMeanCount = 2;
constexpr int64_t kDimensions = 2;
constexpr int kTimedRuns = 5;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// Points alternate between two Gaussian blobs so both labels occur in any prefix.
kiln::Array make_points(int64_t count, const std::vector<double>& means) {
  kiln::Array points = kiln::Array::empty(kiln::DType::Float64, {count, kDimensions});
  double* out = points.data_as<double>();
  std::mt19937_64 generator(12345);
  std::normal_distribution<double> noise(0.0, 1.0);
  for (int64_t i = 0; i < count; ++i) {
    const int64_t mean = i % kMeanCount;
    for (int64_t d = 0; d < kDimensions; ++d) {
      out[i * kDimensions + d] = means[mean * kDimensions + d] + noise(generator);
    }
  }
  return points;
}

double distance(const double* point, const double* mean) {
  double sum = 0;
  for (int64_t d = 0; d < kDimensions; ++d) sum += (point[d] - mean[d]) * (point[d] - mean[d]);
  return std::sqrt(sum);
}

// The reference: NumPy's argmin takes the first of equal minima.
std::vector<int64_t> reference_labels(const kiln::Array& points, const std::vector<double>& means) {
  const double* data = points.data_as<double>();
  std::vector<int64_t> labels(static_cast<size_t>(points.shape()[0]));
  for (size_t i = 0; i < labels.size(); ++i) {
    int64_t best = 0;
    double best_distance = distance(data + i * kDimensions, means.data());
    for (int64_t mean = 1; mean < kMeanCount; ++mean) {
      const double candidate = distance(data + i * kDimensions, means.data() + mean * kDimensions);
      if (candidate < best_distance) best = mean, best_distance = candidate;
    }
    labels[i] = best;
  }
  return labels;
}

// A point whose two nearest distances agree to rounding may legitimately get either label once
// the compiled reduction reassociates; only a clear difference is a mismatch.
bool is_near_tie(const double* point, const std::vector<double>& means) {
  std::vector<double> distances;
  for (int64_t mean = 0; mean < kMeanCount; ++mean) {
    distances.push_back(distance(point, means.data() + mean * kDimensions));
  }
  std::sort(distances.begin(), distances.end());
  return distances[1] - distances[0] <= 1e-12 * distances[1];
}

// The labels as int64 whatever the array's layout; the fast path is the expected one.
std::vector<int64_t> labels_as_vector(const kiln::Array& labels) {
  if (labels.dtype() == kiln::DType::Int64 && labels.is_contiguous()) {
    const int64_t* data = labels.data_as<int64_t>();
    return std::vector<int64_t>(data, data + labels.size());
  }
  return labels.to_vector<int64_t>();
}

int64_t parse_count(int argc, char** argv) {
  if (argc < 2) return kDefaultPointCount;
  char* end = nullptr;
  const long long value = std::strtoll(argv[1], &end, 10);
  if (end == argv[1] || *end != '\0' || value <= 0) return -1;
  return value;
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t count = parse_count(argc, argv);
  if (count < 0) {
    std::fprintf(stderr, "usage: %s [number_of_points > 0]\n", argv[0]);
    return 2;
  }
  const std::vector<double> mean_values = {-2.0, -1.0, 3.0, 2.0};  // (k, 2), row-major
  const kiln::Array means = kiln::Array::from_vector(mean_values, {kMeanCount, kDimensions});
  const kiln::Array points = make_points(count, mean_values);

  try {
    // (k, 1, 2) - (N, 2) broadcasts to (k, N, 2); the norm over the last axis gives (k, N)
    // distances and argmin over the means gives (N,) labels, all in one fused kernel.
    kiln::Function assign = kiln::compile([](kiln::Tensor X, kiln::Tensor means) {
      return kiln::argmin(kiln::norm(X - kiln::expand_dims(means, 1), "2", {2}), 0);
    });

    auto start = std::chrono::steady_clock::now();
    std::vector<kiln::Array> outputs = assign(points, means);
    const double first_call_seconds = seconds_since(start);

    std::vector<double> run_seconds;
    for (int run = 0; run < kTimedRuns; ++run) {
      start = std::chrono::steady_clock::now();
      assign.run({points, means}, outputs);
      run_seconds.push_back(seconds_since(start));
    }

    start = std::chrono::steady_clock::now();
    const std::vector<int64_t> expected = reference_labels(points, mean_values);
    const double reference_seconds = seconds_since(start);

    const kiln::Array& labels = outputs.at(0);
    if (labels.shape() != std::vector<int64_t>{count}) {
      std::fprintf(stderr, "kmeans: labels have %d dims and %lld elements, expected (%lld,)\n",
                   labels.ndim(), static_cast<long long>(labels.size()),
                   static_cast<long long>(count));
      return 1;
    }
    const std::vector<int64_t> actual = labels_as_vector(labels);
    int64_t mismatches = 0;
    int64_t near_ties = 0;
    for (int64_t i = 0; i < count; ++i) {
      if (actual[i] == expected[i]) continue;
      if (is_near_tie(points.data_as<double>() + i * kDimensions, mean_values)) {
        ++near_ties;
        continue;
      }
      if (mismatches < 5) {
        std::fprintf(stderr, "kmeans: point %lld: kiln label %lld, reference %lld\n",
                     static_cast<long long>(i), static_cast<long long>(actual[i]),
                     static_cast<long long>(expected[i]));
      }
      ++mismatches;
    }

    std::printf("points:            %lld (float64, %lld means)\n", static_cast<long long>(count),
                static_cast<long long>(kMeanCount));
    std::printf("compile time:      %.3f s (first call %.3f s)\n",
                assign.stats().compile_seconds, first_call_seconds);
    std::printf("run time:          %.2f ms (median of %d)\n", 1e3 * median(run_seconds),
                kTimedRuns);
    std::printf("plain C++ loop:    %.2f ms (one thread)\n", 1e3 * reference_seconds);
    if (near_ties > 0) {
      std::printf("near ties:         %lld (either label accepted)\n",
                  static_cast<long long>(near_ties));
    }
    if (mismatches > 0) {
      std::fprintf(stderr, "kmeans: %lld labels differ from the reference\n",
                   static_cast<long long>(mismatches));
      return 1;
    }
  } catch (const kiln::Error& error) {
    std::fprintf(stderr, "kmeans: kiln error: %s\n", error.what());
    return 1;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "kmeans: %s\n", error.what());
    return 1;
  }
  std::printf("ok\n");
  return 0;
}
