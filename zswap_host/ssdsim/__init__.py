"""SSD timing model used by the emulated devices: NAND presets, a conventional page-mapped FTL
with over-provisioning, TRIM and device-side GC (optionally with NVMe Flexible Data Placement:
``FdpSSD``), the ZNS mapping and an Open-Channel SSD 2.0 (``OcssdSSD``), on one timing model
(channel/die busy-until accounting, host link, command overhead, DRAM write buffer).

Hot loops are C (native/ssd.c, conv_ftl.c, zns_ftl.c, ocssd.c); see docs/ssd-model.md."""

from .conv_model import ConvSSD
from .fdp_model import FdpSSD
from .model import APPEND, READ, TRIM, WRITE
from .ocssd_model import RESET, OcssdSSD
from .presets import PRESETS, ControllerModel, NandPreset, get_preset
from .zns_model import ZNSSSD

__all__ = ["READ", "WRITE", "TRIM", "APPEND", "RESET", "ControllerModel", "ConvSSD", "FdpSSD", "OcssdSSD", "ZNSSSD", "NandPreset", "PRESETS",
           "get_preset"]
