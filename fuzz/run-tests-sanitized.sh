#!/usr/bin/env bash
# fuzz/run-tests-sanitized.sh [PYTEST ARGS...]: the whole test suite with the C kernels built under
# AddressSanitizer and UndefinedBehaviorSanitizer (IMIJ_SANITIZE=1, clang). A copy of the tree in
# fuzz/build/sanitized/src gets its own venv (the checkout's kernels stay as they are); pytest runs
# there with the sanitizer runtime preloaded. Any report fails the run (the test process aborts).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(dirname "$HERE")"
OUT="${FUZZ_OUT:-$HERE/build}/sanitized"
mkdir -p "$OUT/src"
tar -C "$ROOT" --exclude=./fuzz/build --exclude='./.venv*' --exclude=./.git --exclude='*.so' \
    --exclude=__pycache__ -cf - . | tar -C "$OUT/src" -xf -
[ -x "$OUT/venv/bin/python" ] || python3 -m venv "$OUT/venv"
IMIJ_SANITIZE=1 CC=clang "$OUT/venv/bin/pip" install -q -e "$OUT/src[test]"
RUNTIME="$(clang -print-file-name=libclang_rt.asan-x86_64.so)"
cd "$OUT/src"
# detect_leaks=0: CPython's own allocations are not leaks; the kernels allocate nothing
IMIJ_REQUIRE_C=1 LD_PRELOAD="$RUNTIME" ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 "$OUT/venv/bin/python" -m pytest -q -x -p no:cacheprovider "$@"
