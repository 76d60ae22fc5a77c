"""cffi build script (out-of-line API mode) for the extension modules:

- `zswap_host._native`: the SSD timing model and its FTLs, the swap store's per-page
  bookkeeping for its ``swap_out`` fast path (``native/store.c``), its read rule
  (``native/read_plan.c``), and the emulated Open-Channel SSD's write and read paths (``native/ocssd_stripe.c``, ``ocssd_vector.c``, ``ocssd_read.c``)
  (``ffibuilder``);
- `zswap_host._zoned`: the Linux zoned block ioctls and NVMe passthrough (``zoned_ffibuilder``),
  loaded only by the Linux device backends (zswap_host/devices/blkzoned.py);
- `zswap_host._uring`: the io_uring I/O engine on liburing (``uring_ffibuilder``), built only where
  liburing's headers are installed (Debian: liburing-dev; setup.py checks ``have_liburing()``);
- `zswap_host._pager`: the userfaultfd pager core (``pager_ffibuilder``), loaded by zswap_host/pager/.

setup.py builds them through ``cffi_modules`` (the io_uring one only when liburing is there).
To build them in place (next to the package sources) without pip::

    python native/build_native.py                     # every module this machine can build
    python native/build_native.py zswap_host._uring   # one module

Each part is a (sources, cdefs, headers) triple; MODULES says which parts make which module, so a
part can be changed without touching the others.
"""
from __future__ import annotations

import os
import re
import shutil
import sys

from cffi import FFI

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# ---------------------------------------------------------------- SSD timing model + FTLs
SSDSIM_SOURCES = ["ssd.c", "conv_ftl.c", "zns_ftl.c", "ocssd.c", "ssd_groups.c"]
SSDSIM_HEADERS = ["ssd.h"]


def header_cdefs(header: str) -> str:
    """The cffi declarations of a header: the spans between "cffi:begin" and "cffi:end" comments,
    without comments and preprocessor lines, the fields after a "cffi:opaque-rest" comment
    replaced by "...;" (cffi then takes the struct's layout from the compiler)."""
    with open(os.path.join(HERE, header)) as f:
        text = f.read()
    spans = re.findall(r"/\*\s*cffi:begin\s*\*/(.*?)/\*\s*cffi:end\s*\*/", text, re.S)
    if not spans:
        raise RuntimeError(f"{header} has no /* cffi:begin */ ... /* cffi:end */ part")
    out = "\n".join(spans)
    out = re.sub(r"/\*\s*cffi:opaque-rest\s*\*/.*?(?=\n\s*\}\s*\w+\s*;)", "...;", out, flags=re.S)
    out = re.sub(r"/\*.*?\*/", "", out, flags=re.S)
    out = re.sub(r"//[^\n]*", "", out)
    out = re.sub(r"^\s*#[^\n]*", "", out, flags=re.M)
    out = re.sub(r"[ \t]+\n", "\n", out)
    return re.sub(r"\n\s*\n+", "\n", out).strip() + "\n"


SSDSIM_CDEFS = header_cdefs("ssd.h")

# ---------------------------------------------------------------- a run of zone appends, for any device (append_run.h)
# the neutral, versioned description of a run a caller hands a device's writer: in the store's module
# (which fills it) and in the io_uring one (which appends it); no sources
APPEND_RUN_HEADERS = ["append_run.h"]
APPEND_RUN_CDEFS = header_cdefs("append_run.h")

# ---------------------------------------------------------------- the swap store's write rule (store_plan.c)
# which units a write is cut into, and whether a swap_out call is one batch: the one implementation,
# for the general path (store/write_rule.py) and the express path (store_out.c)
STORE_PLAN_SOURCES = ["store_plan.c"]
STORE_PLAN_HEADERS = ["store_plan.h"]
STORE_PLAN_CDEFS = header_cdefs("store_plan.h")

# ---------------------------------------------------------------- the swap store's read rule (read_plan.c)
# which device requests read a set of slots (swap-ins and GC reads: store/readpath.py)
READ_PLAN_SOURCES = ["read_plan.c"]
READ_PLAN_HEADERS = ["read_plan.h"]
READ_PLAN_CDEFS = header_cdefs("read_plan.h")

# ---------------------------------------------------------------- the swap store's bookkeeping (store.c)
STORE_SOURCES = ["store.c"]
STORE_HEADERS = ["store.h"]
STORE_CDEFS = header_cdefs("store.h")
# the usual swap_out call around its device write (store_out.c), and with a device's writer of
# append runs inside it (st_out_call: the io_uring device's, uring_store.c, takes only the zs_run)
STORE_OUT_SOURCES = ["store_out.c"]
STORE_OUT_HEADERS = ["store_out.h"]
STORE_OUT_CDEFS = header_cdefs("store_out.h")

# ---------------------------------------------------------------- the emulated Open-Channel SSD's write path
# the zoned view's commit to its chunk stripe (ocssd_stripe.c) and the device's vector write checks
# (ocssd_vector.c); devices/ocssd_view.py and devices/ocssd.py keep numpy paths that explain errors
OCSSD_STRIPE_SOURCES = ["ocssd_stripe.c"]
OCSSD_STRIPE_HEADERS = ["ocssd_stripe.h"]
OCSSD_STRIPE_CDEFS = header_cdefs("ocssd_stripe.h")
OCSSD_VECTOR_SOURCES = ["ocssd_vector.c"]
OCSSD_VECTOR_HEADERS = ["ocssd_vector.h"]
OCSSD_VECTOR_CDEFS = header_cdefs("ocssd_vector.h")
# ---------------------------------------------------------------- ... and its read path
# the zoned view's plan of a batch of zone reads (ocssd_read.c); the device's read checks are
# ocssd_vector.c's; again the numpy paths explain errors
OCSSD_READ_SOURCES = ["ocssd_read.c"]
OCSSD_READ_HEADERS = ["ocssd_read.h"]
OCSSD_READ_CDEFS = header_cdefs("ocssd_read.h")

# ---------------------------------------------------------------- Linux zoned block devices (zoned.c)
ZONED_SOURCES = ["zoned.c"]
ZONED_HEADERS = ["zoned.h"]
ZONED_CDEFS = """
int zd_report_zones(int fd, uint64_t sector, uint32_t n, uint64_t *start, uint64_t *len,
                    uint64_t *wp, uint64_t *cap, uint8_t *cond, uint8_t *type, uint32_t *flags);
int zd_zone_mgmt(int fd, int op, uint64_t sector, uint64_t nr_sectors);
int zd_nr_zones(int fd);
int64_t zd_size_bytes(int fd);
int zd_logical_block_size(int fd);
int zd_nvme_nsid(int fd);
int zd_nvme_zone_append(int fd, uint32_t nsid, uint64_t zslba, const void *buf, uint32_t len,
                        uint32_t lba_size, uint64_t *alba);
int64_t zd_pwrite(int fd, const void *buf, size_t len, int64_t off);
int64_t zd_pread(int fd, void *buf, size_t len, int64_t off);
"""

# ---------------------------------------------------------------- io_uring engine (uring.c, on liburing)
URING_SOURCES = ["uring.c"]
URING_HEADERS = ["uring.h"]
URING_CDEFS = header_cdefs("uring.h")
URING_STORE_SOURCES = ["uring_store.c"]
URING_STORE_HEADERS = ["uring_store.h"]
URING_STORE_CDEFS = header_cdefs("uring_store.h")
LIBURING_HEADER = "/usr/include/liburing.h"


def have_liburing() -> bool:
    """liburing's headers are installed (Debian: liburing-dev); without them the io_uring engine is
    not built and the Linux backends use the synchronous engine (saying so on stderr)."""
    return os.path.exists(LIBURING_HEADER)


# ---------------------------------------------------------------- userfaultfd pager (pager.c)
PAGER_SOURCES = ["pager.c"]
PAGER_HEADERS = ["pager.h"]
PAGER_CDEFS = header_cdefs("pager.h")

# ---------------------------------------------------------------- the modules
# module name -> its parts (sources relative to native/, cdef text, headers relative to native/)
MODULES = {
    "zswap_host._native": [(SSDSIM_SOURCES, SSDSIM_CDEFS, SSDSIM_HEADERS),
                           (STORE_PLAN_SOURCES, STORE_PLAN_CDEFS, STORE_PLAN_HEADERS),
                           (READ_PLAN_SOURCES, READ_PLAN_CDEFS, READ_PLAN_HEADERS),
                           (STORE_SOURCES, STORE_CDEFS, STORE_HEADERS),
                           ([], APPEND_RUN_CDEFS, APPEND_RUN_HEADERS),
                           (STORE_OUT_SOURCES, STORE_OUT_CDEFS, STORE_OUT_HEADERS),
                           (OCSSD_STRIPE_SOURCES, OCSSD_STRIPE_CDEFS, OCSSD_STRIPE_HEADERS),
                           (OCSSD_VECTOR_SOURCES, OCSSD_VECTOR_CDEFS, OCSSD_VECTOR_HEADERS),
                           (OCSSD_READ_SOURCES, OCSSD_READ_CDEFS, OCSSD_READ_HEADERS)],
    "zswap_host._zoned": [(ZONED_SOURCES, ZONED_CDEFS, ZONED_HEADERS)],
    "zswap_host._uring": [(URING_SOURCES, URING_CDEFS, URING_HEADERS),
                          ([], APPEND_RUN_CDEFS, APPEND_RUN_HEADERS),
                          (URING_STORE_SOURCES, URING_STORE_CDEFS, URING_STORE_HEADERS)],
    "zswap_host._pager": [(PAGER_SOURCES, PAGER_CDEFS, PAGER_HEADERS)],
}
LIBRARIES = {"zswap_host._uring": ["uring"], "zswap_host._native": ["m"]}
# liburing's inline functions need GNU C; the timing model stays strict C99 (no FP contraction)
STD = {"zswap_host._uring": "-std=gnu99", "zswap_host._pager": "-std=gnu11"}


def _rel(path: str, absolute: bool = False) -> str:
    """setuptools wants source paths relative to the project root (the cwd of the build)."""
    full = os.path.join(HERE, path)
    if absolute:
        return os.path.normpath(full)
    p = os.path.relpath(full, os.getcwd())
    return p if not p.startswith("..") else os.path.normpath(full)


def make_builder(absolute: bool = False, module: str = "zswap_host._native") -> FFI:
    parts = MODULES[module]
    ffi = FFI()
    ffi.cdef("\n".join(part[1] for part in parts))
    ffi.set_source(
        module,
        "\n".join(f'#include "{h}"' for part in parts for h in part[2]),
        sources=[_rel(s, absolute) for part in parts for s in part[0]],
        include_dirs=[_rel(".", absolute)],
        libraries=LIBRARIES.get(module, []),
        extra_compile_args=["-O2", STD.get(module, "-std=c99")],
    )
    return ffi


ffibuilder = make_builder()
zoned_ffibuilder = make_builder(module="zswap_host._zoned")
uring_ffibuilder = make_builder(module="zswap_host._uring")
pager_ffibuilder = make_builder(module="zswap_host._pager")


def build_in_place(module: str = "zswap_host._native") -> str:
    """Compile one module and copy it into zswap_host/ (for use without `pip install -e`)."""
    tmp = os.path.join(ROOT, "build", "cffi")
    os.makedirs(tmp, exist_ok=True)
    lib = make_builder(absolute=True, module=module).compile(tmpdir=tmp, verbose=False)
    pkg = os.path.join(ROOT, "zswap_host")
    stem = module.rsplit(".", 1)[1] + "."
    for old in os.listdir(pkg):  # a stale copy (e.g. pip's _native.abi3.so) would shadow or be shadowed
        if old.startswith(stem) and old.endswith(".so"):
            os.remove(os.path.join(pkg, old))
    dest = os.path.join(pkg, os.path.basename(lib))
    shutil.copy2(lib, dest)
    return dest


if __name__ == "__main__":
    # python native/build_native.py [MODULE ...]   (default: every module this machine can build)
    names = sys.argv[1:] or [m for m in MODULES if m != "zswap_host._uring" or have_liburing()]
    for name in names:
        if name not in MODULES:
            sys.exit(f"build_native.py: no module {name!r} (modules: {', '.join(MODULES)})")
        print(build_in_place(name), file=sys.stderr)
