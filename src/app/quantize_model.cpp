#include "app/quantize_model.h"

#include <stdexcept>
#include <vector>

#include "core/formats/row_codec.h"
#include "core/gguf/gguf_file.h"
#include "core/gguf/gguf_writer.h"

namespace kvforge {
namespace {

// GGUF general.file_type ids (llama_ftype) for the types a whole model can be converted to.
uint32_t file_type_id(GgmlType t) {
  switch (t) {
    case GgmlType::F32:
      return 0;
    case GgmlType::F16:
      return 1;
    case GgmlType::Q4_0:
      return 2;
    case GgmlType::Q4_1:
      return 3;
    case GgmlType::Q8_0:
      return 7;
    case GgmlType::Q5_1:
      return 9;
    case GgmlType::Q4_K:
      return 15;  // Q4_K_M's id; ours has no mixed layers
    case GgmlType::Q6_K:
      return 18;
    case GgmlType::BF16:
      return 32;
    default:
      throw std::invalid_argument("no file type for " + std::string(type_name(t)));
  }
}

// The type a matrix with rows of `cols` elements gets when `wanted` cannot hold it.
GgmlType type_for_row(GgmlType wanted, uint64_t cols) {
  for (GgmlType t : {wanted, GgmlType::Q8_0, GgmlType::F16})
    if (cols % type_traits(t).block_elems == 0) return t;
  return GgmlType::F16;
}

}  // namespace

QuantizeReport quantize_model(const std::filesystem::path& in, const std::filesystem::path& out,
                              GgmlType type, const QuantizeProgress& progress) {
  if (!is_quantizable_type(type))
    throw std::invalid_argument("cannot quantize to " + std::string(type_name(type)));
  const gguf::GgufFile src = gguf::GgufFile::open(in);
  gguf::GgufWriter writer(3, src.alignment());
  for (const gguf::KeyValue& kv : src.metadata()) writer.set(kv.key, kv.value);
  writer.set("general.file_type", gguf::Value::u32(file_type_id(type)));
  writer.set("general.quantization_version", gguf::Value::u32(2));

  QuantizeReport report;
  const int total = int(src.tensors().size());
  int done = 0;
  std::vector<float> row;
  for (const gguf::TensorInfo& t : src.tensors()) {
    const auto data = src.tensor_data(t);
    report.bytes_in += data.size();
    if (t.dims.size() != 2) {
      writer.add_tensor(t.name, t.type, t.dims, data);
      report.bytes_out += data.size();
      ++report.kept;
    } else {
      if (!is_supported_weight_type(t.type))
        throw std::runtime_error(in.string() + ": tensor '" + t.name + "' has type " +
                                 std::string(type_name(t.type)) + ", which cannot be converted");
      const uint64_t cols = t.dims[0], rows = t.dims[1];
      const GgmlType target = type_for_row(type, cols);
      (target == type ? report.converted : report.fallback)++;
      const size_t in_rb = row_bytes(t.type, cols), out_rb = row_bytes(target, cols);
      std::vector<uint8_t> encoded(rows * out_rb);
      row.resize(cols);
      for (uint64_t r = 0; r < rows; ++r) {
        dequantize_row(t.type, data.data() + r * in_rb, row.data(), int64_t(cols));
        quantize_row(target, row.data(), encoded.data() + r * out_rb, int64_t(cols));
      }
      report.bytes_out += encoded.size();
      writer.add_tensor(t.name, target, t.dims, encoded);
    }
    if (progress) progress(++done, total, t.name);
  }
  writer.write(out);
  return report;
}

}  // namespace kvforge
