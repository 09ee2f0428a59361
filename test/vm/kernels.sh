#!/usr/bin/env bash
# `npm run test:vm` and `npm run test:vm:lab`: test/vm/run.sh once per kernel series, with the same
# arguments: Debian's 6.1 (no tcx: the clsact attach path), then its 6.12 (tcx), README.md says why both.
# Every kernel runs even when one fails; the end names each kernel's outcome and time.
#   bash test/vm/kernels.sh [command...]
# Exits 0 when every kernel's run did, else 1. STRAIT_VM_KERNEL (a series or a space-separated list, as
# "6.12" or "6.12 6.1") picks the kernels; run.sh's other variables reach each run.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
say() { echo "strait-vm: $*" >&2; }
kernels=${STRAIT_VM_KERNEL:-6.1 6.12}
# The VM suite on 6.12 leaves out the tests tagged @vm-6.1-only: the encrypted lab, 3 of its 8.5 minutes
# under emulation, and the two gateways' traffic of each family through ESP (ipsec-apply.test.ts), whose
# ESP states the xfrm and IPsec apply tests (@esp) check on 6.12 too.
suite_without_61_only=(env CI=true node node_modules/.bin/mocha --config test/vm/mocharc.js
  --grep '^(?!.*@vm-6\.1-only).*(?:@esp|@vm-kernel)')
results=()
failed=()
for k in $kernels; do
  say "=== kernel $k"
  start=$(date +%s)
  if [ $# -eq 0 ] && [ "$k" != 6.1 ]; then
    STRAIT_VM_KERNEL=$k bash "$here/run.sh" "${suite_without_61_only[@]}"
  else
    STRAIT_VM_KERNEL=$k bash "$here/run.sh" "$@"
  fi
  rc=$?
  took=$(($(date +%s) - start))
  if [ "$rc" = 0 ]; then
    results+=("kernel $k: passed (exit 0) in ${took}s")
  else
    results+=("kernel $k: FAILED (exit $rc) in ${took}s")
    failed+=("$k")
  fi
  # Interrupted (run.sh exits 130 on INT, 143 on TERM): the other kernels do not run either.
  if [ "$rc" = 130 ] || [ "$rc" = 143 ]; then
    say "interrupted on kernel $k: not running the rest"
    exit "$rc"
  fi
done
for r in "${results[@]}"; do say "$r"; done
[ ${#failed[@]} -eq 0 ] || { say "failed on kernel ${failed[*]}"; exit 1; }
