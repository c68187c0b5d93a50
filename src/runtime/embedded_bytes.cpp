#include "runtime/embedded_bytes.h"

#include <cstdio>

namespace kiln::runtime {
namespace {

// `text` as a GNU as string literal: every byte outside [A-Za-z0-9._-] an octal escape.
std::string assembler_string(const std::string& text) {
  std::string quoted = "\"";
  for (unsigned char character : text) {
    bool plain = (character >= 'a' && character <= 'z') || (character >= 'A' && character <= 'Z') ||
                 (character >= '0' && character <= '9') || character == '.' ||
                 character == '_' || character == '-';
    if (plain) {
      quoted += static_cast<char>(character);
    } else {
      char escaped[8];
      snprintf(escaped, sizeof escaped, "\\%03o", character);
      quoted += escaped;
    }
  }
  return quoted + "\"";
}

}  // namespace

std::string embedded_bytes_assembly(const EmbeddedBytes& data, const std::string& bytes_path) {
  const std::string& name = data.symbol;
  const std::string& size_name = data.size_symbol;
  return "  .section .rodata\n"
         "  .globl " + name + "\n"
         "  .type " + name + ", @object\n"
         "  .balign 64\n" +
         name + ":\n"
         "  .incbin " + assembler_string(bytes_path) + "\n"
         "  .size " + name + ", . - " + name + "\n"
         "  .globl " + size_name + "\n"
         "  .type " + size_name + ", @object\n"
         "  .balign 8\n" +
         size_name + ":\n"
         "  .quad " + std::to_string(data.bytes.size()) + "\n"
         "  .size " + size_name + ", 8\n"
         "  .section .note.GNU-stack,\"\",@progbits\n";
}

}  // namespace kiln::runtime
