/* read_plan.c - the swap store's read rule (see read_plan.h). */
#include "read_plan.h"

#include <string.h>

#define DIGIT_BITS 11
#define DIGITS (1 << DIGIT_BITS)
#define SMALL 64                    /* insertion sort below this many slots */

/* order[0 .. n) := the positions of slots in ascending slot order (stable); tmp: n scratch */
static void sort_order(const int64_t *slots, int64_t n, int64_t *order, int64_t *tmp)
{
    for (int64_t i = 0; i < n; i++)
        order[i] = i;
    if (n <= SMALL) {
        for (int64_t i = 1; i < n; i++) {
            int64_t o = order[i], key = slots[o], j = i;
            for (; j > 0 && slots[order[j - 1]] > key; j--)
                order[j] = order[j - 1];
            order[j] = o;
        }
        return;
    }
    uint64_t top = 0;
    for (int64_t i = 0; i < n; i++)
        if ((uint64_t)slots[i] > top)
            top = (uint64_t)slots[i];
    int64_t count[DIGITS];
    for (int shift = 0; shift < 64 && (top >> shift) != 0; shift += DIGIT_BITS) {   /* LSD: stable */
        memset(count, 0, sizeof count);
        for (int64_t i = 0; i < n; i++)
            count[((uint64_t)slots[order[i]] >> shift) & (DIGITS - 1)]++;
        int64_t sum = 0;
        for (int d = 0; d < DIGITS; d++) {
            int64_t c = count[d];
            count[d] = sum;
            sum += c;
        }
        for (int64_t i = 0; i < n; i++)
            tmp[count[((uint64_t)slots[order[i]] >> shift) & (DIGITS - 1)]++] = order[i];
        memcpy(order, tmp, (size_t)n * sizeof *order);
    }
}

int64_t rp_plan_reads(const int64_t *slots, int64_t n, int64_t slots_per_zone, const int64_t *written,
                      int64_t nzones, int64_t window, int64_t max_pages, int64_t *buf)
{
    if (n < 0 || slots_per_zone < 1 || max_pages < 1 || window < 0 || nzones < 0)
        return RP_ARGS;
    int64_t *starts = buf, *lengths = buf + n, *row_of = buf + 2 * n, *req_of = buf + 3 * n;
    int64_t *s = buf + 4 * n, *order = buf + 5 * n, *tmp = buf + 6 * n;
    int ordered = 1;
    for (int64_t i = 0; i < n; i++) {
        if (slots[i] < 0)
            return RP_SLOT;
        if (i && slots[i] <= slots[i - 1])
            ordered = 0;
    }
    if (ordered) {                          /* GC's reads come sorted: no sort then */
        memcpy(s, slots, (size_t)n * sizeof *s);
    } else {
        sort_order(slots, n, order, tmp);
        for (int64_t i = 0; i < n; i++)
            s[i] = slots[order[i]];
    }
    int64_t nreq = 0;
    if (window == 0) {
        /* a run breaks at a gap or where a zone starts, and every max_pages within a run */
        int64_t run_first = 0;
        for (int64_t i = 0; i < n; i++) {
            int64_t x = s[i];
            int fresh = i == 0 || x != s[i - 1] + 1 || x % slots_per_zone == 0;
            if (fresh)
                run_first = i;
            else if ((i - run_first) % max_pages == 0)
                fresh = 1;
            if (fresh) {
                starts[nreq] = x;
                lengths[nreq++] = 0;
            }
            lengths[nreq - 1]++;
            int64_t at = ordered ? i : order[i];
            row_of[at] = i;                 /* requests cover the slots exactly, in order */
            req_of[at] = nreq - 1;
        }
        return nreq;
    }
    int64_t out_start = 0, lo_prev = -1;
    for (int64_t i = 0; i < n; i++) {
        int64_t x = s[i], z = x / slots_per_zone;
        if (z >= nzones)
            return RP_SLOT;
        int64_t zf = z * slots_per_zone, lim = zf + written[z];
        if (x >= lim)
            return RP_SLOT;
        int64_t lo = zf + (x - zf) / window * window;
        if (lo != lo_prev) {                /* the window around x, clipped at the zone's written end */
            if (nreq)
                out_start += lengths[nreq - 1];
            starts[nreq] = lo;
            lengths[nreq++] = (lo + window < lim ? lo + window : lim) - lo;
            lo_prev = lo;
        }
        int64_t at = ordered ? i : order[i];
        row_of[at] = out_start + (x - lo);
        req_of[at] = nreq - 1;
    }
    return nreq;
}

void rp_extras(int64_t n, const int64_t *buf, int64_t nreq, int64_t *extra_slots, int64_t *extra_rows)
{
    const int64_t *starts = buf, *lengths = buf + n, *s = buf + 4 * n;
    int64_t j = 0, row = 0, e = 0;
    for (int64_t r = 0; r < nreq; r++)
        for (int64_t y = starts[r]; y < starts[r] + lengths[r]; y++, row++) {
            if (j < n && s[j] == y) {
                j++;
                continue;
            }
            extra_slots[e] = y;
            extra_rows[e++] = row;
        }
}
