// A weight in a type kvforge cannot compute with (the IQ1/IQ2/IQ3 family, the
// ternary TQ types) is refused at load with a message naming the tensor, its
// type and the types kvforge does support.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "core/formats/row_codec.h"
#include "core/gguf/gguf_file.h"
#include "core/gguf/gguf_writer.h"
#include "model/model.h"
#include "model/random_model.h"

namespace kvforge {
namespace {

// The random model's bytes with one tensor re-typed to `type` (zero bytes of its size).
std::vector<uint8_t> with_tensor_type(const std::string& name, GgmlType type) {
  RandomModelSpec spec;
  spec.n_embd = 256;
  spec.n_ff = 256;
  spec.n_layer = 1;
  const gguf::GgufFile src = gguf::GgufFile::from_bytes(make_random_model(spec).to_bytes());
  gguf::GgufWriter out(3, src.alignment());
  for (const gguf::KeyValue& kv : src.metadata()) out.set(kv.key, kv.value);
  for (const gguf::TensorInfo& t : src.tensors()) {
    if (t.name != name) {
      const auto data = src.tensor_data(t);
      out.add_tensor(t.name, t.type, t.dims, std::vector<uint8_t>(data.begin(), data.end()));
      continue;
    }
    const size_t bytes = row_bytes(type, t.dims[0]) * t.dims[1];
    out.add_tensor(t.name, type, t.dims, std::vector<uint8_t>(bytes, 0));
  }
  return out.to_bytes();
}

TEST(ModelUnsupportedType, NamesTheTensorItsTypeAndTheSupportedOnes) {
  for (GgmlType type : {GgmlType::IQ2_XS, GgmlType::IQ3_S, GgmlType::IQ1_M, GgmlType::TQ2_0}) {
    const std::string name = "blk.0.ffn_up.weight";
    try {
      Model::from_file(gguf::GgufFile::from_bytes(with_tensor_type(name, type)));
      ADD_FAILURE() << type_name(type) << " was accepted";
    } catch (const std::exception& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(name), std::string::npos) << what;
      EXPECT_NE(what.find("type " + std::string(type_name(type))), std::string::npos) << what;
      EXPECT_NE(what.find("supported: " + supported_weight_type_names()), std::string::npos)
          << what;
      EXPECT_NE(what.find("q4_k"), std::string::npos) << what;
    }
  }
}

}  // namespace
}  // namespace kvforge
