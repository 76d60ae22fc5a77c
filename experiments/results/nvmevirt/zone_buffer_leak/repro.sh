D=$NVMEVIRT_DEV
for i in $(seq 1 14); do
  timeout 60 dd if=/dev/zero of=$D bs=92k count=1 oflag=direct status=none; rc=$?
  echo "iter $i write rc=$rc"
  [ $rc = 0 ] || break
  blkzone reset -o 0 -c 1 $D; echo "iter $i reset rc=$?"
done
blkzone report -c 1 $D
dmesg | grep -v -E "ioremap|^\s*$" | tail -25
