"""The pure parts of emulator/nvmevirt.py (no guest, no NVMeVirt checkout: the project holds none of
its code, so the files these tests edit are small stand-ins with the lines the launcher looks for):
memmap arithmetic, the guest command line, the make invocation, the edits of the throw-away copy,
the trace parser and the one-line errors."""

from __future__ import annotations

import os
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)

from emulator import nvmevirt as nv  # noqa: E402
from emulator.zns_vm import vng_command  # noqa: E402

CONFIG_H = """#if (BASE_SSD == SAMSUNG_970PRO)
#define BLK_SIZE (0)
#elif (BASE_SSD == ZNS_PROTOTYPE)
#define ZONE_SIZE MB(32)
#elif (BASE_SSD == WD_ZN540)
#define DIES_PER_ZONE (NAND_CHANNELS * LUNS_PER_NAND_CH)
#define ZONE_SIZE GB(2ULL)
#define BLK_SIZE (ZONE_SIZE / DIES_PER_ZONE)
#endif
"""


def test_memmap_reserves_the_namespace_plus_one_mib_for_the_queues():
    cfg = nv.NvmevirtConfig(storage_mib=1024, memmap_start_mib=1024, memory_mib=2560, nvmev_cpus=(1, 2))
    cfg.validate()
    assert cfg.kernel_args() == ["memmap=1025M$1024M"]
    assert cfg.insmod_args() == ["memmap_start=1024M", "memmap_size=1025M", "cpus=1,2"]
    vm = cfg.vm_config()
    assert (vm.memory, vm.cpus, vm.qemu_nvme, vm.kernel_args) == ("2560M", 3, False, ["memmap=1025M$1024M"])


def test_the_guest_command_line_carries_the_reservation_and_no_qemu_nvme(tmp_path):
    vm = nv.NvmevirtConfig().vm_config()
    argv = vng_command("true", vm, str(tmp_path))
    assert "--append=memmap=1025M$1024M" in argv
    opts = next(a for a in argv if a.startswith("--qemu-opts="))
    assert "-device nvme" not in opts and "-cpu Nehalem" in opts


@pytest.mark.parametrize("kw, words", [
    (dict(storage_mib=1000), "not a whole number of 64 MiB zones"),
    (dict(zone_size_mib=96, storage_mib=960), "power of two"),
    (dict(zone_size_mib=16, storage_mib=1024), "multiple of 32 MiB"),
    (dict(storage_mib=2048, memory_mib=2560), "ends past guest RAM"),
    (dict(memory_mib=4096, storage_mib=1024), "4 GiB hole"),
    (dict(memory_mib=1280, storage_mib=512, memmap_start_mib=256), "at least 768 MiB"),
    (dict(nvmev_cpus=(1,)), "at least two CPUs"),
    (dict(nvmev_cpus=(1, 3)), "below the guest's 3 vCPUs"),
    (dict(device="kv"), "unknown device"),
])
def test_impossible_configurations_are_refused_with_the_reason(kw, words):
    with pytest.raises(nv.NvmevirtError, match=words):
        nv.NvmevirtConfig(**kw).validate()


def test_the_conventional_device_has_no_zone_constraint():
    nv.NvmevirtConfig(device="ssd", storage_mib=1000).validate()


def test_make_selects_exactly_one_device_type_on_the_command_line():
    argv = nv.make_args(nv.NvmevirtConfig(device="ssd"), "6.1.0-57-amd64", "/b")
    assert argv[:4] == ["make", "-C", "/lib/modules/6.1.0-57-amd64/build", "M=/b"]
    assert "CONFIG_NVMEVIRT_SSD=y" in argv and "CONFIG_NVMEVIRT_NVM=" in argv
    assert "CONFIG_NVMEVIRT_ZNS=" in argv and argv[-1] == "modules"
    assert [a for a in argv if a.endswith("=y")] == ["CONFIG_NVMEVIRT_SSD=y"]


def test_the_zone_size_edit_touches_only_the_zn540_block():
    out = nv.set_zone_size(CONFIG_H, 64)
    assert "#define ZONE_SIZE MB(64ULL)" in out and "#define ZONE_SIZE MB(32)" in out
    assert "GB(2ULL)" not in out
    assert out.replace("MB(64ULL)", "GB(2ULL)") == CONFIG_H
    with pytest.raises(nv.NvmevirtError, match="no WD_ZN540 block"):
        nv.set_zone_size(CONFIG_H.replace("WD_ZN540", "OTHER"), 64)


def test_perf_debug_edit_needs_the_single_undef():
    assert nv.enable_perf_debug("a\n#undef PERF_DEBUG\nb\n") == "a\n#define PERF_DEBUG\nb\n"
    with pytest.raises(nv.NvmevirtError):
        nv.enable_perf_debug("a\nb\n")


def test_release_from_the_kernel_image_name():
    assert nv.kernel_release("/boot/vmlinuz-6.12.9-amd64") == "6.12.9-amd64"
    with pytest.raises(nv.NvmevirtError):
        nv.kernel_release("/boot/bzImage")


def test_missing_source_is_one_line(tmp_path, monkeypatch):
    monkeypatch.delenv("NVMEVIRT_SRC", raising=False)
    with pytest.raises(nv.NvmevirtError, match="NVMEVIRT_SRC is not set"):
        nv.source_dir()
    with pytest.raises(nv.NvmevirtError, match="no Kbuild"):
        nv.source_dir(str(tmp_path))
    assert nv.main(["--src", str(tmp_path), "--build-only"]) == 2


def test_trace_lines_give_the_modeled_latency_and_leave_internal_operations_out():
    head = "# tracer: nop\n#\n"
    host = " nvmev_io_worker-177     [002] ..... 86.75: nvmev_io_worker: 86750000000 1200 1500 9000 250000 61000\n"
    internal = " nvmev_io_worker-177     [002] ..... 86.76: nvmev_io_worker: 86760000000 0 7 8 600000 561000\n"
    text = head + host + internal
    assert nv.parse_trace(text) == [(86750000000, 61000, 250000)]
    assert nv.parse_trace(text, internal=True) == [(86760000000, 561000, 600000)]
    assert nv.parse_trace(head) == []


def test_the_zone_buffer_fix_adds_one_refill_after_the_zrwa_one():
    reset = "static void __reset_zone(...)\n{\n" + nv.ZRWA_REFILL + "}\n"
    out = nv.refill_zone_buffer_on_reset(reset)
    assert out == "static void __reset_zone(...)\n{\n" + nv.ZRWA_REFILL + nv.ZONE_WB_REFILL + "}\n"
    with pytest.raises(nv.NvmevirtError):
        nv.refill_zone_buffer_on_reset("static void __reset_zone(...)\n{\n}\n")


def test_build_key_names_every_edit():
    cfg = nv.NvmevirtConfig(fix_zone_buffer_leak=True)
    assert nv.build_key(cfg, "6.1.0-57-amd64", "abc") == "abc-6.1.0-57-amd64-zns-z64M-perf-wbfix"
    assert nv.build_key(nv.NvmevirtConfig(device="ssd", perf_debug=False), "r", "abc") == "abc-r-ssd"
