// A per-thread buffer for kernels that rearrange an operand once per call
// rather than once per tile. Compiled without ISA flags, so the
// *_avx2.cpp / *_avx512.cpp files may call it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kvforge {

// At least `bytes` bytes, 64-byte aligned, owned by the calling thread and
// valid until its next call; the buffer grows to the largest request and
// stays (its contents are not kept when it grows).
uint8_t* thread_scratch(size_t bytes);

}  // namespace kvforge
