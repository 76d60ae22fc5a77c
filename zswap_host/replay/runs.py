"""The runs a trace replays through, by name: the bench's swap runs (Linux swap, the store on the
conventional SSD's zoned view, the store on ZNS) and the store on the FDP and Open-Channel twins of
the same raw flash (``bench.same_flash``), each on fresh payload-free emulated devices (``payload=0``:
zone state, FTL and timing, a fingerprint word per page, no page bytes) sized as the bench sizes them."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import ZswapError
from ..run_names import RENAMED_RUNS, current_names

# replay has no lookahead, so the bench's linux-swap-lookahead run has no replay twin. The store's runs
# are named store-on-INTERFACE with the sweep's interface names (bench.same_flash.INTERFACES).
RUNS = ("linux-swap", "linux-swap-batched", "store-on-conventional", "store-on-fdp", "store-on-zns",
        "store-on-ocssd")
DEFAULT_RUNS = ("linux-swap-batched", "store-on-conventional", "store-on-fdp", "store-on-zns", "store-on-ocssd")


class ReplayError(ZswapError, ValueError):
    """A replay that cannot run as asked (unknown run, bad trace, budget or sizing), or a run that
    failed (the message names it)."""


@dataclass(frozen=True)
class Sizing:
    """What a run's devices are, from a bench plan (``bench.plan``, same-flash sizing): the
    conventional and ZNS SSDs' URLs, the zoned view's units, and the DRAM budget in pages (the Linux
    model ages readahead within it). ``devices``: the plan's description, for the report.
    ``idle_gc``: the trace's compute windows go to both GCs (the store's, then the conventional SSD's
    background GC, ``idle_gc=1`` in its URL); False: to neither, the device clocks only pass.
    ``gc_yield_to_reads``: the store runs' ``StoreConfig.gc_yield_to_reads`` (GC only in the compute
    windows, or in the foreground when a swap-out finds no zone); ``gc_step_bytes``: their
    ``StoreConfig.gc_step_bytes`` (None: a write unit per background GC step; 0: a whole victim)."""

    baseline_url: str
    zns_url: str
    zone_size: int
    zone_capacity: int
    budget_pages: int
    devices: dict = field(default_factory=dict)
    idle_gc: bool = True
    gc_yield_to_reads: bool = False
    gc_step_bytes: int | None = None

    @classmethod
    def of_plan(cls, pl, budget_pages: int, idle_gc: bool = True) -> "Sizing":
        return cls(pl.baseline_url, pl.zns_url, pl.zone_size, pl.zone_capacity, int(budget_pages), dict(pl.devices),
                   bool(idle_gc))


def check_runs(names) -> tuple[str, ...]:
    """``names`` in the order given (an old name of ``RENAMED_RUNS`` as its name now), duplicates
    dropped; ``ReplayError`` (listing the known ones) for an unknown name or none."""
    runs = current_names(names)
    bad = [r for r in runs if r not in RUNS]
    if bad or not runs:
        raise ReplayError(f"unknown run {bad[0] if bad else '(none)'!r}; known: {', '.join(RUNS)}")
    return runs


def run_url(name: str, sizing: Sizing) -> str:
    """The (payload-free) device URL run ``name`` opens."""
    from ..bench.same_flash import fdp_url, ocssd_url
    from ..sweep.point import payload_free

    url = {"linux-swap": sizing.baseline_url, "linux-swap-batched": sizing.baseline_url,
           "store-on-conventional": sizing.baseline_url, "store-on-fdp": fdp_url(sizing.baseline_url),
           "store-on-zns": sizing.zns_url, "store-on-ocssd": ocssd_url(sizing.zns_url)}[check_runs([name])[0]]
    return payload_free(url)


def make_run(name: str, sizing: Sizing, id_space: int = 0):
    """(backend, device clock, device) of run ``name`` on fresh devices; the caller closes both.
    ``id_space``: the trace's page ids lie below it (they then resolve without hashing; 0: unknown).
    Linux runs: ``ConventionalSwap`` as the bench configures it. Store runs: ``SwapStore`` on the
    device's placement units (an FDP SSD's LBA ranges of the zone size, each stream under a handle
    of its own; an Open-Channel SSD's chunk stripes). Raises what ``open_device`` / ``SwapStore`` raise."""
    from ..bench.plan import READ_QD, linux_swap
    from ..devices import open_device
    from ..store import StoreConfig
    from ..sweep.replay_run import store_on

    url = run_url(name, sizing)
    if name.startswith("linux"):
        dev = open_device(url, zoned=False)
        return (linux_swap(dev, sizing.budget_pages, "serial" if name == "linux-swap" else "batched",
                           id_space=id_space), dev.now, dev)
    return store_on(url, sizing.zone_size, sizing.zone_capacity,
                    StoreConfig(read_qd=READ_QD, id_space=id_space, gc_yield_to_reads=sizing.gc_yield_to_reads,
                                gc_step_bytes=sizing.gc_step_bytes))
