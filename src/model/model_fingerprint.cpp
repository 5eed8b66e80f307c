#include "model/model_fingerprint.h"

#include <algorithm>
#include <variant>

namespace kvforge {
namespace {

void hash_value(Fnv1a64& h, const gguf::Value& v) {
  h.u64(uint64_t(v.type));
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>) {
          h.str(x);
        } else if constexpr (std::is_same_v<T, gguf::Array>) {
          h.u64(uint64_t(x.element_type));
          h.u64(x.items.size());
          for (const gguf::Value& item : x.items) hash_value(h, item);
        } else if constexpr (std::is_same_v<T, double>) {
          h.bytes(&x, sizeof x);
        } else {
          h.u64(uint64_t(x));
        }
      },
      v.data);
}

}  // namespace

void Fnv1a64::bytes(const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint64_t h = h_;
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  h_ = h;
}

uint64_t model_fingerprint(const Model& model) {
  const gguf::GgufFile& f = model.file();
  Fnv1a64 h;
  h.str("kvforge model fingerprint v1");
  // A rank's plans fit its share only.
  if (model.tp() > 1) {
    h.u64(uint64_t(model.tp()));
    h.u64(uint64_t(model.split().rank));
  }
  h.u64(f.metadata().size());
  for (const gguf::KeyValue& kv : f.metadata()) {
    h.str(kv.key);
    hash_value(h, kv.value);
  }
  h.u64(f.tensors().size());
  constexpr size_t kSample = 256;
  for (const gguf::TensorInfo& t : f.tensors()) {
    h.str(t.name);
    h.u64(t.dims.size());
    for (uint64_t d : t.dims) h.u64(d);
    h.u64(uint64_t(t.type));
    h.u64(t.offset);
    const std::span<const uint8_t> data = f.tensor_data(t);
    const size_t n = std::min(kSample, data.size());
    h.bytes(data.data(), n);
    h.bytes(data.data() + (data.size() - n) / 2, n);
    h.bytes(data.data() + data.size() - n, n);
  }
  return h.value();
}

}  // namespace kvforge
