// Data linked into a generated library as it is, not as source: the toolchain (toolchain.h)
// writes the bytes to a file beside the compile and assembles them with `.incbin` into the
// library, read-only data under an exported symbol (with a second symbol holding their count).
// A C++ string literal of the same bytes (4 source characters a byte) took the compiler 48-89
// ms for BERT's 218 KB executable image; the assembler copies the file. The library holds the
// bytes themselves: loading it reads no other file.
#pragma once
#include <string>

namespace kiln::runtime {

struct EmbeddedBytes {
  std::string symbol;       // `extern "C" const char symbol[]`, 64-byte aligned
  std::string size_symbol;  // `extern "C" const unsigned long size_symbol`: bytes.size()
  std::string bytes;
};

// The assembly (GNU as) that defines `data`'s two symbols, the bytes taken from the file
// `bytes_path` by .incbin (the path written with octal escapes: any name is safe). It marks the
// stack non-executable, as compiled objects do: without it the linker makes the library's
// stack executable.
std::string embedded_bytes_assembly(const EmbeddedBytes& data, const std::string& bytes_path);

}  // namespace kiln::runtime
