#!/usr/bin/env bash
# fuzz/run.sh SECONDS [HARNESS...]: builds every libFuzzer harness of fuzz/ (clang,
# -fsanitize=fuzzer,address,undefined), writes the seed corpora (fuzz/make_seeds.py), and runs
# each harness for SECONDS (default 60) on its corpus. Exits non-zero on the first finding and
# prints the reproducer's path. Environment: PYTHON (default python3: an interpreter with
# imij_plugins installed), FUZZ_OUT (default fuzz/build), FUZZ_RUNS (-runs= instead of a time
# budget), FUZZ_FLAGS (more libFuzzer flags).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(dirname "$HERE")"
SECONDS_EACH="${1:-60}"
shift || true
HARNESSES=("$@")
[ ${#HARNESSES[@]} -eq 0 ] && HARNESSES=(quick models entropy level)
OUT="${FUZZ_OUT:-$HERE/build}"
PYTHON="${PYTHON:-python3}"
CC="${CC:-clang}"
mkdir -p "$OUT/bin" "$OUT/artifacts"

"$PYTHON" "$HERE/make_seeds.py" "$OUT/corpus" >"$OUT/seeds.log"
cp "$OUT/corpus/schemes.h" "$OUT/schemes.h"

SAN=(-fsanitize=address,undefined -fno-sanitize-recover=undefined)
CFLAGS=(-g -O1 -std=c99 -fno-omit-frame-pointer -I "$ROOT/csrc" -I "$OUT")
mkdir -p "$OUT/obj"
objs=()
for src in "$ROOT"/csrc/*.c; do  # the kernels once, with coverage, linked into every harness
    obj="$OUT/obj/$(basename "$src" .c).o"
    "$CC" "${CFLAGS[@]}" "${SAN[@]}" -fsanitize=fuzzer-no-link -c -o "$obj" "$src"
    objs+=("$obj")
done
for h in "${HARNESSES[@]}"; do
    "$CC" "${CFLAGS[@]}" "${SAN[@]}" -fsanitize=fuzzer -o "$OUT/bin/fuzz_$h" "$HERE/fuzz_$h.c" "${objs[@]}"
done

status=0
for h in "${HARNESSES[@]}"; do
    corpus="$OUT/corpus/$h"
    mkdir -p "$corpus"
    budget=(-max_total_time="$SECONDS_EACH")
    [ -n "${FUZZ_RUNS:-}" ] && budget=(-runs="$FUZZ_RUNS")
    log="$OUT/$h.log"
    # shellcheck disable=SC2086
    if ! "$OUT/bin/fuzz_$h" "${budget[@]}" -max_len=65536 -timeout=25 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$OUT/artifacts/${h}-" ${FUZZ_FLAGS:-} "$corpus" >"$log" 2>&1; then
        status=1
        echo "fuzz_$h: FINDING (log $log)"
        grep -E "^(==|SUMMARY|.*runtime error)" "$log" | head -5 || true
        grep -oE "Test unit written to \S+" "$log" | sed 's/^Test unit written to /reproducer: /' || true
        break
    fi
    stats="$(grep -E "^stat::(number_of_executed_units|new_units_added)" "$log" | tr '\n' ' ')"
    cov="$(grep -oE "cov: [0-9]+" "$log" | tail -1)"
    echo "fuzz_$h: ok ($stats $cov)"
done
exit $status
