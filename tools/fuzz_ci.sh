#!/usr/bin/env bash
# Bounded fuzzing and Miri on every CI run (issue 18), called by the README's test command:
#   1. each cargo-fuzz target (fuzz/fuzz_targets: om_loader, onnx_import, tensor_readers)
#      for GE_FUZZ_SECONDS (default 30) from fuzz/seeds/ plus a working corpus kept between
#      runs in the cache directory, so coverage accumulates from run to run;
#   2. `cargo +nightly miri test -p ge-runtime` (the loader and Session unit tests), cut at
#      GE_MIRI_SECONDS (default 150).
# The fuzz build is the one CI can afford cold: coverage-instrumented at opt-level 1 without
# AddressSanitizer or debug info (`-O -s none`; about 5 min cold on 2 cores, against ~30 min
# for cargo-fuzz's default ASan + opt-level 3 build, and still 25-85 k execs/s). What it
# catches: panics, aborts, out-of-memory, timeouts. Memory errors in unsafe code are Miri's
# part here, and ASan's in the long campaign (fuzz/README.md).
# A crash, leak, timeout or Miri error fails the run (artifacts in fuzz/artifacts/<target>/;
# replay on stable: see fuzz/README.md). Where nightly, cargo-fuzz or Miri is missing, or the
# fuzz build does not finish in GE_FUZZ_BUILD_SECONDS (default 900; its progress is kept and the
# next run resumes it), that part is skipped with the reason printed. GE_FUZZ_CI=0 skips all.
# Builds go to GE_FUZZ_CACHE (default ~/.cache/ge-fuzz-ci), outside the clone, so a fresh
# clone on the same machine rebuilds only what changed.
set -uo pipefail
cd "$(dirname "$0")/.."

if [ "${GE_FUZZ_CI:-1}" = "0" ]; then
    echo "fuzz_ci: skipped (GE_FUZZ_CI=0)"
    exit 0
fi
secs=${GE_FUZZ_SECONDS:-30}
miri_secs=${GE_MIRI_SECONDS:-150}
build_secs=${GE_FUZZ_BUILD_SECONDS:-900}
cache=${GE_FUZZ_CACHE:-$HOME/.cache/ge-fuzz-ci}
mkdir -p "$cache"
# The CI build profile (see above): release at opt-level 1, no debug info, no sanitizer.
export CARGO_PROFILE_RELEASE_OPT_LEVEL=1 CARGO_PROFILE_RELEASE_DEBUG=0
fuzz_flags=(-O -s none)
t_all=$(date +%s)
status=0

if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "fuzz_ci: skipped: no nightly toolchain (rustup toolchain install nightly)"
    exit 0
fi

# ---- fuzzing --------------------------------------------------------------------------
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "fuzz_ci: fuzzing skipped: cargo-fuzz is not installed (cargo install cargo-fuzz)"
else
    targets=$(ls fuzz/fuzz_targets | sed 's/\.rs$//')
    t0=$(date +%s)
    (cd fuzz && CARGO_TARGET_DIR="$cache/target-ci" timeout "$build_secs" \
        cargo +nightly fuzz build "${fuzz_flags[@]}" >"$cache/build.log" 2>&1)
    rc=$?
    if [ $rc -ne 0 ]; then
        if [ $rc -eq 124 ]; then
            echo "fuzz_ci: fuzzing skipped: the fuzz build did not finish in ${build_secs}s (kept; the next run resumes it)"
        else
            echo "fuzz_ci: fuzz build failed:"
            tail -20 "$cache/build.log"
            status=1
        fi
    else
        echo "fuzz_ci: fuzz targets built in $(($(date +%s) - t0))s"
        for t in $targets; do
            mkdir -p "$cache/corpus/$t" "fuzz/artifacts/$t"
            log="$cache/$t.log"
            (cd fuzz && CARGO_TARGET_DIR="$cache/target-ci" cargo +nightly fuzz run "${fuzz_flags[@]}" "$t" \
                "$cache/corpus/$t" "seeds/$t" -- \
                -max_total_time="$secs" -rss_limit_mb=4096 -malloc_limit_mb=2048 -timeout=30 \
                -artifact_prefix="artifacts/$t/" -print_final_stats=1 >"$log" 2>&1)
            rc=$?
            execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
            cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
            if [ $rc -eq 0 ]; then
                echo "fuzz_ci: $t: ${execs:-?} execs in ${secs}s, ${cov:-cov: ?}, 0 crashes"
            else
                echo "fuzz_ci: $t: FAILED (exit $rc) after ${execs:-?} execs; artifact in fuzz/artifacts/$t/:"
                grep -E 'ERROR|panicked|SUMMARY|Test unit written' "$log" | head -10
                status=1
            fi
        done
    fi
fi

# ---- Miri -----------------------------------------------------------------------------
if ! cargo +nightly miri --version >/dev/null 2>&1; then
    echo "fuzz_ci: Miri skipped: the miri component is not installed (rustup +nightly component add miri rust-src)"
else
    t0=$(date +%s)
    # Miri's sysroot is built once per machine (~/.cache/miri) and is not counted in the budget;
    # a killed setup starts over, so it gets its own, longer bound.
    if ! timeout 900 cargo +nightly miri setup >"$cache/miri-setup.log" 2>&1; then
        echo "fuzz_ci: Miri skipped: cargo miri setup failed or took over 900s:"
        tail -5 "$cache/miri-setup.log"
        echo "fuzz_ci: done in $(($(date +%s) - t_all))s"
        exit $status
    fi
    t0=$(date +%s)
    # Miri's build cache records the workspace's absolute path: a cache left by a clone at
    # another path (since removed) fails to run, so it is wiped when the path changes.
    if [ "$(cat "$cache/miri-target/.workspace" 2>/dev/null)" != "$PWD" ]; then
        rm -rf "$cache/miri-target"
        mkdir -p "$cache/miri-target"
        echo "$PWD" >"$cache/miri-target/.workspace"
    fi
    CARGO_TARGET_DIR="$cache/miri-target" timeout "$miri_secs" \
        cargo +nightly miri test -p ge-runtime >"$cache/miri.log" 2>&1
    rc=$?
    summary=$(grep -E '^test result:' "$cache/miri.log" | head -1)
    if [ $rc -eq 0 ]; then
        echo "fuzz_ci: miri: ge-runtime: ${summary#test result: } ($(($(date +%s) - t0))s)"
    elif [ $rc -eq 124 ]; then
        passed=$(grep -c ' \.\.\. ok$' "$cache/miri.log")
        echo "fuzz_ci: miri: stopped at the ${miri_secs}s budget, $passed tests passed so far, no error"
    else
        echo "fuzz_ci: miri: FAILED (exit $rc):"
        grep -E '^error|Undefined Behavior|FAILED|panicked' "$cache/miri.log" | head -15
        status=1
    fi
fi
echo "fuzz_ci: done in $(($(date +%s) - t_all))s"
exit $status
