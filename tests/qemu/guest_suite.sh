#!/bin/bash
# GUEST side driver, run by tests/qemu/test_qemu_zns.py inside the QEMU guest:
#   guest_suite.sh RESULTS_DIR PYTHON
# Each step writes its results into RESULTS_DIR (shared with the host) and a line STEP name rc=N.
set -u
OUT=$1
PY=$2
REPO=$(cd "$(dirname "$0")/../.." && pwd)
export PYTHONDONTWRITEBYTECODE=1 ZSWAP_RESULTS=$OUT HOME=$OUT
cd "$OUT"                        # the checkout is read-only in the guest
echo "GUEST kernel $(uname -r)"
# zoned writes need in-order dispatch; mq-deadline gives zone write locking on 6.1
echo mq-deadline > /sys/block/nvme0n2/queue/scheduler 2>/dev/null || true
echo "GUEST scheduler $(cat /sys/block/nvme0n2/queue/scheduler)"

step() {
    local name=$1; shift
    local t0=$(date +%s.%N)
    "$@" > "$OUT/$name.log" 2>&1
    local rc=$?
    echo "STEP $name rc=$rc s=$(echo "$(date +%s.%N) - $t0" | bc 2>/dev/null || echo ?)"
    tail -n 25 "$OUT/$name.log"
}

PYTEST=("$PY" -m pytest -q -p no:cacheprovider --rootdir "$REPO" -c "$REPO/pyproject.toml")
step conformance "${PYTEST[@]}" --junitxml "$OUT/conformance.xml" "$REPO/tests/qemu/guest_conformance.py"
step blkzone "${PYTEST[@]}" --junitxml "$OUT/blkzone.xml" "$REPO/tests/qemu/guest_blkzone.py"
if [ -z "${ZSWAP_SKIP_BENCH:-}" ]; then
    step bench "$PY" -m zswap_host.cli bench --device /dev/nvme0n2 --baseline-device /dev/nvme0n1 --quick \
        --json "$OUT/bench.json"
fi
echo "GUEST done"
