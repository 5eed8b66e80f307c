#include "core/gguf/gguf_writer.h"

#include <bit>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <utility>

#include "core/byte_codec.h"
#include "core/gguf/gguf_file.h"

namespace kvforge::gguf {
namespace {

constexpr uint32_t kMagic = 0x46554747u;  // "GGUF" as a little-endian u32

[[noreturn]] void invalid(const std::string& msg) {
  throw std::invalid_argument("GgufWriter: " + msg);
}

[[noreturn]] void wrong_cpp_type(const std::string& where, const Value& v) {
  invalid(where + ": " + std::string(value_type_name(v.type)) + " value holds the wrong C++ type");
}

// An integer value in `v`'s variant within [min, max] (T: its storage type).
template <class T>
void check_integer_range(const std::string& where, const Value& v, T min, T max) {
  const auto* x = std::get_if<T>(&v.data);
  if (x == nullptr) wrong_cpp_type(where, v);
  if (*x < min || *x > max)
    invalid(where + ": " + std::to_string(*x) + " does not fit in " +
            std::string(value_type_name(v.type)));
}

template <class T>
void check_unsigned(const std::string& where, const Value& v) {
  check_integer_range<uint64_t>(where, v, 0, std::numeric_limits<T>::max());
}

template <class T>
void check_signed(const std::string& where, const Value& v) {
  check_integer_range<int64_t>(where, v, std::numeric_limits<T>::min(),
                               std::numeric_limits<T>::max());
}

// False when `v` is not of an integer type; else checks it fits its width.
bool check_integer(const std::string& where, const Value& v) {
  switch (v.type) {
    case ValueType::UINT8:
      check_unsigned<uint8_t>(where, v);
      return true;
    case ValueType::UINT16:
      check_unsigned<uint16_t>(where, v);
      return true;
    case ValueType::UINT32:
      check_unsigned<uint32_t>(where, v);
      return true;
    case ValueType::UINT64:
      check_unsigned<uint64_t>(where, v);
      return true;
    case ValueType::INT8:
      check_signed<int8_t>(where, v);
      return true;
    case ValueType::INT16:
      check_signed<int16_t>(where, v);
      return true;
    case ValueType::INT32:
      check_signed<int32_t>(where, v);
      return true;
    case ValueType::INT64:
      check_signed<int64_t>(where, v);
      return true;
    default:
      return false;
  }
}

void validate_value(const std::string& where, const Value& v, int depth);

// An array: a known element type, not nested too deeply, homogeneous items.
void validate_array(const std::string& where, const Value& v, int depth) {
  const auto* a = std::get_if<Array>(&v.data);
  if (a == nullptr) wrong_cpp_type(where, v);
  if (!is_valid_value_type(static_cast<uint32_t>(a->element_type)))
    invalid(where + ": unknown array element type " + std::to_string(uint32_t(a->element_type)));
  if (a->element_type == ValueType::ARRAY && depth + 2 > kMaxArrayDepth)
    invalid(where + ": arrays nested deeper than " + std::to_string(kMaxArrayDepth) + " levels");
  for (size_t i = 0; i < a->items.size(); ++i) {
    const std::string item = where + "[" + std::to_string(i) + "]";
    if (a->items[i].type != a->element_type)
      invalid(item + ": " + std::string(value_type_name(a->items[i].type)) +
              " item in an array of " + std::string(value_type_name(a->element_type)));
    validate_value(item, a->items[i], depth + 1);
  }
}

// Checks that `v` can be encoded: its variant matches its type, integers fit
// their on-disk width, arrays are homogeneous and not nested too deeply.
// `depth` counts the arrays enclosing `v` (the reader's rule: at most
// kMaxArrayDepth levels of arrays).
void validate_value(const std::string& where, const Value& v, int depth) {
  if (check_integer(where, v)) return;
  switch (v.type) {
    case ValueType::FLOAT32:
    case ValueType::FLOAT64:
      if (!std::holds_alternative<double>(v.data)) wrong_cpp_type(where, v);
      return;
    case ValueType::BOOL:
      if (!std::holds_alternative<bool>(v.data)) wrong_cpp_type(where, v);
      return;
    case ValueType::STRING:
      if (!std::holds_alternative<std::string>(v.data)) wrong_cpp_type(where, v);
      return;
    case ValueType::ARRAY:
      return validate_array(where, v, depth);
    default:
      break;
  }
  invalid(where + ": unknown value type " + std::to_string(uint32_t(v.type)));
}

uint64_t align_up(uint64_t n, uint64_t alignment) {
  return (n + alignment - 1) / alignment * alignment;
}

void pad_to(ByteWriter& w, uint64_t alignment) {
  w.zeros(align_up(w.size(), alignment) - w.size());
}

void write_string(ByteWriter& w, std::string_view s) { w.sized_bytes(s.data(), s.size()); }

void write_value(ByteWriter& w, const Value& v) {
  switch (v.type) {
    case ValueType::UINT8:
      return w.put(static_cast<uint8_t>(std::get<uint64_t>(v.data)));
    case ValueType::UINT16:
      return w.put(static_cast<uint16_t>(std::get<uint64_t>(v.data)));
    case ValueType::UINT32:
      return w.put(static_cast<uint32_t>(std::get<uint64_t>(v.data)));
    case ValueType::UINT64:
      return w.put(std::get<uint64_t>(v.data));
    case ValueType::INT8:
      return w.put(static_cast<int8_t>(std::get<int64_t>(v.data)));
    case ValueType::INT16:
      return w.put(static_cast<int16_t>(std::get<int64_t>(v.data)));
    case ValueType::INT32:
      return w.put(static_cast<int32_t>(std::get<int64_t>(v.data)));
    case ValueType::INT64:
      return w.put(std::get<int64_t>(v.data));
    case ValueType::FLOAT32:
      return w.put(static_cast<float>(std::get<double>(v.data)));
    case ValueType::FLOAT64:
      return w.put(std::get<double>(v.data));
    case ValueType::BOOL:
      return w.put(static_cast<uint8_t>(std::get<bool>(v.data) ? 1 : 0));
    case ValueType::STRING:
      return write_string(w, std::get<std::string>(v.data));
    case ValueType::ARRAY: {
      const Array& a = std::get<Array>(v.data);
      w.put(static_cast<uint32_t>(a.element_type));
      w.put<uint64_t>(a.items.size());
      for (const Value& item : a.items) write_value(w, item);
      return;
    }
  }
}

uint64_t alignment_from_value(const Value& v) {
  validate_value("key 'general.alignment'", v, 0);
  uint64_t a = 0;
  if (const auto* u = std::get_if<uint64_t>(&v.data)) {
    a = *u;
  } else if (const auto* s = std::get_if<int64_t>(&v.data); s != nullptr && *s > 0) {
    a = static_cast<uint64_t>(*s);
  } else if (!v.is_integer()) {
    invalid("key 'general.alignment': expected an integer, got " +
            std::string(value_type_name(v.type)));
  }
  if (!std::has_single_bit(a) || a > (uint64_t{1} << 31)) {
    invalid("key 'general.alignment': must be a power of two between 1 and 2^31");
  }
  return a;
}

}  // namespace

GgufWriter::GgufWriter(uint32_t version, uint64_t alignment)
    : version_(version), alignment_(kDefaultAlignment) {
  if (version != 2 && version != 3)
    invalid("version must be 2 or 3, got " + std::to_string(version));
  // A reader only learns a non-default alignment from the key, so record it.
  if (alignment != kDefaultAlignment) {
    if (alignment > std::numeric_limits<uint32_t>::max())
      invalid("alignment " + std::to_string(alignment) + " does not fit in uint32");
    set("general.alignment", Value::u32(static_cast<uint32_t>(alignment)));
  }
}

GgufWriter GgufWriter::from_file(const GgufFile& file) {
  GgufWriter w(file.version());
  for (const KeyValue& kv : file.metadata()) w.set(kv.key, kv.value);
  for (const TensorInfo& t : file.tensors())
    w.add_tensor(t.name, t.type, t.dims, file.tensor_data(t));
  return w;
}

void GgufWriter::set(std::string key, Value value) {
  validate_value("key '" + key + "'", value, 0);
  if (key == "general.alignment") alignment_ = alignment_from_value(value);
  for (KeyValue& kv : kvs_) {
    if (kv.key == key) {
      kv.value = std::move(value);
      return;
    }
  }
  kvs_.push_back({std::move(key), std::move(value)});
}

uint64_t GgufWriter::check_tensor(const std::string& name, GgmlType type,
                                  const std::vector<uint64_t>& dims) const {
  const std::string where = "tensor '" + name + "'";
  for (const PendingTensor& t : tensors_) {
    if (t.name == name) invalid(where + ": duplicate tensor name");
  }
  const std::optional<TypeTraits> traits = type_traits(static_cast<uint32_t>(type));
  if (!traits) invalid(where + ": unknown tensor type id " + std::to_string(uint32_t(type)));
  if (dims.empty() || dims.size() > kMaxDims) {
    invalid(where + ": " + std::to_string(dims.size()) + " dimensions (expected 1 to 4)");
  }
  uint64_t n_elements = 1;
  for (uint64_t d : dims) {
    if (d == 0) invalid(where + ": a dimension is 0");
    if (__builtin_mul_overflow(n_elements, d, &n_elements) ||
        n_elements > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      invalid(where + ": too many elements");
    }
  }
  if (dims[0] % traits->block_elems != 0) {
    invalid(where + ": dimension 0 (" + std::to_string(dims[0]) + ") is not a multiple of the " +
            std::string(traits->name) + " block size " + std::to_string(traits->block_elems));
  }
  return n_elements / traits->block_elems * traits->block_bytes;
}

void GgufWriter::add_tensor(std::string name, GgmlType type, std::vector<uint64_t> dims,
                            std::span<const uint8_t> data) {
  const uint64_t n_bytes = check_tensor(name, type, dims);
  if (data.size() != n_bytes) {
    invalid("tensor '" + name + "': expected " + std::to_string(n_bytes) + " bytes of data, got " +
            std::to_string(data.size()));
  }
  tensors_.push_back(
      {std::move(name), type, std::move(dims), n_bytes, {data.begin(), data.end()}, {}});
}

void GgufWriter::add_deferred_tensor(std::string name, GgmlType type, std::vector<uint64_t> dims,
                                     TensorProducer produce) {
  if (!produce) invalid("tensor '" + name + "': no producer");
  const uint64_t n_bytes = check_tensor(name, type, dims);
  tensors_.push_back({std::move(name), type, std::move(dims), n_bytes, {}, std::move(produce)});
}

std::vector<uint8_t> GgufWriter::metadata_bytes() const {
  ByteWriter w;
  w.put(kMagic);
  w.put(version_);
  w.put<uint64_t>(tensors_.size());
  w.put<uint64_t>(kvs_.size());
  for (const KeyValue& kv : kvs_) {
    write_string(w, kv.key);
    w.put(static_cast<uint32_t>(kv.value.type));
    write_value(w, kv.value);
  }
  uint64_t offset = 0;  // relative to the data section; each tensor starts aligned
  for (const PendingTensor& t : tensors_) {
    write_string(w, t.name);
    w.put(static_cast<uint32_t>(t.dims.size()));
    for (uint64_t d : t.dims) w.put(d);
    w.put(static_cast<uint32_t>(t.type));
    w.put(offset);
    offset = align_up(offset + t.n_bytes, alignment_);
  }
  // A file with only metadata ends here, as gguf-py writes vocabulary files.
  if (!tensors_.empty()) pad_to(w, alignment_);
  return w.take();
}

void GgufWriter::emit_tensors(const TensorBytesSink& out, const WriteProgress& progress) const {
  if (pass_start_) pass_start_();
  uint64_t total = 0, done = 0;
  for (const PendingTensor& t : tensors_) total += t.n_bytes;
  static constexpr uint8_t kZeros[256] = {};
  for (const PendingTensor& t : tensors_) {
    uint64_t got = 0;
    auto piece = [&](std::span<const uint8_t> bytes) {
      got += bytes.size();
      if (got > t.n_bytes) return;  // reported below, without writing past the tensor
      out(bytes);
      done += bytes.size();
      if (progress) progress(done, total, t.name);
    };
    if (t.produce) {
      t.produce(piece);
    } else {
      piece(t.data);
    }
    if (got != t.n_bytes)
      throw std::runtime_error("GgufWriter: tensor '" + t.name + "': its producer gave " +
                               std::to_string(got) + " bytes, expected " +
                               std::to_string(t.n_bytes));
    for (uint64_t pad = align_up(t.n_bytes, alignment_) - t.n_bytes; pad > 0;) {
      const uint64_t n = std::min<uint64_t>(pad, sizeof kZeros);
      out(std::span(kZeros, n));
      pad -= n;
    }
  }
  if (progress) progress(done, total, "");
}

std::vector<uint8_t> GgufWriter::to_bytes() const {
  ByteWriter w(metadata_bytes());
  emit_tensors([&](std::span<const uint8_t> b) { w.bytes(b.data(), b.size()); }, {});
  return w.take();
}

// Streams tensor data instead of building the whole file in memory.
void GgufWriter::write(const std::filesystem::path& path, const WriteProgress& progress) const {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error(path.string() + ": cannot open for writing");
  auto put = [&](std::span<const uint8_t> b) {
    out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
    if (!out) throw std::runtime_error(path.string() + ": write failed");
  };
  put(metadata_bytes());
  emit_tensors(put, progress);
  out.flush();
  if (!out) throw std::runtime_error(path.string() + ": write failed");
}

}  // namespace kvforge::gguf
