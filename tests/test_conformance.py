"""The conformance suite against emulated ZNS devices (memory, timing off; and a sparse file with
the thesis-ssd timing model; and a zoned view of an emulated conventional SSD). Geometry mirrors QEMU's test namespace: 4 MiB zones of 3 MiB capacity,
max_open 2, max_active 3, zone append limit 512 KiB."""

import pytest

from conformance import *  # noqa: F401,F403  (the suite)
from zswap_host.devices import ZonedBlockView, open_device

QEMU_LIKE = "zones=8&zone_size=4MiB&zone_capacity=3MiB&max_open=2&max_active=3&max_append=512KiB"


@pytest.fixture(params=["memory", "file-timed", "zoned-view"])
def zdev(request, tmp_path):
    if request.param == "zoned-view":   # fixed LBA ranges of an emulated conventional SSD
        dev = ZonedBlockView(open_device("emu-conv://?size=32MiB&preset=thesis-ssd"), 4 << 20, 3 << 20,
                             max_open=2, max_active=3, max_append=512 << 10)
        yield dev
        dev.close()
        return
    if request.param == "memory":
        url = f"emu://?{QEMU_LIKE}&preset=none"
    else:
        url = f"emu://{tmp_path}/zns.img?{QEMU_LIKE}&preset=thesis-ssd"
    dev = open_device(url)
    yield dev
    dev.close()
