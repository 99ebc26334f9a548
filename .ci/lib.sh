# Shared helpers of the CI scripts (sourced, not run): interpreter lookup and timed steps.
# shellcheck shell=bash

# The CPython X.Y interpreter of a pyenv build (newest patch release), else python X.Y on PATH,
# never pyenv's shims (they refuse versions not selected); empty when none is on the machine.
find_python() {
    local minor=$1 found
    found=$(printf '%s\n' "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$minor".*/bin/python"$minor" \
        | sort -V | while read -r candidate; do [ -x "$candidate" ] && echo "$candidate"; done | tail -n 1)
    if [ -z "$found" ]; then
        found=$(command -v "python$minor" 2>/dev/null || true)
        case $found in *"/shims/"*) found="" ;; esac
    fi
    printf '%s\n' "$found"
}

# Run "$@" as a named step; print how long it took (the CI budget is 15 minutes on 2 cores).
step() {
    local name=$1 start rc=0
    shift
    start=$SECONDS
    echo "ci: >>> $name"
    "$@" || rc=$?
    echo "ci: <<< $name: $((SECONDS - start)) s$([ "$rc" -eq 0 ] || echo ", FAILED (exit $rc)")"
    return "$rc"
}
