#include "runtime/toolchain.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "kiln/error.h"
#include "runtime/cache_root.h"
#include "runtime/disk_cache.h"
#include "runtime/interruptible_work.h"
#include "runtime/private_files.h"
#include "runtime/process.h"

namespace kiln::runtime {
namespace {

// The absolute path of `program` (a name looked up on PATH, or a path), or "" if none.
std::string resolve_program(const std::string& program) {
  if (program.empty()) return "";
  if (program.find('/') != std::string::npos) {
    if (!is_executable_file(program)) return "";
    if (program[0] == '/') return program;
    char working_directory[4096];
    if (getcwd(working_directory, sizeof working_directory) == nullptr) return "";
    return std::string(working_directory) + "/" + program;
  }
  const char* path_variable = getenv("PATH");
  std::string search_path = path_variable ? path_variable : "/usr/local/bin:/usr/bin:/bin";
  std::stringstream directories(search_path);
  std::string directory;
  while (std::getline(directories, directory, ':')) {
    if (directory.empty()) directory = ".";
    std::string candidate = directory + "/" + program;
    if (is_executable_file(candidate)) return resolve_program(candidate);
  }
  return "";
}

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

std::string first_lines(const std::string& text, int line_limit) {
  size_t position = 0;
  for (int line = 0; line < line_limit && position < text.size(); ++line) {
    size_t end = text.find('\n', position);
    if (end == std::string::npos) return text;
    position = end + 1;
  }
  if (position >= text.size()) return text;
  return text.substr(0, position) + "... (compiler output truncated)\n";
}

std::string cpu_feature_flags() {
  FILE* cpuinfo = fopen("/proc/cpuinfo", "r");
  if (cpuinfo == nullptr) return "";
  std::string flags;
  char line[8192];
  while (fgets(line, sizeof line, cpuinfo) != nullptr) {
    if (strncmp(line, "flags", 5) == 0) {
      flags = line;
      break;
    }
  }
  fclose(cpuinfo);
  return flags;
}

// -march=native is resolved inside the compiler, so the flags alone do not say what code the
// cache holds. The compiler's resolved target options name the CPU (-march=znver3) AND every
// ISA extension it enabled; a -march name alone misses e.g. AVX-512 on a CPU GCC 12 calls
// znver3. The whole listing is hashed; the -march line is kept readable.
std::string host_target_fingerprint(const std::string& compiler) {
  ProcessResult listing = run_process({compiler, "-march=native", "-Q", "--help=target"});
  std::string march_line;
  std::stringstream lines(listing.output);
  std::string line;
  while (std::getline(lines, line)) {
    size_t start = line.find_first_not_of(" \t");
    if (start != std::string::npos && line.compare(start, 7, "-march=") == 0) {
      march_line = line.substr(start);
    }
  }
  // Drop the spaces and tabs GCC aligns its columns with: "-march=znver3".
  std::string readable;
  for (char character : march_line) {
    if (character != '\t' && character != ' ') readable += character;
  }
  if (listing.exit_status == 0 && !readable.empty()) {
    return "target " + readable + " options-hash " + fnv1a_64_hex(listing.output);
  }
  // Compilers without -Q --help=target (clang): the CPU's feature flags stand in for what
  // -march=native will pick.
  return "target cpu-flags-hash " + fnv1a_64_hex(cpu_feature_flags());
}


// What probing the toolchain found: each a yes/no answer, so that a warm start runs no process.
struct ProbeFindings {
  bool mvec = false;     // libmvec is on the library path (link_flags)
  bool wrapper = false;  // the driver takes `-wrapper setpriv,--pdeathsig,KILL` (driver_wrapper)
  bool gold = false;     // -fuse-ld=gold links a shared object with the link flags (link_flags)
};

// The probe memo remembers what probing found, never a command-line flag or a path: a planted
// memo can at worst claim libmvec, the wrapper or gold is (not) there, and the link then fails
// or is slower, nothing else runs (the wrapper is setpriv as found on PATH, never the memo's).
// Line 1 "kiln-toolchain-memo 3", then "mvec 0|1", "wrapper 0|1", "gold 0|1", then the
// identity. Read only if it is a private file (runtime/private_files.h); else probed again.
constexpr const char* kMemoHeader = "kiln-toolchain-memo 3\n";
constexpr size_t kMaxMemoBytes = 64 << 10;  // a few lines; anything bigger was not kiln's
constexpr const char* kMemoBits[] = {"mvec", "wrapper", "gold"};

bool* finding(ProbeFindings& findings, int bit) {
  bool* bits[] = {&findings.mvec, &findings.wrapper, &findings.gold};
  return bits[bit];
}

bool read_probe_memo(const std::string& path, ProbeFindings& findings, std::string& identity) {
  Descriptor file = open_private_file(path);
  std::string text;
  if (!file.valid() || !read_all(file.get(), text, kMaxMemoBytes)) return false;
  size_t position = std::strlen(kMemoHeader);
  if (text.compare(0, position, kMemoHeader) != 0 || text.back() != '\n') return false;
  for (int bit = 0; bit < 3; ++bit) {
    const std::string name = std::string(kMemoBits[bit]) + " ";
    if (text.compare(position, name.size(), name) != 0) return false;
    position += name.size();
    if (text.compare(position, 2, "0\n") != 0 && text.compare(position, 2, "1\n") != 0)
      return false;
    *finding(findings, bit) = text[position] == '1';
    position += 2;
  }
  if (text.size() < position + 16) return false;
  identity = text.substr(position);
  return true;
}

void write_probe_memo(const std::string& directory, const std::string& path,
                      ProbeFindings findings, const std::string& identity) {
  // Into the default cache as kiln left it (kiln's own: cache_root.h), never creating
  // it: a process with the disk cache off, or with its cache elsewhere, writes nothing under
  // the user's home, nor among the user's files where KILN_CACHE_DIR names a project.
  if (!is_private_directory(directory)) return;
  std::string text = kMemoHeader;
  for (int bit = 0; bit < 3; ++bit)
    text += std::string(kMemoBits[bit]) + (*finding(findings, bit) ? " 1\n" : " 0\n");
  try {
    if (!claim_cache_root(directory)) return;
    write_private_file(path, text + identity);
  } catch (const Error&) {
    // No usable cache directory: the next process probes again; the cache itself reports it.
  }
}

// gold links a kernel library faster than the default BFD linker (BERT: 43 -> 36 ms); used
// where it links a shared object with the other link flags, else the default linker.
std::vector<std::string> link_flags(const ProbeFindings& findings) {
  std::vector<std::string> flags;
  if (findings.gold) flags.push_back("-fuse-ld=gold");
  if (findings.mvec) flags.push_back("-lmvec");
  flags.push_back("-lm");
  return flags;
}

// `-wrapper setpriv,--pdeathsig,KILL`: GCC's driver then starts cc1plus, as and collect2
// through setpriv, which asks the kernel to kill each when the driver dies, as the driver does
// when kiln dies (process.h): a killed kiln stops the whole compile instead of leaving it to
// run on. Only where the compiler takes -wrapper (GCC, not clang) and setpriv has --pdeathsig
// (util-linux 2.33); {} where `setpriv` is "" (not found) or has a comma in its path.
std::vector<std::string> driver_wrapper_flags(const std::string& setpriv) {
  if (setpriv.empty() || setpriv.find(',') != std::string::npos) return {};
  return {"-wrapper", setpriv + ",--pdeathsig,KILL"};
}

// Probes `compiler` (with `compile` flags) for each finding: a few runs of it, once per memo.
ProbeFindings probe_toolchain(const std::string& compiler, const std::vector<std::string>& compile,
                              const std::vector<std::string>& wrapper) {
  ProbeFindings findings;
  // libmvec holds the vector math variants; without it `omp declare simd` math cannot link.
  // `-print-file-name` echoes the bare name back when the library is not on the search path.
  ProcessResult mvec = run_process({compiler, "-print-file-name=libmvec.so"});
  findings.mvec = mvec.exit_status == 0 && first_line(mvec.output).find('/') != std::string::npos;
  findings.wrapper =
      !wrapper.empty() && run_process({compiler, wrapper[0], wrapper[1], "-E", "-x", "c++",
                                       "/dev/null", "-o", "/dev/null"}).exit_status == 0;
  // An empty translation unit linked as kiln links its kernels (the linkers leave a device
  // such as /dev/null in place: they replace only regular files).
  std::vector<std::string> link = {compiler};
  link.insert(link.end(), compile.begin(), compile.end());
  link.insert(link.end(), {"-x", "c++", "/dev/null", "-o", "/dev/null", "-x", "none"});
  ProbeFindings with_gold = findings;
  with_gold.gold = true;
  for (const std::string& flag : link_flags(with_gold)) link.push_back(flag);
  findings.gold = run_process(link).exit_status == 0;
  return findings;
}

// The program's path, size and modification time: what a memo of probing it is keyed by.
std::string file_fingerprint(const std::string& path) {
  char resolved[4096];
  std::string real_path = realpath(path.c_str(), resolved) ? resolved : path;
  struct stat info {};
  stat(real_path.c_str(), &info);
  return real_path + "|" + std::to_string(info.st_size) + "|" + std::to_string(info.st_mtime);
}

// A private directory for the compiler driver's own temporary files (the object file of a
// compile and link), beside the output and named as a temporary of the build's: whatever a
// killed compile leaves there is swept with the cache's temporaries
// (runtime/cache_maintenance.h), never left in /tmp. Removed when it leaves scope.
class DriverTemporaries {
 public:
  explicit DriverTemporaries(const std::string& output_path)
      : path_(temporary_name(output_path)) {
    if (mkdir(path_.c_str(), 0700) != 0)
      throw Error(ErrorKind::Toolchain, "kiln: cannot create the compiler's temporary "
                                        "directory " + path_ + ": " + strerror(errno));
  }
  ~DriverTemporaries() { remove_tree(path_); }
  DriverTemporaries(const DriverTemporaries&) = delete;
  DriverTemporaries& operator=(const DriverTemporaries&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Throws the compiler's message when `result` is a failed compile of `what`.
void check_compiled(const ProcessResult& result, const std::string& what) {
  if (result.exit_status == 0) return;
  std::string message = "kiln: C++ compiler failed on " + what + ":\n" +
                        first_lines(result.output, 40);
  if (result.output.empty())
    message += "(no output; exit status " + std::to_string(result.exit_status) + ")\n";
  throw Error(ErrorKind::Toolchain, message);
}

}  // namespace

std::string find_compiler() {
  for (const char* variable : {"KILN_CXX", "CXX"}) {
    const char* value = getenv(variable);
    if (value == nullptr || *value == '\0') continue;
    std::string found = resolve_program(value);
    if (!found.empty()) return found;
    // An explicit override that silently falls through would be a mystery later.
    fprintf(stderr, "kiln: %s=%s is not an executable compiler; trying the next one\n", variable,
            value);
  }
  for (const char* program : {"g++", "clang++"}) {
    std::string found = resolve_program(program);
    if (!found.empty()) return found;
  }
  return "";
}

const Toolchain& Toolchain::system() {
  // A static local: initialised once, thread-safe, and retried if the constructor throws
  // (e.g. the user installs a compiler and tries again). Never destroyed, as the tables the
  // compile reads (loop and graph passes, options, the build identity): a thread the process
  // leaves running at exit (Python's daemon threads, compiling) may still read them while
  // exit() runs the static destructors (a crash there, 5 in 60 exits at 30 ms).
  static const Toolchain& toolchain = *new Toolchain();
  return toolchain;
}

Toolchain::Toolchain() {
  compiler_ = find_compiler();
  if (compiler_.empty()) {
    throw Error(ErrorKind::Toolchain,
                "kiln: no C++ compiler found: set KILN_CXX or CXX, or install g++ or clang++");
  }
  flags_.compile = {
      "-std=c++20", "-O3", "-march=native", "-fPIC", "-shared",
      // The assembly goes to the assembler through a pipe, not through a temporary .s file
      // (no slower: 0.81-0.88 s either way on a 1 MB kernel source).
      "-pipe",
      // OpenMP parallel loops; -fopenmp-simd makes `omp declare simd` / `omp simd` vectorise.
      "-fopenmp", "-fopenmp-simd",
      // errno and FP traps are side effects that forbid vectorising math calls.
      "-fno-math-errno", "-fno-trapping-math",
      // No a * b + c fused into one rounding where the source has two: GCC contracts by
      // default in C++, and NumPy rounds each operation (a * b + c * d differed from NumPy's
      // in a quarter of the elements, and a Lorenz integration from step 12). Kiln's own
      // polynomials call __builtin_fma where they mean one.
      "-ffp-contract=off",
      // Integer overflow wraps, exactly as in the interpreter (built with -fwrapv too).
      "-fwrapv",
      // Let AVX-512 machines use zmm registers and the _ZGVe libmvec variants.
      "-mprefer-vector-width=512",
      // Otherwise GCC merges sin(x) and cos(x) into a scalar sincos call and the loop stays
      // scalar, losing libmvec.
      "-fno-builtin-sin", "-fno-builtin-cos", "-fno-builtin-sinf", "-fno-builtin-cosf",
      // Kernels call their own helpers directly instead of through the PLT.
      "-fno-semantic-interposition",
      // GCC 12.2 lays `omp simd` reductions' lane arrays out in the red zone 8 bytes off the
      // 16 it then assumes: a reduction of 4 lanes over doubles beside one over int32
      // (np.dot(A, B) beside an int32 A @ B, K = 4) stored with vmovdqa and crashed.
      "-mno-red-zone"};

  // Probing the compiler (five runs of it, 30-70 ms) would dominate a warm-cache start, so the
  // findings are remembered on disk, keyed by everything that could change them: the compiler
  // binary and setpriv (path, size, mtime), the CPU's feature flags, and the flags above.
  char resolved[4096];
  std::string real_path = realpath(compiler_.c_str(), resolved) ? resolved : compiler_;
  const std::string setpriv = resolve_program("setpriv");
  const std::vector<std::string> wrapper = driver_wrapper_flags(setpriv);
  std::string probe_key = file_fingerprint(compiler_) + "|" +
                          (setpriv.empty() ? "" : file_fingerprint(setpriv)) + "|" +
                          cpu_feature_flags();
  for (const std::string& flag : flags_.compile) probe_key += " " + flag;
  std::string memo_directory = default_cache_dir();
  std::string memo_path = memo_directory + "/toolchain-" + fnv1a_64_hex(probe_key) + ".txt";
  ProbeFindings findings;
  if (!memo_directory.empty() && read_probe_memo(memo_path, findings, identity_)) {
    flags_.link = link_flags(findings);
    if (findings.wrapper) driver_wrapper_ = wrapper;
    return;
  }
  findings = probe_toolchain(compiler_, flags_.compile, wrapper);
  flags_.link = link_flags(findings);
  if (findings.wrapper) driver_wrapper_ = wrapper;

  ProcessResult version = run_process({compiler_, "--version"});
  if (version.exit_status != 0) {
    throw Error(ErrorKind::Toolchain, "kiln: " + compiler_ + " --version failed:\n" +
                                          first_lines(version.output, 40));
  }
  std::string identity = "compiler " + compiler_ + " (" + real_path + ")\n";
  identity += "version " + first_line(version.output) + "\n";
  identity += "flags";
  for (const std::string& flag : flags_.compile) identity += " " + flag;
  for (const std::string& flag : flags_.link) identity += " " + flag;
  identity += "\n" + host_target_fingerprint(compiler_) + "\n";
  identity_ = std::move(identity);
  if (!memo_directory.empty()) write_probe_memo(memo_directory, memo_path, findings, identity_);
}

void Toolchain::compile_shared_object(const std::string& source_path,
                                      const std::string& output_path, int units, int jobs,
                                      const std::vector<EmbeddedBytes>& embedded) const {
  const DriverTemporaries temporaries(output_path);
  // The embedded data's assembly, an input of the compile (or link) that makes the library.
  std::vector<std::string> data_inputs;
  if (!embedded.empty()) {
    std::string assembly;
    for (size_t k = 0; k < embedded.size(); ++k) {
      const std::string bytes_path = temporaries.path() + "/embedded" + std::to_string(k) + ".bin";
      write_private_file(bytes_path, embedded[k].bytes);
      assembly += embedded_bytes_assembly(embedded[k], bytes_path);
    }
    data_inputs.push_back(temporaries.path() + "/embedded.s");
    write_private_file(data_inputs.back(), assembly);
  }
  // The compiler, started so that its children die with it (not part of the identity: the
  // wrapper changes no code).
  std::vector<std::string> command = {compiler_};
  command.insert(command.end(), driver_wrapper_.begin(), driver_wrapper_.end());
  if (units <= 1) {
    std::vector<std::string> arguments = command;
    arguments.insert(arguments.end(), flags_.compile.begin(), flags_.compile.end());
    arguments.push_back(source_path);
    arguments.insert(arguments.end(), data_inputs.begin(), data_inputs.end());
    arguments.insert(arguments.end(), {"-o", output_path});
    // Libraries after the source: the linker resolves left to right.
    arguments.insert(arguments.end(), flags_.link.begin(), flags_.link.end());
    check_compiled(run_process(arguments, temporaries.path()), source_path);
    return;
  }
  // Unit objects are temporaries beside the output ("<output>.unit<k>.o"): the cache's sweep of
  // a killed build's leftovers (runtime/cache_maintenance.h) finds them by the same name.
  std::vector<std::string> objects;
  for (int unit = 0; unit < units; ++unit)
    objects.push_back(output_path + ".unit" + std::to_string(unit) + ".o");
  auto remove_objects = [&] {
    for (const std::string& object : objects) unlink(object.c_str());
  };
  std::vector<ProcessResult> results(static_cast<size_t>(units));
  try {
    run_interruptibly(static_cast<size_t>(units), static_cast<size_t>(std::max(jobs, 1)),
                      [&](size_t unit, const StopFlag& stop) {
      std::vector<std::string> arguments = command;
      for (const std::string& flag : flags_.compile)
        if (flag != "-shared") arguments.push_back(flag);
      arguments.insert(arguments.end(), {"-DKILN_UNIT=" + std::to_string(unit), "-c", source_path,
                                         "-o", objects[unit]});
      try {
        results[unit] = run_process(arguments, temporaries.path(), &stop);
      } catch (const Error& error) {
        if (error.kind() == ErrorKind::Interrupted) throw;
        results[unit] = {-1, error.what()};
      }
    });
    for (int unit = 0; unit < units; ++unit)
      check_compiled(results[static_cast<size_t>(unit)],
                     source_path + " (unit " + std::to_string(unit) + ")");
    std::vector<std::string> arguments = command;
    arguments.insert(arguments.end(), flags_.compile.begin(), flags_.compile.end());
    arguments.insert(arguments.end(), objects.begin(), objects.end());
    arguments.insert(arguments.end(), data_inputs.begin(), data_inputs.end());
    arguments.insert(arguments.end(), {"-o", output_path});
    arguments.insert(arguments.end(), flags_.link.begin(), flags_.link.end());
    check_compiled(run_process(arguments, temporaries.path()),
                   source_path + " (linking its units)");
  } catch (...) {
    remove_objects();
    throw;
  }
  remove_objects();
}

}  // namespace kiln::runtime
