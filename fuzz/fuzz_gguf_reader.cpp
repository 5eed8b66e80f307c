// Fuzz target for the GGUF reader: any byte string must either parse or throw
// GgufError. When it parses, every metadata value and tensor byte is read,
// every typed getter is tried on every key, and the file must survive a
// writer round trip unchanged on the second pass (what the reader accepts,
// the writer can reproduce). Anything else — a crash, a sanitizer report, an
// exception of another type — is a bug.
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "core/gguf/gguf_file.h"
#include "core/gguf/gguf_writer.h"

namespace {

using namespace kvforge::gguf;

uint64_t touch(const Value& v) {
  uint64_t h = static_cast<uint64_t>(v.type);
  if (const auto* a = std::get_if<Array>(&v.data)) {
    for (const Value& item : a->items) h = h * 31 + touch(item);
  } else if (const auto* s = std::get_if<std::string>(&v.data)) {
    for (char c : *s) h = h * 31 + static_cast<uint8_t>(c);
  } else if (const auto* u = std::get_if<uint64_t>(&v.data)) {
    h += *u;
  } else if (const auto* i = std::get_if<int64_t>(&v.data)) {
    h += static_cast<uint64_t>(*i);
  }
  return h;
}

template <class Fn>
void try_getter(Fn&& fn) {
  try {
    fn();
  } catch (const GgufError&) {
    // a wrong type or out-of-range value is reported, not undefined
  }
}

void exercise_getters(const GgufFile& f, const std::string& key) {
  try_getter([&] { (void)f.get_string(key); });
  try_getter([&] { (void)f.get_u64(key); });
  try_getter([&] { (void)f.get_u32(key); });
  try_getter([&] { (void)f.get_i64(key); });
  try_getter([&] { (void)f.get_f32(key); });
  try_getter([&] { (void)f.get_bool(key); });
  try_getter([&] { (void)f.get_string_array(key); });
  try_getter([&] { (void)f.get_f32_array(key); });
  try_getter([&] { (void)f.get_i32_array(key); });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const GgufFile f = GgufFile::from_bytes(std::span(data, size), "fuzz.gguf");
    volatile uint64_t sink = 0;
    for (const KeyValue& kv : f.metadata()) {
      sink = sink + touch(kv.value);
      if (f.find(kv.key) != &kv.value) std::abort();
      exercise_getters(f, kv.key);
    }
    for (const TensorInfo& t : f.tensors()) {
      if (f.find_tensor(t.name) != &t) std::abort();
      for (uint8_t b : f.tensor_data(t)) sink = sink + b;
    }
    const std::vector<uint8_t> once = GgufWriter::from_file(f).to_bytes();
    const std::vector<uint8_t> twice =
        GgufWriter::from_file(GgufFile::from_bytes(once, "rewritten.gguf")).to_bytes();
    if (once != twice) std::abort();
  } catch (const GgufError&) {
    // rejected hostile input: the expected outcome for most inputs
  }
  return 0;
}
