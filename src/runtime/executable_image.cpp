#include "runtime/executable_image.h"

#include "ir/byte_stream.h"
#include "sched/program_serializer.h"

namespace kiln::runtime {

std::string serialize_image(const sched::Program& program, const std::vector<KernelCall>& kernels) {
  ir::ByteWriter out;
  // Constant arrays are in the library already (exported under their buffer names), and the
  // graph lines each kernel implements are comments of its source: running needs neither.
  sched::Program compact = program;
  for (sched::Kernel& kernel : compact.kernels) kernel.comments.clear();
  out.put_string(sched::serialize_program(compact, sched::ConstantBytes::Elsewhere));
  out.put<uint64_t>(kernels.size());
  for (const KernelCall& kernel : kernels) {
    out.put_string(kernel.symbol);
    out.put_vector(kernel.arguments);
  }
  return out.take();
}

ExecutableImage deserialize_image(std::string_view bytes, const SymbolLookup& find_symbol) {
  ir::ByteReader in(bytes, "an executable image");
  ExecutableImage image;
  image.program = sched::deserialize_program(in.get_string());
  const int64_t buffers = static_cast<int64_t>(image.program.buffers.size());
  for (uint64_t n = in.count(16); n-- > 0;) {
    KernelCall call;
    call.symbol = in.get_string();
    for (uint64_t m = in.count(4); m-- > 0;)
      call.arguments.push_back(in.get_in_range<int32_t>(0, buffers, "a kernel argument"));
    image.kernels.push_back(std::move(call));
  }
  if (image.kernels.size() != image.program.kernels.size())
    in.fail("kernel calls do not match the program's kernels");
  if (!in.at_end()) in.fail("bytes after the end");
  for (sched::Buffer& buffer : image.program.buffers) {
    if (buffer.role != sched::BufferRole::Constant || buffer.constant_data) continue;
    int64_t size = dtype_size(buffer.dtype);
    for (int64_t extent : buffer.shape) size *= extent;
    auto* data = static_cast<const uint8_t*>(find_symbol(buffer.name, size));
    buffer.constant_data = std::make_shared<const std::vector<uint8_t>>(data, data + size);
  }
  return image;
}

}  // namespace kiln::runtime
