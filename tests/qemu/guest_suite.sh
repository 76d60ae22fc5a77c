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
# the NVMe driver's segment limit caps what one passthrough append can carry (devices/linux_zoned.py)
cat /sys/block/nvme0n2/queue/max_segments > "$OUT/max_segments"

step() {
    local name=$1; shift
    local t0=$(date +%s.%N)
    "$@" > "$OUT/$name.log" 2>&1
    local rc=$?
    echo "STEP $name rc=$rc s=$(echo "$(date +%s.%N) - $t0" | bc 2>/dev/null || echo ?)"
    tail -n 25 "$OUT/$name.log"
}

PYTEST=("$PY" -m pytest -q -p no:cacheprovider --rootdir "$REPO" -c "$REPO/pyproject.toml")
# One interpreter for the guest's tests, one for the CLI commands (each Python start-up imports the
# package, and pytest, numpy and hypothesis with it: tens of seconds under TCG, and as much to exit).
# The tests, in this order (the host reads each module's outcomes from tests.xml): the conformance
# suite and the store with both I/O engines (io_uring with appends through /dev/ng0n2, and sync; the
# test ids name the engine), zones --json against blkzone, the io_uring device's append runs on the
# real ring (guest_append_run.py), numpy's sorts.
step tests "${PYTEST[@]}" --junitxml "$OUT/tests.xml" "$REPO/tests/qemu/guest_conformance.py" \
    "$REPO/tests/qemu/guest_blkzone.py" "$REPO/tests/qemu/guest_store.py" "$REPO/tests/qemu/guest_append_run.py" \
    "$REPO/tests/qemu/guest_numerics.py"
# devices --json (libnvme's view of the controller and both namespaces), info as JSON and as text,
# then reset for the bench: STEP lines of their own (tests/qemu/guest_cli.py)
"$PY" "$REPO/tests/qemu/guest_cli.py" "$OUT" /dev/nvme0n2
# The bench on the real namespaces, every swapped-in page checked against its swap-out fingerprint.
# --quick trains 400 iterations: over 20 minutes under TCG (every swap-in is a real 4 KiB read through
# QEMU's NVMe emulation). 20 iterations (577 faults per run, the model twins included) keep this step
# near 3 minutes and the whole guest part near 10. ZSWAP_QEMU_BENCH=0 skips it.
if [ "${ZSWAP_QEMU_BENCH:-1}" != 0 ]; then
    step bench "$PY" -m zswap_host.cli bench --device /dev/nvme0n2 --baseline-device /dev/nvme0n1 --quick \
        ${ZSWAP_GUEST_BENCH_ARGS---iterations 20 --jobs 1} --verify --json "$OUT/bench.json"
fi
echo "GUEST done"
