#include "sched/kernel_hash.h"

#include <algorithm>
#include <map>

#include "sched/program_serializer.h"

namespace kiln::sched {
namespace {

// Constant buffers keep their own number, shifted past any argument position.
constexpr int32_t kConstantBase = 1 << 30;

void collect_stored(const std::vector<Stmt>& body, std::vector<int32_t>& order) {
  for (const Stmt& s : body) {
    if ((s.kind == StmtKind::Store && !s.to_local_array) || s.kind == StmtKind::Scan)
      order.push_back(s.buffer);
    collect_stored(s.body, order);
  }
}

void renumber(std::vector<Stmt>& body, const std::map<int32_t, int32_t>& number) {
  for (Stmt& s : body) {
    if ((s.kind == StmtKind::Store && !s.to_local_array) || s.kind == StmtKind::Scan)
      s.buffer = number.at(s.buffer);
    renumber(s.body, number);
  }
}

uint64_t fnv1a(const std::string& bytes) {
  uint64_t hash = 1469598103934665603ull;
  for (unsigned char byte : bytes) hash = (hash ^ byte) * 1099511628211ull;
  return hash;
}

}  // namespace

KernelSignature kernel_signature(const Kernel& kernel, const Program& program) {
  std::vector<int32_t> order;
  for (const Expr& e : kernel.exprs)
    if (e.kind == ExprKind::Load) order.push_back(e.buffer);
  collect_stored(kernel.body, order);
  KernelSignature signature;
  std::map<int32_t, int32_t> number;
  for (int32_t buffer : order) {
    if (number.count(buffer)) continue;
    const Buffer& b = program.buffers[static_cast<size_t>(buffer)];
    if (b.role == BufferRole::Constant) {
      number[buffer] = kConstantBase + buffer;
      continue;
    }
    number[buffer] = static_cast<int32_t>(signature.arguments.size());
    signature.arguments.push_back(buffer);
  }
  Kernel code = kernel;
  for (Expr& e : code.exprs)
    if (e.kind == ExprKind::Load) e.buffer = number.at(e.buffer);
  renumber(code.body, number);
  for (auto* list : {&code.buffers_read, &code.buffers_written}) {
    for (int32_t& buffer : *list) buffer = number.count(buffer) ? number.at(buffer) : -1;
    std::sort(list->begin(), list->end());
  }
  signature.key = serialize_kernel(code);
  for (int32_t buffer : signature.arguments)  // element types of the argument pointers
    signature.key += static_cast<char>(program.buffers[static_cast<size_t>(buffer)].dtype);
  signature.hash = fnv1a(signature.key);
  return signature;
}

}  // namespace kiln::sched
