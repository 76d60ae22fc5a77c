"""SSD timing model used by the emulated devices: NAND presets, a conventional page-mapped FTL
with over-provisioning, TRIM and device-side GC (optionally with NVMe Flexible Data Placement:
``FdpSSD``), and the ZNS mapping, on one timing model
(channel/die busy-until accounting, host link, command overhead, DRAM write buffer).

Hot loops are C (native/ssd.c, conv_ftl.c, zns_ftl.c); see docs/ssd-model.md."""

from .model import READ, TRIM, WRITE, ConvSSD, FdpSSD, ZNSSSD
from .presets import PRESETS, NandPreset, get_preset

__all__ = ["READ", "WRITE", "TRIM", "ConvSSD", "FdpSSD", "ZNSSSD", "NandPreset", "PRESETS", "get_preset"]
