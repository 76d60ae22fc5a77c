"""What a bench runs on: the training preset resolved, the DRAM budget checked, the two devices sized
(``same-flash`` or ``same-capacity``), and one factory per swap run, each opened and checked before
any training starts so that bad input fails fast."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Callable

from ..errors import NotZonedError, SwapFullError, ZswapError
from ..run_names import current_names
from ..units import format_size
from .compute import ComputeBasis

PAGE = 4096
ZONE = 16 << 20          # zone size of the default emulated ZNS device (halved for small runs)
MIN_ZONES = 64
HEADROOM = 1.3           # swap space beyond the pages a run can swap out (+ 8 MiB: tables at 70-77% of it)
SIZINGS = ("same-flash", "same-capacity")
# the emulated devices' geometry: "scaled" (erase blocks scaled down so every die keeps the preset's
# min_blocks_per_die, zones of ZONE halved until there are MIN_ZONES: small runs exercise GC) or
# "real" (the preset's own erase block, zone size and capacity: needs a device of the drive's scale)
GEOMETRIES = ("scaled", "real")
MIN_REAL_ZONES = 16      # real geometry: the fewest zones a store's GC is given (otherwise: refused)
RUNS = ("dram-only", "linux-swap", "linux-swap-batched", "linux-swap-lookahead", "linux-swap-packed",
        "store-on-conventional", "store-on-zns")
SWAP_RUNS = RUNS[1:]
# the runs that prefetch the next batches while a step computes (BenchSpec.lookahead): the kernel's
# unmodified fault path (linux-swap) and its batched twin (linux-swap-batched) do not, so the chain can
# show batching and lookahead as steps of their own
LOOKAHEAD_RUNS = ("linux-swap-lookahead", "linux-swap-packed", "store-on-conventional", "store-on-zns")
# the runs whose tables pack their hot rows together with BenchSpec.pack_hot_rows: the Linux run that
# adds packing to linux-swap-lookahead (only then in the bench), and the store's runs; the Linux runs
# before it stay unpacked, so the chain shows packing as a step of its own
PACKED_RUNS = ("linux-swap-packed", "store-on-conventional", "store-on-zns")
MAX_BATCH = 1 << 20      # samples per batch: a batch's indices alone take ~200 MiB there
READ_QD = 32             # queue depth of a batched read, the store's and Linux-batched's alike


class BenchError(ZswapError):
    """A bench run that cannot start as asked (bad budget, wrong or too small device)."""


@dataclass
class BenchSpec:
    """What to run. None fields come from the training preset.

    ``sizing``: ``same-flash`` builds both emulated devices from the same raw flash (the ZNS device
    exposes as capacity what the conventional SSD hides as over-provisioning: a real gain of ZNS,
    named as such); ``same-capacity`` gives the ZNS device the conventional SSD's usable bytes.
    ``utilisation``: tables / usable bytes of the conventional device (default 1 / 1.3).
    ``compute``: the basis of the compute charged to every run (see :mod:`.compute`); None = pinned at
    the preset's calibrated per-sample cost. ``idle_gc``: the conventional SSD's FTL collects in the
    idle windows the store's GC gets (both GCs get the same idle time; False: neither GC gets them).
    ``ssd``: the SSD preset (``ssdsim.presets``) both default emulated devices are built from (same
    flash and controller: the interface is the one difference). ``geometry``: ``scaled`` (the
    bench's small devices: erase blocks scaled down to keep ``min_blocks_per_die`` per die, zones of
    at most 16 MiB, at least 64 of them) or ``real`` (the preset's erase block, zone size and zone
    capacity; the conventional SSD's OP the preset's unless ``op``; refused when the device would
    hold fewer than ``MIN_REAL_ZONES`` zones: real geometry needs tables of the drive's scale, e.g.
    ``zswap-host replay --generate mlperf``).
    ``suspend``: the emulated SSDs suspend programs and erases for reads (docs/ssd-model.md).
    ``jobs``: runs trained at once in worker processes; None = one per CPU when every device is an
    in-memory emulated one (modeled time: a run's result does not depend on what runs beside it), else 1.
    Real or file-backed devices always run one at a time (their runs share the device).
    ``model_twin``: when a run's device is real (wall clock), train that run again afterwards on an
    emulated device of the same geometry timed by ``twin_preset`` (see :mod:`.twin`).
    ``data``: train on this Criteo file (Kaggle ``train.txt``, Terabyte ``day_N[.gz]`` or dlrm's
    ``.npz``; ``workloads.data.CriteoFile``) instead of the synthetic generator, read as
    ``data_format`` says, its categorical values ``cat_mapping``-mapped (``hash`` or ``dict``) into the
    preset's tables, each capped at ``max_ind_range`` rows when given; ``skip_bad_lines`` drops and
    counts malformed lines instead of failing. Every run reads the file itself, from its start: all
    runs train on the same batches.
    ``lookahead``: upcoming batches whose pages the ``LOOKAHEAD_RUNS`` fault in while a step computes
    (``linux-swap-lookahead`` is Linux-swap-batched announcing the next batches with
    ``MADV_WILLNEED``); 0: none, and ``linux-swap-lookahead`` is left out. ``runs``: None = every run
    that applies. ``linux_handles``: on an FDP ``baseline_device``, ``"stream"`` writes the Linux
    runs' swap-outs under a handle per stream (``ConventionalSwap(handles=)``: a hypothetical
    FDP-aware swap; Linux passes no hints). ``pack_hot_rows``: the ``PACKED_RUNS``' embedding
    modules pack their hot rows together (``SwappedEmbeddingBagCollection(pack_hot_rows=True)``) —
    the store's runs and ``linux-swap-packed``, linux-swap-lookahead with packing (an
    application-level lever, so Linux gets it too), which the bench then adds; the Linux runs before
    it stay unpacked, so packing is its own step of the chain; losses unchanged. ``gc_yield_to_reads``:
    the store runs' GC runs only in the idle windows, or in the foreground when a swap-out finds no
    zone, never after a swap-out in front of the step's reads (``StoreConfig.gc_yield_to_reads``).
    ``gc_step_bytes``: what one background GC step of the store runs relocates (None: a write unit;
    0: a whole victim, its pages read as one queue; ``StoreConfig.gc_step_bytes``)."""

    preset: str = "default"
    device: str | None = None           # ZNS device URL or path (default: emulated, same flash as the baseline)
    baseline_device: str | None = None  # conventional device (default: emulated, flash ``ssd``)
    placement: str = "temporal"
    victim: str = "greedy"
    budget: float | str | None = None
    iterations: int | None = None
    batch_size: int | None = None
    seed: int = 0
    runs: tuple[str, ...] | None = None
    sizing: str = "same-flash"
    utilisation: float | None = None
    compute: ComputeBasis | None = None
    trace_out: str | None = None
    verify: bool = False                # fingerprint every swapped-out page, check it at swap-in (verify.py)
    idle_gc: bool = True
    suspend: bool = False               # program/erase suspend for reads on both emulated SSDs
    op: float | None = None             # the emulated conventional SSD's over-provisioning (None: the preset's)
    erase_block: int | None = None      # its erase block, bytes (None: per ``geometry``)
    ssd: str = "thesis-ssd"             # the flash and controller preset of both default emulated SSDs
    geometry: str = "scaled"            # GEOMETRIES: "real" takes ``ssd``'s erase block and zones unscaled
    jobs: int | None = None             # runs at once (None: one per CPU on in-memory emulated devices)
    model_twin: bool = True             # real devices: the same runs on emulated devices of their geometry
    twin_preset: str = "thesis-ssd"     # the SSD model of those twins
    data: str | None = None             # a Criteo data file (None: the synthetic generator)
    data_format: str = "auto"           # auto, kaggle, terabyte, npz
    max_ind_range: int | None = None    # cap on every table's rows (dlrm's --max-ind-range)
    cat_mapping: str = "hash"           # hash (value % rows) or dict (first-seen ids)
    skip_bad_lines: bool = False        # drop and count malformed lines instead of failing
    lookahead: int = 1                  # batches prefetched ahead by LOOKAHEAD_RUNS (0: none)
    linux_handles: str | None = None    # FDP baseline device: None (Linux: no hints) or "stream"
    pack_hot_rows: bool = False         # PACKED_RUNS' tables pack hot rows together (adds linux-swap-packed)
    gc_yield_to_reads: bool = False     # the store runs' GC yields to reads (StoreConfig.gc_yield_to_reads)
    gc_step_bytes: int | None = None    # their background GC step (StoreConfig.gc_step_bytes; 0: a whole victim)


@dataclass
class Plan:
    preset: object
    model: object
    data: object
    iterations: int
    batch_size: int
    budget: float | str | int
    budget_bytes: int
    budget_pages: int
    table_bytes: int
    table_pages: int
    baseline_url: str
    zns_url: str
    zone_size: int                      # of the zoned view in the store-on-conventional run
    zone_capacity: int                  # ... and its zones' capacity
    sizing: str
    compute: ComputeBasis
    devices: dict = field(default_factory=dict)   # what the emulated devices are, for the report
    source: object = None               # the batch source (a data.CriteoFile), None: synthetic batches


def _compute_basis(spec: BenchSpec, p) -> ComputeBasis:
    if spec.compute is not None:
        return spec.compute
    if p.compute_us_per_sample is None:
        raise BenchError(f"preset {p.name!r} has no calibrated compute cost: give --compute-us-per-sample "
                         f"or --compute measured")
    return ComputeBasis("pinned", p.compute_us_per_sample, 1,
                        f"preset {p.name} calibration (experiments/results/compute_calibration.json)")


def plan(spec: BenchSpec) -> Plan:
    """Resolve the preset, check the budget, size the default devices. Raises BenchError."""
    from ..ssdsim import ConvSSD, get_preset
    from ..workloads.train import footprint
    from ..workloads.train import preset as train_preset

    try:
        p = train_preset(spec.preset)
    except ValueError as e:
        raise BenchError(str(e)) from None
    if spec.sizing not in SIZINGS:
        raise BenchError(f"unknown sizing {spec.sizing!r}; known: {', '.join(SIZINGS)}")
    if spec.jobs is not None and (isinstance(spec.jobs, bool) or not isinstance(spec.jobs, int) or spec.jobs < 1):
        raise BenchError(f"jobs must be a whole number >= 1, not {spec.jobs!r}")
    if isinstance(spec.lookahead, bool) or not isinstance(spec.lookahead, int) or not 0 <= spec.lookahead <= 64:
        raise BenchError(f"lookahead must be a whole number of batches within 0..64, not {spec.lookahead!r}")
    names = spec_runs(spec)
    bad = [r for r in names if r not in SWAP_RUNS]
    if bad or not names:
        raise BenchError(f"unknown run {bad[0] if bad else '(none)'!r}; known: {', '.join(SWAP_RUNS)}")
    if "linux-swap-lookahead" in names and not spec.lookahead:
        raise BenchError("the linux-swap-lookahead run needs --lookahead 1 or more")
    if "linux-swap-packed" in names and not spec.pack_hot_rows:
        raise BenchError("the linux-swap-packed run packs hot rows: it needs --pack-hot-rows")
    u = spec.utilisation
    if u is not None and not 0.05 <= u <= 0.99:
        raise BenchError(f"utilisation must be within 0.05..0.99 of the usable capacity, not {u}")
    mc, dc = p.model_config(), p.data_config()
    source = None
    if spec.data is not None:
        from ..workloads.data import CriteoFile

        source = CriteoFile(spec.data, dc.tables, spec.data_format, spec.max_ind_range, spec.cat_mapping,
                            spec.skip_bad_lines)
        source.check()                  # a missing or malformed file fails here, before any training
        dc = dataclasses.replace(dc, tables=source.tables, hot=source.hot)
    budget = p.budget if spec.budget is None else spec.budget
    batch_size = p.batch_size if spec.batch_size is None else int(spec.batch_size)
    iterations = p.iterations if spec.iterations is None else int(spec.iterations)
    if batch_size < 1 or iterations < 1:
        raise BenchError(f"iterations and batch size must be positive, not {iterations} and {batch_size}")
    if batch_size > MAX_BATCH:
        raise BenchError(f"batch size {batch_size} is over the {MAX_BATCH} samples a batch can hold in memory here")
    try:
        fp = footprint(mc, dc, budget, batch_size, spec.seed, source=source)
    except ZswapError:                  # the data file's own errors (it is read for the probe)
        raise
    except ValueError as e:
        raise BenchError(f"bad DRAM budget {budget!r}: {e}") from None
    pages, budget_bytes = fp["total_pages"], fp["budget_bytes"]
    if budget_bytes >= pages * PAGE:
        raise BenchError(f"the DRAM budget ({format_size(budget_bytes)}) holds all {format_size(pages * PAGE)} of "
                         f"embedding tables: nothing would swap; give a budget below 100%")
    if not fp["fits"]:
        raise BenchError(f"the DRAM budget ({format_size(budget_bytes)}, {fp['budget_pages']} pages) is smaller "
                         f"than one batch's embedding pages ({fp['batch_pages_max']}): raise --budget or lower "
                         f"--batch-size")
    # the swap area: the tables at `u` of it, plus the one header page and a few zones' slack that
    # the store keeps for its summaries and GC headroom
    slack = 8 << 20
    conv = math.ceil((pages * PAGE / u if u else pages * PAGE * HEADROOM + slack) / (1 << 20)) << 20
    try:
        nand = get_preset(spec.ssd)
    except ValueError as e:
        raise BenchError(str(e)) from None
    if spec.geometry not in GEOMETRIES:
        raise BenchError(f"unknown geometry {spec.geometry!r}; known: {', '.join(GEOMETRIES)}")
    real = spec.geometry == "real"
    erase_block = nand.block_bytes if real and spec.erase_block is None else spec.erase_block
    try:
        ssd = ConvSSD(nand, conv, spec.op, erase_block=erase_block)
    except ValueError as e:
        raise BenchError(f"the conventional SSD: {e}") from None
    raw = ssd.raw_bytes
    stripe = nand.stripe_bytes
    if real:
        # the drive's zones; the zoned view's LBA ranges hold a ZNS zone's capacity, written whole
        zone, cap = nand.zone_size, nand.zone_capacity
        if raw // cap < MIN_REAL_ZONES:
            raise BenchError(f"real geometry: {format_size(raw)} of flash holds {raw // cap} zones of "
                             f"{format_size(cap)} ({nand.name}), fewer than the {MIN_REAL_ZONES} a store's GC "
                             f"needs: give larger tables (e.g. replay --generate mlperf) or --geometry scaled")
    else:
        zone = ZONE
        while raw // zone < MIN_ZONES and zone > 1 << 20:     # small runs: smaller zones, enough of them
            zone //= 2
        # a ZNS zone's capacity is a whole number of stripes (one program unit on every die), as on real
        # drives (capacity < size): otherwise the dies that get one more unit of every zone are hot
        cap = zone // stripe * stripe if zone >= stripe else zone
    view_zone = cap if real else zone
    if spec.sizing == "same-flash":
        zones, view_cap = raw // cap, view_zone       # all the flash as zones; the view uses its LBAs whole
    else:
        zones, view_cap = conv // view_zone, cap      # equal zones, equal capacity: equal usable bytes
    idle = "&idle_gc=1" if spec.idle_gc else ""
    idle += f"&op={spec.op:g}" if spec.op is not None else ""
    idle += f"&erase_block={erase_block}" if erase_block is not None else ""
    suspend = "&suspend=1" if spec.suspend else ""
    devices = {"sizing": spec.sizing, "conventional_usable_bytes": conv, "conventional_raw_bytes": raw,
               "conventional_op": ssd.effective_op, "conventional_erase_block_bytes": ssd.pages_per_block * nand.page_size,
               "ssd": nand.name, "geometry": spec.geometry,
               "zns_usable_bytes": zones * cap, "zone_size": zone, "zone_capacity": cap,
               "zoned_view_usable_bytes": conv // view_zone * view_cap,
               "tables_over_conventional_usable": pages * PAGE / conv,
               "tables_over_zns_usable": pages * PAGE / (zones * cap), "suspend": spec.suspend}
    if spec.device or spec.baseline_device:     # the user's devices: their own sizes, not these
        devices = {"sizing": "given", "baseline": spec.baseline_device or "(emulated default)",
                   "zns": spec.device or "(emulated default)", "suspend": spec.suspend}
    return Plan(p, mc, dc, iterations, batch_size, budget, budget_bytes, fp["budget_pages"], pages * PAGE, pages,
                spec.baseline_device or f"emu-conv://?size={conv}&preset={nand.name}{idle}{suspend}",
                spec.device or f"emu://?zones={zones}&zone_size={zone}&zone_capacity={cap}&preset={nand.name}{suspend}",
                view_zone, view_cap, spec.sizing, _compute_basis(spec, p), devices, source)


def spec_runs(spec: BenchSpec) -> tuple[str, ...]:
    """The swap runs a spec asks for, in ``RUNS`` order (``runs=None``: all of them, without
    ``linux-swap-lookahead`` when there is no lookahead and without ``linux-swap-packed`` when
    there is no packing); an old name (``run_names``) as its name now."""
    if spec.runs is not None:
        asked = current_names(spec.runs)
        return tuple(r for r in SWAP_RUNS if r in asked) + tuple(r for r in asked if r not in SWAP_RUNS)
    return tuple(r for r in SWAP_RUNS if (spec.lookahead or r != "linux-swap-lookahead")
                 and (spec.pack_hot_rows or r != "linux-swap-packed"))


def run_lookahead(spec: BenchSpec, name: str) -> int:
    """The lookahead run ``name`` trains with."""
    return int(spec.lookahead) if name in LOOKAHEAD_RUNS else 0


def run_packs(spec: BenchSpec, name: str) -> bool:
    """Whether run ``name``'s tables pack their hot rows together (``PACKED_RUNS``, with packing on)."""
    return bool(spec.pack_hot_rows) and name in PACKED_RUNS


def _too_small(what: str, url: str, holds: int, need: int) -> BenchError:
    return BenchError(f"{url} is too small for this run: its {what} holds {holds} pages "
                      f"({format_size(holds * PAGE)}), the run can swap out {need} pages ({format_size(need * PAGE)})")


def linux_swap(dev, budget_pages: int, faults: str = "batched", handles: str | None = None, id_space: int = 0):
    """``ConventionalSwap`` on ``dev`` as the bench runs it, for a DRAM budget of ``budget_pages``:
    the configuration validated against the 6.1 kernel (docs/baseline.md) — THP-swap clusters,
    in-place rewrite of swap-cache pages, readahead pages aged out within the budget — with
    ``faults`` ("serial" or "batched" at ``READ_QD``) and ``handles`` (FDP: None or "stream");
    ``id_space``: page ids known to lie below it (a trace's pages) resolve without hashing."""
    from ..baseline import ConventionalSwap

    return ConventionalSwap(dev, cluster_slots=512, in_place=True, ra_lifetime=max(1, budget_pages // 2),
                            faults=faults, batch_qd=READ_QD, handles=handles, id_space=id_space)


def backend_factories(pl: Plan, spec: BenchSpec) -> dict[str, Callable[[], tuple]]:
    """One factory per swap run, returning (backend, device) on fresh devices, in ``RUNS`` order."""
    from ..devices import open_device, placement_units
    from ..store import StoreConfig, SwapStore

    cfg = StoreConfig(placement=spec.placement, victim=spec.victim, read_qd=READ_QD,
                      gc_yield_to_reads=spec.gc_yield_to_reads, gc_step_bytes=spec.gc_step_bytes)

    def linux(faults: str):
        def make():
            dev = open_device(pl.baseline_url, zoned=False)
            b = linux_swap(dev, pl.budget_pages, faults, spec.linux_handles)
            if b.capacity_pages < pl.table_pages:
                raise _too_small("swap area", pl.baseline_url, b.capacity_pages, pl.table_pages)
            return b, dev
        return make

    def store_on_conventional():
        dev = placement_units(open_device(pl.baseline_url, zoned=False), pl.zone_size, pl.zone_capacity)
        b = SwapStore(dev, cfg)
        if b.capacity_pages < pl.table_pages:
            raise _too_small("zoned view", pl.baseline_url, b.capacity_pages, pl.table_pages)
        return b, dev

    def zns():
        dev = open_zns(pl)
        try:
            b = SwapStore(dev, cfg)
        except SwapFullError as e:
            raise BenchError(f"{pl.zns_url}: {e}") from None
        if b.capacity_pages < pl.table_pages:
            raise _too_small("swap store", pl.zns_url, b.capacity_pages, pl.table_pages)
        return b, dev

    every = {"linux-swap": linux("serial"), "linux-swap-batched": linux("batched"),
             "linux-swap-lookahead": linux("batched"), "linux-swap-packed": linux("batched"),
             "store-on-conventional": store_on_conventional,
             "store-on-zns": zns}
    return {name: every[name] for name in spec_runs(spec)}


def open_zns(pl: Plan):
    """The ``--device`` of the store's own run as placement units (``devices/units.py``): a zoned
    device's zones; an FDP SSD's LBA ranges of the plan's zone size (each stream, and GC, written
    under a placement handle of its own); an Open-Channel SSD's chunk stripes (one chunk per parallel
    unit, whatever the plan's zone size). A conventional SSD, which takes no placement hint, is
    refused with ``NotZonedError``: it is the baseline's device (``store-on-conventional`` runs there)."""
    from ..devices import open_device, placement_units

    dev = open_device(pl.zns_url, zoned=None)
    try:
        units = placement_units(dev, pl.zone_size, pl.zone_capacity)
    except BaseException:
        dev.close()
        raise
    traits = units.unit_traits()
    if traits.collector != "host" and not traits.handles:
        units.close()
        raise NotZonedError(f"{pl.zns_url} is not a zoned device; give a ZNS device (e.g. /dev/nvme0n2 or "
                            f"emu://?zones=64) or use it as the conventional baseline (--baseline-device)")
    return units


def open_backends(pl: Plan, spec: BenchSpec) -> dict[str, Callable[[], tuple]]:
    """:func:`backend_factories`, each opened once and closed here: a wrong or too small device fails
    before any training."""
    runs = backend_factories(pl, spec)
    for make in runs.values():
        b, dev = make()
        b.close()
        dev.close()
    return runs


def in_memory(url: str) -> bool:
    """Whether ``url`` names an emulated device held in memory (a fresh one each time it is opened)."""
    scheme, sep, rest = url.partition("://")
    return bool(sep) and scheme in ("emu", "emu-conv", "fdp", "ocssd") and (rest == "" or rest.startswith("?"))


def jobs_for(pl: Plan, spec: BenchSpec) -> int:
    """How many runs to train at once (see ``BenchSpec.jobs``)."""
    import os

    if not (in_memory(pl.baseline_url) and in_memory(pl.zns_url)):
        return 1
    if spec.jobs is not None:
        return max(1, int(spec.jobs))
    return max(1, len(os.sched_getaffinity(0)))
