// The chat template a model file carries (tokenizer.chat_template): read as
// it is, refused at load when it is not UTF-8 (every prompt it rendered would
// carry the bad bytes, and every chat request be refused).
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "app/chat/chat_template.h"
#include "core/gguf/gguf_file.h"
#include "core/gguf/gguf_writer.h"

namespace kvforge {
namespace {

gguf::GgufFile file_with_template(const std::string& source) {
  gguf::GgufWriter w;
  w.set("general.architecture", gguf::Value::string("llama"));
  w.set("tokenizer.chat_template", gguf::Value::string(source));
  return gguf::GgufFile::from_bytes(w.to_bytes(), "model.gguf");
}

TEST(ChatTemplateSource, ReadsTheTemplateOrNothing) {
  const std::string source = "{% for m in messages %}{{ m.content }} \xE2\x80\x94 {% endfor %}";
  EXPECT_EQ(chat_template_source(file_with_template(source)), source);
  gguf::GgufWriter none;
  none.set("general.architecture", gguf::Value::string("llama"));
  EXPECT_EQ(chat_template_source(gguf::GgufFile::from_bytes(none.to_bytes(), "none.gguf")),
            std::nullopt);
}

TEST(ChatTemplateSource, InvalidUtf8IsRefusedNamingTheKey) {
  // A stray continuation byte, a truncated sequence, an overlong '/' and a surrogate.
  for (const std::string bad :
       {"{{ messages }}\x80", "\xE2\x80", "{{ '\xC0\xAF' }}", "\xED\xA0\x80{{ x }}"}) {
    SCOPED_TRACE(bad);
    try {
      chat_template_source(file_with_template(bad));
      ADD_FAILURE() << "accepted";
    } catch (const std::runtime_error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("model.gguf: tokenizer.chat_template is not valid UTF-8 (byte "),
                std::string::npos)
          << what;
    }
  }
}

}  // namespace
}  // namespace kvforge
