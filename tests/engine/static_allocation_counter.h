// Counts heap allocations of the whole test process: operator new (every
// form) is replaced in static_allocation_counter.cpp by a malloc-backed
// version that bumps an atomic counter. Harmless to the other tests of the
// binary; only the static pipeline tests read it.
#pragma once

#include <cstdint>

namespace kvforge::testing {

uint64_t heap_allocations();

}  // namespace kvforge::testing
