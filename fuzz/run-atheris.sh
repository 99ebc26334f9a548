#!/usr/bin/env bash
# fuzz/run-atheris.sh RUNS: the Python layer's harness (fuzz/atheris_imij.py) for RUNS inputs on
# kernels built with IMIJ_SANITIZE=1 (the venv of run-tests-sanitized.sh, built first when
# missing), seeded with fuzz/make_seeds.py's files. atheris carries its own libFuzzer, whose
# coverage hooks a plain ASan runtime in LD_PRELOAD would shadow, so the preloaded runtime is ASan
# and libFuzzer merged into one library (atheris's documented asan_with_fuzzer.so), built here.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
OUT="${FUZZ_OUT:-$HERE/build}"
RUNS="${1:-200000}"
SAN="$OUT/sanitized"
[ -x "$SAN/venv/bin/python" ] || "$HERE/run-tests-sanitized.sh" --co -q >/dev/null
"$SAN/venv/bin/python" -c "import atheris" 2>/dev/null || "$SAN/venv/bin/pip" install -q atheris
cp "$HERE/atheris_imij.py" "$SAN/src/fuzz/atheris_imij.py"
RT="$(dirname "$(clang -print-file-name=libclang_rt.asan-x86_64.a)")"
MERGED="$OUT/atheris/asan_with_fuzzer.so"
mkdir -p "$OUT/atheris/corpus" "$OUT/atheris/artifacts" "$OUT/atheris/tmp"
if [ ! -f "$MERGED" ]; then
    cp "$RT/libclang_rt.asan-x86_64.a" "$OUT/atheris/tmp/asan.a"
    ar d "$OUT/atheris/tmp/asan.a" asan_preinit.cpp.o
    clang -shared -o "$MERGED" -Wl,--whole-archive "$OUT/atheris/tmp/asan.a" "$RT/libclang_rt.fuzzer_no_main-x86_64.a" \
        "$RT/libclang_rt.ubsan_standalone_cxx-x86_64.a" -Wl,--no-whole-archive -lpthread -ldl -lstdc++ -lm
fi
PYTHON="$SAN/venv/bin/python"
export LD_PRELOAD="$MERGED" ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
"$PYTHON" "$HERE/make_seeds.py" "$OUT/atheris/seeds" >/dev/null
cd "$OUT/atheris"
"$PYTHON" "$SAN/src/fuzz/atheris_imij.py" corpus seeds/files -atheris_runs="$RUNS" -max_len=16384 \
    -rss_limit_mb=3072 -timeout=60 -print_final_stats=1 -artifact_prefix="$OUT/atheris/artifacts/"
