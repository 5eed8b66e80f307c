#include "core/kernels/thread_scratch.h"

#include <vector>

namespace kvforge {

uint8_t* thread_scratch(size_t bytes) {
  thread_local std::vector<uint8_t> buffer;
  if (buffer.size() < bytes + 63) buffer.resize(bytes + 63);
  const auto address = reinterpret_cast<uintptr_t>(buffer.data());
  return reinterpret_cast<uint8_t*>((address + 63) & ~uintptr_t(63));
}

}  // namespace kvforge
