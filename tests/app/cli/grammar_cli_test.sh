#!/usr/bin/env bash
# The output-constraint flags of the CLI (issue 39) on a tiny random-weight
# model, the worst case for a grammar: run -j (schema) and --grammar give
# replies that follow them, batch takes them, `grammar check` prints what a
# file compiles to or fails naming the problem.
# usage: grammar_cli_test.sh path/to/kvforge work_dir
set -euo pipefail
kv="$1"
work="$2"
rm -rf "$work" && mkdir -p "$work" && cd "$work"

fail() { echo "FAIL: $*" >&2; exit 1; }
expect_in() { grep -qF -- "$1" "$2" || { cat "$2" >&2; fail "expected '$1' in $2"; }; }

"$kv" make-model -o tiny.gguf --preset tiny --seed 3 2>/dev/null
cat >schema.json <<'JSON'
{"type": "object", "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 99},
 "tag": {"enum": ["x", "y"]}, "ok": {"type": "boolean"}}, "required": ["n", "tag", "ok"],
 "additionalProperties": false}
JSON
for seed in 1 2 3 4 5; do
  "$kv" run -m tiny.gguf -p "Q:" -n 200 --temp 1.5 -s "$seed" -q -j @schema.json >out.txt 2>err.txt ||
    { cat err.txt >&2; fail "run -j failed"; }
  python3 - out.txt <<'PY' || fail "run -j: reply is not valid under the schema: $(cat out.txt)"
import json, sys
v = json.loads(open(sys.argv[1]).read()[len("Q:"):])
assert set(v) == {"n", "tag", "ok"} and 0 <= v["n"] <= 99 and v["tag"] in ("x", "y")
assert isinstance(v["ok"], bool)
PY
done
"$kv" run -m tiny.gguf -p "Q:" -n 20 --temp 1 -q --grammar 'root ::= ("yes" | "no") "."' >yn.txt
grep -qxE 'Q:(yes|no)\.' yn.txt || fail "--grammar: got '$(cat yn.txt)'"
printf 'Q1\nQ2\nQ3\n' >prompts.txt
echo 'root ::= [0-9]{2} "!"' >digits.gbnf
"$kv" batch -m tiny.gguf -f prompts.txt -n 16 --temp 1 --grammar-file digits.gbnf \
  >batch.out 2>batch.err || { cat batch.err >&2; fail "batch --grammar-file failed"; }

"$kv" grammar check schema.json >check.out
expect_in '"\"tag\"" space ":" space' check.out
expect_in "# ok:" check.out
printf 'root ::= "a" missing\n' >bad.gbnf
if "$kv" grammar check bad.gbnf >bad.out 2>&1; then fail "grammar check accepted a bad grammar"; fi
expect_in "undefined rule 'missing'" bad.out
if "$kv" run -m tiny.gguf -p x -n 2 -j '{"type": "number", "multipleOf": 2}' >mo.out 2>&1; then
  fail "an unsupported keyword was accepted"
fi
expect_in "unsupported keyword 'multipleOf'" mo.out
echo "grammar CLI: ok"
