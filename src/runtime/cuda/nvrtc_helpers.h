// NVRTC in helper processes. kiln compiles every unit in kiln-nvrtc processes, built beside
// libkiln.so and given the NVRTC library this process loaded: NVRTC's ptxas has crashed on valid
// kernels, which in kiln's process would end the user's program; and NVRTC compiles one program
// at a time in a process (two threads took as long as one after the other on an H200), so the
// units of a CUDA program compile in parallel. A compile error's message comes back as NVRTC
// wrote it. A helper loads NVRTC and compiles a warm-up program when it starts (a fresh
// process's first unit took 0.3 s on the H200 machine, later ones 30-50 ms), then compiles
// units on request, and stays for the compiles that follow (a training step's backward graph
// after its forward, a recompile). Helpers start when a compile asks for them, not ahead:
// sixteen started at the torch backend's entry cut resnet18's NVRTC stage from 195-223 to
// 52-66 ms on the H200 machine, but its first call rose from 1.60-1.75 to 1.73-1.98 s (their
// start slowed Dynamo's and AOTAutograd's tracing). A helper exits with kiln's process, when
// kiln closes its connection, or after kHelperIdleSeconds without a request; kiln replaces one
// it has left idle for nearly that long rather than race its exit.
#pragma once
#include <string>
#include <vector>

namespace kiln::runtime::cuda {

constexpr int kHelperIdleSeconds = 60;

// The helpers running now.
int nvrtc_helpers_running();
enum class HelperCompile { compiled, no_helper, died };

// compile_cubin_file in a helper: an idle one, or one started for it (at most one per hardware
// thread; otherwise it waits for one). no_helper where none could start (none beside
// libkiln.so, no NVRTC); died where the helper died compiling the unit (NVRTC crashed, or the
// helper was killed), with how in `death`. A compile error throws as compile_cubin_file does.
HelperCompile compile_in_helper(const std::string& source_path, const std::string& object_path,
                                int architecture,
                                const std::vector<std::string>& extra_options = {},
                                std::string* death = nullptr);

// How kiln compiles a unit: in a helper, so that NVRTC crashing costs a helper and not kiln's
// process; a unit whose helper died is compiled again in a new helper with other ptxas
// settings, the last its unoptimised -O0; in this process only where no helper can run.
// Returns "" or, after crashes, what happened (for the perf log); Error(Internal) naming the
// unit where every setting crashed.
std::string compile_cubin_file_isolated(const std::string& source_path,
                                        const std::string& object_path, int architecture);

// kiln-nvrtc's loop: requests from `channel` compiled with compile_cubin_file until the
// connection closes or `idle_seconds` pass without one. Returns the process's exit status.
int serve_nvrtc_requests(int channel, int architecture, int idle_seconds);

}  // namespace kiln::runtime::cuda
