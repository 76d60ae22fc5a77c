/*
 * ssd.h - shared SSD timing model and the two FTLs built on it (NVMeVirt-style split).
 *
 *   ssd.c      one timing model: per-channel and per-die busy-until accounting, host link
 *              (one busy-until per direction), per-command controller overhead, a bounded
 *              DRAM write buffer, the queue-depth issue loop, and (optional) program/erase
 *              suspend for host reads.
 *   conv_ftl.c page-mapped conventional FTL (4 KiB mapping unit), hidden over-provisioning,
 *              TRIM, greedy per-die GC (bucket lists; relocation on the victim's die or striped
 *              over all dies) triggered by a free-block low watermark,
 *              (optional) background GC in host idle time, and (optional) NVMe Flexible Data
 *              Placement: a write frontier per reclaim unit handle.
 *   zns_ftl.c  zoned mapping: a zone is a fixed set of erase blocks striped across dies,
 *              reset = erase (same cost per erased byte as the conventional FTL), no device GC.
 *   ocssd.c    Open-Channel SSD 2.0: the host addresses groups (channels), parallel units
 *              (dies), chunks (erase blocks) and sectors directly; no mapping, no device GC.
 *
 * All times are int64 nanoseconds of modeled device time (fields named *_ns), sizes are bytes
 * (*_bytes) or 4 KiB mapping units (*_units).  Nothing here allocates per request.
 *
 * The parts between "cffi:begin" and "cffi:end" markers are the Python-visible API:
 * native/build_native.py hands them to cffi (comments and preprocessor lines stripped, the fields
 * after a "cffi:opaque-rest" marker replaced by "...;").  Keep them plain C declarations.
 */
#ifndef ZSWAP_SSD_H
#define ZSWAP_SSD_H

#include <stdint.h>
#include <stdlib.h>

#define SSD_UNIT 4096           /* mapping unit and logical block, bytes */
#define SSD_NONE 0xFFFFFFFFu    /* unmapped entry of l2p / p2l */

#define SSD_OP_READ 0
#define SSD_OP_WRITE 1
#define SSD_OP_TRIM 2
#define SSD_OP_APPEND 3         /* zoned model only: a write at the zone's write pointer (zone append) */

/* Binary min-heap entry: key (a completion time, ns) and what completes then. */
typedef struct {
    int64_t key_ns;             /* completion time */
    int32_t units;              /* write buffer: 4 KiB units the program releases */
    int32_t die;                /* write buffer: die of the program (a suspend there delays it) */
} ssd_heap_ent;

/* One binary min-heap implementation (ssd_heap_*, below) serves the write buffer's programs in
   flight and the issue loop's outstanding requests. */
typedef struct {
    ssd_heap_ent *a;
    int64_t n, cap;             /* entries used, entries allocated */
} ssd_heap;

/* Division by a divisor fixed at set-up, without a divide instruction (Lemire et al., "Faster
   remainder by direct computation"): exact for every 32-bit n. */
__extension__ typedef unsigned __int128 ssd_u128;

typedef struct {
    uint64_t m;                 /* 2^64 / d, rounded up */
    uint32_t d;
} ssd_div;

static inline ssd_div ssd_div_of(uint32_t d)
{
    ssd_div r = {UINT64_C(0xFFFFFFFFFFFFFFFF) / d + 1, d};
    return r;
}
static inline uint32_t ssd_quot(ssd_div D, uint32_t n)
{
    return D.d == 1 ? n : (uint32_t)(((ssd_u128)D.m * n) >> 64); /* m wraps to 0 at d = 1 */
}
static inline uint32_t ssd_rem(ssd_div D, uint32_t n)
{
    return (uint32_t)(((ssd_u128)(D.m * n) * D.d) >> 64);
}

/* One busy interval [start_ns, end_ns) of a transfer resource. */
typedef struct {
    int64_t start_ns, end_ns;
} ssd_span;

/* Timeline of a shared transfer resource (channel, link direction): sorted, merged busy
   intervals from the current floor on.  Reservations arrive out of time order (a die's queued
   work reserves its channel ahead of time), so a transfer takes the earliest gap that fits
   rather than queueing behind the latest reservation. */
typedef struct {
    ssd_span *v;
    int64_t head, n, cap;       /* live intervals are v[head, n) */
} ssd_tl;

/* cffi:begin */
typedef struct {
    int64_t host_write_bytes;
    int64_t host_read_bytes;
    int64_t host_trim_bytes;
    int64_t media_write_bytes;  /* host units placed + GC relocations + padding */
    int64_t media_read_bytes;   /* bytes read from NAND (host + GC) */
    int64_t gc_write_bytes;     /* relocated by device GC */
    int64_t pad_bytes;          /* padding programmed to close partial program units */
    int64_t erase_count;        /* erase-block erases */
    int64_t gc_runs;            /* victim blocks cleaned by device GC */
    int64_t buffer_read_bytes;  /* host reads served from the write buffer */
    int64_t nand_read_ops;      /* flash page reads (host + GC) */
    int64_t nand_prog_ops;      /* program-unit programs (host + GC + padding) */
    int64_t die_busy_ns;        /* die time of reads, programs (with their transfer) and erases */
    int64_t erase_ns;           /* die time spent erasing */
    int64_t erase_bytes;        /* flash bytes erased (erase block or zone slice sizes) */
    int64_t gc_bg_write_bytes;  /* part of gc_write_bytes relocated by idle-time (background) GC */
    int64_t gc_bg_runs;         /* part of gc_runs cleaned by idle-time GC */
    int64_t suspend_count;      /* host reads that suspended a die's program/erase work */
} ssd_counters;

/* Device parameters, as Python's presets give them (microseconds, MB/s = 1e6 B/s). */
typedef struct {
    int32_t channels;           /* flash channels */
    int32_t dies_per_channel;   /* dies (LUNs) per channel; die d is on channel d % channels */
    int32_t page_size;          /* flash page bytes (read unit), multiple of 4096 */
    int32_t pages_per_block;    /* erase block in pages, multiple of oneshot_pages */
    int32_t oneshot_pages;      /* pages programmed together on one die (TLC one-shot) */
    double t_read_us;           /* array read (tR) of one page */
    double t_prog_us;           /* program of one program unit (oneshot_pages pages) */
    double t_erase_us;          /* erase of one block of pages_per_block pages */
    double channel_mb_s;        /* per-channel transfer rate */
    double host_link_mb_s;      /* host link rate per direction */
    double cmd_overhead_us;     /* controller latency per command */
    int64_t write_buffer_bytes; /* DRAM write buffer */
    double t_suspend_us;        /* program/erase suspend latency (a read waits at most this) */
    int32_t suspend;            /* 1 = host reads suspend programs/erases on their die */
    /* Controller mechanisms (0 = absent; a preset without them times as before, bit for bit). */
    double ctrl_read_us;        /* serial controller time per read command (bounds read IOPS) */
    double ctrl_write_us;       /* ... per write command, overlapping its data transfer */
    double ctrl_append_us;      /* ... per zone append command (0: as a write) */
    double t_append_us;         /* zoned: latency a zone append adds to a write's (not serial) */
    double write_link_mb_s;     /* host -> device data rate of writes (0: host_link_mb_s) */
    double write_path_mb_s;     /* write path all flash writes pass (host data on arrival, padding) */
    double t_reset_us;          /* zoned: latency of any zone reset (the erases run on in the background) */
    double t_reset_written_us;  /* zoned: more when the zone holds data */
    double reset_us_per_mib;    /* zoned: more per MiB^reset_exponent the zone holds */
    double reset_exponent;      /* zoned: of the MiB held (0: 1, linear) */
    int32_t finish_pads_zone;   /* zoned: finish programs the rest of a non-empty zone (pad) */
    double t_finish_us;         /* zoned: latency of a finish beyond its padding */
    double t_read_cmd_us;       /* latency a read command adds to cmd_overhead (firmware read path; not serial) */
    int32_t zone_die_stagger;   /* zoned: zone z starts on die z (not z * dies_per_zone) mod n_dies */
    int32_t gc_striped;         /* conventional: GC re-programs a victim's valid data over all dies
                                   (superblock-style), not on the victim's own die */
} ssd_params;

typedef struct {
    int64_t now;                /* ns: the model's clock; a submit issues its first requests at it */
    ssd_counters cnt;
    /* cffi:opaque-rest */
    int n_channels, n_dies;
    ssd_tl *channel;            /* per channel: transfer timeline */
    ssd_tl link_in;             /* host -> device */
    ssd_tl link_out;            /* device -> host */
    int64_t *die_free_ns;       /* per die: busy until (a die does its own work in issue order) */
    int32_t *die_channel;       /* per die: its channel, d % n_channels (no division per operation) */
    int64_t *read_end_ns;       /* per die: end of the last host-read sense (suspend: FIFO reads) */
    int64_t floor_ns;           /* no reservation starts before this (the current issue time) */
    double channel_ns_per_byte; /* channel transfer time */
    double link_ns_per_byte;    /* host link transfer time (device -> host) */
    double link_in_ns_per_byte; /* host -> device transfer time of write data */
    double write_path_ns_per_byte; /* write path time per byte; 0: none */
    ssd_tl ctrl;                /* controller: serial command processing */
    ssd_tl engine;              /* write path */
    int64_t t_ctrl_ns[4];       /* per op (read, write, trim, append): controller time */
    int64_t t_reset_ns, t_reset_written_ns; /* zoned reset cost (ssd_params) */
    double reset_ns_per_mib, reset_exponent;
    int64_t t_append_ns;
    int32_t finish_pads_zone;
    int64_t t_finish_ns;
    int64_t t_read_ns;          /* page sense */
    int64_t t_prog_ns;          /* program of one program unit */
    int64_t t_erase_ns;         /* erase of one block of pages_per_block pages */
    int64_t t_cmd_ns;           /* controller latency per command */
    int64_t t_read_cmd_ns;      /* more for a read command (not serial) */
    int64_t t_suspend_ns;       /* longest wait of a host read for a program/erase to suspend */
    int32_t pages_per_block;    /* the erase block t_erase_ns is for (erase_pages scales from it) */
    int32_t page_bytes;         /* flash page */
    int32_t suspend;            /* program/erase suspend for host reads */
    /* write buffer in 4 KiB units: pending = accepted, not yet handed to a program;
       inflight = in a program that completes at its wb heap key */
    int64_t wb_cap_units, wb_pending_units, wb_inflight_units;
    ssd_heap wb;                /* programs in flight, keyed by completion */
    ssd_heap queue;             /* the issue loop's outstanding requests, keyed by completion */
} ssd_timing;

/* ---- conventional FTL (conv_ftl.c) ---- */
typedef struct conv_ftl conv_ftl;
conv_ftl *conv_new(const ssd_params *p, int64_t logical_units, int32_t blocks_per_die,
                   int32_t gc_low, int32_t gc_high);
/* FDP: n_ruh reclaim unit handles (1..256; an RU is one erase block); persistent = 1: GC
   relocates into a GC block of the victim's own handle, 0: into one shared (MIXED) GC block per
   die.  conv_new = conv_new_fdp(..., 1, 1).  NULL on bad parameters or no memory. */
conv_ftl *conv_new_fdp(const ssd_params *p, int64_t logical_units, int32_t blocks_per_die,
                       int32_t gc_low, int32_t gc_high, int32_t n_ruh, int32_t persistent);
void conv_free(conv_ftl *F);
int conv_submit(conv_ftl *F, int64_t n, const uint8_t *ops, const int64_t *offs,
                const int64_t *lens, int64_t qd, double *out);
/* conv_submit with a handle per request (NULL: handle 0); a write naming a handle >= n_ruh is
   rejected (-(i+1)); reads and trims ignore their handle.  conv_submit = handles NULL. */
int conv_submit_h(conv_ftl *F, int64_t n, const uint8_t *ops, const int64_t *offs,
                  const int64_t *lens, const uint16_t *handles, int64_t qd, double *out);
int32_t conv_n_ruh(conv_ftl *F);
/* out = host_write_bytes, media_write_bytes (programmed into blocks tagged h), gc_write_bytes
   (relocated out of blocks tagged h) of handle h; h = n_ruh: the MIXED GC blocks. */
void conv_ruh_counters(conv_ftl *F, int32_t h, int64_t out[3]);
ssd_timing *conv_timing(conv_ftl *F);
int64_t conv_free_blocks(conv_ftl *F);
int64_t conv_valid_units(conv_ftl *F);
int64_t conv_n_blocks(conv_ftl *F);     /* erase blocks: dies * blocks_per_die */
/* Wear: out[b] = erases of physical erase block b since the model was built, conv_n_blocks
   entries, die-major: b = die * blocks_per_die + block (the FTL's block index; die d is on
   channel d % channels).  Every erase is a GC victim's, so they add up to cnt.erase_count. */
void conv_erase_counts(conv_ftl *F, int64_t *out);
/* Placement: out[i] = the die holding logical unit lpns[i]'s data, -1 if it is unmapped or out
   of range. */
void conv_lpn_dies(conv_ftl *F, int64_t n, const int64_t *lpns, int32_t *out);
int conv_check(conv_ftl *F, char *msg, int msglen);
void conv_set_idle_gc(conv_ftl *F, int32_t bg_blocks);
void conv_idle(conv_ftl *F, int64_t until);

/* ---- zoned FTL (zns_ftl.c) ---- */
typedef struct zns_ftl zns_ftl;
zns_ftl *zns_new(const ssd_params *p, int64_t nr_zones, int64_t zone_size, int64_t zone_capacity);
/* Requests: op 0 read, 1 write, 3 zone append (a write at the write pointer, the append's
   controller cost); no trim. */
void zns_free(zns_ftl *Z);
int zns_submit(zns_ftl *Z, int64_t n, const uint8_t *ops, const int64_t *offs,
               const int64_t *lens, int64_t qd, double *out);
int64_t zns_reset(zns_ftl *Z, int64_t zone);
/* Finish: pads the zone's partial program unit (finish_pads_zone: programs the rest of a
   non-empty zone); returns the completion time (ns) and advances now; -1: no such zone. */
int64_t zns_finish(zns_ftl *Z, int64_t zone);
ssd_timing *zns_timing(zns_ftl *Z);
int32_t zns_dies_per_zone(zns_ftl *Z);
int64_t zns_zone_wp(zns_ftl *Z, int64_t zone);
/* Erase blocks of one zone: per slice (die) ceil(slice pages / pages_per_block), the last block
   of a slice possibly short; every zone has the same. */
int64_t zns_blocks_per_zone(zns_ftl *Z);
/* Wear: erases per physical erase block since the model was built, nr_zones * blocks_per_zone
   entries, zone-major: zone z's blocks are [z * bpz, (z + 1) * bpz), slice by slice (slice s on
   die (base(z) + s) % n_dies, s = 0..dies_per_zone - 1), each slice's blocks in fill order.  A
   reset erases only the blocks holding programmed pages; each erase is one cnt.erase_count. */
void zns_erase_counts(zns_ftl *Z, int64_t *out);

/* ---- Open-Channel SSD 2.0 (ocssd.c) ----
   groups must be p->channels and pus_per_group p->dies_per_channel (a group is a channel, a PU
   a die), sectors_per_chunk a multiple of the program unit in 4 KiB sectors; NULL otherwise or
   on no memory.  Requests: offsets and lengths in bytes of linear sector addresses (ppa * 4096);
   op 2 resets (erases) the one whole chunk it names; a write must start at its chunk's write
   pointer and stay in the chunk. */
typedef struct ocssd ocssd;
ocssd *ocssd_new(const ssd_params *p, int32_t groups, int32_t pus_per_group, int32_t chunks_per_pu,
                 int32_t sectors_per_chunk);
void ocssd_free(ocssd *O);
int ocssd_submit(ocssd *O, int64_t n, const uint8_t *ops, const int64_t *offs,
                 const int64_t *lens, int64_t qd, double *out);
ssd_timing *ocssd_timing(ocssd *O);
int64_t ocssd_nr_chunks(ocssd *O);
int32_t ocssd_chunk_die(ocssd *O, int64_t chunk);          /* -1: no such chunk */
int64_t ocssd_chunk_wp(ocssd *O, int64_t chunk);           /* sectors written; -1: no such chunk */
int ocssd_set_wp(ocssd *O, int64_t chunk, int64_t sectors); /* reopen: sectors already on flash */
void ocssd_erase_counts(ocssd *O, int64_t *out);           /* per chunk, nr_chunks entries */
/* cffi:end */

/* ---- timing model (ssd.c), used by the FTLs ----
   Hidden: calls between the module's files are direct, not through the PLT. */
#define SSD_INTERNAL __attribute__((visibility("hidden")))
SSD_INTERNAL int ssd_timing_init(ssd_timing *T, const ssd_params *p);
SSD_INTERNAL void ssd_timing_free(ssd_timing *T);
SSD_INTERNAL int64_t ssd_nand_read(ssd_timing *T, int die, int64_t t, int64_t bytes);
SSD_INTERNAL int64_t ssd_nand_prog(ssd_timing *T, int die, int64_t t, int64_t bytes);
SSD_INTERNAL int64_t ssd_nand_erase(ssd_timing *T, int die, int64_t t);
SSD_INTERNAL int64_t ssd_nand_erase_pages(ssd_timing *T, int die, int64_t t, int64_t pages);
SSD_INTERNAL int64_t ssd_host_read(ssd_timing *T, int die, int64_t t, int64_t bytes);
SSD_INTERNAL int64_t ssd_link_in(ssd_timing *T, int64_t t, int64_t bytes);
SSD_INTERNAL int64_t ssd_link_out(ssd_timing *T, int64_t t, int64_t bytes);
SSD_INTERNAL int64_t ssd_ctrl(ssd_timing *T, int op, int64_t t);
SSD_INTERNAL int64_t ssd_write_path(ssd_timing *T, int64_t t, int64_t bytes);
SSD_INTERNAL int64_t ssd_wb_reserve(ssd_timing *T, int64_t t, int64_t units);
SSD_INTERNAL void ssd_wb_program(ssd_timing *T, int die, int64_t done, int64_t units);
SSD_INTERNAL void ssd_wb_drop(ssd_timing *T, int64_t units);

/* one request: returns its completion time, or < 0 on error */
typedef int64_t (*ssd_req_fn)(void *ftl, int op, int64_t off, int64_t len, int64_t t_issue);
/* optional: warm the caches for a request issued later (stage 0 far ahead, stage 1 nearer) */
typedef void (*ssd_pf_fn)(void *ftl, int stage, int op, int64_t off);
SSD_INTERNAL int ssd_submit_loop(ssd_timing *T, void *ftl, ssd_req_fn fn, ssd_pf_fn pf, int64_t n,
                                 const uint8_t *ops, const int64_t *offs, const int64_t *lens,
                                 int64_t qd, double *out);

/* ---- the binary min-heap on key_ns (write buffer, issue loop) ----
   Results depend on which of two equal-keyed write-buffer entries leaves first, so the sift
   rules below are part of the model: change them only with the golden test. */

static inline int ssd_heap_reserve(ssd_heap *H, int64_t cap)
{
    if (H->cap >= cap)
        return 0;
    ssd_heap_ent *a = (ssd_heap_ent *)realloc(H->a, (size_t)cap * sizeof(ssd_heap_ent));
    if (!a)
        return -1;
    H->a = a;
    H->cap = cap;
    return 0;
}

static inline void ssd_heap_free(ssd_heap *H)
{
    free(H->a);
    H->a = NULL;
    H->n = H->cap = 0;
}

/* Put x at hole i and move it down to its place among n entries. */
static inline void ssd_heap_sift_down(ssd_heap_ent *h, int64_t n, int64_t i, ssd_heap_ent x)
{
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && h[c + 1].key_ns < h[c].key_ns)
            c++;
        if (h[c].key_ns >= x.key_ns)
            break;
        h[i] = h[c];
        i = c;
    }
    h[i] = x;
}

/* Push; the caller made room (heap_reserve). */
static inline void ssd_heap_push(ssd_heap *H, ssd_heap_ent x)
{
    ssd_heap_ent *h = H->a;
    int64_t i = H->n++;
    while (i > 0) {
        int64_t p = (i - 1) / 2;
        if (h[p].key_ns <= x.key_ns)
            break;
        h[i] = h[p];
        i = p;
    }
    h[i] = x;
}

static inline void ssd_heap_pop(ssd_heap *H)
{
    int64_t n = --H->n;
    if (n > 0)
        ssd_heap_sift_down(H->a, n, 0, H->a[n]);
}

/* Pop the minimum and push x in one sift (the issue loop's steady state). */
static inline void ssd_heap_replace_top(ssd_heap *H, ssd_heap_ent x)
{
    ssd_heap_sift_down(H->a, H->n, 0, x);
}

static inline void ssd_heap_rebuild(ssd_heap *H)
{
    for (int64_t i = H->n / 2 - 1; i >= 0; i--)
        ssd_heap_sift_down(H->a, H->n, i, H->a[i]);
}

/* ---- queue-depth issue loop ----
   Always inline, so that an FTL calling it with its own request and prefetch functions gets
   them inlined, also where it calls it twice (conv_ftl.c: with and without FDP handles);
   ssd_submit_loop is the same loop out of line. */

/* Issue requests in order with at most qd outstanding: the first qd at T->now, each later one
   when the earliest outstanding request completes.  out[i] = completion (seconds).
   T->now advances to the last completion. Returns 0, or -(i+1) if request i failed. */
#define PF_FAR 16
#define PF_NEAR 6

static inline __attribute__((always_inline)) int
ssd_submit_loop_inline(ssd_timing *T, void *ftl, ssd_req_fn fn, ssd_pf_fn pf, int64_t n,
                       const uint8_t *ops, const int64_t *offs, const int64_t *lens, int64_t qd,
                       double *out)
{
    if (qd < 1)
        qd = 1;
    if (qd > n)
        qd = n > 0 ? n : 1;
    if (ssd_heap_reserve(&T->queue, qd) < 0)
        return -1;
    ssd_heap *Q = &T->queue;
    Q->n = 0;
    int64_t start = T->now, last = T->now;
    T->floor_ns = start;
    for (int64_t i = 0; i < n; i++) {
        if (pf) {
            if (i + PF_FAR < n)
                pf(ftl, 0, ops[i + PF_FAR], offs[i + PF_FAR]);
            if (i + PF_NEAR < n)
                pf(ftl, 1, ops[i + PF_NEAR], offs[i + PF_NEAR]);
        }
        int full = Q->n >= qd;
        int64_t t = full ? Q->a[0].key_ns : start;
        T->floor_ns = t;
        int64_t c = fn(ftl, ops[i], offs[i], lens[i], t);
        if (c < 0) {
            T->now = last;
            return (int)(-(i + 1) > -2147483647 ? -(i + 1) : -2147483647);
        }
        if (c < t)
            c = t;
        out[i] = (double)c * 1e-9;
        if (c > last)
            last = c;
        ssd_heap_ent e = {c, 0, 0};
        if (full)
            ssd_heap_replace_top(Q, e); /* the request issued at t took the earliest one's slot */
        else
            ssd_heap_push(Q, e);
    }
    T->now = last;
    return 0;
}

/* cffi:begin */
/* ---- serial groups of requests (ssd_groups.c) ----
   group g's group_n[g] requests are one queue of depth group_qd[g]; group g+1 is issued when
   group g's last request completes (one conv_submit_h / zns_submit / ocssd_submit per group; a
   plain queue is one group).  handles: FDP reclaim unit handles, one per request (NULL: handle 0);
   the zoned and Open-Channel models take the argument so that every model's grouped submit has
   one signature, and ignore it (placement is the zone or the address).  out[i] as for the submit
   functions; returns 0, or -(i+1) if request i (of the whole array) failed. */
int conv_submit_groups_h(conv_ftl *F, int64_t ngroups, const int64_t *group_n, const int64_t *group_qd,
                         const uint8_t *ops, const int64_t *offs, const int64_t *lens,
                         const uint16_t *handles, double *out);
int zns_submit_groups(zns_ftl *Z, int64_t ngroups, const int64_t *group_n, const int64_t *group_qd,
                      const uint8_t *ops, const int64_t *offs, const int64_t *lens, const uint16_t *handles,
                      double *out);
int ocssd_submit_groups(ocssd *O, int64_t ngroups, const int64_t *group_n, const int64_t *group_qd,
                        const uint8_t *ops, const int64_t *offs, const int64_t *lens, const uint16_t *handles,
                        double *out);
/* cffi:end */

#endif
