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
 *  erase:        die busy t_erase.
 *  host link:    one busy-until per direction, bytes / host_link bandwidth.
 *  command:      a fixed controller latency t_cmd before any work starts (not a shared
 *                resource: controllers process commands on several cores).
 *
 * Write buffer: a write is acknowledged once its data is in a bounded DRAM buffer.  Space is
 * held from acceptance until the NAND program carrying the data completes.  When the buffer is
 * full, the write waits for the earliest completing program; so the steady-state write
 * bandwidth is the rate at which the FTL drains the buffer, GC included.
 */
#include "ssd.h"

#include <stdlib.h>
#include <string.h>

static int64_t ns_of_us(double us) { return (int64_t)(us * 1000.0 + 0.5); }

int ssd_timing_init(ssd_timing *T, const ssd_params *p)
{
    memset(T, 0, sizeof(*T));
    T->n_ch = p->channels;
    T->n_dies = p->channels * p->dies_per_channel;
    T->ch_free = (int64_t *)calloc((size_t)T->n_ch, sizeof(int64_t));
    T->die_free = (int64_t *)calloc((size_t)T->n_dies, sizeof(int64_t));
    T->ch_ns_per_byte = 1000.0 / p->channel_mb_s;     /* MB/s = 1e6 B/s -> ns per byte */
    T->link_ns_per_byte = 1000.0 / p->host_link_mb_s;
    T->t_read = ns_of_us(p->t_read_us);
    T->t_prog = ns_of_us(p->t_prog_us);
    T->t_erase = ns_of_us(p->t_erase_us);
    T->t_cmd = ns_of_us(p->cmd_overhead_us);
    T->wb_cap = p->write_buffer_bytes / SSD_UNIT;
    if (T->wb_cap < 1)
        T->wb_cap = 1;
    T->wb_size = T->wb_cap + 64;
    T->wb_heap = (ssd_wb_ent *)malloc((size_t)T->wb_size * sizeof(ssd_wb_ent));
    if (!T->ch_free || !T->die_free || !T->wb_heap) {
        ssd_timing_free(T);
        return -1;
    }
    return 0;
}

void ssd_timing_free(ssd_timing *T)
{
    free(T->ch_free);
    free(T->die_free);
    free(T->wb_heap);
    free(T->qheap);
    T->ch_free = T->die_free = NULL;
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
    T->die_free[die] = sensed;
    int64_t cs = max64(sensed, T->ch_free[ch]);
    int64_t ce = cs + xfer(T->ch_ns_per_byte, bytes);
    T->ch_free[ch] = ce;
    T->cnt.media_read_bytes += bytes;
    return ce;
}

int64_t ssd_nand_prog(ssd_timing *T, int die, int64_t t, int64_t bytes)
{
    int ch = die % T->n_ch;
    int64_t cs = max64(t, max64(T->ch_free[ch], T->die_free[die]));
    int64_t ce = cs + xfer(T->ch_ns_per_byte, bytes);
    T->ch_free[ch] = ce;
    int64_t done = ce + T->t_prog;
    T->die_free[die] = done;
    return done;
}

int64_t ssd_nand_erase(ssd_timing *T, int die, int64_t t)
{
    int64_t s = max64(t, T->die_free[die]);
    T->die_free[die] = s + T->t_erase;
    T->cnt.erase_count++;
    return T->die_free[die];
}

int64_t ssd_link_in(ssd_timing *T, int64_t t, int64_t bytes)
{
    int64_t s = max64(t, T->link_in_free);
    T->link_in_free = s + xfer(T->link_ns_per_byte, bytes);
    return T->link_in_free;
}

int64_t ssd_link_out(ssd_timing *T, int64_t t, int64_t bytes)
{
    int64_t s = max64(t, T->link_out_free);
    T->link_out_free = s + xfer(T->link_ns_per_byte, bytes);
    return T->link_out_free;
}

/* ---- write buffer: min-heap of in-flight programs keyed by completion time ---- */

static void wb_pop(ssd_timing *T)
{
    ssd_wb_ent *h = T->wb_heap;
    T->wb_inflight -= h[0].units;
    int64_t n = --T->wb_n;
    if (n == 0)
        return;
    ssd_wb_ent x = h[n];
    int64_t i = 0;
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

static void wb_push(ssd_timing *T, int64_t t, int64_t units)
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
    h[i].units = units;
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

void ssd_wb_program(ssd_timing *T, int64_t done, int64_t units)
{
    if (units > T->wb_pending)
        units = T->wb_pending;
    if (units <= 0)
        return;
    T->wb_pending -= units;
    wb_push(T, done, units);
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
int ssd_submit_loop(ssd_timing *T, void *ftl, ssd_req_fn fn, int64_t n, const uint8_t *ops,
                    const int64_t *offs, const int64_t *lens, int64_t qd, double *out)
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
    for (int64_t i = 0; i < n; i++) {
        int64_t t = (hn < qd) ? start : q_pop(h, &hn);
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
