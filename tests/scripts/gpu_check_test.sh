#!/usr/bin/env bash
# scripts/gpu-check's own logic, without a GPU: argument errors, a bundle
# unpacked and run, a step cut by --budget, the logs packed by --pack.
# The bundle here is a fake one: shell scripts standing in for the binaries.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# Bad arguments: one line naming what was given, exit 2.
for args in "--bogus" "--budget abc" "--bundle $tmp/missing.tar.xz"; do
  rc=0
  # shellcheck disable=SC2086
  "$repo/scripts/gpu-check" $args >"$tmp/out" 2>"$tmp/err" || rc=$?
  [ "$rc" -eq 2 ] || fail "gpu-check $args exited $rc, not 2"
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "gpu-check $args printed $(wc -l <"$tmp/err") lines: $(cat "$tmp/err")"
  grep -q -- "${args##* }" "$tmp/err" || fail "gpu-check $args did not name '${args##* }': $(cat "$tmp/err")"
done

# A bundle whose test binaries pass, skip and hang, and a benchmark the
# budget leaves no time for.
mkdir -p "$tmp/stage/bin" "$tmp/stage/lib" "$tmp/stage/python/fieldkit"
echo "fake bundle for gpu_check_test" >"$tmp/stage/MANIFEST"
printf '#!/bin/sh\necho "[  PASSED  ] 1 test."\n' >"$tmp/stage/bin/fk_cuda_tests"
printf '#!/bin/sh\necho "[  SKIPPED ] 1 test."\n' >"$tmp/stage/bin/minkowski_cuda_tests"
printf '#!/bin/sh\nsleep 60\n' >"$tmp/stage/bin/nefi_cuda_tests"
printf '#!/bin/sh\necho never run\n' >"$tmp/stage/bin/nefi_cuda_bench"
chmod +x "$tmp/stage/bin/"*
tar cJf "$tmp/bundle.tar.xz" -C "$tmp/stage" .

rc=0
start=$(date +%s)
BUILD_DIR="$tmp/build" GPU_CHECK_OUT="$tmp/logs/gpu-check" FK_PYTHON=/bin/false \
  "$repo/scripts/gpu-check" --bundle "$tmp/bundle.tar.xz" --budget 20 --pack "$tmp/packed/logs.tar.gz" \
  >"$tmp/run.log" 2>&1 || rc=$?
took=$(($(date +%s) - start))
summary="$tmp/logs/gpu-check/summary.txt"
[ "$rc" -gt 0 ] || fail "a run with skipped and cut tests exited 0"
[ "$took" -lt 50 ] || fail "--budget 20 took ${took} s: the hanging binary was not cut"
grep -q "unpacked $tmp/bundle.tar.xz: fake bundle for gpu_check_test" "$summary" || fail "no unpack line in $summary"
grep -q "fk_cuda_tests exit 0" "$summary" || fail "fk_cuda_tests did not pass: $(cat "$summary")"
grep -q "minkowski_cuda_tests skipped tests" "$summary" || fail "a skip was not reported as a failure"
grep -q "nefi_cuda_tests was cut" "$summary" || fail "the hanging binary was not reported as cut"
grep -q "not run, the --budget is spent" "$summary" || fail "steps after the budget were not reported"
tar xzf "$tmp/packed/logs.tar.gz" -C "$tmp" gpu-check/summary.txt || fail "--pack wrote no summary.txt"
cmp -s "$summary" "$tmp/gpu-check/summary.txt" || fail "the packed summary differs from the run's"
echo "gpu_check_test: ok (${took} s)"
