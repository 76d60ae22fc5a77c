"""The ``zswap-host`` click group; each command registers on it from its own module."""

from __future__ import annotations

import click


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="zswap-host")
def main() -> None:
    """Host-managed swap on ZNS SSDs, measured against conventional SSD swap.

    DEVICE arguments are paths or URLs (`zswap-host schemes` lists each scheme's parameters; docs/devices.md); an empty PATH keeps the device in memory, a file PATH keeps it between runs:

    \b
      emu://PATH?zones=N&zone_size=16MiB&zone_capacity=…&max_open=…&max_active=…&preset=…
                        emulated ZNS SSD
      emu-conv://PATH?size=8GiB&op=0.15&preset=…
                        emulated conventional SSD (page-mapped FTL; op: hidden over-provisioning,
                        default the preset's, 15% on thesis-ssd)
      fdp://PATH?size=8GiB&op=0.15&ruhs=8&isolation=persistent&preset=…
                        emulated NVMe FDP SSD (ruhs: reclaim unit handles)
      ocssd://PATH?groups=8&pus=2&chunks=8&sectors=1536&ws_min=12&preset=…
                        emulated Open-Channel SSD 2.0
      /path/to/file     a regular file as a conventional block device
      /dev/nvme0n2 …    a Linux block device (zoned or not)

    Presets (the SSD timing model): thesis-ssd (default), zn540, none (timing model off).
    Words the output uses (WAF, payload-free, model twin, charged compute, same-flash, zoned view, idle
    window, ruhs, ws_min, ...): docs/glossary.md.
    """
