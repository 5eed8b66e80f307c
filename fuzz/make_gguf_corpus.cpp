// Writes the seed corpus of fuzz_gguf_reader: a few tiny valid GGUF files that
// between them use every value type, nested and empty arrays, versions 2 and 3,
// a non-default alignment and tensors of plain and block types. The output is
// committed under fuzz/corpus/gguf/; rerun after changing what is written:
//   make_gguf_corpus fuzz/corpus/gguf
#include <cstdio>
#include <filesystem>
#include <vector>

#include "core/gguf/gguf_writer.h"

using namespace kvforge;
using namespace kvforge::gguf;

namespace {

std::vector<uint8_t> pattern(size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 37 + 11);
  return v;
}

GgufWriter every_value_type() {
  GgufWriter w;
  w.set("general.architecture", Value::string("llama"));
  w.set("general.name", Value::string(""));
  w.set("u8", Value::u8(200));
  w.set("i8", Value::i8(-3));
  w.set("u16", Value::u16(60000));
  w.set("i16", Value::i16(-300));
  w.set("u32", Value::u32(70000));
  w.set("i32", Value::i32(-70000));
  w.set("u64", Value::u64(1ull << 40));
  w.set("i64", Value::i64(-(1ll << 40)));
  w.set("f32", Value::f32(0.5f));
  w.set("f64", Value::f64(-2.25));
  w.set("bool", Value::boolean(true));
  w.set("tokens", Value::string_array({"<s>", "</s>", "a", ""}));
  w.set("scores", Value::f32_array({0.0f, -1.0f, -2.0f, -3.0f}));
  w.set("types", Value::i32_array({3, 3, 1, 1}));
  w.set("empty", Value::array(ValueType::UINT32, {}));
  return w;
}

GgufWriter nested_arrays_and_tensors_v2() {
  GgufWriter w(2);
  w.set("llama.block_count", Value::u32(1));
  w.set("nested",
        Value::array(ValueType::ARRAY,
                     {Value::string_array({"x", "yz"}), Value::array(ValueType::STRING, {}),
                      Value::array(ValueType::BOOL, {Value::boolean(false)})}));
  w.add_tensor("token_embd.weight", GgmlType::F32, {4, 2}, pattern(32));
  w.add_tensor("blk.0.attn_q.weight", GgmlType::F16, {3}, pattern(6));
  w.add_tensor("blk.0.mask", GgmlType::I8, {2, 1, 2, 1}, pattern(4));
  return w;
}

GgufWriter aligned_block_types() {
  GgufWriter w(3, 8);
  w.set("general.architecture", Value::string("llama"));
  w.add_tensor("q8", GgmlType::Q8_0, {32, 2}, pattern(68));
  w.add_tensor("q4", GgmlType::Q4_0, {32}, pattern(18));
  w.add_tensor("bf16", GgmlType::BF16, {5}, pattern(10));
  return w;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <output directory>\n", argv[0]);
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  every_value_type().write(dir / "every_value_type.gguf");
  nested_arrays_and_tensors_v2().write(dir / "nested_arrays_tensors_v2.gguf");
  aligned_block_types().write(dir / "align8_block_types.gguf");
  GgufWriter().write(dir / "header_only.gguf");
  return 0;
}
