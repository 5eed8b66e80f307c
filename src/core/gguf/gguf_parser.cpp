#include "core/gguf/gguf_parser.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <limits>
#include <numeric>

#include "core/gguf/byte_cursor.h"

namespace kvforge::gguf {
namespace {

// Smallest possible encodings, used to bound counts by the bytes that remain
// before anything is reserved: a key (u64 length) + u32 type + a 1-byte value;
// a tensor info: name length + n_dims + one dim + type + offset.
constexpr uint64_t kMinKeyValueBytes = 8 + 4 + 1;
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;

std::string u64s(uint64_t v) { return std::to_string(v); }

// Bytes that one array element of this type occupies at least.
uint64_t min_encoded_bytes(ValueType t) {
  switch (t) {
    case ValueType::UINT8:
    case ValueType::INT8:
    case ValueType::BOOL:
      return 1;
    case ValueType::UINT16:
    case ValueType::INT16:
      return 2;
    case ValueType::UINT32:
    case ValueType::INT32:
    case ValueType::FLOAT32:
      return 4;
    case ValueType::UINT64:
    case ValueType::INT64:
    case ValueType::FLOAT64:
    case ValueType::STRING:  // u64 length
      return 8;
    case ValueType::ARRAY:  // u32 element type + u64 count
      return 12;
  }
  return 1;
}

ValueType read_value_type(ByteCursor& c, std::string_view what) {
  const uint64_t at = c.offset();
  const uint32_t id = c.u32(what);
  if (!is_valid_value_type(id)) {
    c.fail("unknown " + std::string(what) + " " + std::to_string(id) + " at offset " + u64s(at) +
           " (expected 0 to 12)");
  }
  return static_cast<ValueType>(id);
}

// `depth` counts the arrays enclosing a value; `level` is an array's own
// nesting level (1 for a top-level array). At most kMaxArrayDepth levels.
Value read_value(ByteCursor& c, ValueType type, int depth);

Array read_array(ByteCursor& c, int level) {
  const ValueType element_type = read_value_type(c, "array element type");
  const uint64_t count_at = c.offset();
  const uint64_t count = c.u64("array length");
  const uint64_t min_bytes = min_encoded_bytes(element_type);
  if (count > c.remaining() / min_bytes) {
    c.fail("array length " + u64s(count) + " at offset " + u64s(count_at) + ": " +
           std::string(value_type_name(element_type)) + " elements need at least " +
           u64s(min_bytes) + " bytes each, but only " + u64s(c.remaining()) + " bytes are left");
  }
  if (element_type == ValueType::ARRAY && level + 1 > kMaxArrayDepth) {
    c.fail("arrays nested deeper than " + std::to_string(kMaxArrayDepth) + " levels at offset " +
           u64s(count_at));
  }
  Array a{element_type, {}};
  a.items.reserve(count);  // bounded by the remaining bytes above
  for (uint64_t i = 0; i < count; ++i) a.items.push_back(read_value(c, element_type, level));
  return a;
}

Value read_value(ByteCursor& c, ValueType type, int depth) {
  switch (type) {
    case ValueType::UINT8:
      return Value::u8(c.u8("uint8 value"));
    case ValueType::INT8:
      return Value::i8(static_cast<int8_t>(c.u8("int8 value")));
    case ValueType::UINT16:
      return Value::u16(c.u16("uint16 value"));
    case ValueType::INT16:
      return Value::i16(static_cast<int16_t>(c.u16("int16 value")));
    case ValueType::UINT32:
      return Value::u32(c.u32("uint32 value"));
    case ValueType::INT32:
      return Value::i32(static_cast<int32_t>(c.u32("int32 value")));
    case ValueType::UINT64:
      return Value::u64(c.u64("uint64 value"));
    case ValueType::INT64:
      return Value::i64(static_cast<int64_t>(c.u64("int64 value")));
    case ValueType::FLOAT32:
      return Value::f32(std::bit_cast<float>(c.u32("float32 value")));
    case ValueType::FLOAT64:
      return Value::f64(std::bit_cast<double>(c.u64("float64 value")));
    case ValueType::BOOL: {
      const uint64_t at = c.offset();
      const uint8_t b = c.u8("bool value");
      // Only 0 and 1 are booleans; anything else would not write back identically.
      if (b > 1)
        c.fail("bool value " + std::to_string(b) + " at offset " + u64s(at) + " (expected 0 or 1)");
      return Value::boolean(b == 1);
    }
    case ValueType::STRING:
      return Value::string(c.string("string value"));
    case ValueType::ARRAY:
      return {ValueType::ARRAY, read_array(c, depth + 1)};
  }
  c.fail("unreachable value type");
}

void read_header(ByteCursor& c, ParsedGguf& out, uint64_t& tensor_count, uint64_t& kv_count) {
  if (c.size() < 4) c.fail("too small to be a GGUF file (" + u64s(c.size()) + " bytes)");
  const uint32_t magic = c.u32("magic");
  if (magic != 0x46554747u) {  // "GGUF" read as a little-endian u32
    char hex[16];
    std::snprintf(hex, sizeof hex, "0x%08x", magic);
    c.fail(std::string("not a GGUF file: magic ") + hex + ", expected \"GGUF\" (0x46554747)");
  }
  const uint32_t version = c.u32("version");
  if (version == 1) c.fail("GGUF version 1 is not supported (only versions 2 and 3)");
  if (version != 2 && version != 3) {
    const uint32_t swapped = __builtin_bswap32(version);
    std::string hint =
        (swapped == 2 || swapped == 3) ? " (a big-endian GGUF file, which is not supported)" : "";
    c.fail("unsupported GGUF version " + std::to_string(version) + ", expected 2 or 3" + hint);
  }
  out.version = version;
  tensor_count = c.u64("tensor_count");
  kv_count = c.u64("metadata_kv_count");
  const uint64_t left = c.remaining();
  if (tensor_count > left / kMinTensorInfoBytes) {
    c.fail("tensor_count " + u64s(tensor_count) + " cannot fit: each tensor info takes at least " +
           u64s(kMinTensorInfoBytes) + " bytes and only " + u64s(left) +
           " bytes follow the header");
  }
  if (kv_count > left / kMinKeyValueBytes) {
    c.fail("metadata_kv_count " + u64s(kv_count) + " cannot fit: each key-value takes at least " +
           u64s(kMinKeyValueBytes) + " bytes and only " + u64s(left) + " bytes follow the header");
  }
  // Both products are <= left, so their sum cannot overflow.
  if (tensor_count * kMinTensorInfoBytes + kv_count * kMinKeyValueBytes > left) {
    c.fail("metadata_kv_count " + u64s(kv_count) + " and tensor_count " + u64s(tensor_count) +
           " cannot both fit in the " + u64s(left) + " bytes that follow the header");
  }
}

void read_metadata(ByteCursor& c, uint64_t kv_count, ParsedGguf& out) {
  out.metadata.reserve(kv_count);  // bounded in read_header
  for (uint64_t i = 0; i < kv_count; ++i) {
    // Until the key is read, name the previous one so that a corrupt length can be located.
    c.set_context("metadata key-value #" + u64s(i) +
                  (i > 0 ? " (after key '" + printable_name(out.metadata.back().key) + "')" : ""));
    std::string key = c.string("key");
    c.set_context("key '" + printable_name(key) + "'");
    if (out.key_index.contains(key)) c.fail("duplicate key");
    const ValueType type = read_value_type(c, "value type");
    Value value = read_value(c, type, 0);
    out.key_index.emplace(key, out.metadata.size());
    out.metadata.push_back({std::move(key), std::move(value)});
  }
  c.set_context("");
}

// general.alignment: any unsigned-valued integer type, a nonzero power of two.
void read_alignment(ByteCursor& c, ParsedGguf& out) {
  const auto it = out.key_index.find(std::string_view("general.alignment"));
  if (it == out.key_index.end()) return;
  const Value& v = out.metadata[it->second].value;
  c.set_context("key 'general.alignment'");
  if (!v.is_integer()) {
    c.fail("expected an integer (uint32), got " + std::string(value_type_name(v.type)));
  }
  uint64_t a = 0;
  if (const auto* u = std::get_if<uint64_t>(&v.data)) {
    a = *u;
  } else {
    const int64_t s = std::get<int64_t>(v.data);
    if (s <= 0) c.fail("must be a nonzero power of two (at most 2^31), got " + std::to_string(s));
    a = static_cast<uint64_t>(s);
  }
  // The spec types it uint32, so 2^31 is the largest power of two it can hold.
  if (!std::has_single_bit(a) || a > (uint64_t{1} << 31)) {
    c.fail("must be a nonzero power of two (at most 2^31), got " + u64s(a));
  }
  out.alignment = a;
  c.set_context("");
}

std::string dims_string(const std::vector<uint64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + u64s(dims[i]);
  return s + "]";
}

TensorInfo read_tensor_info(ByteCursor& c, uint64_t index, const ParsedGguf& out) {
  c.set_context(
      "tensor info #" + u64s(index) +
      (index > 0 ? " (after tensor '" + printable_name(out.tensors.back().name) + "')" : ""));
  TensorInfo t;
  t.name = c.string("tensor name");
  c.set_context("tensor '" + printable_name(t.name) + "'");
  if (out.tensor_index.contains(t.name)) c.fail("duplicate tensor name");

  const uint32_t n_dims = c.u32("n_dims");
  if (n_dims < 1 || n_dims > kMaxDims) {
    c.fail("n_dims is " + std::to_string(n_dims) + " (expected 1 to " + std::to_string(kMaxDims) +
           ")");
  }
  t.dims.resize(n_dims);
  uint64_t n_elements = 1;
  bool overflow = false;
  for (uint32_t d = 0; d < n_dims; ++d) {
    t.dims[d] = c.u64("dimension");
    if (t.dims[d] == 0)
      c.fail("dimension " + std::to_string(d) + " is 0 (every dimension must be at least 1)");
    overflow = overflow || __builtin_mul_overflow(n_elements, t.dims[d], &n_elements);
  }
  // ggml counts elements in int64.
  if (overflow || n_elements > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    c.fail("dimensions " + dims_string(t.dims) + " hold more than 2^63-1 elements");
  }
  t.n_elements = n_elements;

  const uint32_t type_id = c.u32("tensor type");
  const std::optional<TypeTraits> traits = type_traits(type_id);
  if (!traits) c.fail("unknown tensor type id " + std::to_string(type_id));
  t.type = static_cast<GgmlType>(type_id);
  if (t.dims[0] % traits->block_elems != 0) {
    c.fail("dimension 0 (" + u64s(t.dims[0]) + ") is not a multiple of the " +
           std::string(traits->name) + " block size " + std::to_string(traits->block_elems));
  }
  // n_elements / block_elems * block_bytes: the quotient is < 2^63 and block_bytes small,
  // but the product may still overflow.
  if (__builtin_mul_overflow(n_elements / traits->block_elems, uint64_t{traits->block_bytes},
                             &t.n_bytes)) {
    c.fail("byte size of " + dims_string(t.dims) + " " + std::string(traits->name) +
           " elements overflows 64 bits");
  }

  t.offset = c.u64("tensor data offset");
  if (t.offset % out.alignment != 0) {
    c.fail("offset " + u64s(t.offset) + " is not a multiple of the alignment " +
           u64s(out.alignment));
  }
  return t;
}

// Checks that every tensor's bytes lie inside the file and that no two overlap.
void check_tensor_layout(ByteCursor& c, const ParsedGguf& out) {
  const uint64_t file_size = c.size();
  if (!out.tensors.empty() && out.data_offset > file_size) {
    c.fail("tensor data section (of " + u64s(out.tensors.size()) + " tensors, the first '" +
           printable_name(out.tensors.front().name) + "') starts at offset " +
           u64s(out.data_offset) + " (tensor infos end at " + u64s(c.offset()) + ", aligned to " +
           u64s(out.alignment) + ") past the end of the file (size " + u64s(file_size) + ")");
  }
  const uint64_t data_size = file_size - std::min(out.data_offset, file_size);
  for (const TensorInfo& t : out.tensors) {
    uint64_t end = 0;
    if (__builtin_add_overflow(t.offset, t.n_bytes, &end) || end > data_size) {
      c.set_context("tensor '" + printable_name(t.name) + "'");
      uint64_t absolute = 0;
      const std::string start = __builtin_add_overflow(out.data_offset, t.offset, &absolute)
                                    ? u64s(out.data_offset) + "+" + u64s(t.offset)
                                    : u64s(absolute);
      c.fail("data [offset " + start + ", " + start + "+" + u64s(t.n_bytes) +
             ") extends past end of file (size " + u64s(file_size) + ")");
    }
  }
  std::vector<size_t> order(out.tensors.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return out.tensors[a].offset < out.tensors[b].offset; });
  for (size_t i = 1; i < order.size(); ++i) {
    const TensorInfo& prev = out.tensors[order[i - 1]];
    const TensorInfo& cur = out.tensors[order[i]];
    if (prev.offset + prev.n_bytes > cur.offset) {  // no overflow: both checked above
      c.set_context("tensor '" + printable_name(cur.name) + "'");
      c.fail("data at relative offset " + u64s(cur.offset) + " overlaps tensor '" +
             printable_name(prev.name) + "' at [" + u64s(prev.offset) + ", " +
             u64s(prev.offset + prev.n_bytes) + ")");
    }
  }
  c.set_context("");
}

}  // namespace

ParsedGguf parse_gguf(std::span<const uint8_t> bytes, std::string_view name) {
  ByteCursor c(bytes, name);
  ParsedGguf out;
  uint64_t tensor_count = 0;
  uint64_t kv_count = 0;
  read_header(c, out, tensor_count, kv_count);
  read_metadata(c, kv_count, out);
  read_alignment(c, out);

  out.tensors.reserve(tensor_count);  // bounded in read_header
  for (uint64_t i = 0; i < tensor_count; ++i) {
    TensorInfo t = read_tensor_info(c, i, out);
    out.tensor_index.emplace(t.name, out.tensors.size());
    out.tensors.push_back(std::move(t));
  }
  c.set_context("");

  // infos_end <= file size and alignment <= 2^31: the rounding cannot overflow.
  const uint64_t infos_end = c.offset();
  out.data_offset = (infos_end + out.alignment - 1) / out.alignment * out.alignment;
  check_tensor_layout(c, out);
  return out;
}

}  // namespace kvforge::gguf
