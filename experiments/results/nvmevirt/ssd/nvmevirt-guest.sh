mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
echo 16384 > /sys/kernel/tracing/buffer_size_kb
export NVMEVIRT_TRACE=/sys/kernel/tracing/trace
insmod /tmp/nvmevirt-build/61c90f7758cb-6.1.0-57-amd64-ssd-perf/nvmev.ko memmap_start=1024M memmap_size=1025M cpus=1,2 || { echo 'nvmevirt: insmod failed'; dmesg | tail -40; exit 3; }
for i in $(seq 120); do [ -b /dev/nvme0n1 ] && break; sleep 0.5; done
[ -b /dev/nvme0n1 ] || { echo 'nvmevirt: no /dev/nvme0n1 after insmod'; dmesg | grep -i -E 'nvme' | tail -40; exit 4; }
export NVMEVIRT_DEV=/dev/nvme0n1
dmesg | grep -E 'NVMeVirt: (Version|Storage|Total|zone_size|ns )' 
set -u
OUT=/work/wt-nvmevirt/experiments/results/nvmevirt/ssd
mkdir -p $OUT
D=$NVMEVIRT_DEV
N=$(basename $D)
cd $OUT
udevadm control --exit 2>/dev/null; echo "udevd running: $(pgrep -c udevd)"
dmesg | grep NVMeVirt > $OUT/dmesg_load.txt
for f in zoned chunk_sectors nr_zones max_open_zones max_active_zones logical_block_size max_hw_sectors_kb max_segments zone_append_max_bytes scheduler; do echo "$f $(cat /sys/block/$N/queue/$f 2>/dev/null)"; done > $OUT/queue.txt
nvme id-ctrl $D > $OUT/id-ctrl.txt 2>&1; nvme id-ns $D > $OUT/id-ns.txt 2>&1
resetz() { :; }
job() { local name=$1; shift; echo > $NVMEVIRT_TRACE; echo JOBSTART > /sys/kernel/tracing/trace_marker; local t0=$(date +%s%N); "$@" > $OUT/$name.json 2> $OUT/$name.err; local rc=$?; local t1=$(date +%s%N); echo JOBEND > /sys/kernel/tracing/trace_marker; cp $NVMEVIRT_TRACE $OUT/$name.trace; echo "STEP $name rc=$rc ms=$(( (t1 - t0) / 1000000 ))"; }
job fill fio --filename=$D --direct=1  --group_reporting --output-format=json --rw=write --bs=128k --iodepth=1 --ioengine=psync --name=f --offset=0 --size=128M
resetz 2 14; job write_4k_qd1_1z fio --filename=$D --direct=1  --group_reporting --output-format=json --rw=write --bs=4k --iodepth=1 --ioengine=psync --runtime=6 --name=w0 --offset=128M --size=64M
resetz 2 14; job write_8k_qd1_1z fio --filename=$D --direct=1  --group_reporting --output-format=json --rw=write --bs=8k --iodepth=1 --ioengine=psync --runtime=6 --name=w0 --offset=128M --size=64M
resetz 2 14; job write_16k_qd1_1z fio --filename=$D --direct=1  --group_reporting --output-format=json --rw=write --bs=16k --iodepth=1 --ioengine=psync --runtime=6 --name=w0 --offset=128M --size=64M
resetz 2 14; job write_32k_qd1_1z fio --filename=$D --direct=1  --group_reporting --output-format=json --rw=write --bs=32k --iodepth=1 --ioengine=psync --runtime=6 --name=w0 --offset=128M --size=64M
resetz 2 14; job write_64k_qd1_1z fio --filename=$D --direct=1  --group_reporting --output-format=json --rw=write --bs=64k --iodepth=1 --ioengine=psync --runtime=6 --name=w0 --offset=128M --size=64M
resetz 2 14; job write_128k_qd1_1z fio --filename=$D --direct=1  --group_reporting --output-format=json --rw=write --bs=128k --iodepth=1 --ioengine=psync --runtime=6 --name=w0 --offset=128M --size=64M
resetz 2 14; job write_4k_qd1_2z fio --filename=$D --direct=1  --group_reporting --output-format=json --rw=write --bs=4k --iodepth=1 --ioengine=psync --runtime=6 --name=w0 --offset=128M --size=64M --name=w1 --offset=192M --size=64M
resetz 2 14; job write_4k_qd1_4z fio --filename=$D --direct=1  --group_reporting --output-format=json --rw=write --bs=4k --iodepth=1 --ioengine=psync --runtime=6 --name=w0 --offset=128M --size=64M --name=w1 --offset=192M --size=64M --name=w2 --offset=256M --size=64M --name=w3 --offset=320M --size=64M
resetz 2 14; job write_4k_qd1_8z fio --filename=$D --direct=1  --group_reporting --output-format=json --rw=write --bs=4k --iodepth=1 --ioengine=psync --runtime=6 --name=w0 --offset=128M --size=64M --name=w1 --offset=192M --size=64M --name=w2 --offset=256M --size=64M --name=w3 --offset=320M --size=64M --name=w4 --offset=384M --size=64M --name=w5 --offset=448M --size=64M --name=w6 --offset=512M --size=64M --name=w7 --offset=576M --size=64M
resetz 2 14; job write_4k_qd1_14z fio --filename=$D --direct=1  --group_reporting --output-format=json --rw=write --bs=4k --iodepth=1 --ioengine=psync --runtime=6 --name=w0 --offset=128M --size=64M --name=w1 --offset=192M --size=64M --name=w2 --offset=256M --size=64M --name=w3 --offset=320M --size=64M --name=w4 --offset=384M --size=64M --name=w5 --offset=448M --size=64M --name=w6 --offset=512M --size=64M --name=w7 --offset=576M --size=64M --name=w8 --offset=640M --size=64M --name=w9 --offset=704M --size=64M --name=w10 --offset=768M --size=64M --name=w11 --offset=832M --size=64M --name=w12 --offset=896M --size=64M --name=w13 --offset=960M --size=64M
resetz 2 14; job write_16k_qd1_2z fio --filename=$D --direct=1  --group_reporting --output-format=json --rw=write --bs=16k --iodepth=1 --ioengine=psync --runtime=6 --name=w0 --offset=128M --size=64M --name=w1 --offset=192M --size=64M
resetz 2 14; job write_16k_qd1_8z fio --filename=$D --direct=1  --group_reporting --output-format=json --rw=write --bs=16k --iodepth=1 --ioengine=psync --runtime=6 --name=w0 --offset=128M --size=64M --name=w1 --offset=192M --size=64M --name=w2 --offset=256M --size=64M --name=w3 --offset=320M --size=64M --name=w4 --offset=384M --size=64M --name=w5 --offset=448M --size=64M --name=w6 --offset=512M --size=64M --name=w7 --offset=576M --size=64M
resetz 2 14; job write_128k_qd1_8z fio --filename=$D --direct=1  --group_reporting --output-format=json --rw=write --bs=128k --iodepth=1 --ioengine=psync --runtime=6 --name=w0 --offset=128M --size=64M --name=w1 --offset=192M --size=64M --name=w2 --offset=256M --size=64M --name=w3 --offset=320M --size=64M --name=w4 --offset=384M --size=64M --name=w5 --offset=448M --size=64M --name=w6 --offset=512M --size=64M --name=w7 --offset=576M --size=64M
job randread_4k_qd1 fio --filename=$D --direct=1  --group_reporting --output-format=json --rw=randread --bs=4k --iodepth=1 --ioengine=io_uring --runtime=6 --time_based --name=r --offset=0 --size=128M
job randread_4k_qd8 fio --filename=$D --direct=1  --group_reporting --output-format=json --rw=randread --bs=4k --iodepth=8 --ioengine=io_uring --runtime=6 --time_based --name=r --offset=0 --size=128M
job randread_4k_qd32 fio --filename=$D --direct=1  --group_reporting --output-format=json --rw=randread --bs=4k --iodepth=32 --ioengine=io_uring --runtime=6 --time_based --name=r --offset=0 --size=128M
job randread_4k_qd128 fio --filename=$D --direct=1  --group_reporting --output-format=json --rw=randread --bs=4k --iodepth=128 --ioengine=io_uring --runtime=6 --time_based --name=r --offset=0 --size=128M
job randread_4k_qd256 fio --filename=$D --direct=1  --group_reporting --output-format=json --rw=randread --bs=4k --iodepth=256 --ioengine=io_uring --runtime=6 --time_based --name=r --offset=0 --size=128M
job randread_16k_qd32 fio --filename=$D --direct=1  --group_reporting --output-format=json --rw=randread --bs=16k --iodepth=32 --ioengine=io_uring --runtime=6 --time_based --name=r --offset=0 --size=128M
dmesg > $OUT/dmesg_end.txt
echo GUEST done
