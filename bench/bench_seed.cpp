// bench_seed: the seed programs through kiln's C++ API, side by side with eager NumPy in the
// same run (bench/numpy_seed.py, run as a child process on the same sizes).
//
//   build/bench_seed [--quick] [--json FILE] [--python PATH]
//
// For each program: kiln's median time, NumPy's, the speed-up, cold compile time (empty disk
// cache) and warm compile time (a fresh process that finds the binary in the disk cache), and
// a correctness check against a plain C++ loop; a wrong result is reported, never timed.
#include <kiln/kiln.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "seed_programs.h"

namespace {

using Clock = std::chrono::steady_clock;
double seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double median_time(const std::function<void()>& fn, int repeats) {
  fn();
  std::vector<double> times;
  for (int r = 0; r < repeats; ++r) {
    auto start = Clock::now();
    fn();
    times.push_back(seconds(start));
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

struct Sizes {
  int64_t kmeans_points = 20'000'000;
  int64_t rows = 1024, cols = 640;
  int64_t sin_cos_elements = 16'000'000;
  int repeats = 7;
};

struct Workload {
  std::string name;
  std::function<kiln::Function(kiln::Options)> make;
  std::vector<kiln::Array> inputs;
  std::function<bool(const kiln::Array&)> check;
};

std::vector<Workload> workloads(const Sizes& s) {
  std::mt19937_64 rng(0);
  std::normal_distribution<double> normal;
  std::vector<Workload> result;
  for (kiln::DType dtype : {kiln::DType::Float64, kiln::DType::Float32}) {
    bool f64 = dtype == kiln::DType::Float64;
    kiln::Array X = kiln::Array::empty(dtype, {s.kmeans_points, 2});
    kiln::Array means = kiln::Array::empty(dtype, {2, 2});
    for (int64_t i = 0; i < 2 * s.kmeans_points; ++i) {
      double v = normal(rng) + (i / 2 % 2 ? 3.0 : 0.0);
      f64 ? void(X.data_as<double>()[i] = v) : void(X.data_as<float>()[i] = float(v));
    }
    double m[4] = {0, 0, 3, 3};
    for (int i = 0; i < 4; ++i) f64 ? void(means.data_as<double>()[i] = m[i]) : void(means.data_as<float>()[i] = float(m[i]));
    result.push_back({std::string("kmeans_") + (f64 ? "float64" : "float32"),
                      [](kiln::Options o) { return kiln::compile(kiln::seeds::kmeans_step, o); },
                      {X, means},
                      [X, means, f64](const kiln::Array& labels) {
                        const int64_t* l = labels.data_as<int64_t>();
                        int64_t n = X.shape()[0], wrong = 0;
                        for (int64_t i = 0; i < n; ++i) {
                          double d[2];
                          for (int k = 0; k < 2; ++k) {
                            double a = f64 ? X.data_as<double>()[2 * i] : X.data_as<float>()[2 * i];
                            double b = f64 ? X.data_as<double>()[2 * i + 1] : X.data_as<float>()[2 * i + 1];
                            a -= k * 3.0, b -= k * 3.0;
                            d[k] = a * a + b * b;
                          }
                          bool tie = std::abs(d[0] - d[1]) <= 1e-5 * (d[0] + d[1]);
                          if (!tie && l[i] != (d[1] < d[0] ? 1 : 0)) ++wrong;
                        }
                        return wrong == 0;
                      }});
  }
  {
    kiln::Array X = kiln::Array::empty(kiln::DType::Float64, {s.rows, s.cols});
    kiln::Array Y = kiln::Array::empty(kiln::DType::Float64, {s.rows, s.cols});
    for (int64_t i = 0; i < s.rows * s.cols; ++i) {
      X.data_as<double>()[i] = normal(rng) * 0.05;
      Y.data_as<double>()[i] = normal(rng) * 0.05;
    }
    result.push_back({"numpy_fn", [](kiln::Options o) { return kiln::compile(kiln::seeds::numpy_fn, o); },
                      {X, Y},
                      [X, Y](const kiln::Array& out) {
                        // Reference: the same maths in plain loops (sum over a, b factorised).
                        int64_t n = X.shape()[0], c = X.shape()[1];
                        auto normalised = [&](const kiln::Array& A) {
                          std::vector<double> mean(c, 0), var(c, 0), An(n * c);
                          const double* a = A.data_as<double>();
                          for (int64_t i = 0; i < n; ++i) for (int64_t j = 0; j < c; ++j) mean[j] += a[i * c + j];
                          for (auto& v : mean) v /= double(n);
                          for (int64_t i = 0; i < n; ++i) for (int64_t j = 0; j < c; ++j) var[j] += std::pow(a[i * c + j] - mean[j], 2);
                          for (int64_t j = 0; j < c; ++j) { double sd = std::sqrt(var[j] / double(n)); var[j] = sd == 0 ? 1 : sd; }
                          for (int64_t i = 0; i < n; ++i) for (int64_t j = 0; j < c; ++j) An[i * c + j] = (a[i * c + j] - mean[j]) / var[j];
                          return An;
                        };
                        std::vector<double> Xn = normalised(X), Yn = normalised(Y);
                        double reg = 0;
                        for (double v : Xn) reg += v * v;
                        reg *= 0.001;
                        for (int64_t i = 0; i < n; ++i) {
                          double sx = 0, sy = 0;
                          for (int64_t j = 0; j < c; ++j) sx += Xn[i * c + j], sy += Yn[i * c + j];
                          double expected = std::exp(std::clamp(sx * sy, -1.0, 1.0)) + reg;
                          double got = out.data_as<double>()[i];
                          if (!(std::abs(got - expected) <= 1e-6 * std::abs(expected) + 1e-9)) return false;
                        }
                        return true;
                      }});
  }
  {
    kiln::Array x = kiln::Array::empty(kiln::DType::Float32, {s.sin_cos_elements});
    for (int64_t i = 0; i < s.sin_cos_elements; ++i) x.data_as<float>()[i] = float(normal(rng));
    auto check = [x](const kiln::Array& out) {
      for (int64_t i = 0; i < x.size(); i += 97) {
        float v = x.data_as<float>()[i];
        if (std::abs(out.data_as<float>()[i] - (std::sin(v) + std::cos(v))) > 1e-5f) return false;
      }
      return true;
    };
    result.push_back({"sin_cos_large", [](kiln::Options o) { return kiln::compile(kiln::seeds::sin_cos, o); }, {x}, check});
    kiln::Array x0 = kiln::Array::empty(kiln::DType::Float64, {});
    x0.data_as<double>()[0] = 0.5;
    result.push_back({"sin_cos_0d", [](kiln::Options o) { return kiln::compile(kiln::seeds::sin_cos, o); }, {x0},
                      [](const kiln::Array& out) { return std::abs(out.data_as<double>()[0] - (std::sin(0.5) + std::cos(0.5))) < 1e-12; }});
  }
  return result;
}

// Multi-threaded memcpy of n floats: the bandwidth roof for sin+cos (same bytes moved).
double copy_time(int64_t n, int repeats) {
  std::vector<float> src(static_cast<size_t>(n), 1.0f), dst(static_cast<size_t>(n));
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  return median_time([&] {
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        int64_t begin = n * t / threads, end = n * (t + 1) / threads;
        std::memcpy(dst.data() + begin, src.data() + begin, sizeof(float) * size_t(end - begin));
      });
    for (auto& th : pool) th.join();
  }, repeats);
}

std::string run_capture(const std::string& command) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return out;
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof buffer, pipe)) out.append(buffer, n);
  pclose(pipe);
  return out;
}

double json_number(const std::string& json, const std::string& key) {
  size_t at = json.find("\"" + key + "\"");
  if (at == std::string::npos) return NAN;
  return std::atof(json.c_str() + json.find(':', at) + 1);
}

}  // namespace

int main(int argc, char** argv) {
  Sizes sizes;
  std::string json_path, python = std::filesystem::exists(".venv/bin/python") ? ".venv/bin/python" : "python3";
  std::string compile_only, cache_dir;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--quick") sizes = {20'000, 64, 32, 100'000, 2};
    else if (arg == "--json" && i + 1 < argc) json_path = argv[++i];
    else if (arg == "--python" && i + 1 < argc) python = argv[++i];
    else if (arg == "--compile-only" && i + 2 < argc) compile_only = argv[++i], cache_dir = argv[++i];
  }
  if (!compile_only.empty()) {  // child: time one compile that should hit the disk cache
    sizes = {16, 4, 4, 16, 1};
    for (Workload& w : workloads(sizes)) {
      if (w.name != compile_only) continue;
      kiln::Options options;
      options.cache_dir = cache_dir;
      auto start = Clock::now();
      kiln::Function f = w.make(options);
      f(w.inputs);
      std::printf("%.6f %d\n", seconds(start), f.stats().disk_hits);
    }
    return 0;
  }
  if (std::string(argv[0]).find("quick") != std::string::npos) sizes = {20'000, 64, 32, 100'000, 2};

  char numpy_sizes[256];
  std::snprintf(numpy_sizes, sizeof numpy_sizes,
                "'{\"kmeans_points\": %ld, \"numpy_fn_shape\": [%ld, %ld], \"sin_cos_elements\": %ld, \"repeats\": %d}'",
                long(sizes.kmeans_points), long(sizes.rows), long(sizes.cols), long(sizes.sin_cos_elements),
                std::min(sizes.repeats, 3));
  std::string numpy = run_capture(python + " bench/numpy_seed.py " + numpy_sizes + " 2>/dev/null");

  std::string base = (std::filesystem::temp_directory_path() / ("kiln_bench_" + std::to_string(getpid()))).string();
  std::printf("%-16s %12s %12s %9s %12s %12s %s\n", "workload", "kiln", "numpy", "speedup", "compile cold",
              "compile warm", "check");
  std::string json = "{";
  for (Workload& w : workloads(sizes)) {
    kiln::Options options;
    options.cache_dir = base + "/" + w.name;
    auto start = Clock::now();
    kiln::Function f = w.make(options);
    std::vector<kiln::Array> outputs;
    f.run(w.inputs, outputs);
    double cold = seconds(start);
    bool ok = w.check(outputs[0]);
    double t = NAN;
    if (ok) {
      if (w.name == "sin_cos_0d") {
        const int calls = 20000;
        std::vector<kiln::Array> out;
        f.run(w.inputs, out);
        auto s = Clock::now();
        for (int c = 0; c < calls; ++c) f.run(w.inputs, out);
        t = seconds(s) / calls;
      } else {
        t = median_time([&] { f.run(w.inputs, outputs); }, sizes.repeats);
      }
    }
    // The warm-cache compile, measured in a fresh process on tiny inputs of the same program.
    std::string warm_text = run_capture(std::string(argv[0]) + " --compile-only " + w.name + " " + options.cache_dir + "_small");
    warm_text = run_capture(std::string(argv[0]) + " --compile-only " + w.name + " " + options.cache_dir + "_small");
    double warm = std::atof(warm_text.c_str());
    double np = json_number(numpy, w.name);
    auto unit = [](double s) {
      char text[32];
      if (std::isnan(s)) return std::string("-");
      if (s < 1e-3) std::snprintf(text, sizeof text, "%.2f us", s * 1e6);
      else std::snprintf(text, sizeof text, "%.2f ms", s * 1e3);
      return std::string(text);
    };
    std::printf("%-16s %12s %12s %8.1fx %12s %12s %s\n", w.name.c_str(), unit(t).c_str(), unit(np).c_str(),
                np / t, unit(cold).c_str(), unit(warm).c_str(), ok ? "ok" : "WRONG RESULT");
    char entry[512];
    std::snprintf(entry, sizeof entry,
                  "%s\"%s\": {\"kiln_s\": %g, \"numpy_s\": %g, \"compile_cold_s\": %g, \"compile_warm_s\": %g, \"ok\": %s, \"kernels\": %d}",
                  json.size() > 1 ? ", " : "", w.name.c_str(), t, np, cold, warm, ok ? "true" : "false", f.stats().kernels);
    json += entry;
    if (w.name == "sin_cos_large") {
      double copy = copy_time(sizes.sin_cos_elements, sizes.repeats);
      std::printf("%-16s %12s   (sin+cos reaches %.0f%% of memcpy bandwidth)\n", "memcpy", unit(copy).c_str(),
                  100 * copy / t);
      std::snprintf(entry, sizeof entry, ", \"memcpy\": {\"seconds\": %g, \"sin_cos_fraction\": %g}", copy, copy / t);
      json += entry;
    }
    if (!ok) {
      std::filesystem::remove_all(base);
      std::printf("FAILED: %s gave a wrong result\n", w.name.c_str());
      return 1;
    }
  }
  json += "}\n";
  std::filesystem::remove_all(base);
  for (auto& entry : std::filesystem::directory_iterator(std::filesystem::temp_directory_path()))
    if (entry.path().filename().string().rfind("kiln_bench_" + std::to_string(getpid()), 0) == 0)
      std::filesystem::remove_all(entry.path());
  if (!json_path.empty()) {
    FILE* file = std::fopen(json_path.c_str(), "w");
    if (file) std::fputs(json.c_str(), file), std::fclose(file);
  }
  return 0;
}
