"""cffi build script (out-of-line API mode) for the two extension modules:

- `zswap_host._native`: the SSD timing model and its FTLs (``ffibuilder``);
- `zswap_host._zoned`: the Linux zoned block ioctls and NVMe passthrough (``zoned_ffibuilder``),
  loaded only by the Linux device backends (zswap_host/devices/blkzoned.py).

setup.py builds both through ``cffi_modules=["native/build_native.py:ffibuilder",
"native/build_native.py:zoned_ffibuilder"]``.  To build both in place (next to the package
sources) without pip::

    python native/build_native.py

Each part is a (sources, cdefs, headers) triple; MODULES says which parts make which module, so a
part can be changed without touching the others.
"""
from __future__ import annotations

import os
import shutil
import sys

from cffi import FFI

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# ---------------------------------------------------------------- SSD timing model + FTLs
SSDSIM_SOURCES = ["ssd.c", "conv_ftl.c", "zns_ftl.c"]
SSDSIM_HEADERS = ["ssd.h"]
SSDSIM_CDEFS = """
typedef struct {
    int64_t host_write_bytes;
    int64_t host_read_bytes;
    int64_t host_trim_bytes;
    int64_t media_write_bytes;
    int64_t media_read_bytes;
    int64_t gc_write_bytes;
    int64_t pad_bytes;
    int64_t erase_count;
    int64_t gc_runs;
    int64_t buffer_read_bytes;
    int64_t nand_read_ops;
    int64_t nand_prog_ops;
    int64_t die_busy_ns;
    int64_t erase_ns;
    int64_t erase_bytes;
    int64_t gc_bg_write_bytes;
    int64_t gc_bg_runs;
    int64_t suspend_count;
} ssd_counters;

typedef struct {
    int32_t channels;
    int32_t dies_per_channel;
    int32_t page_size;
    int32_t pages_per_block;
    int32_t oneshot_pages;
    double t_read_us;
    double t_prog_us;
    double t_erase_us;
    double channel_mb_s;
    double host_link_mb_s;
    double cmd_overhead_us;
    int64_t write_buffer_bytes;
    double t_suspend_us;
    int32_t suspend;
} ssd_params;

typedef struct {
    int64_t now;
    ssd_counters cnt;
    ...;
} ssd_timing;

typedef struct conv_ftl conv_ftl;
conv_ftl *conv_new(const ssd_params *p, int64_t logical_units, int32_t blocks_per_die,
                   int32_t gc_low, int32_t gc_high);
void conv_free(conv_ftl *F);
int conv_submit(conv_ftl *F, int64_t n, const uint8_t *ops, const int64_t *offs,
                const int64_t *lens, int64_t qd, double *out);
ssd_timing *conv_timing(conv_ftl *F);
int64_t conv_free_blocks(conv_ftl *F);
int64_t conv_valid_units(conv_ftl *F);
int conv_check(conv_ftl *F, char *msg, int msglen);
void conv_set_idle_gc(conv_ftl *F, int32_t bg_blocks);
void conv_idle(conv_ftl *F, int64_t until);

typedef struct zns_ftl zns_ftl;
zns_ftl *zns_new(const ssd_params *p, int64_t nr_zones, int64_t zone_size, int64_t zone_capacity);
void zns_free(zns_ftl *Z);
int zns_submit(zns_ftl *Z, int64_t n, const uint8_t *ops, const int64_t *offs,
               const int64_t *lens, int64_t qd, double *out);
int64_t zns_reset(zns_ftl *Z, int64_t zone);
void zns_finish(zns_ftl *Z, int64_t zone);
ssd_timing *zns_timing(zns_ftl *Z);
int32_t zns_dies_per_zone(zns_ftl *Z);
int64_t zns_zone_wp(zns_ftl *Z, int64_t zone);
"""

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

# ---------------------------------------------------------------- the modules
# module name -> its parts (sources relative to native/, cdef text, headers relative to native/)
MODULES = {
    "zswap_host._native": [(SSDSIM_SOURCES, SSDSIM_CDEFS, SSDSIM_HEADERS)],
    "zswap_host._zoned": [(ZONED_SOURCES, ZONED_CDEFS, ZONED_HEADERS)],
}


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
        extra_compile_args=["-O2", "-std=c99"],
    )
    return ffi


ffibuilder = make_builder()
zoned_ffibuilder = make_builder(module="zswap_host._zoned")


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
    for name in MODULES:
        print(build_in_place(name), file=sys.stderr)
