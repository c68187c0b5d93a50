#include "runtime/build_identity.h"

#include <elf.h>
#include <link.h>

#include <cstring>

#ifndef KILN_VERSION
#define KILN_VERSION "dev"
#endif

namespace kiln::runtime {
namespace {

struct Search {
  const void* address;  // inside the object we look for
  std::string build_id;
};

// The hex build-id note of the loaded object that contains search->address.
int find_build_id(dl_phdr_info* info, size_t, void* data) {
  auto* search = static_cast<Search*>(data);
  auto address = reinterpret_cast<ElfW(Addr)>(search->address);
  bool contains = false;
  for (int k = 0; k < info->dlpi_phnum && !contains; ++k) {
    const ElfW(Phdr) & header = info->dlpi_phdr[k];
    ElfW(Addr) start = info->dlpi_addr + header.p_vaddr;
    contains = header.p_type == PT_LOAD && address >= start && address < start + header.p_memsz;
  }
  if (!contains) return 0;
  for (int k = 0; k < info->dlpi_phnum; ++k) {
    const ElfW(Phdr) & header = info->dlpi_phdr[k];
    if (header.p_type != PT_NOTE) continue;
    const char* note = reinterpret_cast<const char*>(info->dlpi_addr + header.p_vaddr);
    const char* end = note + header.p_memsz;
    while (note + sizeof(ElfW(Nhdr)) <= end) {
      const auto* entry = reinterpret_cast<const ElfW(Nhdr)*>(note);
      const char* name = note + sizeof(ElfW(Nhdr));
      const unsigned char* description =
          reinterpret_cast<const unsigned char*>(name + ((entry->n_namesz + 3) & ~3u));
      if (entry->n_type == NT_GNU_BUILD_ID && entry->n_namesz == 4 &&
          std::memcmp(name, "GNU", 4) == 0) {
        static const char kDigits[] = "0123456789abcdef";
        for (unsigned k2 = 0; k2 < entry->n_descsz; ++k2) {
          search->build_id += kDigits[description[k2] >> 4];
          search->build_id += kDigits[description[k2] & 15];
        }
        return 1;
      }
      note = reinterpret_cast<const char*>(description) + ((entry->n_descsz + 3) & ~3u);
    }
  }
  return 1;  // the object has no build-id note
}

}  // namespace

const std::string& build_identity() {
  static const std::string& identity = *new std::string([] {
    Search search{reinterpret_cast<const void*>(&build_identity), ""};
    dl_iterate_phdr(find_build_id, &search);
    // Without a build-id (a linker that writes none) the version alone keys the cache.
    return std::string(KILN_VERSION) + "/" +
           (search.build_id.empty() ? "no-build-id" : search.build_id);
  }());
  return identity;
}

}  // namespace kiln::runtime
