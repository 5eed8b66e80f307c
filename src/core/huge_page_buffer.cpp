#include "core/huge_page_buffer.h"

#include <sys/mman.h>

#include <new>
#include <utility>

namespace kvforge {

namespace {
constexpr size_t kHugePage = size_t(2) << 20;
}

HugePageBuffer::HugePageBuffer(size_t bytes) : size_(bytes) {
  if (bytes == 0) return;
  mapped_ = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  // Map a huge page more than needed and trim to a 2 MiB-aligned range:
  // huge pages need aligned 2 MiB ranges, and mmap only aligns to 4 KiB.
  const size_t over = mapped_ + kHugePage;
  void* raw = mmap(nullptr, over, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (start + kHugePage - 1) / kHugePage * kHugePage;
  if (aligned > start) munmap(raw, aligned - start);
  const uintptr_t end = aligned + mapped_;
  if (start + over > end) munmap(reinterpret_cast<void*>(end), start + over - end);
  data_ = reinterpret_cast<uint8_t*>(aligned);
  madvise(data_, mapped_, MADV_HUGEPAGE);  // a hint; without THP the buffer is simply 4 KiB-paged
}

HugePageBuffer::HugePageBuffer(HugePageBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      mapped_(std::exchange(other.mapped_, 0)) {}

HugePageBuffer& HugePageBuffer::operator=(HugePageBuffer&& other) noexcept {
  if (this != &other) {
    if (data_) munmap(data_, mapped_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    mapped_ = std::exchange(other.mapped_, 0);
  }
  return *this;
}

HugePageBuffer::~HugePageBuffer() {
  if (data_) munmap(data_, mapped_);
}

}  // namespace kvforge
