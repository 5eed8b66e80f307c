// The Jinja subset behind chat templates: whitespace rules, scoping, loop
// variables, filters, tests, Python value formatting, and clear errors (with
// the line) for what it cannot or will not render.
#include <gtest/gtest.h>

#include "app/chat/chat_template.h"
#include "app/chat/python_format.h"

namespace kvforge {
namespace {

using nlohmann::ordered_json;

std::string render(const std::string& source, ordered_json messages = ordered_json::array(),
                   jinja::RenderLimits limits = {}) {
  ChatTemplateInputs in;
  in.messages = std::move(messages);
  in.bos_token = "<s>";
  in.eos_token = "</s>";
  return ChatTemplate::parse(source).render(in, limits);
}

// The TemplateError message of rendering `source`, or "" when it renders.
std::string error_of(const std::string& source, jinja::RenderLimits limits = {}) {
  try {
    render(source, ordered_json::array(), limits);
  } catch (const TemplateError& e) {
    return e.what();
  }
  return "";
}

TEST(ChatJinja, WhitespaceControlTrimAndLstripBlocks) {
  // trim_blocks drops the newline after a block tag; lstrip_blocks the indentation before it.
  EXPECT_EQ(render("{% if true %}\n  a\n  {% endif %}\nb"), "  a\nb");
  EXPECT_EQ(render("x  {%- if true -%}  y  {%- endif -%}  z"), "xyz");
  EXPECT_EQ(render("a {{- 'b' -}} c"), "abc");
  EXPECT_EQ(render("a {{ 'b' }}\nc"), "a b\nc");             // no trim after '}}'
  EXPECT_EQ(render("  {%+ if true %}x{% endif %}"), "  x");  // '+' keeps the indentation
  EXPECT_EQ(render("a\n{# note #}\nb"), "a\nb");
  EXPECT_EQ(render("line\n"), "line");  // one trailing newline is dropped
  EXPECT_EQ(render("{% raw %}{{ not evaluated }}{% endraw %}"), "{{ not evaluated }}");
}

TEST(ChatJinja, ForLoopVariablesFilterElseAndScoping) {
  EXPECT_EQ(render("{% for x in [10, 20, 30] %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}"
                   "{{ loop.last }}{{ loop.length }}{{ loop.revindex }};{% endfor %}"),
            "10TrueFalse33;21FalseFalse32;32FalseTrue31;");
  EXPECT_EQ(render("{% for x in [1, 2, 3, 4] if x is even %}{{ x }}{{ loop.last }} {% endfor %}"),
            "2False 4True ");
  EXPECT_EQ(render("{% for x in [] %}a{% else %}empty{% endfor %}"), "empty");
  // set inside a loop does not leak; a namespace carries state out.
  EXPECT_EQ(render("{% set n = 0 %}{% set ns = namespace(n=0) %}{% for x in [1, 2] %}"
                   "{% set n = n + x %}{% set ns.n = ns.n + x %}{% endfor %}{{ n }} {{ ns.n }}"),
            "0 3");
  EXPECT_EQ(render("{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }},{% endfor %}"),
            "a=1,b=2,");
  EXPECT_EQ(render("{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}"
                   "{% if x == 4 %}{% break %}{% endif %}{{ x }}{% endfor %}"),
            "013");
  EXPECT_EQ(render("{% for m in messages %}{{ m.role }}{{ loop.cycle('a', 'b') }}{% endfor %}",
                   ordered_json::parse(R"([{"role": "u"}, {"role": "v"}, {"role": "w"}])")),
            "uavbwa");
}

TEST(ChatJinja, ExpressionsFollowPython) {
  EXPECT_EQ(render("{{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }}"),
            "3 -4 2 3.5 1024");
  EXPECT_EQ(render("{{ 'ab' * 3 }} {{ [1] + [2] }} {{ 'a' ~ 1 ~ none }}"), "ababab [1, 2] a1None");
  EXPECT_EQ(render("{{ 'x' if false }}|{{ 'y' if 1 > 2 else 'z' }}"), "|z");
  EXPECT_EQ(render("{{ 0 or 'd' }} {{ 1 and 'e' }} {{ not [] }}"), "d e True");
  EXPECT_EQ(render("{{ 'lo' in 'hello' }} {{ 3 not in [1, 2] }} {{ 'a' in {'a': 1} }}"),
            "True True True");
  EXPECT_EQ(render("{{ 'hello'[1:3] }} {{ [1, 2, 3][::-1] }} {{ 'héllo'[-4:] }} {{ [1, 2][5] }}"),
            "el [3, 2, 1] éllo ");
  EXPECT_EQ(render("{{ {'a': [1, 'x', none, true, 1.5]} }}"), "{'a': [1, 'x', None, True, 1.5]}");
  EXPECT_EQ(render("{{ 1 == 1.0 }} {{ [1, {'a': 2}] == [1, {'a': 2}] }} {{ 'a' < 'b' }}"),
            "True True True");
}

TEST(ChatJinja, FiltersAndMethods) {
  EXPECT_EQ(
      render("{{ '  a b  ' | trim }}|{{ 'xxaxx'.strip('x') }}|{{ '\\n\\nhi'.lstrip('\\n') }}"),
      "a b|a|hi");
  EXPECT_EQ(render("{{ 'a/think b'.replace('/think', '') }} {{ 'a,b,,c'.split(',') }}"),
            "a b ['a', 'b', '', 'c']");
  EXPECT_EQ(render("{{ 'Hello'.startswith('He') }} {{ 'x.py'.endswith(('.js', '.py')) }}"),
            "True True");
  EXPECT_EQ(
      render("{{ [3, 1, 2] | sort | join(', ') }} {{ 'abc' | length }} {{ 'héllo' | length }}"),
      "1, 2, 3 3 5");
  EXPECT_EQ(
      render("{{ messages | selectattr('role', 'equalto', 'user') | map(attribute='c') | list }}",
             ordered_json::parse(R"([{"role": "user", "c": 1}, {"role": "bot", "c": 2},
                                          {"role": "user", "c": 3}])")),
      "[1, 3]");
  EXPECT_EQ(render("{{ ['a', 'code_interpreter', 'b'] | reject('equalto', 'code_interpreter') | "
                   "join(', ') }}"),
            "a, b");
  EXPECT_EQ(
      render("{{ x | default('none given') }} {{ '' | default('e', true) }} {{ 'ab' | upper }}"),
      "none given e AB");
  EXPECT_EQ(render("{{ [1, 2] | first }}{{ [1, 2] | last }} {{ '42' | int + 1 }} {{ {'b': "
                   "1}.get('a', 7) }}"),
            "12 43 7");
  EXPECT_EQ(render("{% for k, v in {'z': 1, 'a': 2} | items %}{{ k }}{{ v }}{% endfor %}"), "z1a2");
}

TEST(ChatJinja, ToJsonMatchesPythonJsonDumps) {
  EXPECT_EQ(render("{{ {'b': 1, 'a': [true, none, 1.5, 'x\"y', 'é\\n']} | tojson }}"),
            "{\"b\": 1, \"a\": [true, null, 1.5, \"x\\\"y\", \"é\\n\"]}");
  EXPECT_EQ(render("{{ {'a': [1, {}], 'b': []} | tojson(indent=2) }}"),
            "{\n  \"a\": [\n    1,\n    {}\n  ],\n  \"b\": []\n}");
  EXPECT_EQ(render("{{ messages | tojson }}",
                   ordered_json::parse(R"([{"z": 1e-7, "a": 100000000000000000000.0}])")),
            "[{\"z\": 1e-07, \"a\": 1e+20}]");
  EXPECT_EQ(jinja::python_float_repr(0.1), "0.1");
  EXPECT_EQ(jinja::python_float_repr(1e16), "1e+16");
  EXPECT_EQ(jinja::python_float_repr(123456789012345.0), "123456789012345.0");
  EXPECT_EQ(jinja::python_float_repr(0.0001), "0.0001");
  EXPECT_EQ(jinja::python_float_repr(-2.5e-5), "-2.5e-05");
}

TEST(ChatJinja, Tests) {
  EXPECT_EQ(
      render(
          "{{ x is defined }} {{ none is none }} {{ 'a' is string }} {{ {} is mapping }} "
          "{{ [] is iterable }} {{ 3 is odd }} {{ 4 is divisibleby(2) }} {{ x is not defined }}"),
      "False True True True True True True True");
  EXPECT_EQ(
      render("{{ messages[0].tool_calls is defined }} {{ messages[0]['role'] is equalto 'u' }}",
             ordered_json::parse(R"([{"role": "u"}])")),
      "False True");
}

TEST(ChatJinja, MacrosAndSetBlocks) {
  EXPECT_EQ(render("{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}"
                   "{{ greet('Ann') }} {{ greet('Bo', punct='?') }}"),
            "Hi Ann! Hi Bo?");
  EXPECT_EQ(render("{% set block %}a{{ 1 + 1 }}b{% endset %}[{{ block }}]"), "[a2b]");
  EXPECT_EQ(render("{{ bos_token }}x{{ eos_token }}"), "<s>x</s>");
}

TEST(ChatJinja, ErrorsNameTheConstructAndLine) {
  EXPECT_NE(error_of("a\nb\n{% if x %}never closed").find("expected '{% endif %}'"),
            std::string::npos);
  EXPECT_NE(error_of("{{ x | wordwrap }}").find("line 1: unknown filter 'wordwrap'"),
            std::string::npos);
  EXPECT_NE(error_of("\n\n{{ x is frobnicated }}").find("line 3: unknown test 'frobnicated'"),
            std::string::npos);
  EXPECT_NE(error_of("{% call foo() %}{% endcall %}").find("unsupported tag '{% call %}'"),
            std::string::npos);
  EXPECT_NE(error_of("{% endfor %}").find("without a matching opening tag"), std::string::npos);
  EXPECT_NE(error_of("{{ 'abc }}").find("unterminated string literal"), std::string::npos);
  EXPECT_NE(error_of("{{ x ").find("unterminated '{{'"), std::string::npos);
  EXPECT_NE(error_of("{# x").find("unterminated comment"), std::string::npos);
  EXPECT_NE(error_of("{{ a $ b }}").find("unexpected character '$'"), std::string::npos);
  EXPECT_NE(error_of("{{ foo.bar }}").find("'foo' is undefined"), std::string::npos);
  EXPECT_NE(error_of("{{ 'a' + 1 }}").find("unsupported operand types for +: str and int"),
            std::string::npos);
  EXPECT_NE(error_of("{{ 1 // 0 }}").find("division or modulo by zero"), std::string::npos);
  EXPECT_NE(error_of("{{ 9223372036854775807 + 1 }}").find("integer overflow"), std::string::npos);
  // An index past int64 after a dot (fuzz_jinja_template: std::stoll's out_of_range escaped).
  EXPECT_NE(error_of("{{ x.99999999999999999999 }}").find("line 1: integer literal out of range"),
            std::string::npos);
  EXPECT_NE(error_of("{{ 'abc'.frob() }}").find("unsupported string method 'frob'"),
            std::string::npos);
  EXPECT_NE(error_of("{{ nothing() }}").find("'nothing' is undefined"), std::string::npos);
  EXPECT_NE(error_of("{% break %}").find("'break' outside a for loop"), std::string::npos);
  EXPECT_NE(error_of("{% set x = 1 %}{% set x.y = 2 %}").find("not a namespace()"),
            std::string::npos);
}

TEST(ChatJinja, HostileTemplatesHitLimits) {
  const std::string deep = "{{ " + std::string(1000, '(') + "1" + std::string(1000, ')') + " }}";
  EXPECT_NE(error_of(deep).find("nested deeper than"), std::string::npos);
  std::string deep_blocks;
  for (int i = 0; i < 500; ++i) deep_blocks += "{% if true %}";
  EXPECT_NE(error_of(deep_blocks).find("nested deeper than"), std::string::npos);
  jinja::RenderLimits small;
  small.max_work = 10000;
  small.max_output_bytes = 1000;
  EXPECT_NE(error_of("{% for i in range(1000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}",
                     small)
                .find("exceeded its work budget of 10000 units"),
            std::string::npos);
  EXPECT_NE(error_of("{% for i in range(100) %}{{ 'x' * 100 }}{% endfor %}", small)
                .find("output exceeds 1000 bytes"),
            std::string::npos);
  EXPECT_NE(error_of("{{ 'x' * 100000000 }}").find("would exceed"), std::string::npos);
  EXPECT_NE(error_of("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}")
                .find("nested deeper than 32 calls"),
            std::string::npos);
  EXPECT_NE(error_of("{% set ns = namespace(a=1) %}{% set ns.a = [ns] %}").find("namespace"),
            std::string::npos);
  EXPECT_NE(error_of("{% set ns = namespace(v=[]) %}{% for i in range(1000) %}"
                     "{% set ns.v = [ns.v] %}{% endfor %}")
                .find("nested deeper than 256 levels"),
            std::string::npos);
  EXPECT_THROW(ChatTemplate::parse(std::string(ChatTemplate::kMaxSourceBytes + 1, 'x')),
               TemplateError);
}

TEST(ChatJinja, RaiseExceptionCarriesTheTemplatesMessage) {
  try {
    render("{{ raise_exception('roles must alternate') }}");
    FAIL();
  } catch (const TemplateRaised& e) {
    EXPECT_STREQ(e.what(), "roles must alternate");
  }
}

TEST(ChatJinja, FallbackTemplate) {
  const ordered_json m = ordered_json::parse(
      R"([{"role": "system", "content": "Be brief."}, {"role": "user", "content": " Hi "}])");
  ChatTemplateInputs in;
  in.messages = m;
  EXPECT_EQ(ChatTemplate::fallback().render(in), "System: Be brief.\n\nUser: Hi\n\nAssistant:");
}

}  // namespace
}  // namespace kvforge
