#include "engine/sampling/grammar/gbnf_parser.h"

#include <gtest/gtest.h>

#include "engine/sampling/grammar/grammar_error.h"
#include "grammar_test_util.h"

namespace kvforge {
namespace {

using grammar_test::accepts;
using grammar_test::accepts_prefix;
using grammar_test::constraint_of;

std::string error_of(std::string_view gbnf) {
  try {
    compile_gbnf(gbnf);
  } catch (const GrammarError& e) {
    return e.what();
  }
  return "";
}

TEST(GbnfParser, LiteralsClassesAndEscapes) {
  auto c = constraint_of(R"(root ::= "a\"b" [x-z\]] "\x41\u00e9\n" [^a-c])");
  EXPECT_TRUE(accepts(*c, "a\"b]A\xC3\xA9\nd"));
  EXPECT_TRUE(accepts(*c, "a\"bxA\xC3\xA9\n\xE2\x82\xAC"));  // [^a-c] takes a 3-byte character
  EXPECT_FALSE(accepts(*c, "a\"bxA\xC3\xA9\nb"));
  EXPECT_FALSE(accepts(*c, "a\"bwA\xC3\xA9\nd"));
}

TEST(GbnfParser, Repetitions) {
  auto c = constraint_of("root ::= \"a\"{2,3} \"b\"* (\"c\" \"d\")+ \"e\"? \"f\"{2,}\n");
  EXPECT_TRUE(accepts(*c, "aacdff"));
  EXPECT_TRUE(accepts(*c, "aaabbbcdcdefff"));
  EXPECT_FALSE(accepts(*c, "acdff"));
  EXPECT_FALSE(accepts(*c, "aaaacdff"));
  EXPECT_FALSE(accepts(*c, "aacdf"));
  EXPECT_FALSE(accepts(*c, "aaff"));
  EXPECT_TRUE(accepts_prefix(*c, "aab"));
}

TEST(GbnfParser, RulesCommentsAndNewlines) {
  auto c = constraint_of(R"(# a comment
root ::= item ("," ws item)*   # trailing comment
item ::=
  "x" |
  "y" ( "1"
        | "2" )
ws ::= | " "
)");
  EXPECT_TRUE(accepts(*c, "x"));
  EXPECT_TRUE(accepts(*c, "x, y2,y1"));
  EXPECT_FALSE(accepts(*c, "x,  y"));
  EXPECT_FALSE(accepts(*c, "y"));
}

TEST(GbnfParser, AnyCharIsOneWholeCharacter) {
  auto c = constraint_of("root ::= \"<\" . \">\"");
  EXPECT_TRUE(accepts(*c, "<a>"));
  EXPECT_TRUE(accepts(*c, "<\xF0\x9F\x98\x80>"));
  EXPECT_FALSE(accepts(*c, "<\xF0\x9F\x98>"));  // a cut character
  EXPECT_FALSE(accepts(*c, "<\xED\xA0\x80>"));  // a surrogate has no UTF-8 form
  EXPECT_FALSE(accepts(*c, "<ab>"));
}

TEST(GbnfParser, ErrorsNameTheProblem) {
  EXPECT_NE(error_of("root ::= foo").find("undefined rule 'foo'"), std::string::npos);
  EXPECT_NE(error_of("start ::= \"a\"").find("no rule named 'root'"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"a").find("unterminated string"), std::string::npos);
  EXPECT_NE(error_of("root ::= [a").find("unterminated character class"), std::string::npos);
  EXPECT_NE(error_of("root ::= (\"a\"").find("expected ')'"), std::string::npos);
  EXPECT_NE(error_of("\nroot ::= \"a\" @").find("line 2 column 14"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"a\"{3,2}").find("n < m"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"a\"{99999999}").find("limit"), std::string::npos);
  EXPECT_NE(error_of("root ::= <[12a]>").find("token references"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"\\q\"").find("unknown escape"), std::string::npos);
  EXPECT_NE(error_of("root ::= *").find("nothing before it"), std::string::npos);
}

TEST(GbnfParser, LeftRecursionAndEmptyLoopsAreRefused) {
  EXPECT_NE(error_of("root ::= root \"a\" | \"b\"").find("left recursion"), std::string::npos);
  EXPECT_NE(error_of("root ::= x\nx ::= y \"a\"\ny ::= \"\" | x").find("x -> y -> x"),
            std::string::npos);
  EXPECT_NE(error_of("root ::= (\"a\"?)*").find("left recursion"), std::string::npos);
  // Right recursion is fine.
  auto c = constraint_of("root ::= \"a\" root | \"b\"");
  EXPECT_TRUE(accepts(*c, "aaab"));
}

TEST(GbnfParser, BudgetsBoundExpansion) {
  std::string deep = "root ::= ";
  for (int i = 0; i < 100; ++i) deep += "(";
  deep += "\"a\"";
  for (int i = 0; i < 100; ++i) deep += ")";
  EXPECT_NE(error_of(deep).find("nested deeper"), std::string::npos);
  GrammarLimits small;
  small.max_elements = 1000;
  try {
    compile_gbnf("root ::= \"a\"{0,400} \"b\"{0,400}", small);
    FAIL() << "expected the element budget to refuse";
  } catch (const GrammarError& e) {
    EXPECT_NE(std::string(e.what()).find("elements"), std::string::npos);
  }
}

}  // namespace
}  // namespace kvforge
