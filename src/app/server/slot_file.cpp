#include "app/server/slot_file.h"

#include <cstring>
#include <stdexcept>

namespace kvforge::server {
namespace {

constexpr char kSlotMagic[8] = {'K', 'V', 'F', 'S', 'L', 'O', 'T', '\0'};
constexpr uint32_t kSlotVersion = 1;
constexpr size_t kSlotHeader = 32;
constexpr uint32_t kMaxSlotLabel = 4096;

template <typename T>
void put_slot_field(std::vector<uint8_t>& out, T v) {
  const size_t at = out.size();
  out.resize(at + sizeof v);
  std::memcpy(out.data() + at, &v, sizeof v);
}

// Reads from a byte range, refusing to read past its end.
class SlotReader {
 public:
  explicit SlotReader(const std::vector<uint8_t>& b) : b_(b) {}
  template <typename T>
  T get() {
    T v;
    std::memcpy(&v, take(sizeof v), sizeof v);
    return v;
  }
  const uint8_t* take(size_t n) {
    if (n > b_.size() - at_)
      throw std::runtime_error("truncated: " + std::to_string(b_.size()) + " bytes, " +
                               std::to_string(at_ + n) + " or more expected");
    const uint8_t* p = b_.data() + at_;
    at_ += n;
    return p;
  }
  size_t left() const { return b_.size() - at_; }

 private:
  const std::vector<uint8_t>& b_;
  size_t at_ = 0;
};

}  // namespace

std::vector<uint8_t> encode_slot_file(const SlotFile& f) {
  std::vector<uint8_t> out(kSlotMagic, kSlotMagic + sizeof kSlotMagic);
  put_slot_field<uint32_t>(out, kSlotVersion);
  put_slot_field<uint32_t>(out, uint32_t(f.tokens.size()));
  put_slot_field<uint32_t>(out, uint32_t(f.blocks.size()));
  const std::string label = f.model.substr(0, kMaxSlotLabel);
  put_slot_field<uint32_t>(out, uint32_t(label.size()));
  put_slot_field<uint64_t>(out, f.fingerprint);
  out.insert(out.end(), label.begin(), label.end());
  for (int32_t t : f.tokens) put_slot_field<int32_t>(out, t);
  for (const auto& block : f.blocks) {
    put_slot_field<uint64_t>(out, block.size());
    out.insert(out.end(), block.begin(), block.end());
  }
  return out;
}

SlotFile decode_slot_file(const std::vector<uint8_t>& bytes) {
  if (bytes.size() < kSlotHeader || std::memcmp(bytes.data(), kSlotMagic, sizeof kSlotMagic) != 0)
    throw std::runtime_error("not a kvforge slot file (no KVFSLOT header)");
  SlotReader r(bytes);
  r.take(sizeof kSlotMagic);
  const uint32_t version = r.get<uint32_t>();
  if (version != kSlotVersion)
    throw std::runtime_error("slot file version " + std::to_string(version) +
                             ", this server reads " + std::to_string(kSlotVersion));
  const uint32_t n_tokens = r.get<uint32_t>(), n_blocks = r.get<uint32_t>();
  const uint32_t label = r.get<uint32_t>();
  if (label > kMaxSlotLabel)
    throw std::runtime_error("corrupt header: a model label of " + std::to_string(label) +
                             " bytes");
  SlotFile f;
  f.fingerprint = r.get<uint64_t>();
  const uint8_t* l = r.take(label);
  f.model.assign(reinterpret_cast<const char*>(l), label);
  if (size_t(n_tokens) * 4 > r.left())
    throw std::runtime_error("truncated: " + std::to_string(n_tokens) + " token ids announced");
  f.tokens.resize(n_tokens);
  std::memcpy(f.tokens.data(), r.take(size_t(n_tokens) * 4), size_t(n_tokens) * 4);
  if (size_t(n_blocks) * 8 > r.left())
    throw std::runtime_error("truncated: " + std::to_string(n_blocks) + " blocks announced");
  for (uint32_t b = 0; b < n_blocks; ++b) {
    const uint64_t size = r.get<uint64_t>();
    if (size > r.left())
      throw std::runtime_error("truncated in block " + std::to_string(b) + " of " +
                               std::to_string(n_blocks));
    const uint8_t* p = r.take(size_t(size));
    f.blocks.emplace_back(p, p + size);
  }
  if (r.left() != 0)
    throw std::runtime_error(std::to_string(r.left()) + " bytes past the last block");
  return f;
}

}  // namespace kvforge::server
