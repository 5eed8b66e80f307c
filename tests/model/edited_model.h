// A random model with edited metadata or tensor values, and what loading it
// says: the tests of what a load refuses (model_refusals_test.cpp,
// model_value_refusals_test.cpp) build their hostile files with these.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <exception>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "core/gguf/gguf_file.h"
#include "core/gguf/gguf_writer.h"
#include "model/model.h"
#include "model/random_model.h"

namespace kvforge::testing {

// Changes the bytes of tensor `name` in place (called for every tensor).
using TensorEdit = std::function<void(const std::string& name, std::vector<uint8_t>& data)>;

// The random model of `spec`, its metadata passed through `edit_keys`, its
// tensors through `edit_tensor`, and with `extra_tensor` (a small f32 vector
// of zeros) added when given. The file is named "edited.gguf".
inline gguf::GgufFile edited_model(const RandomModelSpec& spec,
                                   const std::function<void(gguf::GgufWriter&)>& edit_keys,
                                   const std::string& extra_tensor = "",
                                   const TensorEdit& edit_tensor = {}) {
  const gguf::GgufFile src = gguf::GgufFile::from_bytes(make_random_model(spec).to_bytes());
  gguf::GgufWriter out(3, src.alignment());
  for (const gguf::KeyValue& kv : src.metadata()) out.set(kv.key, kv.value);
  edit_keys(out);
  for (const gguf::TensorInfo& t : src.tensors()) {
    const auto data = src.tensor_data(t);
    std::vector<uint8_t> bytes(data.begin(), data.end());
    if (edit_tensor) edit_tensor(t.name, bytes);
    out.add_tensor(t.name, t.type, t.dims, std::move(bytes));
  }
  if (!extra_tensor.empty())
    out.add_tensor(extra_tensor, GgmlType::F32, {4}, std::vector<uint8_t>(16, 0));
  return gguf::GgufFile::from_bytes(out.to_bytes(), "edited.gguf");
}

// The load error's text (fails the test when the load succeeds).
inline std::string load_error(gguf::GgufFile file) {
  try {
    Model::from_file(std::move(file));
  } catch (const std::exception& e) {
    return e.what();
  }
  ADD_FAILURE() << "the file was accepted";
  return "";
}

inline void expect_mentions(const std::string& what, std::initializer_list<const char*> parts) {
  for (const char* p : parts)
    EXPECT_NE(what.find(p), std::string::npos) << "'" << p << "' in: " << what;
}

}  // namespace kvforge::testing
