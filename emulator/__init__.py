"""Running a real Linux kernel against emulated ZNS hardware (QEMU NVMe ZNS namespace); see zns_vm.py."""
