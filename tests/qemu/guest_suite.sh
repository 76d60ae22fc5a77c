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

# NVMe discovery through libnvme (the nvme extra): the controller and both namespaces, as JSON
step devices sh -c '"$1" -m zswap_host.cli devices --json > "$2"' sh "$PY" "$OUT/devices.json"
PYTEST=("$PY" -m pytest -q -p no:cacheprovider --rootdir "$REPO" -c "$REPO/pyproject.toml")
# conformance and store run with both I/O engines, in one interpreter each (the test ids name the engine):
# io_uring (appends through /dev/ng0n2) and sync
step conformance "${PYTEST[@]}" --junitxml "$OUT/conformance.xml" "$REPO/tests/qemu/guest_conformance.py"
step blkzone "${PYTEST[@]}" --junitxml "$OUT/blkzone.xml" "$REPO/tests/qemu/guest_blkzone.py"
step store "${PYTEST[@]}" --junitxml "$OUT/store.xml" "$REPO/tests/qemu/guest_store.py"
# info as JSON and as text from one interpreter (each start-up imports the package: ~50 s under TCG)
step engine "$PY" -c 'import sys
from click.testing import CliRunner
from zswap_host.cli import main
r = [CliRunner().invoke(main, ["info", "/dev/nvme0n2"] + a) for a in (["--json"], [])]
for res, path in zip(r, sys.argv[1:]):
    open(path, "w").write(res.output)
sys.exit(max(x.exit_code for x in r))' "$OUT/info.json" "$OUT/info.txt"
step numerics "${PYTEST[@]}" --junitxml "$OUT/numerics.xml" "$REPO/tests/qemu/guest_numerics.py"
# The bench on the real namespaces, every swapped-in page checked against its swap-out fingerprint.
# --quick trains 400 iterations: over 20 minutes under TCG (every swap-in is a real 4 KiB read through
# QEMU's NVMe emulation). 20 iterations (577 faults per run, the model twins included) keep this step
# near 3 minutes and the whole guest part near 10. ZSWAP_QEMU_BENCH=0 skips it.
if [ "${ZSWAP_QEMU_BENCH:-1}" != 0 ]; then
    step reset "$PY" -m zswap_host.cli reset /dev/nvme0n2 --all --yes
    step bench "$PY" -m zswap_host.cli bench --device /dev/nvme0n2 --baseline-device /dev/nvme0n1 --quick \
        ${ZSWAP_GUEST_BENCH_ARGS---iterations 20 --jobs 1} --verify --json "$OUT/bench.json"
fi
echo "GUEST done"
