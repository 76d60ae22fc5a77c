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
 *  host link:    one busy-until per direction, bytes / host_link bandwidth.
 *  command:      a fixed controller latency t_cmd before any work starts (not a shared
 *                resource: controllers process commands on several cores).
 *
 * Write buffer: a write is acknowledged once its data is in a bounded DRAM buffer.  Space is
 * held from acceptance until the NAND program carrying the data completes.  When the buffer is
 * full, the write waits for the earliest completing program; so the steady-state write
 * bandwidth is the rate at which the FTL drains the buffer, GC included.
 *
 * Program/erase suspend (optional, `suspend`): a host read arriving at a die with queued
 * program/erase work does not queue behind it.  It starts after at most the suspend latency
 * t_sus (or when the die's work ends, if sooner), or right after host reads already ahead of it
 * on that die (reads stay in FIFO order among themselves, the suspended work stays suspended).
 * All of the die's queued work, and the write-buffer release of its programs, moves back by
 * the read's die time t_read.  With suspend off nothing here changes any result.
 */
#include "ssd.h"

#include <stdlib.h>
#include <string.h>

static int64_t ns_of_us(double us) { return (int64_t)(us * 1000.0 + 0.5); }

static void tl_free(ssd_tl *L)
{
    free(L->s);
    free(L->e);
    L->s = L->e = NULL;
    L->h = L->n = L->cap = 0;
}

/* Make room for one more interval; returns the shift applied to indices (compaction). */
static int64_t tl_room(ssd_tl *L)
{
    if (L->n < L->cap)
        return 0;
    int64_t live = L->n - L->h, shift = L->h;
    if (L->h > 0 && live < L->cap / 2) {
        memmove(L->s, L->s + L->h, (size_t)live * sizeof(int64_t));
        memmove(L->e, L->e + L->h, (size_t)live * sizeof(int64_t));
    } else {
        int64_t nc = L->cap ? L->cap * 2 : 64;
        int64_t *ns_ = (int64_t *)malloc((size_t)nc * sizeof(int64_t));
        int64_t *ne_ = (int64_t *)malloc((size_t)nc * sizeof(int64_t));
        if (live) {
            memcpy(ns_, L->s + L->h, (size_t)live * sizeof(int64_t));
            memcpy(ne_, L->e + L->h, (size_t)live * sizeof(int64_t));
        }
        free(L->s);
        free(L->e);
        L->s = ns_;
        L->e = ne_;
        L->cap = nc;
    }
    L->n = live;
    L->h = 0;
    return shift;
}

/* Reserve dur ns on L in the earliest gap that starts at or after t; returns the start. */
static int64_t tl_reserve(ssd_tl *L, int64_t t, int64_t dur, int64_t floor)
{
    L->busy_ns += dur;
    if (dur <= 0)
        return t;
    while (L->h < L->n && L->e[L->h] <= floor) /* drop intervals over before the floor */
        L->h++;
    if (L->h == L->n)
        L->h = L->n = 0;
    int64_t c = t, j = L->n;
    if (L->n > L->h && t < L->e[L->n - 1]) {
        int64_t lo = L->h, hi = L->n - 1; /* first interval ending after t */
        while (lo < hi) {
            int64_t mid = (lo + hi) / 2;
            if (L->e[mid] > t)
                hi = mid;
            else
                lo = mid + 1;
        }
        for (j = lo; j < L->n; j++) {
            if (L->s[j] >= c + dur)
                break;
            if (L->e[j] > c)
                c = L->e[j];
        }
    }
    /* place [c, c+dur) before index j, merging with touching neighbours */
    int prev_touch = (j > L->h && L->e[j - 1] == c);
    int next_touch = (j < L->n && L->s[j] == c + dur);
    if (prev_touch && next_touch) {
        L->e[j - 1] = L->e[j];
        memmove(L->s + j, L->s + j + 1, (size_t)(L->n - j - 1) * sizeof(int64_t));
        memmove(L->e + j, L->e + j + 1, (size_t)(L->n - j - 1) * sizeof(int64_t));
        L->n--;
    } else if (prev_touch) {
        L->e[j - 1] = c + dur;
    } else if (next_touch) {
        L->s[j] = c;
    } else {
        j -= tl_room(L);
        if (j < L->n) {
            memmove(L->s + j + 1, L->s + j, (size_t)(L->n - j) * sizeof(int64_t));
            memmove(L->e + j + 1, L->e + j, (size_t)(L->n - j) * sizeof(int64_t));
        }
        L->s[j] = c;
        L->e[j] = c + dur;
        L->n++;
    }
    return c;
}

int ssd_timing_init(ssd_timing *T, const ssd_params *p)
{
    memset(T, 0, sizeof(*T));
    T->n_ch = p->channels;
    T->n_dies = p->channels * p->dies_per_channel;
    T->ch = (ssd_tl *)calloc((size_t)T->n_ch, sizeof(ssd_tl));
    T->die_free = (int64_t *)calloc((size_t)T->n_dies, sizeof(int64_t));
    T->ch_ns_per_byte = 1000.0 / p->channel_mb_s; /* MB/s = 1e6 B/s -> ns per byte */
    T->link_ns_per_byte = 1000.0 / p->host_link_mb_s;
    T->t_read = ns_of_us(p->t_read_us);
    T->t_prog = ns_of_us(p->t_prog_us);
    T->t_erase = ns_of_us(p->t_erase_us);
    T->t_cmd = ns_of_us(p->cmd_overhead_us);
    T->ppb = p->pages_per_block > 0 ? p->pages_per_block : 1;
    T->page_size = p->page_size;
    T->suspend = p->suspend != 0;
    T->t_sus = ns_of_us(p->t_suspend_us);
    T->rd_end = (int64_t *)calloc((size_t)T->n_dies, sizeof(int64_t));
    T->wb_cap = p->write_buffer_bytes / SSD_UNIT;
    if (T->wb_cap < 1)
        T->wb_cap = 1;
    T->wb_size = T->wb_cap + 64;
    T->wb_heap = (ssd_wb_ent *)malloc((size_t)T->wb_size * sizeof(ssd_wb_ent));
    if (!T->ch || !T->die_free || !T->wb_heap || !T->rd_end) {
        ssd_timing_free(T);
        return -1;
    }
    return 0;
}

void ssd_timing_free(ssd_timing *T)
{
    if (T->ch)
        for (int c = 0; c < T->n_ch; c++)
            tl_free(&T->ch[c]);
    tl_free(&T->link_in);
    tl_free(&T->link_out);
    free(T->ch);
    free(T->die_free);
    free(T->rd_end);
    free(T->wb_heap);
    free(T->qheap);
    T->ch = NULL;
    T->die_free = NULL;
    T->rd_end = NULL;
    T->wb_heap = NULL;
    T->qheap = NULL;
}

static inline int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

static inline int64_t xfer(double ns_per_byte, int64_t bytes)
{
    return (int64_t)((double)bytes * ns_per_byte + 0.5);
}

int64_t ssd_nand_read(ssd_timing *T, int die, int64_t t, int64_t bytes)
{
    int ch = die % T->n_ch;
    int64_t s = max64(t, T->die_free[die]);
    int64_t sensed = s + T->t_read;
    T->die_free[die] = sensed; /* cache read: the die senses the next page during the transfer */
    int64_t x = xfer(T->ch_ns_per_byte, bytes);
    int64_t ce = tl_reserve(&T->ch[ch], sensed, x, T->floor) + x;
    T->cnt.media_read_bytes += bytes;
    T->cnt.nand_read_ops++;
    T->cnt.die_busy_ns += T->t_read;
    return ce;
}

static void wb_push_back(ssd_timing *T, int die, int64_t after, int64_t dt);

/* A host read of `bytes` on `die` at t.  Without suspend (or on an idle die) it is a plain NAND
   read.  With suspend, queued program/erase work on the die is suspended for it (see the top). */
int64_t ssd_host_read(ssd_timing *T, int die, int64_t t, int64_t bytes)
{
    if (!T->suspend)
        return ssd_nand_read(T, die, t, bytes);
    int64_t busy = T->die_free[die];
    if (busy <= t) {
        int64_t ce = ssd_nand_read(T, die, t, bytes);
        T->rd_end[die] = T->die_free[die];
        return ce;
    }
    int64_t s;
    if (T->rd_end[die] > t) {
        s = T->rd_end[die]; /* behind host reads already in front of the suspended work */
    } else {
        s = t + T->t_sus;   /* suspend the die's work, or wait for it if it ends sooner */
        if (s > busy)
            s = busy;
    }
    int64_t sensed = s + T->t_read;
    if (busy > s) {
        T->die_free[die] = busy + T->t_read; /* the suspended work resumes after the read */
        wb_push_back(T, die, s, T->t_read);
        T->cnt.suspend_count++;
    } else {
        T->die_free[die] = sensed;
    }
    T->rd_end[die] = sensed;
    int64_t x = xfer(T->ch_ns_per_byte, bytes);
    int64_t ce = tl_reserve(&T->ch[die % T->n_ch], sensed, x, T->floor) + x;
    T->cnt.media_read_bytes += bytes;
    T->cnt.nand_read_ops++;
    T->cnt.die_busy_ns += T->t_read;
    return ce;
}

int64_t ssd_nand_prog(ssd_timing *T, int die, int64_t t, int64_t bytes)
{
    int ch = die % T->n_ch;
    int64_t x = xfer(T->ch_ns_per_byte, bytes);
    int64_t cs = tl_reserve(&T->ch[ch], max64(t, T->die_free[die]), x, T->floor);
    int64_t ce = cs + x;
    int64_t done = ce + T->t_prog;
    T->die_free[die] = done;
    T->cnt.nand_prog_ops++;
    T->cnt.die_busy_ns += done - cs;
    return done;
}

static int64_t erase_for(ssd_timing *T, int die, int64_t t, int64_t dur, int64_t pages)
{
    int64_t s = max64(t, T->die_free[die]);
    T->die_free[die] = s + dur;
    T->cnt.erase_count++;
    T->cnt.die_busy_ns += dur;
    T->cnt.erase_ns += dur;
    T->cnt.erase_bytes += pages * T->page_size;
    return T->die_free[die];
}

/* Erase of one block of the configured size (pages_per_block): t_erase. */
int64_t ssd_nand_erase(ssd_timing *T, int die, int64_t t)
{
    return erase_for(T, die, t, T->t_erase, T->ppb);
}

/* Erase of a block of `pages` pages: t_erase scaled to its size (same cost per erased byte). */
int64_t ssd_nand_erase_pages(ssd_timing *T, int die, int64_t t, int64_t pages)
{
    int64_t dur = (T->t_erase * pages + T->ppb / 2) / T->ppb;
    return erase_for(T, die, t, dur, pages);
}

int64_t ssd_link_in(ssd_timing *T, int64_t t, int64_t bytes)
{
    int64_t x = xfer(T->link_ns_per_byte, bytes);
    return tl_reserve(&T->link_in, t, x, T->floor) + x;
}

int64_t ssd_link_out(ssd_timing *T, int64_t t, int64_t bytes)
{
    int64_t x = xfer(T->link_ns_per_byte, bytes);
    return tl_reserve(&T->link_out, t, x, T->floor) + x;
}

/* ---- write buffer: min-heap of in-flight programs keyed by completion time ---- */

static void wb_sift_down(ssd_wb_ent *h, int64_t n, int64_t i)
{
    ssd_wb_ent x = h[i];
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && h[c + 1].t < h[c].t)
            c++;
        if (h[c].t >= x.t)
            break;
        h[i] = h[c];
        i = c;
    }
    h[i] = x;
}

static void wb_pop(ssd_timing *T)
{
    ssd_wb_ent *h = T->wb_heap;
    T->wb_inflight -= h[0].units;
    int64_t n = --T->wb_n;
    if (n == 0)
        return;
    h[0] = h[n];
    wb_sift_down(h, n, 0);
}

/* A suspend on `die` at `after` delays the die's programs completing after it by dt: their
   buffer space is released later.  The heap is small (a few programs per die); rebuild it. */
static void wb_push_back(ssd_timing *T, int die, int64_t after, int64_t dt)
{
    int changed = 0;
    for (int64_t i = 0; i < T->wb_n; i++)
        if (T->wb_heap[i].die == die && T->wb_heap[i].t > after) {
            T->wb_heap[i].t += dt;
            changed = 1;
        }
    if (changed)
        for (int64_t i = T->wb_n / 2 - 1; i >= 0; i--)
            wb_sift_down(T->wb_heap, T->wb_n, i);
}

static void wb_push(ssd_timing *T, int die, int64_t t, int64_t units)
{
    if (T->wb_n >= T->wb_size) {
        /* more programs in flight than expected (only when programs are tiny): merge into
           the latest-completing entry is not cheap; grow instead */
        int64_t ns = T->wb_size * 2;
        ssd_wb_ent *nh = (ssd_wb_ent *)realloc(T->wb_heap, (size_t)ns * sizeof(ssd_wb_ent));
        if (!nh) { /* cannot track: treat as already released */
            return;
        }
        T->wb_heap = nh;
        T->wb_size = ns;
    }
    ssd_wb_ent *h = T->wb_heap;
    int64_t i = T->wb_n++;
    while (i > 0) {
        int64_t p = (i - 1) / 2;
        if (h[p].t <= t)
            break;
        h[i] = h[p];
        i = p;
    }
    h[i].t = t;
    h[i].units = (int32_t)units;
    h[i].die = die;
    T->wb_inflight += units;
}

/* Reserve `units` of buffer at time t; returns the time the space is available.  Data that is
   accepted but not yet programmed (partial program units) is never waited for: only programs
   in flight can free space, so a buffer filled by pending data alone does not stall. */
int64_t ssd_wb_reserve(ssd_timing *T, int64_t t, int64_t units)
{
    while (T->wb_n > 0 && T->wb_heap[0].t <= t)
        wb_pop(T);
    while (T->wb_n > 0 && T->wb_pending + T->wb_inflight + units > T->wb_cap) {
        t = max64(t, T->wb_heap[0].t);
        wb_pop(T);
    }
    T->wb_pending += units;
    return t;
}

void ssd_wb_program(ssd_timing *T, int die, int64_t done, int64_t units)
{
    if (units > T->wb_pending)
        units = T->wb_pending;
    if (units <= 0)
        return;
    T->wb_pending -= units;
    wb_push(T, die, done, units);
}

void ssd_wb_drop(ssd_timing *T, int64_t units)
{
    T->wb_pending -= units;
    if (T->wb_pending < 0)
        T->wb_pending = 0;
}

/* ---- queue-depth issue loop ---- */

static void q_push(int64_t *h, int64_t *n, int64_t t)
{
    int64_t i = (*n)++;
    while (i > 0) {
        int64_t p = (i - 1) / 2;
        if (h[p] <= t)
            break;
        h[i] = h[p];
        i = p;
    }
    h[i] = t;
}

static int64_t q_pop(int64_t *h, int64_t *n)
{
    int64_t top = h[0];
    int64_t m = --(*n);
    if (m > 0) {
        int64_t x = h[m], i = 0;
        for (;;) {
            int64_t c = 2 * i + 1;
            if (c >= m)
                break;
            if (c + 1 < m && h[c + 1] < h[c])
                c++;
            if (h[c] >= x)
                break;
            h[i] = h[c];
            i = c;
        }
        h[i] = x;
    }
    return top;
}

/* Issue requests in order with at most qd outstanding: the first qd at T->now, each later one
   when the earliest outstanding request completes.  out[i] = completion (seconds).
   T->now advances to the last completion. Returns 0, or -(i+1) if request i failed. */
#define PF_FAR 16
#define PF_NEAR 6

int ssd_submit_loop(ssd_timing *T, void *ftl, ssd_req_fn fn, ssd_pf_fn pf, int64_t n,
                    const uint8_t *ops, const int64_t *offs, const int64_t *lens, int64_t qd,
                    double *out)
{
    if (qd < 1)
        qd = 1;
    if (qd > n)
        qd = n > 0 ? n : 1;
    if (T->qcap < qd) {
        int64_t *nq = (int64_t *)realloc(T->qheap, (size_t)qd * sizeof(int64_t));
        if (!nq)
            return -1;
        T->qheap = nq;
        T->qcap = qd;
    }
    int64_t *h = T->qheap, hn = 0;
    int64_t start = T->now, last = T->now;
    T->floor = start;
    for (int64_t i = 0; i < n; i++) {
        if (pf) {
            if (i + PF_FAR < n)
                pf(ftl, 0, ops[i + PF_FAR], offs[i + PF_FAR]);
            if (i + PF_NEAR < n)
                pf(ftl, 1, ops[i + PF_NEAR], offs[i + PF_NEAR]);
        }
        int64_t t = (hn < qd) ? start : q_pop(h, &hn);
        T->floor = t;
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
        q_push(h, &hn, c);
    }
    T->now = last;
    return 0;
}
