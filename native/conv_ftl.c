/*
 * conv_ftl.c - page-mapped conventional FTL on the shared timing model.
 *
 * Mapping unit 4 KiB (LPN -> PPN, uint32 both ways).  Physical layout: die-major,
 *   ppn = (die * blocks_per_die + block) * units_per_block + unit_in_block,
 * die d sits on channel d % channels.
 *
 * Host writes: data accepted into the write buffer is placed into the open host block of the
 * current die; when a program unit (one-shot: oneshot_pages flash pages) fills, it is programmed
 * on that die and the stripe pointer moves to the next die, so large writes and queued writes
 * spread over all dies and channels.
 *
 * GC: per die, greedy.  Sealed (full) blocks sit in bucket lists indexed by valid-unit count
 * (doubly linked, one set of buckets per die, a min pointer per die), so the victim with the
 * fewest valid units is found in O(1) amortized.  When a die must open a new host block and its
 * free-block count is at or below gc_low, GC cleans victims on that die until it has gc_high
 * free blocks: each flash page holding valid units is read (t_read + channel), the units are
 * re-placed in a GC block (programs of full units: channel + t_prog), then the victim is
 * erased (t_erase).  All of that is die/channel time the host's programs queue behind.
 * Where the units go (ssd_params.gc_striped): by default into the victim die's own GC block, so
 * a victim's programs run one after another on its die; striped, program unit by program unit
 * over all dies in turn (each die keeps its own GC block), as a drive's superblock GC and
 * NVMeVirt's line GC spread relocation over the dies.  The victim's reads and its erase stay on
 * its die either way.
 *
 * FDP (NVMe Flexible Data Placement, conv_new_fdp): every write names a reclaim unit handle
 * (RUH, conv_submit_h).  A reclaim unit (RU) is one erase block.  Each handle has its own open
 * host block on every die and its own stripe pointer, so data written with different handles
 * never shares an erase block; a block is tagged with the handle it was opened for (blk_ruh).
 * GC stays greedy per die over all blocks; where a victim's valid units go depends on the
 * isolation mode: persistently isolated handles relocate into a GC block of the victim's own
 * handle (one GC frontier per handle per die), initially isolated ones into the die's single
 * shared GC block, tagged MIXED (= n_ruh).  Per-handle counters (host, media, GC bytes; index
 * n_ruh = MIXED) refine the device-wide ones, which are unchanged.  conv_new is one handle,
 * persistent: exactly the FTL without FDP.
 *
 * Idle-time GC (optional, conv_set_idle_gc): when the host is idle (conv_idle, the model's
 * advance()), each die cleans greedy victims, one per die per round, while it has fewer than
 * gc_bg free blocks and the die can start the next victim before the idle window ends (work
 * started in the window may finish after it).  Same victim rule and costs as foreground GC;
 * counted in gc_write_bytes/gc_runs and also in gc_bg_write_bytes/gc_bg_runs.
 */
#include "ssd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { B_FREE = 0, B_OPEN = 1, B_SEALED = 2, B_VICTIM = 3 };
enum { RUH_HOST = 0, RUH_MEDIA = 1, RUH_GC = 2, RUH_NCNT = 3 }; /* per-handle counters */
#define CONV_MAX_RUH 256        /* MIXED = n_ruh must fit blk_ruh's uint16 */

struct conv_ftl {
    ssd_timing T;
    int n_dies;
    int32_t units_per_page;     /* 4 KiB units per flash page */
    int32_t units_per_prog;     /* 4 KiB units per program unit (oneshot_pages pages) */
    int32_t units_per_block;    /* 4 KiB units per erase block */
    int32_t pages_per_block;    /* flash pages per erase block */
    int32_t blocks_per_die;     /* erase blocks per die */
    ssd_div by_units_per_block, by_units_per_prog, by_units_per_page, by_blocks_per_die;
    int64_t n_blocks, n_ppn, n_lpn; /* erase blocks, physical units, logical units */
    uint32_t *l2p, *p2l;        /* logical unit -> physical unit and back (SSD_NONE: unmapped) */
    uint32_t *valid_cnt;        /* per block: valid units */
    int32_t *blk_next, *blk_prev; /* per block: bucket or free list links */
    uint8_t *blk_state;         /* per block: B_FREE / B_OPEN / B_SEALED / B_VICTIM */
    int32_t *bucket_head;       /* n_dies * (units_per_block + 1): sealed blocks by valid count */
    int32_t *min_valid;         /* per die: no sealed block has fewer valid units */
    int32_t *free_head, *free_cnt; /* per die: free block list, its length in blocks */
    int32_t n_ruh;              /* reclaim unit handles (1 without FDP) */
    int32_t persistent;         /* 1: GC keeps each handle's data apart (a GC frontier per handle) */
    int32_t n_gcf;              /* GC frontier sets: n_ruh if persistent, else 1 (shared, MIXED) */
    uint16_t *blk_ruh;          /* per block: handle it was opened for, or n_ruh (MIXED GC block) */
    int32_t *host_blk, *host_wp_units; /* [h * n_dies + d]: open host block, units written into it */
    int32_t *gc_blk, *gc_wp_units;     /* [g * n_dies + d]: open GC block, units written into it */
    int64_t *gc_ready_ns;       /* [g * n_dies + d]: latest read feeding the GC unit being filled */
    int cur_die;                /* die of handle cur_h's host program unit being filled */
    int32_t cur_h;              /* handle the cur_* fields serve (the last one written) */
    int32_t *cur_blk, *cur_wp_units; /* its rows of host_blk, host_wp_units */
    int64_t *cur_cnt;           /* its row of ruh_cnt */
    int32_t *ruh_die;           /* per handle: its cur_die while another handle is cur_h */
    int64_t *ruh_cnt;           /* [h * 3 + k], h = 0..n_ruh: host, media, GC-out bytes (RUH_*) */
    const uint16_t *handles;    /* conv_submit_h: the handle of each request (NULL: all 0) */
    int64_t req_i;              /* conv_submit_h: index of the next request into handles */
    int32_t gc_low_blocks;      /* per die: foreground GC starts at or below this many free blocks */
    int32_t gc_high_blocks;     /* per die: foreground GC stops at this many */
    int32_t gc_bg_blocks;       /* per die: idle-time GC target (0 = no idle-time GC) */
    int32_t gc_striped;         /* 1: GC units go to the dies in turn (gc_die), not the victim's */
    int32_t *gc_die;            /* per GC frontier set (striped): die of the next GC program unit */
    int64_t valid_units;        /* mapped logical units */
    uint32_t *page_lpns;        /* GC scratch: the valid units of one victim page */
    int64_t *erases;            /* per block: erases since the model was built (wear); last, off the hot lines */
};

/* ---------- bucket lists ---------- */

static inline void bucket_insert(conv_ftl *F, int32_t b)
{
    int d = (int)ssd_quot(F->by_blocks_per_die, (uint32_t)b);
    int32_t v = (int32_t)F->valid_cnt[b];
    int64_t idx = (int64_t)d * (F->units_per_block + 1) + v;
    int32_t h = F->bucket_head[idx];
    F->blk_prev[b] = -1;
    F->blk_next[b] = h;
    if (h >= 0)
        F->blk_prev[h] = b;
    F->bucket_head[idx] = b;
    if (v < F->min_valid[d])
        F->min_valid[d] = v;
}

static inline void bucket_remove(conv_ftl *F, int32_t b)
{
    int d = (int)ssd_quot(F->by_blocks_per_die, (uint32_t)b);
    int64_t idx = (int64_t)d * (F->units_per_block + 1) + F->valid_cnt[b];
    int32_t p = F->blk_prev[b], n = F->blk_next[b];
    if (p >= 0)
        F->blk_next[p] = n;
    else
        F->bucket_head[idx] = n;
    if (n >= 0)
        F->blk_prev[n] = p;
    F->blk_next[b] = F->blk_prev[b] = -1;
}

static int32_t bucket_pop_min(conv_ftl *F, int d)
{
    int32_t *heads = F->bucket_head + (int64_t)d * (F->units_per_block + 1);
    int32_t v = F->min_valid[d];
    while (v <= F->units_per_block && heads[v] < 0)
        v++;
    F->min_valid[d] = v;
    if (v > F->units_per_block)
        return -1;
    int32_t b = heads[v];
    bucket_remove(F, b);
    return b;
}

/* ---------- blocks ---------- */

/* Open a free block of die d as a frontier of handle `tag` (n_ruh: the shared GC frontier). */
static inline int32_t alloc_block(conv_ftl *F, int d, int32_t tag)
{
    if (F->free_cnt[d] == 0)
        return -1;
    int32_t b = F->free_head[d];
    F->free_head[d] = F->blk_next[b];
    F->free_cnt[d]--;
    F->blk_next[b] = F->blk_prev[b] = -1;
    F->blk_state[b] = B_OPEN;
    F->blk_ruh[b] = (uint16_t)tag;
    return b;
}

static inline void release_block(conv_ftl *F, int32_t b)
{
    int d = (int)ssd_quot(F->by_blocks_per_die, (uint32_t)b);
    F->valid_cnt[b] = 0;
    F->blk_state[b] = B_FREE;
    F->blk_prev[b] = -1;
    F->blk_next[b] = F->free_head[d];
    F->free_head[d] = b;
    F->free_cnt[d]++;
}

static inline void seal_block(conv_ftl *F, int32_t b)
{
    F->blk_state[b] = B_SEALED;
    bucket_insert(F, b);
}

/* Always inline (as host_place, conv_req_h): the request path is compiled twice, with and without
   handles, and must stay one function each, as it was with one copy. */
#define CONV_HOT static inline __attribute__((always_inline))

CONV_HOT void invalidate(conv_ftl *F, uint32_t ppn)
{
    int32_t b = (int32_t)ssd_quot(F->by_units_per_block, ppn);
    F->p2l[ppn] = SSD_NONE;
    if (F->blk_state[b] == B_SEALED) {
        bucket_remove(F, b);
        F->valid_cnt[b]--;
        bucket_insert(F, b);
    } else {
        F->valid_cnt[b]--;
    }
    F->valid_units--;
}

/* GC frontier set (gc_blk[] row) that the valid units of a block tagged `tag` go to. */
static inline int32_t gc_set(const conv_ftl *F, int32_t tag)
{
    return F->persistent ? tag : 0;
}

/* GC frontier (index into gc_blk[]) of set gs on die d. */
static inline int32_t gc_frontier(const conv_ftl *F, int32_t tag, int d)
{
    return gc_set(F, tag) * F->n_dies + d;
}

/* Units past the last programmed unit of an open block are still in the DRAM buffer.  A frontier
   block carries its frontier's tag (conv_check), so the tag names the only frontiers that can
   hold b: no loop over the handles. */
static inline int in_buffer(const conv_ftl *F, uint32_t ppn)
{
    int32_t b = (int32_t)ssd_quot(F->by_units_per_block, ppn);
    int d = (int)ssd_quot(F->by_blocks_per_die, (uint32_t)b);
    int32_t off = (int32_t)(ppn - (uint32_t)b * (uint32_t)F->units_per_block);
    int32_t tag = F->blk_ruh[b];
    if (tag < F->n_ruh) {
        int32_t hf = tag * F->n_dies + d;
        if (b == F->host_blk[hf])
            return off >= (F->host_wp_units[hf] / F->units_per_prog) * F->units_per_prog;
    }
    int32_t gf = gc_frontier(F, tag, d);
    if (b == F->gc_blk[gf])
        return off >= (F->gc_wp_units[gf] / F->units_per_prog) * F->units_per_prog;
    return 0;
}

/* ---------- GC ---------- */

/* Map the n units lpns[] to the next units of open block b, whose write pointer is *wp_units (the
   caller keeps them inside one program unit).  Returns 1 when they fill the program unit: the
   caller programs it. */
static inline int place_units(conv_ftl *F, int32_t b, int32_t *wp_units, const uint32_t *lpns,
                              int32_t n)
{
    uint32_t ppn = (uint32_t)((int64_t)b * F->units_per_block + *wp_units);
    for (int32_t k = 0; k < n; k++) {
        F->l2p[lpns[k]] = ppn + (uint32_t)k;
        F->p2l[ppn + (uint32_t)k] = lpns[k];
    }
    F->valid_cnt[b] += (uint32_t)n;
    F->valid_units += n;
    F->T.cnt.media_write_bytes += (int64_t)n * SSD_UNIT;
    *wp_units += n;
    return ssd_rem(F->by_units_per_prog, (uint32_t)*wp_units) == 0;
}

/* Units the GC blocks of set gs can still take on die e: the open block's rest and free blocks. */
static inline int64_t gc_room_on(const conv_ftl *F, int32_t gs, int e)
{
    int32_t gf = gs * F->n_dies + e;
    int64_t open = F->gc_blk[gf] >= 0 ? F->units_per_block - F->gc_wp_units[gf] : 0;
    return open + (int64_t)F->free_cnt[e] * F->units_per_block;
}

/* Die of the next GC units of set gs for a victim on die d, relocated from time t: d itself, or
   (striped) the set's current die while it holds a partly filled program unit (a unit never
   straddles dies), else the die with room that can start a program first, ties in turn after the
   current one.  -1: no room anywhere (the caller checked there is). */
static inline int gc_target(conv_ftl *F, int32_t gs, int d, int64_t t)
{
    if (!F->gc_striped)
        return d;
    int e = F->gc_die[gs];
    int32_t gf = gs * F->n_dies + e;
    if (F->gc_blk[gf] >= 0 && ssd_rem(F->by_units_per_prog, (uint32_t)F->gc_wp_units[gf]) != 0)
        return e;
    int best = -1;
    int64_t bs = 0;
    for (int k = 1; k <= F->n_dies; k++) {
        int c = (e + k) % F->n_dies;
        int64_t s = F->T.die_free_ns[c] > t ? F->T.die_free_ns[c] : t;
        if (gc_room_on(F, gs, c) > 0 && (best < 0 || s < bs)) {
            best = c;
            bs = s;
        }
    }
    if (best >= 0)
        F->gc_die[gs] = best;
    return best;
}

/* Re-place the n valid units lpns[] of one victim page of die d in GC frontier set gs, whose
   blocks are tagged `tag`; the victim's GC started at t, the page's read ends at `ready`.  On the
   victim's die a program waits for its data.  Striped, it starts when its die is free (from t):
   a busy-until die waiting for a read on another die would lose the gap to the host work a real
   die does in it (NVMeVirt's GC times its reads and programs from "now" the same way). */
static void gc_place(conv_ftl *F, int d, int32_t gs, int32_t tag, const uint32_t *lpns, int32_t n,
                     int64_t t, int64_t ready)
{
    F->T.cnt.gc_write_bytes += (int64_t)n * SSD_UNIT;
    if (F->gc_striped)
        ready = t;
    while (n > 0) { /* in runs up to the next program-unit boundary (blocks end on one) */
        int e = gc_target(F, gs, d, t);
        int32_t gf = gs * F->n_dies + e;
        if (F->gc_blk[gf] < 0 || F->gc_wp_units[gf] == F->units_per_block) {
            if (F->gc_blk[gf] >= 0)
                seal_block(F, F->gc_blk[gf]);
            F->gc_blk[gf] = alloc_block(F, e, tag); /* caller guaranteed a free block */
            F->gc_wp_units[gf] = 0;
        }
        if (ready > F->gc_ready_ns[gf])
            F->gc_ready_ns[gf] = ready;
        int32_t left = F->units_per_prog -
                       (int32_t)ssd_rem(F->by_units_per_prog, (uint32_t)F->gc_wp_units[gf]);
        int32_t m = n < left ? n : left;
        if (place_units(F, F->gc_blk[gf], &F->gc_wp_units[gf], lpns, m)) {
            ssd_nand_prog(&F->T, e, F->gc_ready_ns[gf], (int64_t)F->units_per_prog * SSD_UNIT);
            F->gc_ready_ns[gf] = 0;
        }
        lpns += m;
        n -= m;
    }
}

/* Whether set gs has room for n units of a victim on die d (without the victim's own block). */
static int gc_has_room(const conv_ftl *F, int32_t gs, int d, int64_t n)
{
    if (!F->gc_striped) {
        int32_t gf = gs * F->n_dies + d;
        int32_t room = (F->gc_blk[gf] >= 0) ? F->units_per_block - F->gc_wp_units[gf] : 0;
        return n <= room || F->free_cnt[d] > 0;
    }
    int64_t room = 0;
    for (int e = 0; e < F->n_dies && room < n; e++)
        room += gc_room_on(F, gs, e);
    return n <= room;
}

/* Clean the greedy victim of die d, its work issued at t.  Returns 0 if there is none worth
   cleaning (nothing to gain, or its valid units have nowhere to go). */
static int gc_victim(conv_ftl *F, int d, int64_t t)
{
    int32_t b = bucket_pop_min(F, d);
    if (b < 0)
        return 0;
    int32_t vtag = F->blk_ruh[b];
    int32_t gs = gc_set(F, vtag);             /* where its valid units go */
    int32_t gtag = F->persistent ? vtag : F->n_ruh;
    if ((int32_t)F->valid_cnt[b] >= F->units_per_block || !gc_has_room(F, gs, d, F->valid_cnt[b])) {
        bucket_insert(F, b); /* nothing to gain / nowhere to put it */
        return 0;
    }
    F->blk_state[b] = B_VICTIM;
    F->T.cnt.gc_runs++;
    int64_t moved = (int64_t)F->valid_cnt[b] * SSD_UNIT; /* all of it, into frontier gf */
    F->ruh_cnt[vtag * RUH_NCNT + RUH_GC] += moved;
    F->ruh_cnt[gtag * RUH_NCNT + RUH_MEDIA] += moved;
    int64_t base = (int64_t)b * F->units_per_block;
    for (int32_t pg = 0; pg < F->pages_per_block && F->valid_cnt[b] > 0; pg++) {
        int64_t pb = base + (int64_t)pg * F->units_per_page;
        if (pg + 2 < F->pages_per_block) { /* the relocation rewrites l2p[lpn]: random, fetch ahead */
            const uint32_t *nx = F->p2l + pb + 2 * F->units_per_page;
            for (int32_t k = 0; k < F->units_per_page; k++)
                if (nx[k] != SSD_NONE)
                    __builtin_prefetch(&F->l2p[nx[k]], 1, 1);
        }
        uint32_t *pg_p2l = F->p2l + pb, *lpns = F->page_lpns;
        int32_t c = 0;
        for (int32_t k = 0; k < F->units_per_page; k++) { /* take the page's valid units */
            lpns[c] = pg_p2l[k];
            c += (pg_p2l[k] != SSD_NONE);
            pg_p2l[k] = SSD_NONE;
        }
        if (!c)
            continue;
        F->valid_cnt[b] -= (uint32_t)c;
        F->valid_units -= c;
        int64_t ready = ssd_nand_read(&F->T, d, t, (int64_t)c * SSD_UNIT);
        gc_place(F, d, gs, gtag, lpns, c, t, ready);
    }
    ssd_nand_erase(&F->T, d, t);
    F->erases[b]++;
    release_block(F, b);
    return 1;
}

static void gc_die(conv_ftl *F, int d, int64_t t)
{
    int32_t guard = F->blocks_per_die;
    while (F->free_cnt[d] < F->gc_high_blocks && guard-- > 0)
        if (!gc_victim(F, d, t))
            break;
}

/* ---------- host path ---------- */

/* Dynamic die allocation: the next program unit goes to the die that frees up first (ties
   broken round-robin after d), so a die busy with GC does not stall the whole stripe. */
static int next_die(const conv_ftl *F, int d)
{
    int n = F->n_dies;
    int best = d + 1 < n ? d + 1 : 0;
    int64_t bt = F->T.die_free_ns[best];
    for (int k = 2, c = best; k <= n; k++) {
        c = c + 1 < n ? c + 1 : 0; /* (d + k) % n */
        if (F->T.die_free_ns[c] < bt) {
            bt = F->T.die_free_ns[c];
            best = c;
        }
    }
    return best;
}

/* Make h the handle the host path writes with.  The hot path then reads its frontiers through
   the cur_* fields as it would a single writer's: no per-unit indexing by handle. */
static void select_ruh(conv_ftl *F, int32_t h)
{
    F->ruh_die[F->cur_h] = F->cur_die;
    F->cur_h = h;
    F->cur_die = F->ruh_die[h];
    F->cur_blk = F->host_blk + (int64_t)h * F->n_dies;
    F->cur_wp_units = F->host_wp_units + (int64_t)h * F->n_dies;
    F->cur_cnt = F->ruh_cnt + (int64_t)h * RUH_NCNT;
}

/* Place one unit in the open block of handle cur_h on its current die. */
CONV_HOT int host_place(conv_ftl *F, uint32_t lpn, int64_t t)
{
    int d = F->cur_die;
    for (int tries = 0;; tries++) {
        if (F->cur_blk[d] >= 0 && F->cur_wp_units[d] < F->units_per_block)
            break;
        if (F->cur_blk[d] >= 0) {
            seal_block(F, F->cur_blk[d]);
            F->cur_blk[d] = -1;
        }
        if (F->free_cnt[d] <= F->gc_low_blocks)
            gc_die(F, d, t);
        int32_t b = alloc_block(F, d, F->cur_h);
        if (b >= 0) {
            F->cur_blk[d] = b;
            F->cur_wp_units[d] = 0;
            break;
        }
        if (tries >= F->n_dies)
            return -1; /* every die full of valid data */
        d = (d + 1) % F->n_dies;
        F->cur_die = d;
    }
    if (place_units(F, F->cur_blk[d], &F->cur_wp_units[d], &lpn, 1)) {
        int64_t done = ssd_nand_prog(&F->T, d, t, (int64_t)F->units_per_prog * SSD_UNIT);
        ssd_wb_program(&F->T, d, done, F->units_per_prog);
        F->cur_die = next_die(F, d);
    }
    return 0;
}

/* One request written with handle h (ignored by reads and trims).  Inlined into two request
   functions, so the submit without handles pays nothing for them. */
CONV_HOT int64_t conv_req_h(conv_ftl *F, int32_t h, int op, int64_t off, int64_t len, int64_t t_issue)
{
    ssd_timing *T = &F->T;
    if (off < 0 || len < 0 || (off % SSD_UNIT) || (len % SSD_UNIT) ||
        off + len > F->n_lpn * SSD_UNIT)
        return -1;
    int64_t lpn0 = off / SSD_UNIT, n = len / SSD_UNIT;
    int64_t t = t_issue + T->t_cmd_ns;
    if (op == SSD_OP_WRITE) {
        if (h != F->cur_h) {
            if (h >= F->n_ruh)
                return -1;
            select_ruh(F, h);
        }
        int64_t c = ssd_ctrl(T, op, t), w = ssd_write_path(T, t_issue, len);
        t = ssd_wb_reserve(T, t, n);
        int64_t done = ssd_link_in(T, t, len);
        if (c > done)
            done = c;
        if (w > done)
            done = w;
        for (int64_t i = 0; i < n; i++) {
            uint32_t lpn = (uint32_t)(lpn0 + i);
            if (F->l2p[lpn] != SSD_NONE)
                invalidate(F, F->l2p[lpn]);
            if (host_place(F, lpn, done) < 0) {
                F->l2p[lpn] = SSD_NONE;
                F->cur_cnt[RUH_MEDIA] += i * SSD_UNIT; /* the units placed before it */
                return -2;
            }
        }
        T->cnt.host_write_bytes += len;
        F->cur_cnt[RUH_HOST] += len;
        F->cur_cnt[RUH_MEDIA] += len; /* host units go to blocks tagged h */
        return done;
    }
    if (op == SSD_OP_TRIM) {
        for (int64_t i = 0; i < n; i++) {
            uint32_t lpn = (uint32_t)(lpn0 + i);
            if (F->l2p[lpn] != SSD_NONE) {
                invalidate(F, F->l2p[lpn]);
                F->l2p[lpn] = SSD_NONE;
            }
        }
        T->cnt.host_trim_bytes += len;
        return t;
    }
    if (op != SSD_OP_READ)
        return -1;
    t = ssd_ctrl(T, op, t + T->t_read_cmd_ns);
    int64_t end = t;
    int64_t i = 0;
    while (i < n) {
        uint32_t ppn = F->l2p[lpn0 + i];
        int64_t j = i + 1, ready;
        if (ppn == SSD_NONE || in_buffer(F, ppn)) {
            /* unmapped (zeroes) or still in the DRAM buffer: no flash access */
            int64_t bufd = (ppn != SSD_NONE);
            while (j < n) {
                uint32_t q = F->l2p[lpn0 + j];
                if (!(q == SSD_NONE || in_buffer(F, q)))
                    break;
                bufd += (q != SSD_NONE);
                j++;
            }
            T->cnt.buffer_read_bytes += bufd * SSD_UNIT;
            ready = t;
        } else {
            uint32_t fp = ssd_quot(F->by_units_per_page, ppn);
            while (j < n) {
                uint32_t q = F->l2p[lpn0 + j];
                if (q == SSD_NONE || ssd_quot(F->by_units_per_page, q) != fp || in_buffer(F, q))
                    break;
                j++;
            }
            int die = (int)ssd_quot(F->by_blocks_per_die, ssd_quot(F->by_units_per_block, ppn));
            ready = ssd_host_read(T, die, t, (j - i) * SSD_UNIT);
        }
        int64_t le = ssd_link_out(T, ready, (j - i) * SSD_UNIT);
        if (le > end)
            end = le;
        i = j;
    }
    T->cnt.host_read_bytes += len;
    return end;
}

static int64_t conv_req(void *ftl, int op, int64_t off, int64_t len, int64_t t_issue)
{
    return conv_req_h((conv_ftl *)ftl, 0, op, off, len, t_issue);
}

/* The issue loop calls the request function once per request, in order: req_i follows it. */
static int64_t conv_req_handles(void *ftl, int op, int64_t off, int64_t len, int64_t t_issue)
{
    conv_ftl *F = (conv_ftl *)ftl;
    return conv_req_h(F, F->handles[F->req_i++], op, off, len, t_issue);
}

/* ---------- API ---------- */

conv_ftl *conv_new(const ssd_params *p, int64_t logical_units, int32_t blocks_per_die,
                   int32_t gc_low, int32_t gc_high)
{
    return conv_new_fdp(p, logical_units, blocks_per_die, gc_low, gc_high, 1, 1);
}

/* n_ruh reclaim unit handles (1..CONV_MAX_RUH); persistent: GC keeps the handles apart. */
conv_ftl *conv_new_fdp(const ssd_params *p, int64_t logical_units, int32_t blocks_per_die,
                       int32_t gc_low, int32_t gc_high, int32_t n_ruh, int32_t persistent)
{
    if (p->page_size % SSD_UNIT || p->oneshot_pages < 1 || p->pages_per_block % p->oneshot_pages)
        return NULL;
    if (n_ruh < 1 || n_ruh > CONV_MAX_RUH)
        return NULL;
    conv_ftl *F = (conv_ftl *)calloc(1, sizeof(conv_ftl));
    if (!F)
        return NULL;
    if (ssd_timing_init(&F->T, p) < 0) {
        free(F);
        return NULL;
    }
    F->n_dies = F->T.n_dies;
    F->n_ruh = n_ruh;
    F->persistent = persistent ? 1 : 0;
    F->n_gcf = F->persistent ? n_ruh : 1;
    F->gc_striped = p->gc_striped ? 1 : 0;
    F->units_per_page = p->page_size / SSD_UNIT;
    F->units_per_prog = F->units_per_page * p->oneshot_pages;
    F->pages_per_block = p->pages_per_block;
    F->units_per_block = F->units_per_page * F->pages_per_block;
    F->blocks_per_die = blocks_per_die;
    if (F->units_per_block < 1 || F->blocks_per_die < 1) {
        conv_free(F);
        return NULL;
    }
    F->by_units_per_block = ssd_div_of((uint32_t)F->units_per_block);
    F->by_units_per_prog = ssd_div_of((uint32_t)F->units_per_prog);
    F->by_units_per_page = ssd_div_of((uint32_t)F->units_per_page);
    F->by_blocks_per_die = ssd_div_of((uint32_t)F->blocks_per_die);
    F->n_blocks = (int64_t)F->n_dies * F->blocks_per_die;
    F->n_ppn = F->n_blocks * F->units_per_block;
    F->n_lpn = logical_units;
    F->gc_low_blocks = gc_low < 2 ? 2 : gc_low;
    F->gc_high_blocks = gc_high <= F->gc_low_blocks ? F->gc_low_blocks + 1 : gc_high;
    if (F->n_ppn >= (int64_t)SSD_NONE || F->n_lpn >= (int64_t)SSD_NONE || F->n_lpn > F->n_ppn) {
        conv_free(F);
        return NULL;
    }
    F->l2p = (uint32_t *)malloc((size_t)F->n_lpn * sizeof(uint32_t));
    F->p2l = (uint32_t *)malloc((size_t)F->n_ppn * sizeof(uint32_t));
    F->valid_cnt = (uint32_t *)calloc((size_t)F->n_blocks, sizeof(uint32_t));
    F->blk_next = (int32_t *)malloc((size_t)F->n_blocks * sizeof(int32_t));
    F->blk_prev = (int32_t *)malloc((size_t)F->n_blocks * sizeof(int32_t));
    F->blk_state = (uint8_t *)calloc((size_t)F->n_blocks, 1);
    F->bucket_head = (int32_t *)malloc((size_t)F->n_dies * (F->units_per_block + 1) * sizeof(int32_t));
    F->min_valid = (int32_t *)malloc((size_t)F->n_dies * sizeof(int32_t));
    F->free_head = (int32_t *)malloc((size_t)F->n_dies * sizeof(int32_t));
    F->free_cnt = (int32_t *)calloc((size_t)F->n_dies, sizeof(int32_t));
    size_t nhf = (size_t)F->n_ruh * F->n_dies, ngf = (size_t)F->n_gcf * F->n_dies;
    F->blk_ruh = (uint16_t *)calloc((size_t)F->n_blocks, sizeof(uint16_t));
    F->host_blk = (int32_t *)malloc(nhf * sizeof(int32_t));
    F->host_wp_units = (int32_t *)calloc(nhf, sizeof(int32_t));
    F->gc_blk = (int32_t *)malloc(ngf * sizeof(int32_t));
    F->gc_wp_units = (int32_t *)calloc(ngf, sizeof(int32_t));
    F->gc_ready_ns = (int64_t *)calloc(ngf, sizeof(int64_t));
    F->gc_die = (int32_t *)calloc((size_t)F->n_gcf, sizeof(int32_t));
    F->ruh_die = (int32_t *)calloc((size_t)F->n_ruh, sizeof(int32_t));
    F->ruh_cnt = (int64_t *)calloc((size_t)(F->n_ruh + 1) * RUH_NCNT, sizeof(int64_t));
    F->page_lpns = (uint32_t *)malloc((size_t)F->units_per_page * sizeof(uint32_t));
    F->erases = (int64_t *)calloc((size_t)F->n_blocks, sizeof(int64_t));
    if (!F->l2p || !F->p2l || !F->valid_cnt || !F->blk_next || !F->blk_prev || !F->blk_state || !F->bucket_head ||
        !F->min_valid || !F->free_head || !F->free_cnt || !F->blk_ruh || !F->host_blk || !F->host_wp_units ||
        !F->gc_blk || !F->gc_wp_units || !F->gc_ready_ns || !F->gc_die || !F->ruh_die || !F->ruh_cnt || !F->page_lpns ||
        !F->erases) {
        conv_free(F);
        return NULL;
    }
    memset(F->l2p, 0xFF, (size_t)F->n_lpn * sizeof(uint32_t));
    memset(F->p2l, 0xFF, (size_t)F->n_ppn * sizeof(uint32_t));
    for (int64_t i = 0; i < (int64_t)F->n_dies * (F->units_per_block + 1); i++)
        F->bucket_head[i] = -1;
    for (size_t i = 0; i < nhf; i++)
        F->host_blk[i] = -1;
    F->cur_h = 0;
    F->cur_blk = F->host_blk;
    F->cur_wp_units = F->host_wp_units;
    F->cur_cnt = F->ruh_cnt;
    for (size_t i = 0; i < ngf; i++)
        F->gc_blk[i] = -1;
    for (int d = 0; d < F->n_dies; d++) {
        F->min_valid[d] = F->units_per_block + 1;
        F->free_head[d] = -1;
        for (int32_t k = F->blocks_per_die - 1; k >= 0; k--) {
            int32_t b = d * F->blocks_per_die + k;
            F->blk_next[b] = F->free_head[d];
            F->blk_prev[b] = -1;
            F->free_head[d] = b;
            F->free_cnt[d]++;
        }
    }
    return F;
}

void conv_free(conv_ftl *F)
{
    if (!F)
        return;
    ssd_timing_free(&F->T);
    free(F->l2p);
    free(F->p2l);
    free(F->valid_cnt);
    free(F->blk_next);
    free(F->blk_prev);
    free(F->blk_state);
    free(F->bucket_head);
    free(F->min_valid);
    free(F->free_head);
    free(F->free_cnt);
    free(F->blk_ruh);
    free(F->host_blk);
    free(F->host_wp_units);
    free(F->gc_blk);
    free(F->gc_wp_units);
    free(F->gc_ready_ns);
    free(F->gc_die);
    free(F->ruh_die);
    free(F->ruh_cnt);
    free(F->page_lpns);
    free(F->erases);
    free(F);
}

/* Random overwrites miss the cache on l2p[lpn] and on p2l[old ppn]; fetch both ahead. */
static void conv_prefetch(void *ftl, int stage, int op, int64_t off)
{
    const conv_ftl *F = (const conv_ftl *)ftl;
    int64_t lpn = off / SSD_UNIT;
    if (off < 0 || lpn >= F->n_lpn)
        return;
    if (stage == 0) {
        __builtin_prefetch(&F->l2p[lpn], 1, 1);
    } else if (op != SSD_OP_READ) {
        uint32_t p = F->l2p[lpn];
        if (p != SSD_NONE)
            __builtin_prefetch(&F->p2l[p], 1, 1);
    }
}

/* handles[i]: the reclaim unit handle of request i (NULL: handle 0 for all); conv_req takes
   them in issue order, which is request order. */
int conv_submit_h(conv_ftl *F, int64_t n, const uint8_t *ops, const int64_t *offs,
                  const int64_t *lens, const uint16_t *handles, int64_t qd, double *out)
{
    if (!handles)
        return ssd_submit_loop_inline(&F->T, F, conv_req, conv_prefetch, n, ops, offs, lens, qd, out);
    F->handles = handles;
    F->req_i = 0;
    int rc = ssd_submit_loop_inline(&F->T, F, conv_req_handles, conv_prefetch, n, ops, offs, lens, qd, out);
    F->handles = NULL; /* the caller's array is not ours to keep */
    return rc;
}

int conv_submit(conv_ftl *F, int64_t n, const uint8_t *ops, const int64_t *offs,
                const int64_t *lens, int64_t qd, double *out)
{
    return conv_submit_h(F, n, ops, offs, lens, NULL, qd, out);
}

int32_t conv_n_ruh(conv_ftl *F) { return F->n_ruh; }

/* out = host, media, GC-out bytes of handle h (h = n_ruh: the MIXED GC blocks); zeros if out of range. */
void conv_ruh_counters(conv_ftl *F, int32_t h, int64_t out[3])
{
    for (int k = 0; k < RUH_NCNT; k++)
        out[k] = (h >= 0 && h <= F->n_ruh) ? F->ruh_cnt[(int64_t)h * RUH_NCNT + k] : 0;
}

ssd_timing *conv_timing(conv_ftl *F) { return &F->T; }

int64_t conv_free_blocks(conv_ftl *F)
{
    int64_t s = 0;
    for (int d = 0; d < F->n_dies; d++)
        s += F->free_cnt[d];
    return s;
}

int64_t conv_valid_units(conv_ftl *F) { return F->valid_units; }

int64_t conv_n_blocks(conv_ftl *F) { return F->n_blocks; }

/* out[b] = erases of block b = die * blocks_per_die + block (the ppn layout's block index). */
void conv_erase_counts(conv_ftl *F, int64_t *out)
{
    memcpy(out, F->erases, (size_t)F->n_blocks * sizeof(int64_t));
}

void conv_lpn_dies(conv_ftl *F, int64_t n, const int64_t *lpns, int32_t *out)
{
    for (int64_t i = 0; i < n; i++) {
        uint32_t p = (lpns[i] >= 0 && lpns[i] < F->n_lpn) ? F->l2p[lpns[i]] : SSD_NONE;
        out[i] = p == SSD_NONE ? -1 : (int32_t)(p / ((uint32_t)F->units_per_block * (uint32_t)F->blocks_per_die));
    }
}

/* Idle-time GC target in free blocks per die; 0 turns idle-time GC off.  A target at or below
   the foreground stop point gc_high would never run, so it is raised to gc_high + 1. */
void conv_set_idle_gc(conv_ftl *F, int32_t bg_blocks)
{
    if (bg_blocks > 0 && bg_blocks <= F->gc_high_blocks)
        bg_blocks = F->gc_high_blocks + 1;
    if (bg_blocks > F->blocks_per_die)
        bg_blocks = F->blocks_per_die;
    F->gc_bg_blocks = bg_blocks > 0 ? bg_blocks : 0;
}

/* The host is idle from now until `until`: background GC (if on), then now = until.  Dies take
   turns, one victim each per round, so they share their channels as foreground GC does. */
void conv_idle(conv_ftl *F, int64_t until)
{
    ssd_timing *T = &F->T;
    if (until <= T->now)
        return;
    if (F->gc_bg_blocks > 0) {
        T->floor_ns = T->now;
        int64_t bytes0 = T->cnt.gc_write_bytes, runs0 = T->cnt.gc_runs;
        int64_t guard = (int64_t)F->n_dies * F->blocks_per_die; /* rounds; each cleans >= 1 victim */
        for (int progress = 1; progress && guard-- > 0;) {
            progress = 0;
            for (int d = 0; d < F->n_dies; d++) {
                if (F->free_cnt[d] >= F->gc_bg_blocks)
                    continue;
                int64_t s = T->die_free_ns[d] > T->now ? T->die_free_ns[d] : T->now;
                if (s >= until)
                    continue;
                progress |= gc_victim(F, d, s);
            }
        }
        T->cnt.gc_bg_write_bytes += T->cnt.gc_write_bytes - bytes0;
        T->cnt.gc_bg_runs += T->cnt.gc_runs - runs0;
    }
    T->now = until;
}

/* Frontier invariants: an open frontier block lies on its die, is B_OPEN, carries its
   frontier's tag (in_buffer relies on it) and no other frontier holds it (marks, zeroed by the
   caller, count the frontiers per block).  Returns 0 or writes msg. */
static int check_frontiers(const conv_ftl *F, const int32_t *blk, const int32_t *wp, int32_t sets,
                           int host, uint32_t *marks, char *msg, int msglen)
{
#define FFAIL(...)                                          \
    do {                                                    \
        if (msg && msglen > 0)                              \
            snprintf(msg, (size_t)msglen, __VA_ARGS__);     \
        return -1;                                          \
    } while (0)
    const char *kind = host ? "host" : "GC";
    for (int32_t g = 0; g < sets; g++) {
        for (int d = 0; d < F->n_dies; d++) {
            int32_t i = g * F->n_dies + d, b = blk[i];
            int32_t tag = (host || F->persistent) ? g : F->n_ruh;
            if (b < 0)
                continue;
            if (b / F->blocks_per_die != d || F->blk_state[b] != B_OPEN || F->blk_ruh[b] != tag)
                FFAIL("%s frontier %d of die %d is block %d (die %d, state %d, tag %d; want tag %d)", kind, g,
                      d, b, b / F->blocks_per_die, F->blk_state[b], F->blk_ruh[b], tag);
            if (wp[i] < 0 || wp[i] > F->units_per_block || (int32_t)F->valid_cnt[b] > wp[i])
                FFAIL("%s frontier %d of die %d: %d units written, %u valid", kind, g, d, wp[i],
                      F->valid_cnt[b]);
            if (marks[b]++)
                FFAIL("block %d is the frontier of two writers", b);
        }
    }
    return 0;
#undef FFAIL
}

/* Mapping invariants: every mapped LPN points at a distinct in-range PPN whose reverse entry
   names it; every reverse entry is backed by the forward map; per-block valid counts match;
   sealed blocks sit in the bucket of their count; free lists hold exactly the free blocks;
   the per-block erases add up to erase_count (every erase is a GC victim's).
   FDP: every block's tag is a handle (or MIXED, shared GC frontiers only); exactly the open
   blocks are frontiers, each of its own tag; the per-handle counters add up to the device's. */
int conv_check(conv_ftl *F, char *msg, int msglen)
{
#define FAIL(...)                                \
    do {                                         \
        if (msg && msglen > 0)                   \
            snprintf(msg, (size_t)msglen, __VA_ARGS__); \
        free(cnt);                               \
        return -1;                               \
    } while (0)
    uint32_t *cnt = (uint32_t *)calloc((size_t)F->n_blocks, sizeof(uint32_t));
    if (!cnt)
        return -2;
    int64_t mapped = 0;
    for (int64_t l = 0; l < F->n_lpn; l++) {
        uint32_t p = F->l2p[l];
        if (p == SSD_NONE)
            continue;
        if ((int64_t)p >= F->n_ppn)
            FAIL("lpn %lld maps out of range (%u)", (long long)l, p);
        if (F->p2l[p] != (uint32_t)l)
            FAIL("lpn %lld -> ppn %u but ppn -> %u", (long long)l, p, F->p2l[p]);
        mapped++;
    }
    int64_t rev = 0;
    for (int64_t p = 0; p < F->n_ppn; p++) {
        uint32_t l = F->p2l[p];
        if (l == SSD_NONE)
            continue;
        if ((int64_t)l >= F->n_lpn || F->l2p[l] != (uint32_t)p)
            FAIL("ppn %lld -> lpn %u not backed by the forward map", (long long)p, l);
        cnt[p / F->units_per_block]++;
        rev++;
    }
    if (rev != mapped || mapped != F->valid_units)
        FAIL("mapped %lld, reverse %lld, valid counter %lld", (long long)mapped, (long long)rev,
             (long long)F->valid_units);
    for (int64_t b = 0; b < F->n_blocks; b++) {
        if (cnt[b] != F->valid_cnt[b])
            FAIL("block %lld valid count %u, actual %u", (long long)b, F->valid_cnt[b], cnt[b]);
        if (F->blk_state[b] == B_FREE && cnt[b])
            FAIL("free block %lld holds %u valid units", (long long)b, cnt[b]);
        if (F->blk_state[b] == B_VICTIM)
            FAIL("block %lld left in victim state", (long long)b);
    }
    int64_t erased = 0;
    for (int64_t b = 0; b < F->n_blocks; b++)
        erased += F->erases[b];
    if (erased != F->T.cnt.erase_count)
        FAIL("per-block erases add up to %lld, erase_count %lld", (long long)erased,
             (long long)F->T.cnt.erase_count);
    int64_t in_buckets = 0, sealed = 0;
    for (int d = 0; d < F->n_dies; d++) {
        for (int32_t v = 0; v <= F->units_per_block; v++) {
            for (int32_t b = F->bucket_head[(int64_t)d * (F->units_per_block + 1) + v]; b >= 0; b = F->blk_next[b]) {
                if (F->blk_state[b] != B_SEALED || (int32_t)F->valid_cnt[b] != v || b / F->blocks_per_die != d)
                    FAIL("bucket %d/%d holds block %d (state %d, valid %u)", d, v, b,
                         F->blk_state[b], F->valid_cnt[b]);
                if (v < F->min_valid[d])
                    FAIL("die %d min pointer %d above a non-empty bucket %d", d, F->min_valid[d], v);
                in_buckets++;
            }
        }
        int32_t nf = 0;
        for (int32_t b = F->free_head[d]; b >= 0; b = F->blk_next[b]) {
            if (F->blk_state[b] != B_FREE || b / F->blocks_per_die != d)
                FAIL("free list of die %d holds block %d (state %d)", d, b, F->blk_state[b]);
            if (++nf > F->blocks_per_die)
                FAIL("free list of die %d loops", d);
        }
        if (nf != F->free_cnt[d])
            FAIL("die %d free count %d, list %d", d, F->free_cnt[d], nf);
    }
    for (int64_t b = 0; b < F->n_blocks; b++)
        sealed += (F->blk_state[b] == B_SEALED);
    if (sealed != in_buckets)
        FAIL("%lld sealed blocks, %lld in buckets", (long long)sealed, (long long)in_buckets);
    int32_t max_tag = F->persistent ? F->n_ruh - 1 : F->n_ruh;
    int64_t open = 0;
    for (int64_t b = 0; b < F->n_blocks; b++) {
        if (F->blk_ruh[b] > max_tag)
            FAIL("block %lld tagged %d (%d handles, %s)", (long long)b, F->blk_ruh[b], F->n_ruh,
                 F->persistent ? "persistent" : "initial");
        open += (F->blk_state[b] == B_OPEN);
        cnt[b] = 0; /* now: frontiers holding the block */
    }
    if (check_frontiers(F, F->host_blk, F->host_wp_units, F->n_ruh, 1, cnt, msg, msglen) < 0 ||
        check_frontiers(F, F->gc_blk, F->gc_wp_units, F->n_gcf, 0, cnt, msg, msglen) < 0) {
        free(cnt);
        return -1;
    }
    int64_t frontiers = 0;
    for (int64_t b = 0; b < F->n_blocks; b++)
        frontiers += cnt[b];
    if (frontiers != open)
        FAIL("%lld open blocks, %lld frontiers", (long long)open, (long long)frontiers);
    if (F->cur_h < 0 || F->cur_h >= F->n_ruh || F->cur_die < 0 || F->cur_die >= F->n_dies ||
        F->cur_blk != F->host_blk + (int64_t)F->cur_h * F->n_dies ||
        F->cur_wp_units != F->host_wp_units + (int64_t)F->cur_h * F->n_dies ||
        F->cur_cnt != F->ruh_cnt + (int64_t)F->cur_h * RUH_NCNT)
        FAIL("writing handle %d (die %d) does not match its rows", F->cur_h, F->cur_die);
    for (int32_t h = 0; h < F->n_ruh; h++)
        if (F->ruh_die[h] < 0 || F->ruh_die[h] >= F->n_dies)
            FAIL("handle %d stripe pointer at die %d", h, F->ruh_die[h]);
    for (int32_t g = 0; g < F->n_gcf; g++) {
        if (F->gc_die[g] < 0 || F->gc_die[g] >= F->n_dies)
            FAIL("GC set %d stripe pointer at die %d", g, F->gc_die[g]);
        for (int d = 0; d < F->n_dies; d++) { /* striped: only the current die holds a partial unit */
            int32_t i = g * F->n_dies + d;
            if (F->gc_striped && d != F->gc_die[g] && F->gc_blk[i] >= 0 &&
                ssd_rem(F->by_units_per_prog, (uint32_t)F->gc_wp_units[i]) != 0)
                FAIL("GC set %d: die %d holds a partial program unit, the stripe is at die %d", g, d,
                     F->gc_die[g]);
        }
    }
    int64_t sum[RUH_NCNT] = {0, 0, 0};
    for (int32_t h = 0; h <= F->n_ruh; h++)
        for (int k = 0; k < RUH_NCNT; k++)
            sum[k] += F->ruh_cnt[(int64_t)h * RUH_NCNT + k];
    const ssd_counters *c = &F->T.cnt;
    if (sum[RUH_HOST] != c->host_write_bytes || sum[RUH_MEDIA] != c->media_write_bytes ||
        sum[RUH_GC] != c->gc_write_bytes)
        FAIL("per-handle host/media/GC bytes add up to %lld/%lld/%lld, device %lld/%lld/%lld",
             (long long)sum[0], (long long)sum[1], (long long)sum[2], (long long)c->host_write_bytes,
             (long long)c->media_write_bytes, (long long)c->gc_write_bytes);
    free(cnt);
    return 0;
#undef FAIL
}
