"""The same raw flash behind every interface: the FDP and Open-Channel twins of a bench plan's
emulated conventional and ZNS SSDs, so the interface comparisons (``experiments/interfaces*.py``,
``zswap-host sweep``) put the store on four devices that differ only in what the host sees."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

INTERFACES = ("conventional", "fdp", "zns", "ocssd")


def fdp_url(conventional_url: str, ruhs: int = 8, isolation: str = "persistent") -> str:
    """The FDP twin of the bench's emulated conventional SSD: the same size, OP and flash."""
    return conventional_url.replace("emu-conv://", "fdp://", 1) + f"&ruhs={ruhs}&isolation={isolation}"


def ocssd_url(zns_url: str) -> str:
    """An Open-Channel SSD of the ZNS device's flash: a group per channel, a PU per die, a chunk per
    die's share of a zone's capacity, as many chunks per PU as the ZNS device has zones."""
    from ..ssdsim import get_preset

    q = {k: v[0] for k, v in parse_qs(urlsplit(zns_url).query).items()}
    p = get_preset(q["preset"])
    sectors = int(q["zone_capacity"]) // (p.channels * p.dies_per_channel * 4096)
    return (f"ocssd://?groups={p.channels}&pus={p.dies_per_channel}&chunks={q['zones']}&sectors={sectors}"
            f"&preset={p.name}" + ("&suspend=1" if q.get("suspend") in ("1", "true") else ""))


def interface_urls(pl, ruhs: int = 8, isolation: str = "persistent") -> dict[str, str]:
    """interface -> device URL for a bench plan ``pl`` (``bench.plan``): its conventional and ZNS
    SSDs and their FDP and Open-Channel twins, all of the same raw flash."""
    return {"conventional": pl.baseline_url, "fdp": fdp_url(pl.baseline_url, ruhs, isolation),
            "zns": pl.zns_url, "ocssd": ocssd_url(pl.zns_url)}
