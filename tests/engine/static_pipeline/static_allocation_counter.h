// Counts heap allocations of the whole test process: operator new (every
// form) is replaced in static_allocation_counter.cpp by a malloc-backed
// version that bumps an atomic counter. Harmless to the other tests of the
// binary; only the static pipeline tests read it.
#pragma once

#include <cstdint>

// ThreadSanitizer's runtime defines operator new itself (statically linked
// under clang), so the counter is compiled out there and the tests skip.
#if defined(__SANITIZE_THREAD__)
#define KVFORGE_COUNTS_ALLOCATIONS 0
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define KVFORGE_COUNTS_ALLOCATIONS 0
#endif
#endif
#ifndef KVFORGE_COUNTS_ALLOCATIONS
#define KVFORGE_COUNTS_ALLOCATIONS 1
#endif

#define KVFORGE_REQUIRE_ALLOCATION_COUNTER()                                         \
  do {                                                                               \
    if (!KVFORGE_COUNTS_ALLOCATIONS)                                                 \
      GTEST_SKIP() << "heap allocations are not counted under ThreadSanitizer (its " \
                      "runtime owns operator new)";                                  \
  } while (0)

namespace kvforge::testing {

uint64_t heap_allocations();

}  // namespace kvforge::testing
