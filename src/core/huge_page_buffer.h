// A zero-filled byte buffer of anonymous memory, in 2 MiB transparent huge
// pages where the kernel offers them (madvise, a hint: Debian's default THP
// mode is "madvise", so without it large buffers get 4 KiB pages). For the
// big buffers: the KV pools and the regrouped weights. The pages are
// faulted in (and zeroed by the kernel) when first touched, so a pool sized
// for the worst case costs resident memory only as far as it is used, and
// constructing it costs no time up front.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kvforge {

class HugePageBuffer {
 public:
  HugePageBuffer() = default;
  explicit HugePageBuffer(size_t bytes);  // throws std::bad_alloc
  HugePageBuffer(HugePageBuffer&& other) noexcept;
  HugePageBuffer& operator=(HugePageBuffer&& other) noexcept;
  HugePageBuffer(const HugePageBuffer&) = delete;
  HugePageBuffer& operator=(const HugePageBuffer&) = delete;
  ~HugePageBuffer();

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  size_t mapped_ = 0;  // size_ rounded up to whole huge pages
};

}  // namespace kvforge
