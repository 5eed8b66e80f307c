#include "core/gguf/gguf_file.h"

#include <cmath>
#include <limits>
#include <utility>

#include "core/gguf/gguf_parser.h"
#include "core/gguf/mapped_file.h"

namespace kvforge::gguf {

struct GgufFile::Impl {
  std::string name;
  MappedFile mapping;          // when opened from a path
  std::vector<uint8_t> owned;  // when parsed from bytes
  std::span<const uint8_t> bytes;
  ParsedGguf parsed;
};

namespace {

std::string describe_type(const Value& v) {
  std::string s(value_type_name(v.type));
  if (const auto* a = std::get_if<Array>(&v.data)) {
    s += " of " + std::string(value_type_name(a->element_type));
  }
  return s;
}

// Errors of the typed getters: "<file>: key '<key>': <detail>".
struct KeyError {
  const std::string& file;
  std::string_view key;

  [[noreturn]] void fail(const std::string& detail) const {
    throw GgufError(file + ": key '" + std::string(key) + "': " + detail);
  }
  [[noreturn]] void wrong_type(std::string_view expected, const Value& got) const {
    fail("expected " + std::string(expected) + ", got " + describe_type(got));
  }
};

template <class T>
T integer_as(const Value& v, const KeyError& err, std::string_view where = "") {
  if (!v.is_integer()) err.wrong_type("integer", v);
  std::string value_text;
  if (const auto* u = std::get_if<uint64_t>(&v.data)) {
    if (std::in_range<T>(*u)) return static_cast<T>(*u);
    value_text = std::to_string(*u);
  } else if (const auto* s = std::get_if<int64_t>(&v.data)) {
    if (std::in_range<T>(*s)) return static_cast<T>(*s);
    value_text = std::to_string(*s);
  } else {
    err.fail("malformed integer value");
  }
  const std::string target = std::numeric_limits<T>::is_signed
                                 ? "int" + std::to_string(sizeof(T) * 8)
                                 : "uint" + std::to_string(sizeof(T) * 8);
  err.fail(std::string(where) + "value " + value_text + " does not fit in " + target);
}

float float_as_f32(const Value& v, const KeyError& err, std::string_view where = "") {
  const auto* d = std::get_if<double>(&v.data);
  if (!v.is_float() || d == nullptr) err.wrong_type("float", v);
  // Converting a finite double beyond the float range is undefined behaviour.
  if (std::isfinite(*d) && std::fabs(*d) > std::numeric_limits<float>::max()) {
    err.fail(std::string(where) + "value " + std::to_string(*d) + " does not fit in float32");
  }
  return static_cast<float>(*d);
}

const Array& array_of(const Value& v, const KeyError& err, std::string_view expected) {
  const auto* a = std::get_if<Array>(&v.data);
  if (!v.is_array() || a == nullptr) err.wrong_type(expected, v);
  return *a;
}

std::string item_where(size_t i) { return "item " + std::to_string(i) + ": "; }

}  // namespace

GgufFile::GgufFile(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GgufFile::GgufFile(GgufFile&&) noexcept = default;
GgufFile& GgufFile::operator=(GgufFile&&) noexcept = default;
GgufFile::~GgufFile() = default;

GgufFile GgufFile::open(const std::filesystem::path& path) {
  auto impl = std::make_unique<Impl>();
  impl->name = path.string();
  impl->mapping = MappedFile(path);
  impl->bytes = impl->mapping.bytes();
  impl->parsed = parse_gguf(impl->bytes, impl->name);
  return GgufFile(std::move(impl));
}

GgufFile GgufFile::from_bytes(std::span<const uint8_t> bytes, std::string name) {
  auto impl = std::make_unique<Impl>();
  impl->name = std::move(name);
  impl->owned.assign(bytes.begin(), bytes.end());
  impl->bytes = impl->owned;
  impl->parsed = parse_gguf(impl->bytes, impl->name);
  return GgufFile(std::move(impl));
}

const std::string& GgufFile::name() const { return impl_->name; }
uint32_t GgufFile::version() const { return impl_->parsed.version; }
uint64_t GgufFile::alignment() const { return impl_->parsed.alignment; }
uint64_t GgufFile::file_size() const { return impl_->bytes.size(); }
uint64_t GgufFile::data_offset() const { return impl_->parsed.data_offset; }
const std::vector<KeyValue>& GgufFile::metadata() const { return impl_->parsed.metadata; }
const std::vector<TensorInfo>& GgufFile::tensors() const { return impl_->parsed.tensors; }

const Value* GgufFile::find(std::string_view key) const {
  const auto it = impl_->parsed.key_index.find(key);
  return it == impl_->parsed.key_index.end() ? nullptr : &impl_->parsed.metadata[it->second].value;
}

const TensorInfo* GgufFile::find_tensor(std::string_view name) const {
  const auto it = impl_->parsed.tensor_index.find(name);
  return it == impl_->parsed.tensor_index.end() ? nullptr : &impl_->parsed.tensors[it->second];
}

std::span<const uint8_t> GgufFile::tensor_data(const TensorInfo& t) const {
  // Re-checked so that a TensorInfo from another file cannot read out of bounds.
  const uint64_t size = impl_->bytes.size();
  const uint64_t start = impl_->parsed.data_offset + t.offset;
  if (start < t.offset || start > size || t.n_bytes > size - start) {
    throw GgufError(impl_->name + ": tensor '" + t.name + "': data [offset " +
                    std::to_string(start) + ", +" + std::to_string(t.n_bytes) +
                    ") is not inside this file (size " + std::to_string(size) + ")");
  }
  return impl_->bytes.subspan(start, t.n_bytes);
}

void GgufFile::release_pages(std::span<const uint8_t> range) const {
  if (impl_->owned.empty()) impl_->mapping.release(range);
}

namespace {

const Value& require(const GgufFile& f, std::string_view key) {
  const Value* v = f.find(key);
  if (v == nullptr) KeyError{f.name(), key}.fail("not found");
  return *v;
}

}  // namespace

std::string GgufFile::get_string(std::string_view key) const {
  const Value& v = require(*this, key);
  const auto* s = std::get_if<std::string>(&v.data);
  if (!v.is_string() || s == nullptr) KeyError{name(), key}.wrong_type("string", v);
  return *s;
}

uint64_t GgufFile::get_u64(std::string_view key) const {
  return integer_as<uint64_t>(require(*this, key), {name(), key});
}

uint32_t GgufFile::get_u32(std::string_view key) const {
  return integer_as<uint32_t>(require(*this, key), {name(), key});
}

int64_t GgufFile::get_i64(std::string_view key) const {
  return integer_as<int64_t>(require(*this, key), {name(), key});
}

float GgufFile::get_f32(std::string_view key) const {
  return float_as_f32(require(*this, key), {name(), key});
}

bool GgufFile::get_bool(std::string_view key) const {
  const Value& v = require(*this, key);
  const auto* b = std::get_if<bool>(&v.data);
  if (v.type != ValueType::BOOL || b == nullptr) KeyError{name(), key}.wrong_type("bool", v);
  return *b;
}

std::vector<std::string> GgufFile::get_string_array(std::string_view key) const {
  const KeyError err{name(), key};
  const Array& a = array_of(require(*this, key), err, "array of string");
  if (a.element_type != ValueType::STRING) err.wrong_type("array of string", *find(key));
  std::vector<std::string> out;
  out.reserve(a.items.size());
  for (const Value& item : a.items) {
    const auto* s = std::get_if<std::string>(&item.data);
    if (s == nullptr) err.fail(item_where(out.size()) + "malformed string");
    out.push_back(*s);
  }
  return out;
}

std::vector<float> GgufFile::get_f32_array(std::string_view key) const {
  const KeyError err{name(), key};
  const Array& a = array_of(require(*this, key), err, "array of float32");
  if (a.element_type != ValueType::FLOAT32 && a.element_type != ValueType::FLOAT64) {
    err.wrong_type("array of float32", *find(key));
  }
  std::vector<float> out;
  out.reserve(a.items.size());
  for (const Value& item : a.items) out.push_back(float_as_f32(item, err, item_where(out.size())));
  return out;
}

std::vector<int32_t> GgufFile::get_i32_array(std::string_view key) const {
  const KeyError err{name(), key};
  const Array& a = array_of(require(*this, key), err, "array of int32");
  if (!Value{a.element_type, uint64_t{0}}.is_integer()) {
    err.wrong_type("array of integers", *find(key));
  }
  std::vector<int32_t> out;
  out.reserve(a.items.size());
  for (const Value& item : a.items) {
    out.push_back(integer_as<int32_t>(item, err, item_where(out.size())));
  }
  return out;
}

std::string GgufFile::get_string_or(std::string_view key, std::string fallback) const {
  return has(key) ? get_string(key) : std::move(fallback);
}

uint32_t GgufFile::get_u32_or(std::string_view key, uint32_t fallback) const {
  return has(key) ? get_u32(key) : fallback;
}

float GgufFile::get_f32_or(std::string_view key, float fallback) const {
  return has(key) ? get_f32(key) : fallback;
}

bool GgufFile::get_bool_or(std::string_view key, bool fallback) const {
  return has(key) ? get_bool(key) : fallback;
}

}  // namespace kvforge::gguf
