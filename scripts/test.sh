#!/usr/bin/env bash
# The whole test suite: installs dependencies, then builds and runs every test
# twice — an optimised build (g++), and a build with AddressSanitizer +
# UndefinedBehaviorSanitizer (clang) that also fuzzes the GGUF reader, the chat-template
# engine, the OpenAI request parser and the tokenizers briefly with libFuzzer — and runs
# the multi-threaded code under ThreadSanitizer (clang).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="$(nproc)"
# Each stage's wall time, so that a slow CI run says where it went.
stage_start=$SECONDS
stage() {
  echo "   ($((SECONDS - stage_start)) s)"
  stage_start=$SECONDS
  echo "== $*"
}

scripts/setup.sh

stage "release build and tests"
scripts/build.sh
ctest --test-dir build --output-on-failure -j"$jobs"

stage "ASan + UBSan build and tests (clang), libFuzzer smoke runs among them"
# -O1 (asserts on): fast enough to run every test, cheaper to compile than -O3. The same build
# links the fuzz targets with libFuzzer (the libraries carry its coverage instrumentation),
# so ctest fuzzes the GGUF reader, chat templates, OpenAI requests, tokenizers and HTTP framing
# for 20000 inputs each beside the other tests: one sanitizer build of the libraries, not two.
CXX=clang++ cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_FLAGS_RELEASE=-O1 -DKVFORGE_SANITIZE=ON -DKVFORGE_FUZZ=ON -DKVFORGE_BENCH=OFF >/dev/null
cmake --build build-asan -j"$jobs"
# The schema corpus runs on the paged engine only here: the static engine's grammar path is the
# same code, which server_chat and the release run drive on both engines.
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  KVFORGE_STRUCTURED_MODES=paged ctest --test-dir build-asan --output-on-failure -j"$jobs"
stage "ThreadSanitizer: thread pool, multi-threaded forward passes, kvforge serve (clang)"
CXX=clang++ cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE=-O1 \
  -DKVFORGE_TSAN=ON -DKVFORGE_BENCH=OFF >/dev/null
cmake --build build-tsan -j"$jobs" --target threadpool_tests model_tests engine_tests kvforge
# The model and engine tests leave out what runs on one thread (refusals, the grammar and
# sampling structures, block bookkeeping, KV plans) and repeat only one block format and one
# K-quant of the per-format runs: every format's matmul takes the same thread-pool path, and
# the release and ASan runs check each format's arithmetic.
one_thread_model="*Refusals.*:Files/*QuantizedGolden*.*:Types/ForwardQuantizedTest.*/f16"
for f in bf16 q4_0 q6_k iq4_nl q5_0 q5_1 q4_1 q2_k q3_k iq4_xs; do
  one_thread_model+=":Types/ForwardQuantizedTest.*/$f"
done
one_thread_engine="GbnfParser.*:GrammarMatcher.*:LlamaGrammars.*:RepetitionShifts.*"
one_thread_engine+=":StackPrefixMasks.*:TokenReferences.*:Utf8Ranges.*:ClassTrie.*:Sampl*Test.*"
one_thread_engine+=":KvMemoryPlan*.*:*BlockManager*.*:KvChecksum.*:RequestTableTest.*"
TSAN_OPTIONS=halt_on_error=1 build-tsan/tests/threadpool_tests
TSAN_OPTIONS=halt_on_error=1 build-tsan/tests/model_tests --gtest_filter="-$one_thread_model"
TSAN_OPTIONS=halt_on_error=1 build-tsan/tests/engine_tests --gtest_filter="-$one_thread_engine"
# kvforge serve (HTTP threads, engine loop, queues; paged and static engines) under the server
# suites, load test included (KVFORGE_SERVER_LOAD_CLIENTS=16 lightens it). The schema corpus
# runs on the paged engine only: the static engine's threads are those `chat` drives. The tools
# suite (tool calls through each client) is left to the release and ASan runs: its requests take
# the threads `chat` and `structured` already drive, grammar compiles off the engine thread
# included. tsan.supp: reports from inside Debian's uninstrumented cpp-httplib (see the file).
TSAN_OPTIONS="halt_on_error=1 suppressions=$PWD/tests/app/server/tsan.supp" KVFORGE_STRUCTURED_MODES=paged \
  tests/app/server/run_server_tests.sh build-tsan/kvforge models/kvforge-kjv-4m.gguf \
  chat structured routes apis hostile
stage "all tests passed in ${SECONDS} s"
