// Hostile GGUF files: targeted corruption of every field that sizes or places
// something, each rejected with a GgufError naming the key or tensor; and a
// deterministic random-mutation loop that must only ever parse or throw GgufError.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <random>

#include "core/gguf/gguf_file.h"
#include "core/gguf/gguf_writer.h"
#include "gguf_raw_bytes.h"
#include "gguf_sample.h"

namespace kvforge::gguf {
namespace {

using testing::RawBytes;
using Bytes = std::vector<uint8_t>;

constexpr uint64_t kHuge = uint64_t{1} << 60;
constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();

// Offset just past the first GGUF string equal to `s` (its u64 length, then its bytes).
size_t after_string(const Bytes& bytes, std::string_view s) {
  RawBytes encoded;
  encoded.str(s);
  const Bytes& needle = encoded.bytes();
  const auto it = std::search(bytes.begin(), bytes.end(), needle.begin(), needle.end());
  if (it == bytes.end()) throw std::logic_error("string not in sample: " + std::string(s));
  return static_cast<size_t>(it - bytes.begin()) + needle.size();
}
size_t length_of_string(const Bytes& bytes, std::string_view s) {
  return after_string(bytes, s) - s.size() - 8;
}

template <class T>
void put(Bytes& bytes, size_t offset, T v) {
  std::memcpy(bytes.data() + offset, &v, sizeof(T));
}

// Tensor info fields, relative to the end of the tensor's name.
struct InfoFields {
  size_t n_dims, dims, type, offset;
};
InfoFields tensor_fields(const Bytes& bytes, std::string_view name, size_t n_dims) {
  const size_t at = after_string(bytes, name);
  return {at, at + 4, at + 4 + 8 * n_dims, at + 8 + 8 * n_dims};
}

std::string parse_error(const Bytes& bytes) {
  try {
    GgufFile::from_bytes(bytes, "bad.gguf");
  } catch (const GgufError& e) {
    return e.what();
  }
  return "<no error>";
}

void expect_error(const Bytes& bytes, std::initializer_list<std::string_view> parts) {
  const std::string message = parse_error(bytes);
  EXPECT_EQ(message.rfind("bad.gguf: ", 0), 0u) << message;
  for (std::string_view p : parts) {
    EXPECT_NE(message.find(p), std::string::npos)
        << "message '" << message << "' lacks '" << p << "'";
  }
}

class GgufCorruption : public ::testing::Test {
 protected:
  const Bytes sample = testing::make_sample_bytes(3, 32);
  Bytes copy() const { return sample; }
};

TEST_F(GgufCorruption, SampleIsValid) { ASSERT_EQ(parse_error(sample), "<no error>"); }

TEST_F(GgufCorruption, MagicAndVersion) {
  Bytes b = copy();
  b[3] = 'X';
  expect_error(b, {"not a GGUF file"});
  for (auto [version, part] :
       {std::pair<uint32_t, std::string_view>{1, "version 1 is not supported"},
        {0, "unsupported GGUF version 0"},
        {4, "unsupported GGUF version 4"},
        {0x03000000, "big-endian"}}) {
    b = copy();
    put<uint32_t>(b, 4, version);
    expect_error(b, {part});
  }
}

TEST_F(GgufCorruption, HugeCountsAreBoundedByTheFileSize) {
  for (uint64_t n : {kHuge, kU64Max, uint64_t{sample.size()}}) {
    Bytes b = copy();
    put<uint64_t>(b, 8, n);
    expect_error(b, {"tensor_count " + std::to_string(n), "cannot fit"});
    b = copy();
    put<uint64_t>(b, 16, n);
    expect_error(b, {"metadata_kv_count " + std::to_string(n), "cannot fit"});
  }
  Bytes b = copy();
  put<uint64_t>(b, 16, 28);  // one key-value more than there is: tensor infos read as a key
  EXPECT_THROW(GgufFile::from_bytes(b), GgufError);
}

TEST_F(GgufCorruption, StringLengths) {
  Bytes b = copy();
  put<uint64_t>(b, length_of_string(b, "test.u16"), kHuge);
  expect_error(b, {"metadata key-value #4 (after key 'test.i8')", "length 1152921504606846976"});
  b = copy();
  put<uint64_t>(b, after_string(b, "general.architecture") + 4, kU64Max);
  expect_error(b, {"key 'general.architecture'", "string value", "exceeds"});
  b = copy();
  put<uint64_t>(b, length_of_string(b, "blk.0.attn_q.weight"), kHuge);
  expect_error(b, {"tensor info #1 (after tensor 'token_embd.weight')", "tensor name"});
}

TEST_F(GgufCorruption, ArrayLengthsIncludingNested) {
  Bytes b = copy();
  // value type (4) + element type (4), then the u64 length
  put<uint64_t>(b, after_string(b, "tokenizer.ggml.tokens") + 8, kHuge);
  expect_error(b, {"key 'tokenizer.ggml.tokens'", "array length 1152921504606846976"});
  b = copy();
  put<uint64_t>(b, after_string(b, "test.u8_array") + 8, kU64Max);
  expect_error(b, {"key 'test.u8_array'", "array length"});
  b = copy();
  // outer: type, element type, length (16 bytes); first inner: element type, then its length
  put<uint64_t>(b, after_string(b, "test.nested_strings") + 16 + 4, kHuge);
  expect_error(b, {"key 'test.nested_strings'", "array length 1152921504606846976"});
}

TEST_F(GgufCorruption, ValueTypeIds) {
  Bytes b = copy();
  put<uint32_t>(b, after_string(b, "test.u32"), 13);
  expect_error(b, {"key 'test.u32'", "unknown value type 13"});
  b = copy();
  put<uint32_t>(b, after_string(b, "tokenizer.ggml.scores") + 4, 99);
  expect_error(b, {"key 'tokenizer.ggml.scores'", "unknown array element type 99"});
  b = copy();
  put<uint32_t>(b, after_string(b, "test.nested3") + 4 + 4 + 8 + 4 + 8, 0xffffffff);
  expect_error(b, {"key 'test.nested3'", "unknown array element type 4294967295"});
  b = copy();
  put<uint8_t>(b, after_string(b, "test.bool_true") + 4, 2);
  expect_error(b, {"key 'test.bool_true'", "bool value 2"});
}

TEST_F(GgufCorruption, NDimsAndDims) {
  const char* q = "blk.0.attn_q.weight";
  for (uint32_t n_dims : {0u, 5u, 0xffffffffu}) {
    Bytes b = copy();
    put<uint32_t>(b, tensor_fields(b, q, 2).n_dims, n_dims);
    expect_error(b, {"tensor 'blk.0.attn_q.weight'", "n_dims is " + std::to_string(n_dims)});
  }
  Bytes b = copy();
  const InfoFields mask = tensor_fields(b, "blk.0.mask", 4);
  for (int d = 0; d < 4; ++d) put<uint64_t>(b, mask.dims + 8 * d, uint64_t{1} << 32);
  expect_error(b, {"tensor 'blk.0.mask'", "more than 2^63-1 elements"});
  b = copy();  // 2^63 elements: fits in u64, not in int64
  put<uint64_t>(b, mask.dims, uint64_t{1} << 62);
  put<uint64_t>(b, mask.dims + 8, 2);
  expect_error(b, {"tensor 'blk.0.mask'", "more than 2^63-1 elements"});
  b = copy();
  put<uint64_t>(b, mask.dims + 8, 0);
  expect_error(b, {"tensor 'blk.0.mask'", "dimension 1 is 0"});
  b = copy();  // 2^62 f32 elements = 2^64 bytes
  const InfoFields embd = tensor_fields(b, "token_embd.weight", 2);
  put<uint64_t>(b, embd.dims, uint64_t{1} << 61);
  put<uint64_t>(b, embd.dims + 8, 2);
  expect_error(b, {"tensor 'token_embd.weight'", "overflows 64 bits"});
  b = copy();  // big but representable: caught by the bounds check
  put<uint64_t>(b, embd.dims, uint64_t{1} << 40);
  expect_error(b, {"tensor 'token_embd.weight'", "extends past end of file"});
}

TEST_F(GgufCorruption, TensorTypeIds) {
  for (uint32_t id : {4u, 5u, 31u, 99u, 0xffffffffu}) {
    Bytes b = copy();
    put<uint32_t>(b, tensor_fields(b, "blk.0.attn_norm.weight", 1).type, id);
    expect_error(
        b, {"tensor 'blk.0.attn_norm.weight'", "unknown tensor type id " + std::to_string(id)});
  }
  Bytes b = copy();  // token_embd is [4, 3]: 4 is not a whole Q8_0 block
  put<uint32_t>(b, tensor_fields(b, "token_embd.weight", 2).type, 8);
  expect_error(b, {"tensor 'token_embd.weight'",
                   "dimension 0 (4) is not a multiple of the q8_0 block size 32"});
}

TEST_F(GgufCorruption, TensorOffsets) {
  const GgufFile f = GgufFile::from_bytes(sample);
  const char* q = "blk.0.attn_q.weight";
  const uint64_t q_offset = f.find_tensor(q)->offset;
  Bytes b = copy();
  put<uint64_t>(b, tensor_fields(b, q, 2).offset, q_offset + 1);
  expect_error(b, {"tensor 'blk.0.attn_q.weight'", "offset " + std::to_string(q_offset + 1),
                   "alignment 32"});
  b = copy();
  put<uint64_t>(b, tensor_fields(b, q, 2).offset, uint64_t{1} << 40);
  expect_error(b, {"tensor 'blk.0.attn_q.weight'",
                   "extends past end of file (size " + std::to_string(sample.size()) + ")"});
  b = copy();  // offset + size overflows u64
  put<uint64_t>(b, tensor_fields(b, q, 2).offset, kU64Max - 31);
  expect_error(b, {"tensor 'blk.0.attn_q.weight'", "extends past end of file"});
  b = copy();  // data section + offset overflows, offset + size alone does not
  put<uint64_t>(b, tensor_fields(b, q, 2).offset, kU64Max - 511);
  expect_error(b, {"tensor 'blk.0.attn_q.weight'", "extends past end of file"});
  b = copy();  // the last tensor moved onto another one
  put<uint64_t>(b, tensor_fields(b, "output.weight", 2).offset,
                f.find_tensor("blk.0.mask")->offset);
  expect_error(b, {"output.weight", "blk.0.mask", "overlaps"});
}

TEST_F(GgufCorruption, DuplicateKeysAndTensorNames) {
  Bytes b = copy();
  std::memcpy(b.data() + after_string(b, "test.u16") - 3, "u32", 3);  // test.u16 -> test.u32
  expect_error(b, {"key 'test.u32'", "duplicate key"});
  b = copy();  // same length: blk.0.ffn_up.weight -> blk.0.attn_q.weight
  const size_t name = after_string(b, "blk.0.ffn_up.weight") - 19;
  std::memcpy(b.data() + name, "blk.0.attn_q.weight", 19);
  expect_error(b, {"tensor 'blk.0.attn_q.weight'", "duplicate tensor name"});
}

TEST(GgufCorruptionAlignment, MustBeAPowerOfTwoUpTo2To31) {
  const Bytes sample = testing::make_sample_bytes(3, 64);
  const size_t value = after_string(sample, "general.alignment") + 4;
  for (uint32_t a : {0u, 3u, 48u, 0xffffffffu}) {
    Bytes b = sample;
    put<uint32_t>(b, value, a);
    expect_error(b, {"key 'general.alignment'", "power of two", "got " + std::to_string(a)});
  }
  Bytes b = sample;  // valid alignment, but then the tensors are misaligned
  put<uint32_t>(b, value, 1u << 31);
  expect_error(b, {"tensor 'blk.0.attn_q.weight'", "alignment 2147483648"});

  expect_error(RawBytes().header(3, 0, 1).str("general.alignment").u32(8).str("32").bytes(),
               {"key 'general.alignment'", "expected an integer", "got string"});
  expect_error(RawBytes().header(3, 0, 1).str("general.alignment").u32(5).u32(-32).bytes(),
               {"key 'general.alignment'", "got -32"});
  expect_error(
      RawBytes().header(3, 0, 1).str("general.alignment").u32(10).u64(uint64_t{1} << 32).bytes(),
      {"key 'general.alignment'", "got 4294967296"});
  EXPECT_EQ(GgufFile::from_bytes(
                RawBytes().header(3, 0, 1).str("general.alignment").u32(11).u64(16).bytes())
                .alignment(),
            16u);
}

TEST(GgufCorruptionLayout, DataSectionPastEndOfFile) {
  // Alignment 2^31 puts the data section far beyond this small file.
  RawBytes b;
  b.header(3, 1, 1).str("general.alignment").u32(4).u32(1u << 31);
  b.str("t").u32(1).u64(1).u32(0).u64(0).f32(1.0f);
  expect_error(b.bytes(), {"tensor data section", "'t'", "past the end of the file"});
}

TEST(GgufCorruptionNames, HostileNamesAreEscapedAndShortenedInMessages) {
  const std::string long_name(5000, 'k');
  const std::string message = parse_error(
      RawBytes().header(3, 0, 2).str("a\nb").u32(7).u8(1).str(long_name).u32(7).u8(9).bytes());
  EXPECT_NE(message.find("key '" + std::string(120, 'k') + "...(5000 bytes)': bool value 9"),
            std::string::npos)
      << message.substr(0, 300);
  EXPECT_EQ(message.find(std::string(121, 'k')), std::string::npos);
  const std::string escaped =
      parse_error(RawBytes().header(3, 0, 1).str("a\nb").u32(7).u8(5).bytes());
  EXPECT_NE(escaped.find("key 'a\\x0ab': bool value 5"), std::string::npos) << escaped;
}

Bytes nested_array_file(int levels) {
  RawBytes b;
  b.header(3, 0, 1).str("deep").u32(9);
  for (int i = 1; i < levels; ++i) b.u32(9).u64(1);
  b.u32(0).u64(1).u8(42);
  return b.bytes();
}

TEST(GgufCorruptionNesting, DepthIsLimited) {
  EXPECT_NO_THROW(GgufFile::from_bytes(nested_array_file(kMaxArrayDepth)));
  expect_error(nested_array_file(kMaxArrayDepth + 1), {"key 'deep'", "nested deeper than 8"});
  expect_error(nested_array_file(100000), {"key 'deep'", "nested deeper than 8"});
}

// Reads every value of every array, and every tensor byte.
uint64_t touch(const Value& v) {
  uint64_t h = static_cast<uint64_t>(v.type);
  if (const auto* a = std::get_if<Array>(&v.data)) {
    for (const Value& item : a->items) h = h * 31 + touch(item);
  } else if (const auto* s = std::get_if<std::string>(&v.data)) {
    for (char c : *s) h = h * 31 + static_cast<uint8_t>(c);
  }
  return h;
}

TEST(GgufMutation, RandomByteFlipsParseOrThrowGgufError) {
  const Bytes sample = testing::make_sample_bytes(3, 32);
  const uint64_t metadata_end = GgufFile::from_bytes(sample).data_offset();
  std::mt19937_64 rng(20240601);
  int accepted = 0, rejected = 0;
  for (int iter = 0; iter < 4000; ++iter) {
    Bytes b = sample;
    const int n_flips = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < n_flips; ++k) {
      // Mostly the header, metadata and tensor infos: that is where sizes live.
      const size_t pos = (rng() % 10 != 0) ? rng() % metadata_end : rng() % b.size();
      switch (rng() % 4) {
        case 0:
          b[pos] = static_cast<uint8_t>(rng());
          break;
        case 1:
          b[pos] ^= static_cast<uint8_t>(1u << (rng() % 8));
          break;
        case 2:
          b[pos] = 0xff;
          break;
        default:
          b[pos] = 0;
          break;
      }
    }
    if (rng() % 8 == 0) b.resize(rng() % b.size());
    try {
      const GgufFile f = GgufFile::from_bytes(b);
      uint64_t h = 0;
      for (const KeyValue& kv : f.metadata()) h += touch(kv.value) + kv.key.size();
      for (const TensorInfo& t : f.tensors()) {
        for (uint8_t byte : f.tensor_data(t)) h += byte;
      }
      (void)h;
      // What the reader accepts, the writer reproduces, and a second trip is stable.
      const Bytes once = GgufWriter::from_file(f).to_bytes();
      const Bytes twice = GgufWriter::from_file(GgufFile::from_bytes(once)).to_bytes();
      ASSERT_EQ(once, twice) << "iteration " << iter;
      ++accepted;
    } catch (const GgufError&) {
      ++rejected;
    }
  }
  // Both outcomes occur, or the mutations are not exercising the reader.
  EXPECT_GT(accepted, 100);
  EXPECT_GT(rejected, 1000);
  std::printf("mutations: %d accepted, %d rejected\n", accepted, rejected);
}

}  // namespace
}  // namespace kvforge::gguf
