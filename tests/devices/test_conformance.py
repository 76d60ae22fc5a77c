"""The conformance suite against emulated ZNS devices (memory, timing off; and a sparse file with
the thesis-ssd timing model; and a zoned view of an emulated conventional SSD; and zones striped over
an emulated Open-Channel SSD's chunks). Geometry mirrors QEMU's test namespace: 4 MiB zones of 3 MiB capacity,
max_open 2, max_active 3, zone append limit 512 KiB."""

import pytest

from conformance import *  # noqa: F401,F403  (the suite)
from zswap_host.devices import OcssdZonedView, ZonedBlockView, open_device

QEMU_LIKE = "zones=8&zone_size=4MiB&zone_capacity=3MiB&max_open=2&max_active=3&max_append=512KiB"


# 8 groups x 2 PUs (thesis-ssd's), 8 chunks of 48 sectors per PU: 8 zones of 16 chunks (3 MiB
# capacity, 4 MiB zone size),
# ws_min below the 4 KiB page count of most writes, mw_cunits so reads meet the host-held tail
OCSSD = "ocssd://?chunks=8&sectors=48&ws_min=4&ws_opt=12&mw_cunits=8&preset=thesis-ssd"


@pytest.fixture(params=["memory", "file-timed", "zoned-view", "ocssd-view"])
def zdev(request, tmp_path):
    if request.param == "ocssd-view":   # zones striped over an emulated Open-Channel SSD's PUs
        dev = OcssdZonedView(open_device(OCSSD), zone_size=4 << 20, max_open=2, max_active=3, max_append=512 << 10)
        yield dev
        dev.close()
        return
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
