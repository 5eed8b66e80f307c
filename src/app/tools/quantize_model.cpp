#include "app/tools/quantize_model.h"

#include <stdexcept>

#include "app/tools/quantize_recipe.h"
#include "core/formats/row_codec.h"
#include "core/gguf/gguf_writer.h"

namespace kvforge {
namespace {

// Every planned type must be encodable and every planned source decodable before
// anything is converted, so that an unsupported type fails at once, naming the tensor.
void check_plan(const gguf::GgufFile& src, const std::vector<PlannedTensor>& plan) {
  if (plan.size() != src.tensors().size())
    throw std::invalid_argument("quantization plan has " + std::to_string(plan.size()) +
                                " entries for " + std::to_string(src.tensors().size()) +
                                " tensors in " + src.name());
  for (const PlannedTensor& p : plan) {
    if (!p.quantized) continue;
    if (!is_quantizable_type(p.to))
      throw std::runtime_error(
          "tensor '" + p.name + "' is planned as " + std::string(type_name(p.to)) +
          ", which kvforge cannot encode yet (it can: " + quantizable_type_list() + ")");
    if (!is_supported_weight_type(p.from))
      throw std::runtime_error(src.name() + ": tensor '" + p.name + "' has type " +
                               std::string(type_name(p.from)) + ", which kvforge cannot decode");
  }
}

std::vector<uint8_t> convert(const gguf::TensorInfo& t, std::span<const uint8_t> data,
                             GgmlType to) {
  const uint64_t cols = t.dims[0], rows = t.n_elements / cols;
  const size_t in_rb = row_bytes(t.type, cols), out_rb = row_bytes(to, cols);
  std::vector<uint8_t> encoded(rows * out_rb);
  std::vector<float> row(cols);
  for (uint64_t r = 0; r < rows; ++r) {
    dequantize_row(t.type, data.data() + r * in_rb, row.data(), int64_t(cols));
    quantize_row(to, row.data(), encoded.data() + r * out_rb, int64_t(cols));
  }
  return encoded;
}

}  // namespace

int count_requantized(const std::vector<PlannedTensor>& plan) {
  int n = 0;
  for (const PlannedTensor& p : plan) n += p.quantized && is_quantized_type(p.from);
  return n;
}

QuantizeReport write_quantized(const gguf::GgufFile& src, const std::vector<PlannedTensor>& plan,
                               LlamaFtype ftype, const std::filesystem::path& out,
                               const std::vector<KeyOverride>& overrides,
                               const QuantizeProgress& progress) {
  check_plan(src, plan);
  gguf::GgufWriter writer(3, src.alignment());
  for (const gguf::KeyValue& kv : src.metadata()) writer.set(kv.key, kv.value);
  writer.set("general.file_type", gguf::Value::u32(uint32_t(ftype)));
  writer.set("general.quantization_version", gguf::Value::u32(2));
  for (const KeyOverride& o : overrides) writer.set(o.key, o.value);

  QuantizeReport report;
  report.requantized = count_requantized(plan);
  const int total = int(plan.size());
  for (int i = 0; i < total; ++i) {
    const gguf::TensorInfo& t = src.tensors()[size_t(i)];
    const PlannedTensor& p = plan[size_t(i)];
    const auto data = src.tensor_data(t);
    report.bytes_in += data.size();
    if (!p.quantized) {
      writer.add_tensor(t.name, t.type, t.dims, data);
      report.bytes_out += data.size();
      ++report.kept;
    } else {
      const std::vector<uint8_t> encoded = convert(t, data, p.to);
      writer.add_tensor(t.name, p.to, t.dims, encoded);
      report.bytes_out += encoded.size();
      ++report.matrices[p.to];
      report.fallback += p.fell_back;
    }
    if (progress) progress(i + 1, total, t.name);
  }
  writer.write(out);
  return report;
}

}  // namespace kvforge
