"""NAND flash / SSD presets for the timing model.

Every number says where it comes from (``source``); docs/ssd-model.md discusses them and the
calibration of ``thesis-ssd`` against the thesis's fio results.
"""
from __future__ import annotations

from dataclasses import dataclass

UNIT = 4096  # mapping unit / logical block of the model


@dataclass(frozen=True)
class ControllerModel:
    """What a drive's controller adds to the flash (all 0 = absent, the model as before).

    Each is a mechanism a published characterisation shows; a preset that sets one says where its
    value comes from (docs/ssd-model.md, "The controller")."""
    ctrl_read_us: float = 0.0        # serial controller time per read command (1 / the read IOPS ceiling)
    ctrl_write_us: float = 0.0       # ... per write command; overlaps the command's data transfer
    ctrl_append_us: float = 0.0      # ... per zone append command (0: as a write)
    t_read_cmd_us: float = 0.0       # latency a read command adds to cmd_overhead_us (not serial): a
                                     # firmware read path slower than the write buffer's (NVMeVirt's 970 PRO)
    t_append_us: float = 0.0         # zoned: latency a zone append adds to a write's (not serial)
    write_link_mb_s: float = 0.0     # host -> device rate of write data, MB/s (0: host_link_mb_s)
    write_path_mb_s: float = 0.0     # write path all flash writes pass (host data, padding), MB/s
    t_reset_us: float = 0.0          # zoned: latency of any zone reset (erases then run in the background)
    t_reset_written_us: float = 0.0  # zoned: more when the zone holds data
    reset_us_per_mib: float = 0.0    # zoned: more per (MiB the zone holds) ** reset_exponent
    reset_exponent: float = 1.0      # zoned: see reset_us_per_mib
    finish_pads_zone: bool = False   # zoned: a finish programs the rest of a non-empty zone
    t_finish_us: float = 0.0         # zoned: latency of a finish beyond its padding
    zone_die_stagger: bool = False   # zoned: zone z's stripe starts on die z (zones written together differ)
    gc_striped: bool = False         # conventional: GC re-programs a victim's valid data striped over all
                                     # dies, program unit by program unit (superblock GC), not on its own die


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
    controller: ControllerModel = ControllerModel()

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
                "datasheet; erase 3 ms is a TLC datasheet value (NVMeVirt models erase as 0); tR, the command "
                "latency and the controller fitted to the published ZN540 points declared calibrate "
                "(experiments/calibrate_zn540.py)"),
        channels=8, dies_per_channel=4,
        page_size=32 * KiB, oneshot_pages=3,
        pages_per_block=1077,            # 1077 MiB zone capacity = one such block on each of the 32 dies
        t_read_us=55.72, t_prog_us=561.0, t_erase_us=3000.0,
        channel_mb_s=450.0, host_link_mb_s=3050.0, cmd_overhead_us=6.581,
        conv_op=0.07,
        zone_capacity=1077 * MiB, zone_size=2 * GiB, max_open=14, max_active=14,
        max_append=256 * KiB,            # NVMeVirt MDTS 6 -> 2^6 x 4 KiB
        # Fitted on the calibrate points of experiments/data/zn540_published.csv (Doekemeijer et al.
        # 2023's ZN540) by `experiments/calibrate_zn540.py --quick` (experiments/results/zn540_fit.json):
        # tR (55.72 us, NVMeVirt: 50), the command latency (6.58 us, NVMeVirt's firmware 13 us) and:
        controller=ControllerModel(
            ctrl_read_us=2.382,          # 1 / the 4 KiB random-read ceiling (~420-437 KIOPS)
            ctrl_write_us=5.381,          # 1 / the write command ceiling (~185 KIOPS over many zones)
            ctrl_append_us=7.56,         # 1 / the append ceiling (~132 KIOPS at any queue depth)
            t_append_us=0.341,           # an append's latency over a write's
            write_link_mb_s=1577.0,      # write data rate: QD1 latency +5.1 us per 8 KiB from 8 KiB up
            write_path_mb_s=1202.0,      # the write ceiling (~1.15 GiB/s; a finish pads at ~1.19 GiB/s)
            t_reset_written_us=1674.4, reset_us_per_mib=312.66, reset_exponent=0.55,  # 1.7 -> 16 ms
            finish_pads_zone=True,       # finish latency falls linearly with occupancy (907 ms empty)
            zone_die_stagger=True,       # 8 zones written at once reach the 1-zone ceiling
            gc_striped=True,             # conventional twin: GC relocation over all dies (superblock GC)
        ),
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
                "experiments/calibrate_conv.py (results/calibrate_conv.json); docs/conv-characterization.md.  "
                "Geometry, assumed (not published for the drive): the ZN540 platform of the same testbed as "
                "NVMeVirt models it (8 ch x 4 dies, 32 KiB pages, TLC one-shot 3 pages), 96-layer TLC erase block "
                "576 x 32 KiB = 18 MiB (96 layers x 4 strings x 3 bits x 16 KiB x 2 planes), 1.92 TB exported "
                "(characterize_conv.DRIVE_BYTES), erase 3 ms (TLC datasheet class); GC relocation striped over the dies "
                "(controller.gc_striped, as a drive's superblock GC).  Fitted: host_link_mb_s "
                "1952 MB/s (reads: the drive's 1.8 GiB/s random-read peak), controller.write_link_mb_s 1235 MB/s "
                "(write-ingest ceiling, ~1.19 GiB/s), controller.ctrl_read_us 1.1756 us and ctrl_write_us 1.0688 us "
                "(serial per command), cmd_overhead_us 5.94 us, t_read_us 56.7 us, t_prog_us 448.8 us, "
                "channel_mb_s 496.125 MB/s, conv_op 0.045 (effective OP, fitted to the GC steady state at full "
                "size: it absorbs GC costs the model does not have; the geometry's raw-minus-exported share is "
                "0.127)"),
        channels=8, dies_per_channel=4,
        page_size=32 * KiB, oneshot_pages=3,
        pages_per_block=576,             # 18 MiB erase block, unscaled at every device size (min_blocks_per_die=1)
        t_read_us=56.7, t_prog_us=448.8, t_erase_us=3000.0,
        channel_mb_s=496.125, host_link_mb_s=1952.0, cmd_overhead_us=5.94,
        conv_op=0.045,
        zone_capacity=1152 * MiB, zone_size=2 * GiB, max_open=14, max_active=14,   # unused (conventional)
        max_append=256 * KiB,
        min_blocks_per_die=1,
        controller=ControllerModel(write_link_mb_s=1235.0, ctrl_read_us=1.1756, ctrl_write_us=1.0688,
                                   gc_striped=True),
    ),
    "nvmevirt-970pro": NandPreset(
        name="nvmevirt-970pro",
        source=("NVMeVirt's SAMSUNG_970PRO preset (github.com/snu-csl/nvmevirt 61c90f7, ssd_config.h lines 63-109), "
                "its constants in this model's terms: 8 channels x 2 LUNs x 1 plane (l.74-76), 32 KiB flash page "
                "programmed alone (MLC, one-shot = 1 page, l.71, 77-78), 4 KiB read 35.76 us (the mean of its "
                "LSB/MSB 35.76 -/+ 6 us, l.89-90), program 185 us (l.95), erase 0 (l.96), channels 800 and "
                "PCIe 3360 (l.86-87) in NVMeVirt's units: MiB/s (nvmev.h MB(m) = m << 20) at whole ns per "
                "128 B (channel_model.h BANDWIDTH_TO_TX_TIME: 152 and 36 ns), 842.1 and 3555.6 MB/s here; "
                "write firmware 4 us per command (FW_WBUF_LATENCY0, l.100) as "
                "the command latency, its read firmware 21.5 us (FW_4KB_READ_LATENCY, l.98) as 4 + 17.5 "
                "(controller.t_read_cmd_us), its 0.46 us per 4 KiB written (FW_WBUF_LATENCY1, l.101) folded "
                "into the write data rate with PCIe (1 / (0.46 us / 4096 B + 36 ns / 128 B) = 2541 MB/s), "
                "OP 7% (l.103), a 1 MiB write buffer acknowledging writes early (GLOBAL_WB_SIZE = 8 x 2 x 32 KiB x "
                "2, WRITE_EARLY_COMPLETION, l.105-106).  Not NVMeVirt's: the erase block (NVMeVirt sizes it "
                "from the capacity, 8192 blocks per plane, l.79; 128 pages = 4 MiB is that rule at the 970 PRO's "
                "512 GB) and the zoned fields (unused: the drive is conventional).  docs/nvmevirt.md compares "
                "the two models"),
        channels=8, dies_per_channel=2,
        page_size=32 * KiB, oneshot_pages=1,
        pages_per_block=128,
        t_read_us=35.76, t_prog_us=185.0, t_erase_us=0.0,
        channel_mb_s=842.1, host_link_mb_s=3555.6, cmd_overhead_us=4.0,
        conv_op=0.07,
        zone_capacity=64 * MiB, zone_size=64 * MiB, max_open=14, max_active=14,   # unused (conventional)
        max_append=256 * KiB,            # MDTS 6 (l.70)
        write_buffer_bytes=1 * MiB,
        controller=ControllerModel(t_read_cmd_us=17.5, write_link_mb_s=2541.0),
    ),
}


def get_preset(name: str) -> NandPreset:
    """The preset of that name (case-insensitive); ValueError naming the known ones otherwise."""
    key = str(name).strip().lower()
    if key not in PRESETS:
        raise ValueError(f"unknown SSD preset {name!r}; known presets: {', '.join(sorted(PRESETS))}")
    return PRESETS[key]
