#!/bin/sh
# Run the fuzz targets one after another, each for SECONDS:
#   sh tests/fuzz/run.sh SECONDS [TARGET...]      (from the repository root)
# Each target's corpus grows in target/fuzz/corpus/TARGET (kept between
# runs), starting from tests/fuzz/seeds/TARGET and, for tracedat, the
# fixtures' small trace.dat files; FUZZ_REPRO=DIR adds a directory of
# reproducers (make fuzz: ../shared/fuzz-repro). Crashes, hangs and OOMs
# land in target/fuzz/artifacts/TARGET/; minimized ones worth keeping are
# committed in tests/fuzz/artifacts/TARGET/ (see README.md). FUZZ_ARGS
# adds libFuzzer options, e.g. "-fork=1 -ignore_crashes=1" to go on past
# a crash and collect them all.
set -eu
secs=${1:?usage: run.sh SECONDS [TARGET...]}
shift
targets=${*:-tracedat ring_page format printfmt ksyms filter argv stream}
dir=tests/fuzz
out=target/fuzz

# The largest input each target is given: a few pages of trace.dat (the
# foreign fixtures are 48-124 KiB), pages, texts, command lines.
max_len() {
    case $1 in
    tracedat | stream) echo 131072 ;;
    ring_page) echo 16385 ;;
    ksyms) echo 16384 ;;
    *) echo 4096 ;;
    esac
}

# One build for all targets, into the main target dir (cached with it).
# No sanitizer: the code under test is safe Rust (sys/ is not fuzzed), and
# without ASan's 2-3x slowdown each second of fuzzing runs more inputs;
# tests/fuzz/src/lib.rs bounds allocations and output instead.
fuzz() { sub=$1; shift; cargo +nightly fuzz "$sub" --fuzz-dir "$dir" --sanitizer none --target-dir "$out/build" "$@"; }
fuzz build

status=0
for t in $targets; do
    corpus=$out/corpus/$t
    mkdir -p "$corpus" "$out/artifacts/$t"
    if [ "$t" = tracedat ]; then
        for f in fixtures/foreign/*.dat fixtures/tracecmd/*.dat; do
            [ -f "$corpus/$(basename "$f")" ] || cp "$f" "$corpus/"
        done
    fi
    extra=""
    if [ -n "${FUZZ_REPRO:-}" ] && [ -d "$FUZZ_REPRO" ] && [ "$t" = tracedat ]; then extra=$FUZZ_REPRO; fi
    # The reproducers of bugs found and fixed: each run starts from them,
    # so a bug that comes back fails at once.
    [ -d "$dir/artifacts/$t" ] && extra="$extra $dir/artifacts/$t"
    dict=""
    [ -f "$dir/dict/$t.dict" ] && dict="-dict=$dir/dict/$t.dict"
    echo "fuzz: $t for ${secs}s" >&2
    # -close_fd_mask=1: ftcat's -h prints its help on stdout (argv).
    # shellcheck disable=SC2086
    fuzz run "$t" "$corpus" "$dir/seeds/$t" $extra -- \
        -max_total_time="$secs" -rss_limit_mb=256 -timeout="${FUZZ_TIMEOUT:-1}" -max_len="$(max_len "$t")" \
        -close_fd_mask=1 -print_final_stats=1 $dict \
        -artifact_prefix="$out/artifacts/$t/" ${FUZZ_ARGS:-} || status=1
done
exit $status
