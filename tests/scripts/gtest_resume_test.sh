#!/usr/bin/env bash
# scripts/gtest-resume without a GPU: a fake GoogleTest binary whose tests
# crash, lose the "CUDA context", fail, hang and pass; every test must get a
# clean run in some process, each culprit named once.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# The fake binary: runs its tests in order minus a --gtest_filter=-A:B list,
# printing GoogleTest's lines. T.b kills the process, T.d fails with a
# context-losing error after which every test fails, T.f hangs, T.c fails.
cat >"$tmp/fake_tests" <<'FAKE'
#!/usr/bin/env bash
skip=":" xml=""
for a in "$@"; do
  case "$a" in
    --gtest_filter=-*) skip=":${a#--gtest_filter=-}:" ;;
    --gtest_output=xml:*) xml=${a#--gtest_output=xml:} ;;
  esac
done
[ -n "$xml" ] && echo "<testsuites/>" >"$xml"
lost=0
for t in T.a T.b T.c T.d T.e T.f Param/P.q/0; do
  case "$skip" in *":$t:"*) continue ;; esac
  echo "[ RUN      ] $t"
  if [ "$lost" -eq 1 ]; then echo "fk::Error: previous launch failed"; echo "[  FAILED  ] $t (0 ms)"; continue; fi
  case "$t" in
    T.b) kill -SEGV $$ ;;
    T.c) echo "expected 1, got 2"; echo "[  FAILED  ] $t (1 ms)" ;;
    T.d) echo "CUDA error: an illegal memory access was encountered"; echo "[  FAILED  ] $t (1 ms)"; lost=1 ;;
    T.f) sleep 1000 ;;
    Param/P.q/0) echo "[       OK ] $t, where GetParam() = (1, 2) (0 ms)" ;;
    *) echo "[       OK ] $t (0 ms)" ;;
  esac
done
[ "$lost" -eq 1 ] && exit 1
exit 0
FAKE
chmod +x "$tmp/fake_tests"

rc=0
"$repo/scripts/gtest-resume" --seconds 60 --quiet 2 --xml "$tmp/out" "$tmp/fake_tests" >"$tmp/log" 2>&1 || rc=$?
[ "$rc" -eq 1 ] || fail "exit $rc, not 1: $(cat "$tmp/log")"
for want in "gtest-resume: T.b ended the process" \
  "gtest-resume: T.d lost the CUDA context" \
  "gtest-resume: T.f silent for 2 s"; do
  grep -q "$want" "$tmp/log" || fail "no '$want' in: $(cat "$tmp/log")"
done
# Every test reached a verdict in a sound process: T.e passes once T.d's
# process is left behind, and the parameterized test after the hang runs.
for want in "[       OK ] T.a (" "[  FAILED  ] T.c (" "[       OK ] T.e (" "[       OK ] Param/P.q/0, where"; do
  grep -qF "$want" "$tmp/log" || fail "no '$want' in: $(cat "$tmp/log")"
done
[ "$(grep -c '^\[ RUN      \] T.a$' "$tmp/log")" -eq 1 ] || fail "T.a ran again after it had passed"
[ "$(grep -c '^\[ RUN      \] T.d$' "$tmp/log")" -eq 1 ] || fail "T.d ran again after losing the context"
[ -f "$tmp/out.xml" ] && [ -f "$tmp/out.part4.xml" ] || fail "missing XML: $(ls "$tmp")"

# A binary whose tests all pass: one part, exit 0; a bad argument: exit 2.
printf '#!/bin/sh\necho "[ RUN      ] A.a"\necho "[       OK ] A.a (0 ms)"\n' >"$tmp/good_tests"
chmod +x "$tmp/good_tests"
"$repo/scripts/gtest-resume" --seconds 30 "$tmp/good_tests" >"$tmp/log2" 2>&1 || fail "a passing binary: $(cat "$tmp/log2")"
! grep -q "gtest-resume:" "$tmp/log2" || fail "a passing binary was resumed: $(cat "$tmp/log2")"
rc=0
"$repo/scripts/gtest-resume" --seconds x "$tmp/good_tests" >/dev/null 2>"$tmp/err" || rc=$?
[ "$rc" -eq 2 ] && grep -q "got 'x'" "$tmp/err" || fail "--seconds x: exit $rc, $(cat "$tmp/err")"
# Out of time before every test ran: exit 124, as timeout(1) says it.
printf '#!/bin/sh\necho "[ RUN      ] S.slow"\nsleep 1000\n' >"$tmp/slow_tests"
chmod +x "$tmp/slow_tests"
rc=0
"$repo/scripts/gtest-resume" --seconds 7 "$tmp/slow_tests" >"$tmp/log3" 2>&1 || rc=$?
[ "$rc" -eq 124 ] || fail "a run out of time exited $rc, not 124: $(cat "$tmp/log3")"
grep -q "S.slow cut at the time limit" "$tmp/log3" || fail "the cut test was not named: $(cat "$tmp/log3")"
echo "gtest_resume_test: ok"
