/*
 * ssd.c - the shared SSD timing model (see ssd.h).
 *
 * Resources are busy-until clocks.  An operation that needs a resource starts at
 * max(its ready time, the resource's busy-until) and pushes the busy-until forward, so
 * concurrent requests overlap on different dies/channels and serialize on the same one.
 * Requests are processed in issue order with their issue time (issue times are
 * non-decreasing), reserving resources as they go ("greedy reservation", as NVMeVirt does).
 *
 *  NAND read:    die busy t_read, then the requested bytes cross the die's channel.
 *  NAND program: the program unit crosses the channel into the die, then the die is busy
 *                t_prog.  (Channel and die both wait for each other.)
 *  erase:        die busy t_erase for a block of the preset's size; an erase of n pages (a
 *                scaled-down block or a ZNS zone slice) costs t_erase * n / pages_per_block,
 *                so erasing costs the same per byte whatever the block size.
 *  host link:    one timeline per direction, bytes / host_link bandwidth.
 *  command:      a fixed controller latency t_cmd before any work starts (not a shared
 *                resource: controllers process commands on several cores; a read's may be
 *                longer by t_read_cmd: a firmware read path slower than its write buffer), and optionally
 *                a serial controller time per command and op (ctrl_*_us: one timeline, it
 *                bounds the device's command rate; a write's overlaps its data transfer).
 *  write path:   optionally, all data written to flash passes a serial write path at
 *                write_path_mb_s (host writes from their arrival, a zoned finish's padding):
 *                a write-bandwidth ceiling below the dies' that leaves the dies idle, as
 *                drives show.  (Not on the program itself: the dies are reserved greedily in
 *                issue order, so a program held back there would block earlier reads.)
 *
 * Write buffer: a write is acknowledged once its data is in a bounded DRAM buffer.  Space is
 * held from acceptance until the NAND program carrying the data completes.  When the buffer is
 * full, the write waits for the earliest completing program; so the steady-state write
 * bandwidth is the rate at which the FTL drains the buffer, GC included.
 *
 * Program/erase suspend (optional, `suspend`): a host read arriving at a die with queued
 * program/erase work does not queue behind it.  It starts after at most the suspend latency
 * t_suspend (or when the die's work ends, if sooner), or right after host reads already ahead
 * of it on that die (reads stay in FIFO order among themselves, the suspended work stays
 * suspended).  All of the die's queued work, and the write-buffer release of its programs,
 * moves back by the read's die time t_read.  With suspend off nothing here changes any result.
 */
#include "ssd.h"

#include <stdlib.h>
#include <math.h>
#include <string.h>

static int64_t ns_of_us(double us) { return (int64_t)(us * 1000.0 + 0.5); }

static inline int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* ---- transfer timelines ---- */

static void tl_free(ssd_tl *L)
{
    free(L->v);
    L->v = NULL;
    L->head = L->n = L->cap = 0;
}

/* Make room for one more interval; returns the shift applied to indices (compaction). */
__attribute__((noinline)) static int64_t tl_grow(ssd_tl *L)
{
    int64_t live = L->n - L->head, shift = L->head;
    if (L->head > 0 && live < L->cap / 2) {
        memmove(L->v, L->v + L->head, (size_t)live * sizeof(ssd_span));
    } else {
        int64_t nc = L->cap ? L->cap * 2 : 64;
        ssd_span *nv = (ssd_span *)malloc((size_t)nc * sizeof(ssd_span));
        if (live)
            memcpy(nv, L->v + L->head, (size_t)live * sizeof(ssd_span));
        free(L->v);
        L->v = nv;
        L->cap = nc;
    }
    L->n = live;
    L->head = 0;
    return shift;
}

static inline int64_t tl_room(ssd_tl *L)
{
    return L->n < L->cap ? 0 : tl_grow(L);
}

/* Move n spans from src to dst (overlapping); the usual moves are a few spans long. */
static inline void span_move(ssd_span *dst, const ssd_span *src, int64_t n)
{
    if (n > 8) {
        memmove(dst, src, (size_t)n * sizeof(ssd_span));
    } else if (dst < src) {
        for (int64_t i = 0; i < n; i++)
            dst[i] = src[i];
    } else {
        for (int64_t i = n - 1; i >= 0; i--)
            dst[i] = src[i];
    }
}

#define TL_NEAR 8

/* Reserve dur ns on L in the earliest gap that starts at or after t; returns the start. */
static int64_t tl_reserve(ssd_tl *L, int64_t t, int64_t dur, int64_t floor_ns)
{
    if (dur <= 0)
        return t;
    ssd_span *v = L->v;
    int64_t h = L->head, n = L->n;
    while (h < n && v[h].end_ns <= floor_ns) /* drop intervals over before the floor */
        h++;
    if (h == n)
        h = n = 0;
    L->head = h;
    L->n = n;
    if (n == h || t >= v[n - 1].end_ns) { /* at or after the last: append (or extend it) */
        if (n > h && v[n - 1].end_ns == t) {
            v[n - 1].end_ns = t + dur;
        } else {
            tl_room(L);
            v = L->v;
            n = L->n;
            v[n].start_ns = t;
            v[n].end_ns = t + dur;
            L->n = n + 1;
        }
        return t;
    }
    int64_t c = t, j = n;
    {
        /* first interval ending after t (one exists: the last).  A link's reservations land near
           its head, a channel's near its tail: look at the first few, else halve (branch-free) */
        const ssd_span *base = v + h;
        int64_t len = n - h;
        if (len > TL_NEAR && v[h + TL_NEAR - 1].end_ns > t)
            len = TL_NEAR;
        else if (len > TL_NEAR) {
            base += TL_NEAR;
            len -= TL_NEAR;
        }
        while (len > 1) {
            int64_t half = len / 2;
            base = (base[half - 1].end_ns > t) ? base : base + half;
            len -= half;
        }
        for (j = base - v; j < n; j++) {
            if (v[j].start_ns >= c + dur)
                break;
            if (v[j].end_ns > c)
                c = v[j].end_ns;
        }
    }
    /* place [c, c+dur) before index j, merging with touching neighbours */
    int prev_touch = (j > h && v[j - 1].end_ns == c);
    int next_touch = (j < n && v[j].start_ns == c + dur);
    if (prev_touch && next_touch) {
        v[j - 1].end_ns = v[j].end_ns;
        span_move(v + j, v + j + 1, n - j - 1);
        L->n = n - 1;
    } else if (prev_touch) {
        v[j - 1].end_ns = c + dur;
    } else if (next_touch) {
        v[j].start_ns = c;
    } else if (h > 0 && j - h < n - j) {
        /* nearer the head: move the intervals before it down into the dropped ones' room */
        span_move(v + h - 1, v + h, j - h);
        L->head = h - 1;
        v[j - 1].start_ns = c;
        v[j - 1].end_ns = c + dur;
    } else {
        j -= tl_room(L);
        v = L->v;
        n = L->n;
        if (j < n)
            span_move(v + j + 1, v + j, n - j);
        v[j].start_ns = c;
        v[j].end_ns = c + dur;
        L->n = n + 1;
    }
    return c;
}

/* ---- set-up ---- */

int ssd_timing_init(ssd_timing *T, const ssd_params *p)
{
    memset(T, 0, sizeof(*T));
    T->n_channels = p->channels;
    T->n_dies = p->channels * p->dies_per_channel;
    T->channel = (ssd_tl *)calloc((size_t)T->n_channels, sizeof(ssd_tl));
    T->die_free_ns = (int64_t *)calloc((size_t)T->n_dies, sizeof(int64_t));
    T->die_channel = (int32_t *)calloc((size_t)T->n_dies, sizeof(int32_t));
    T->channel_ns_per_byte = 1000.0 / p->channel_mb_s; /* MB/s = 1e6 B/s -> ns per byte */
    T->link_ns_per_byte = 1000.0 / p->host_link_mb_s;
    T->link_in_ns_per_byte = 1000.0 / (p->write_link_mb_s > 0 ? p->write_link_mb_s : p->host_link_mb_s);
    T->write_path_ns_per_byte = p->write_path_mb_s > 0 ? 1000.0 / p->write_path_mb_s : 0.0;
    T->t_reset_ns = ns_of_us(p->t_reset_us);
    T->t_reset_written_ns = ns_of_us(p->t_reset_written_us);
    T->reset_ns_per_mib = p->reset_us_per_mib * 1000.0;
    T->reset_exponent = p->reset_exponent > 0 ? p->reset_exponent : 1.0;
    T->t_append_ns = ns_of_us(p->t_append_us);
    T->finish_pads_zone = p->finish_pads_zone != 0;
    T->t_finish_ns = ns_of_us(p->t_finish_us);
    T->t_ctrl_ns[SSD_OP_READ] = ns_of_us(p->ctrl_read_us);
    T->t_ctrl_ns[SSD_OP_WRITE] = ns_of_us(p->ctrl_write_us);
    T->t_ctrl_ns[SSD_OP_APPEND] = ns_of_us(p->ctrl_append_us > 0 ? p->ctrl_append_us : p->ctrl_write_us);
    T->t_read_ns = ns_of_us(p->t_read_us);
    T->t_prog_ns = ns_of_us(p->t_prog_us);
    T->t_erase_ns = ns_of_us(p->t_erase_us);
    T->t_cmd_ns = ns_of_us(p->cmd_overhead_us);
    T->t_read_cmd_ns = ns_of_us(p->t_read_cmd_us);
    T->pages_per_block = p->pages_per_block > 0 ? p->pages_per_block : 1;
    T->page_bytes = p->page_size;
    T->suspend = p->suspend != 0;
    T->t_suspend_ns = ns_of_us(p->t_suspend_us);
    T->read_end_ns = (int64_t *)calloc((size_t)T->n_dies, sizeof(int64_t));
    T->wb_cap_units = p->write_buffer_bytes / SSD_UNIT;
    if (T->wb_cap_units < 1)
        T->wb_cap_units = 1;
    if (T->die_channel)
        for (int d = 0; d < T->n_dies; d++)
            T->die_channel[d] = d % T->n_channels;
    if (!T->channel || !T->die_free_ns || !T->die_channel || !T->read_end_ns ||
        ssd_heap_reserve(&T->wb, T->wb_cap_units + 64) < 0) {
        ssd_timing_free(T);
        return -1;
    }
    return 0;
}

void ssd_timing_free(ssd_timing *T)
{
    if (T->channel)
        for (int c = 0; c < T->n_channels; c++)
            tl_free(&T->channel[c]);
    tl_free(&T->link_in);
    tl_free(&T->link_out);
    tl_free(&T->ctrl);
    tl_free(&T->engine);
    free(T->channel);
    free(T->die_free_ns);
    free(T->die_channel);
    free(T->read_end_ns);
    ssd_heap_free(&T->wb);
    ssd_heap_free(&T->queue);
    T->channel = NULL;
    T->die_free_ns = NULL;
    T->die_channel = NULL;
    T->read_end_ns = NULL;
}

/* ---- flash operations ---- */

static inline int64_t xfer(double ns_per_byte, int64_t bytes)
{
    return (int64_t)((double)bytes * ns_per_byte + 0.5);
}

int64_t ssd_nand_read(ssd_timing *T, int die, int64_t t, int64_t bytes)
{
    int ch = T->die_channel[die];
    int64_t s = max64(t, T->die_free_ns[die]);
    int64_t sensed = s + T->t_read_ns;
    T->die_free_ns[die] = sensed; /* cache read: the die senses the next page during the transfer */
    int64_t x = xfer(T->channel_ns_per_byte, bytes);
    int64_t ce = tl_reserve(&T->channel[ch], sensed, x, T->floor_ns) + x;
    T->cnt.media_read_bytes += bytes;
    T->cnt.nand_read_ops++;
    T->cnt.die_busy_ns += T->t_read_ns;
    return ce;
}

static void wb_push_back(ssd_timing *T, int die, int64_t after, int64_t dt);

/* A host read of `bytes` on `die` at t.  Without suspend (or on an idle die) it is a plain NAND
   read.  With suspend, queued program/erase work on the die is suspended for it (see the top). */
int64_t ssd_host_read(ssd_timing *T, int die, int64_t t, int64_t bytes)
{
    if (!T->suspend)
        return ssd_nand_read(T, die, t, bytes);
    int64_t busy = T->die_free_ns[die];
    if (busy <= t) {
        int64_t ce = ssd_nand_read(T, die, t, bytes);
        T->read_end_ns[die] = T->die_free_ns[die];
        return ce;
    }
    int64_t s;
    if (T->read_end_ns[die] > t) {
        s = T->read_end_ns[die]; /* behind host reads already in front of the suspended work */
    } else {
        s = t + T->t_suspend_ns; /* suspend the die's work, or wait for it if it ends sooner */
        if (s > busy)
            s = busy;
    }
    int64_t sensed = s + T->t_read_ns;
    if (busy > s) {
        T->die_free_ns[die] = busy + T->t_read_ns; /* the suspended work resumes after the read */
        wb_push_back(T, die, s, T->t_read_ns);
        T->cnt.suspend_count++;
    } else {
        T->die_free_ns[die] = sensed;
    }
    T->read_end_ns[die] = sensed;
    int64_t x = xfer(T->channel_ns_per_byte, bytes);
    int64_t ce = tl_reserve(&T->channel[T->die_channel[die]], sensed, x, T->floor_ns) + x;
    T->cnt.media_read_bytes += bytes;
    T->cnt.nand_read_ops++;
    T->cnt.die_busy_ns += T->t_read_ns;
    return ce;
}

int64_t ssd_nand_prog(ssd_timing *T, int die, int64_t t, int64_t bytes)
{
    int ch = T->die_channel[die];
    int64_t x = xfer(T->channel_ns_per_byte, bytes);
    int64_t cs = tl_reserve(&T->channel[ch], max64(t, T->die_free_ns[die]), x, T->floor_ns);
    int64_t ce = cs + x;
    int64_t done = ce + T->t_prog_ns;
    T->die_free_ns[die] = done;
    T->cnt.nand_prog_ops++;
    T->cnt.die_busy_ns += done - cs;
    return done;
}

static int64_t erase_for(ssd_timing *T, int die, int64_t t, int64_t dur_ns, int64_t pages)
{
    int64_t s = max64(t, T->die_free_ns[die]);
    T->die_free_ns[die] = s + dur_ns;
    T->cnt.erase_count++;
    T->cnt.die_busy_ns += dur_ns;
    T->cnt.erase_ns += dur_ns;
    T->cnt.erase_bytes += pages * T->page_bytes;
    return T->die_free_ns[die];
}

/* Erase of one block of the configured size (pages_per_block): t_erase. */
int64_t ssd_nand_erase(ssd_timing *T, int die, int64_t t)
{
    return erase_for(T, die, t, T->t_erase_ns, T->pages_per_block);
}

/* Erase of a block of `pages` pages: t_erase scaled to its size (same cost per erased byte). */
int64_t ssd_nand_erase_pages(ssd_timing *T, int die, int64_t t, int64_t pages)
{
    int64_t ppb = T->pages_per_block;
    int64_t dur = (T->t_erase_ns * pages + ppb / 2) / ppb;
    return erase_for(T, die, t, dur, pages);
}

/* The write path's time for `bytes` arriving at t: when they have passed it (t if none). */
int64_t ssd_write_path(ssd_timing *T, int64_t t, int64_t bytes)
{
    if (T->write_path_ns_per_byte <= 0)
        return t;
    int64_t e = xfer(T->write_path_ns_per_byte, bytes);
    return tl_reserve(&T->engine, t, e, T->floor_ns) + e;
}

/* The controller's serial time of an op's command arriving at t: when it is done (t if none). */
int64_t ssd_ctrl(ssd_timing *T, int op, int64_t t)
{
    int64_t c = T->t_ctrl_ns[op & 3];
    return c > 0 ? tl_reserve(&T->ctrl, t, c, T->floor_ns) + c : t;
}

int64_t ssd_link_in(ssd_timing *T, int64_t t, int64_t bytes)
{
    int64_t x = xfer(T->link_in_ns_per_byte, bytes);
    return tl_reserve(&T->link_in, t, x, T->floor_ns) + x;
}

int64_t ssd_link_out(ssd_timing *T, int64_t t, int64_t bytes)
{
    int64_t x = xfer(T->link_ns_per_byte, bytes);
    return tl_reserve(&T->link_out, t, x, T->floor_ns) + x;
}

/* ---- write buffer: programs in flight on the heap, keyed by completion ---- */

static inline void wb_pop(ssd_timing *T)
{
    T->wb_inflight_units -= T->wb.a[0].units;
    ssd_heap_pop(&T->wb);
}

/* A suspend on `die` at `after` delays the die's programs completing after it by dt: their
   buffer space is released later.  The heap is small (a few programs per die); rebuild it. */
static void wb_push_back(ssd_timing *T, int die, int64_t after, int64_t dt)
{
    int changed = 0;
    for (int64_t i = 0; i < T->wb.n; i++)
        if (T->wb.a[i].die == die && T->wb.a[i].key_ns > after) {
            T->wb.a[i].key_ns += dt;
            changed = 1;
        }
    if (changed)
        ssd_heap_rebuild(&T->wb);
}

/* Reserve `units` of buffer at time t; returns the time the space is available.  Data that is
   accepted but not yet programmed (partial program units) is never waited for: only programs
   in flight can free space, so a buffer filled by pending data alone does not stall. */
int64_t ssd_wb_reserve(ssd_timing *T, int64_t t, int64_t units)
{
    while (T->wb.n > 0 && T->wb.a[0].key_ns <= t)
        wb_pop(T);
    while (T->wb.n > 0 && T->wb_pending_units + T->wb_inflight_units + units > T->wb_cap_units) {
        t = max64(t, T->wb.a[0].key_ns);
        wb_pop(T);
    }
    T->wb_pending_units += units;
    return t;
}

void ssd_wb_program(ssd_timing *T, int die, int64_t done, int64_t units)
{
    if (units > T->wb_pending_units)
        units = T->wb_pending_units;
    if (units <= 0)
        return;
    T->wb_pending_units -= units;
    /* more programs in flight than expected (only when programs are tiny): grow; if that
       fails the program cannot be tracked and its space counts as released */
    if (T->wb.n >= T->wb.cap && ssd_heap_reserve(&T->wb, T->wb.cap * 2) < 0)
        return;
    ssd_heap_ent e = {done, (int32_t)units, die};
    ssd_heap_push(&T->wb, e);
    T->wb_inflight_units += units;
}

void ssd_wb_drop(ssd_timing *T, int64_t units)
{
    T->wb_pending_units -= units;
    if (T->wb_pending_units < 0)
        T->wb_pending_units = 0;
}

/* ---- queue-depth issue loop (the loop itself is ssd_submit_loop_inline, ssd.h) ---- */

int ssd_submit_loop(ssd_timing *T, void *ftl, ssd_req_fn fn, ssd_pf_fn pf, int64_t n,
                    const uint8_t *ops, const int64_t *offs, const int64_t *lens, int64_t qd,
                    double *out)
{
    return ssd_submit_loop_inline(T, ftl, fn, pf, n, ops, offs, lens, qd, out);
}
