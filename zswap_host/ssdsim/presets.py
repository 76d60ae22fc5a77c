"""NAND flash / SSD presets for the timing model.

Every number says where it comes from (``source``); docs/ssd-model.md discusses them and the
calibration of ``thesis-ssd`` against the thesis's fio results.
"""
from __future__ import annotations

from dataclasses import dataclass

UNIT = 4096  # mapping unit / logical block of the model


@dataclass(frozen=True)
class NandPreset:
    name: str
    source: str
    channels: int
    dies_per_channel: int
    page_size: int              # flash page bytes (read unit)
    pages_per_block: int        # erase block, in pages (multiple of oneshot_pages)
    t_read_us: float            # array read (tR) of one page
    t_prog_us: float            # program of one program unit (oneshot_pages pages) on one die
    t_erase_us: float
    channel_mb_s: float         # per-channel transfer rate, MB/s (1e6 B/s)
    host_link_mb_s: float       # host link (PCIe) rate per direction, MB/s
    cmd_overhead_us: float      # controller latency per command
    conv_op: float              # over-provisioning of the conventional FTL (fraction of raw flash hidden)
    zone_capacity: int          # ZNS defaults for a zoned device built from this flash, bytes
    zone_size: int
    max_open: int
    max_active: int
    max_append: int
    oneshot_pages: int = 1      # pages programmed together (TLC one-shot programming = 3)
    write_buffer_bytes: int = 0  # DRAM write buffer; 0 = 2 program units per die (NVMeVirt's rule)
    gc_low_blocks: int = 2      # per die: GC starts when free blocks <= this
    gc_high_blocks: int = 4     # per die: GC stops at this many free blocks
    min_blocks_per_die: int = 256  # small emulated devices scale the erase block down to keep this many
    # idle-time GC (conventional FTL, off unless asked for): per die, clean until this fraction of
    # the spare blocks (blocks beyond those the live data fills) is free
    idle_gc_spare_fraction: float = 0.25
    # program/erase suspend (both FTLs, off unless asked for): the longest a host read waits for
    # the die's program or erase to suspend.  Flash datasheets give a maximum suspend latency of
    # 15-20 us (e.g. Spansion/AMD: program suspend <= 15 us, erase suspend <= 20 us).
    t_suspend_us: float = 20.0

    @property
    def n_dies(self) -> int:
        return self.channels * self.dies_per_channel

    @property
    def block_bytes(self) -> int:
        return self.page_size * self.pages_per_block

    @property
    def program_unit_bytes(self) -> int:
        return self.page_size * self.oneshot_pages

    @property
    def stripe_bytes(self) -> int:
        """One program unit on every die: the smallest write that keeps all dies busy."""
        return self.program_unit_bytes * self.n_dies

    @property
    def buffer_bytes(self) -> int:
        return self.write_buffer_bytes or 2 * self.n_dies * self.program_unit_bytes

    @property
    def program_mb_s(self) -> float:
        """Aggregate NAND program bandwidth (all dies busy, channel transfer included)."""
        per_die = self.program_unit_bytes / (self.t_prog_us + self.program_unit_bytes / self.channel_mb_s)
        return min(per_die * self.n_dies, self.channel_mb_s * self.channels, self.host_link_mb_s)

    def raw_bytes_for(self, logical_bytes: int, op: float | None = None) -> int:
        """Raw flash a conventional device of that exported capacity has at over-provisioning op."""
        op = self.conv_op if op is None else op
        return int(-(-logical_bytes // (1.0 - op)))


KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30

PRESETS: dict[str, NandPreset] = {
    "zn540": NandPreset(
        name="zn540",
        source=("NVMeVirt ssd_config.h WD_ZN540 preset (8 ch x 4 LUN, 32 KiB pages, TLC one-shot 3 pages, "
                "4 KiB read 50 us, program 561 us, 450 MB/s channels, 3050 MB/s PCIe, firmware read 13 us, "
                "2 GiB zones); zone capacity 1077 MiB and 14 open/active zones from the WD Ultrastar DC ZN540 "
                "datasheet; erase 3 ms is a TLC datasheet value (NVMeVirt models erase as 0)"),
        channels=8, dies_per_channel=4,
        page_size=32 * KiB, oneshot_pages=3,
        pages_per_block=1077,            # 1077 MiB zone capacity = one such block on each of the 32 dies
        t_read_us=50.0, t_prog_us=561.0, t_erase_us=3000.0,
        channel_mb_s=450.0, host_link_mb_s=3050.0, cmd_overhead_us=13.0,
        conv_op=0.07,
        zone_capacity=1077 * MiB, zone_size=2 * GiB, max_open=14, max_active=14,
        max_append=256 * KiB,            # NVMeVirt MDTS 6 -> 2^6 x 4 KiB
    ),
    "thesis-ssd": NandPreset(
        name="thesis-ssd",
        source=("consumer TLC NVMe SSD of the thesis's class (PCIe 3.0 x4, 8-channel controller, 16 TLC dies "
                "of 256 Gb: a 500 GB drive), datasheet-class 3D TLC timings (16 KiB page, one-shot program of "
                "3 pages, tR 50 us, tPROG 700 us, tBERS 3.5 ms, 800 MT/s Toggle channels, 10 us firmware "
                "overhead); over-provisioning 15% chosen from the thesis's fio sequential/random write "
                "ratio 4.37x (docs/ssd-model.md)"),
        channels=8, dies_per_channel=2,
        page_size=16 * KiB, oneshot_pages=3,
        pages_per_block=384,             # 6 MiB erase blocks
        t_read_us=50.0, t_prog_us=700.0, t_erase_us=3500.0,
        channel_mb_s=800.0, host_link_mb_s=3400.0, cmd_overhead_us=10.0,
        conv_op=0.15,
        zone_capacity=96 * MiB, zone_size=128 * MiB, max_open=14, max_active=14,
        max_append=512 * KiB,
    ),
    "cluster23-nvme-a": NandPreset(
        name="cluster23-nvme-a",
        source=("the conventional NVMe drive 'nvme-a' of Doekemeijer et al., IEEE CLUSTER 2023 (arXiv 2310.19094; "
                "artefact github.com/stonet-research/NVMeBenchmarks@01f40f1c9228; the artefact does not name the "
                "model), calibrated on the calibrate rows of experiments/data/nvme_a_published.csv by "
                "experiments/calibrate_conv.py (results/calibrate_conv.json).  Geometry, assumed (not published for "
                "the drive): the ZN540 platform of the same testbed as NVMeVirt models it (8 ch x 4 dies, 32 KiB "
                "pages, TLC one-shot 3 pages), 96-layer TLC erase block 576 x 32 KiB = 18 MiB (96 layers x 4 strings "
                "x 3 bits x 16 KiB x 2 planes), 1.92 TB exported (characterize_conv.DRIVE_BYTES), erase 3 ms "
                "(TLC datasheet class).  Fitted: host_link_mb_s 1235 MB/s (host rate per direction; stands in for "
                "the drive's ~1.19 GiB/s write-ingest ceiling, which the model cannot apply to writes alone), "
                "cmd_overhead_us 5.808 us, t_read_us 54 us (unchanged from the start), t_prog_us 493.68 us, "
                "channel_mb_s 562.5 MB/s, conv_op 0.035 (effective OP: fitted to the GC steady state; it absorbs "
                "GC costs the model does not have; the geometry's raw-minus-exported share is 0.127)"),
        channels=8, dies_per_channel=4,
        page_size=32 * KiB, oneshot_pages=3,
        pages_per_block=576,             # 18 MiB erase block, unscaled at every device size (min_blocks_per_die=1)
        t_read_us=54.0, t_prog_us=493.68, t_erase_us=3000.0,
        channel_mb_s=562.5, host_link_mb_s=1235.0, cmd_overhead_us=5.808,
        conv_op=0.035,
        zone_capacity=1152 * MiB, zone_size=2 * GiB, max_open=14, max_active=14,   # unused (conventional)
        max_append=256 * KiB,
        min_blocks_per_die=1,
    ),
}


def get_preset(name: str) -> NandPreset:
    """The preset of that name (case-insensitive); ValueError naming the known ones otherwise."""
    key = str(name).strip().lower()
    if key not in PRESETS:
        raise ValueError(f"unknown SSD preset {name!r}; known presets: {', '.join(sorted(PRESETS))}")
    return PRESETS[key]
