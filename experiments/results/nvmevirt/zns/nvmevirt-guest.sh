mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
echo 16384 > /sys/kernel/tracing/buffer_size_kb
export NVMEVIRT_TRACE=/sys/kernel/tracing/trace
insmod /tmp/nvmevirt-build/61c90f7758cb-6.1.0-57-amd64-zns-z64M-perf-wbfix/nvmev.ko memmap_start=1024M memmap_size=1025M cpus=1,2 || { echo 'nvmevirt: insmod failed'; dmesg | tail -40; exit 3; }
for i in $(seq 120); do [ -b /dev/nvme0n1 ] && break; sleep 0.5; done
[ -b /dev/nvme0n1 ] || { echo 'nvmevirt: no /dev/nvme0n1 after insmod'; dmesg | grep -i -E 'nvme' | tail -40; exit 4; }
export NVMEVIRT_DEV=/dev/nvme0n1
dmesg | grep -E 'NVMeVirt: (Version|Storage|Total|zone_size|ns )' 
set -u
OUT=/work/wt-nvmevirt/experiments/results/nvmevirt/zns
mkdir -p $OUT
D=$NVMEVIRT_DEV
N=$(basename $D)
cd $OUT
udevadm control --exit 2>/dev/null; echo "udevd running: $(pgrep -c udevd)"
dmesg | grep NVMeVirt > $OUT/dmesg_load.txt
for f in zoned chunk_sectors nr_zones max_open_zones max_active_zones logical_block_size max_hw_sectors_kb max_segments zone_append_max_bytes scheduler; do echo "$f $(cat /sys/block/$N/queue/$f 2>/dev/null)"; done > $OUT/queue.txt
nvme id-ctrl $D > $OUT/id-ctrl.txt 2>&1; nvme id-ns $D > $OUT/id-ns.txt 2>&1
echo mq-deadline > /sys/block/$N/queue/scheduler
blkzone report $D > $OUT/blkzone-report.txt 2>&1; echo STEP blkzone rc=$?
nvme zns id-ns $D > $OUT/zns-id-ns.txt 2>&1; echo STEP zns-id-ns rc=$?
nvme zns id-ctrl $D > $OUT/zns-id-ctrl.txt 2>&1; echo STEP zns-id-ctrl rc=$?
resetz() { blkzone reset -o $(( $1 * 131072 )) -c $2 $D; }
job() { local name=$1; shift; echo > $NVMEVIRT_TRACE; echo JOBSTART > /sys/kernel/tracing/trace_marker; local t0=$(date +%s%N); "$@" > $OUT/$name.json 2> $OUT/$name.err; local rc=$?; local t1=$(date +%s%N); echo JOBEND > /sys/kernel/tracing/trace_marker; cp $NVMEVIRT_TRACE $OUT/$name.trace; echo "STEP $name rc=$rc ms=$(( (t1 - t0) / 1000000 ))"; }
resetz 2 1; job reset_0pct blkzone reset -o 262144 -c 1 $D; (echo '== reset_0pct'; dmesg | tail -8) >> $OUT/dmesg_zone_mgmt.txt
resetz 2 1; fio --filename=$D --direct=1 --zonemode=zbd --rw=write --bs=128k --ioengine=psync --name=o --offset=128M --size=64M --io_size=4194304 > /dev/null 2>&1; job reset_6.25pct blkzone reset -o 262144 -c 1 $D; (echo '== reset_6.25pct'; dmesg | tail -8) >> $OUT/dmesg_zone_mgmt.txt
resetz 2 1; fio --filename=$D --direct=1 --zonemode=zbd --rw=write --bs=128k --ioengine=psync --name=o --offset=128M --size=64M --io_size=8388608 > /dev/null 2>&1; job reset_12.5pct blkzone reset -o 262144 -c 1 $D; (echo '== reset_12.5pct'; dmesg | tail -8) >> $OUT/dmesg_zone_mgmt.txt
resetz 2 1; fio --filename=$D --direct=1 --zonemode=zbd --rw=write --bs=128k --ioengine=psync --name=o --offset=128M --size=64M --io_size=16777216 > /dev/null 2>&1; job reset_25pct blkzone reset -o 262144 -c 1 $D; (echo '== reset_25pct'; dmesg | tail -8) >> $OUT/dmesg_zone_mgmt.txt
resetz 2 1; fio --filename=$D --direct=1 --zonemode=zbd --rw=write --bs=128k --ioengine=psync --name=o --offset=128M --size=64M --io_size=33554432 > /dev/null 2>&1; job reset_50pct blkzone reset -o 262144 -c 1 $D; (echo '== reset_50pct'; dmesg | tail -8) >> $OUT/dmesg_zone_mgmt.txt
resetz 2 1; fio --filename=$D --direct=1 --zonemode=zbd --rw=write --bs=128k --ioengine=psync --name=o --offset=128M --size=64M --io_size=67108864 > /dev/null 2>&1; job reset_100pct blkzone reset -o 262144 -c 1 $D; (echo '== reset_100pct'; dmesg | tail -8) >> $OUT/dmesg_zone_mgmt.txt
resetz 2 1; job finish_0pct blkzone finish -o 262144 -c 1 $D; (echo '== finish_0pct'; dmesg | tail -8) >> $OUT/dmesg_zone_mgmt.txt
resetz 2 1; fio --filename=$D --direct=1 --zonemode=zbd --rw=write --bs=128k --ioengine=psync --name=o --offset=128M --size=64M --io_size=4194304 > /dev/null 2>&1; job finish_6.25pct blkzone finish -o 262144 -c 1 $D; (echo '== finish_6.25pct'; dmesg | tail -8) >> $OUT/dmesg_zone_mgmt.txt
resetz 2 1; fio --filename=$D --direct=1 --zonemode=zbd --rw=write --bs=128k --ioengine=psync --name=o --offset=128M --size=64M --io_size=8388608 > /dev/null 2>&1; job finish_12.5pct blkzone finish -o 262144 -c 1 $D; (echo '== finish_12.5pct'; dmesg | tail -8) >> $OUT/dmesg_zone_mgmt.txt
resetz 2 1; fio --filename=$D --direct=1 --zonemode=zbd --rw=write --bs=128k --ioengine=psync --name=o --offset=128M --size=64M --io_size=16777216 > /dev/null 2>&1; job finish_25pct blkzone finish -o 262144 -c 1 $D; (echo '== finish_25pct'; dmesg | tail -8) >> $OUT/dmesg_zone_mgmt.txt
resetz 2 1; fio --filename=$D --direct=1 --zonemode=zbd --rw=write --bs=128k --ioengine=psync --name=o --offset=128M --size=64M --io_size=33554432 > /dev/null 2>&1; job finish_50pct blkzone finish -o 262144 -c 1 $D; (echo '== finish_50pct'; dmesg | tail -8) >> $OUT/dmesg_zone_mgmt.txt
resetz 2 1; fio --filename=$D --direct=1 --zonemode=zbd --rw=write --bs=128k --ioengine=psync --name=o --offset=128M --size=64M --io_size=67104768 > /dev/null 2>&1; job finish_100pct blkzone finish -o 262144 -c 1 $D; (echo '== finish_100pct'; dmesg | tail -8) >> $OUT/dmesg_zone_mgmt.txt
resetz 0 16
( cd /work/wt-nvmevirt && PYTHONDONTWRITEBYTECODE=1 HOME=$OUT ZSWAP_ZNS_DEVICE=$D ZSWAP_IO_ENGINES=sync /work/wt-nvmevirt/.venv/bin/python -m pytest -q -p no:cacheprovider --rootdir /work/wt-nvmevirt -c /work/wt-nvmevirt/pyproject.toml --junitxml $OUT/conformance.xml tests/qemu/guest_conformance.py > $OUT/conformance.log 2>&1 ); echo STEP conformance rc=$?; tail -15 $OUT/conformance.log
resetz 0 16
( cd /work/wt-nvmevirt && PYTHONDONTWRITEBYTECODE=1 HOME=$OUT ZSWAP_ZNS_DEVICE=$D ZSWAP_IO_ENGINES=sync /work/wt-nvmevirt/.venv/bin/python -m pytest -q -p no:cacheprovider --rootdir /work/wt-nvmevirt -c /work/wt-nvmevirt/pyproject.toml --junitxml $OUT/store.xml tests/qemu/guest_store.py > $OUT/store.log 2>&1 ); echo STEP store rc=$?; tail -15 $OUT/store.log
resetz 0 16
( cd $OUT && PYTHONDONTWRITEBYTECODE=1 HOME=$OUT /work/wt-nvmevirt/.venv/bin/python -m zswap_host.cli bench --device $D --quick --iterations 20 --jobs 1 --verify --json $OUT/bench.json > $OUT/bench.log 2>&1 ); echo STEP bench rc=$?; tail -25 $OUT/bench.log
dmesg > $OUT/dmesg_end.txt
echo GUEST done
