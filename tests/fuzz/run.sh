#!/usr/bin/env bash
# Fuzzes the shared RESP codec with cargo-fuzz (libFuzzer), on the stable toolchain.
#
# Usage: tests/fuzz/run.sh [seconds]     (default 60 seconds per target)
#
# Targets (tests/fuzz/fuzz_targets/):
#   request_decoder  arbitrary bytes in arbitrary chunkings through RequestDecoder, default and
#                    tiny limits; no panic, and one read vs many reads decode the same.
#   reply_parser     parse_frame on arbitrary bytes; a parsed frame re-encoded as RESP3 parses
#                    back to the same frame.
#
# Runs each target in turn for the given time and exits non-zero if any of them crashed; the
# crashing input is saved under tests/fuzz/artifacts/<target>/ (reproduce with
# `cargo fuzz run -s none --fuzz-dir tests/fuzz <target> <file>`, minimise with
# `cargo fuzz tmin -s none --fuzz-dir tests/fuzz <target> <file>`).
#
# Stable toolchain: `-s none` (no sanitizer) makes cargo-fuzz pass only stable rustc flags
# (sancov passes, --cfg fuzzing, debug assertions), so neither nightly nor RUSTC_BOOTSTRAP=1 is
# needed (checked with cargo-fuzz 0.13.2 and rustc 1.95). Needs a C++ compiler (libfuzzer-sys
# builds libFuzzer). Installs cargo-fuzz from crates.io if it is missing.
#
# The growing corpus lives in tests/fuzz/corpus/<target> (gitignored); the committed seeds in
# tests/fuzz/seeds/<target> are read as well. Set FUZZ_ARGS to pass more libFuzzer flags, e.g.
# FUZZ_ARGS="-max_len=70000" to reach the 64 KB inline/header limits with default limits.
set -uo pipefail

seconds="${1:-60}"
case "$seconds" in
'' | *[!0-9]*)
    echo "usage: $0 [seconds]" >&2
    exit 2
    ;;
esac

fuzz_dir="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$fuzz_dir/../.." && pwd)"
cd "$repo" || exit 2
targets=(request_decoder reply_parser)

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "cargo-fuzz not found: installing it from crates.io" >&2
    cargo install cargo-fuzz --locked || exit 2
fi

cargo fuzz build -s none --fuzz-dir "$fuzz_dir" || exit 2

failed=()
for target in "${targets[@]}"; do
    corpus="$fuzz_dir/corpus/$target"
    seeds="$fuzz_dir/seeds/$target"
    mkdir -p "$corpus"
    log="$(mktemp)"
    echo "== $target: ${seconds}s"
    # The first corpus directory receives new inputs; the seeds are only read.
    # shellcheck disable=SC2086 # FUZZ_ARGS is a list of flags
    cargo fuzz run -s none --fuzz-dir "$fuzz_dir" "$target" "$corpus" "$seeds" -- \
        -max_total_time="$seconds" -print_final_stats=1 ${FUZZ_ARGS:-} >"$log" 2>&1
    status=$?
    grep -E '^Done [0-9]+ runs|stat::number_of_executed_units|stat::peak_rss_mb' "$log"
    if [ "$status" -ne 0 ]; then
        echo "!! $target FAILED (exit $status); last lines of its log ($log):"
        grep -v -E '^#[0-9]+|Uses: [0-9]+' "$log" | tail -40
        failed+=("$target")
    else
        echo "== $target: no crash"
        rm -f "$log"
    fi
done

if [ "${#failed[@]}" -ne 0 ]; then
    echo "crashed: ${failed[*]}"
    exit 1
fi
echo "all targets ran ${seconds}s each without a crash"
