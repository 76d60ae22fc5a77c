/* ocssd_vector.c - see ocssd_vector.h */
#include "ocssd_vector.h"

enum { STATE = 0, WP = 1, COLS = 3 };     /* the chunk log's columns (devices/ocssd.py) */

/* The first ppa outside the device, then the first on an OFFLINE chunk (err[0] its index): the two
   rules a refused write and a refused read check first, in that order; 0 when neither is broken. */
static int64_t first_misplaced(int64_t n, const int64_t *ppas, int64_t total, int64_t sectors,
                               const int64_t *table, int64_t offline, int64_t *err)
{
    for (int64_t i = 0; i < n; i++)
        if (ppas[i] < 0 || ppas[i] >= total)
            return err[0] = i, OCV_OUTSIDE;
    for (int64_t i = 0; i < n; i++)
        if (table[ppas[i] / sectors * COLS + STATE] == offline)
            return err[0] = i, OCV_OFFLINE;
    return 0;
}

/* Why the write is refused, as devices/ocssd.py words it: the first rule broken in the order
   its messages take them (every ppa inside; no chunk OFFLINE; none CLOSED; each chunk's sectors
   on from its write pointer; ws_min per chunk; counts splitting the vector; ws_min per chunk and
   write), err[] naming the offender. Only on a refused write: a pass per rule. */
static int64_t diagnose(int64_t n, const int64_t *ppas, int64_t nwrites, const int64_t *counts,
                        int64_t nr_chunks, int64_t sectors, int64_t ws_min, const int64_t *table,
                        int64_t closed, int64_t offline, int64_t *scratch, int64_t *uniq, int64_t *per,
                        int64_t *first, int64_t *err)
{
    int64_t total = nr_chunks * sectors, nu = 0, code = first_misplaced(n, ppas, total, sectors, table,
                                                                       offline, err);
    if (code)
        return code;
    for (int64_t i = 0; i < n; i++)
        if (table[ppas[i] / sectors * COLS + STATE] == closed)
            return err[0] = i, OCV_CLOSED;
    for (int64_t i = 0; i < n && !code; i++) {
        int64_t c = ppas[i] / sectors, u = scratch[c];
        if (u < 0) {
            u = scratch[c] = nu++;
            uniq[u] = c;
            per[u] = 0;
            first[u] = i;
        }
        if (ppas[i] != c * sectors + table[c * COLS + WP] + per[u])
            err[0] = i, err[1] = table[c * COLS + WP] + per[u], code = OCV_ORDER;
        per[u]++;
    }
    if (!code) {            /* the lowest chunk with a count off ws_min, at its first sector */
        int64_t best = -1;
        for (int64_t u = 0; u < nu; u++)
            if (per[u] % ws_min && (best < 0 || uniq[u] < uniq[best]))
                best = u;
        if (best >= 0)
            err[0] = first[best], err[1] = per[best], code = OCV_WS_MIN;
    }
    if (!code && nwrites >= 0) {
        int64_t sum = 0, neg = 0;
        for (int64_t w = 0; w < nwrites; w++)
            sum += counts[w], neg |= counts[w] < 0;
        if (neg || sum != n)
            code = OCV_COUNTS;
    }
    for (int64_t w = 0, a = 0; !code && nwrites > 1 && w < nwrites; a += counts[w++]) {
        for (int64_t u = 0; u < nu; u++)
            per[u] = 0;
        for (int64_t i = a; i < a + counts[w]; i++)
            per[scratch[ppas[i] / sectors]]++;
        int64_t best = -1;
        for (int64_t u = 0; u < nu; u++)
            if (per[u] % ws_min && (best < 0 || uniq[u] < uniq[best]))
                best = u;
        if (best >= 0)
            err[0] = w, err[1] = uniq[best], err[2] = per[best], code = OCV_WRITE_WS_MIN;
    }
    for (int64_t u = 0; u < nu; u++)
        scratch[uniq[u]] = -1;
    return code ? code : OCV_COUNTS;       /* (a refused write breaks one of the rules above) */
}

static int64_t fail(int64_t nu, const int64_t *uniq, int64_t *scratch)
{
    for (int64_t i = 0; i < nu; i++)
        scratch[uniq[i]] = -1;
    return -1;
}

static int64_t check(int64_t n, const int64_t *ppas, int64_t nwrites, const int64_t *counts,
                     int64_t nr_chunks, int64_t sectors, int64_t ws_min, int64_t ws_opt,
                     const int64_t *table, int64_t closed, int64_t offline, int64_t *scratch,
                     int64_t *uniq, int64_t *per, int64_t *nuniq,
                     int64_t *run_first, int64_t *run_len, int64_t *runs, int64_t *tmp)
{
    int64_t nu = 0, total = nr_chunks * sectors, sum = 0;
    if (n <= 0)
        return -1;
    for (int64_t w = 0; w < nwrites; w++) {
        if (counts[w] < 0)
            return -1;
        sum += counts[w];
    }
    if (nwrites >= 0 && sum != n)
        return -1;
    /* the chunk rules over the whole vector; scratch[chunk] = its index in uniq */
    for (int64_t i = 0; i < n; i++) {
        int64_t p = ppas[i];
        if (p < 0 || p >= total)
            return fail(nu, uniq, scratch);
        int64_t c = p / sectors, u = scratch[c];
        if (u < 0) {
            int64_t st = table[c * COLS + STATE];
            if (st == offline || st == closed)
                return fail(nu, uniq, scratch);
            u = scratch[c] = nu++;
            uniq[u] = c;
            per[u] = 0;
        }
        if (p != c * sectors + table[c * COLS + WP] + per[u])
            return fail(nu, uniq, scratch);
        per[u]++;
    }
    for (int64_t u = 0; u < nu; u++)
        if (per[u] % ws_min)
            return fail(nu, uniq, scratch);
    /* per write: ws_min per chunk (several writes), and its runs */
    int64_t nr = 0, a = 0, ws = nwrites > 0 ? nwrites : 1;
    for (int64_t w = 0; w < ws; w++) {
        int64_t b = nwrites > 0 ? a + counts[w] : n, r0 = nr;
        if (nwrites > 1) {
            for (int64_t u = 0; u < nu; u++)
                tmp[u] = 0;
            for (int64_t i = a; i < b; i++)
                tmp[scratch[ppas[i] / sectors]]++;
            for (int64_t u = 0; u < nu; u++)
                if (tmp[u] % ws_min)
                    return fail(nu, uniq, scratch);
        }
        for (int64_t i = a; i < b; i++) {
            int64_t p = ppas[i];
            if (i == a || p != ppas[i - 1] + 1 || p / sectors != ppas[i - 1] / sectors || (p % sectors) % ws_opt == 0) {
                run_first[nr] = p;
                run_len[nr++] = 1;
            } else {
                run_len[nr - 1]++;
            }
        }
        runs[w] = nr - r0;
        a = b;
    }
    for (int64_t u = 0; u < nu; u++)
        scratch[uniq[u]] = -1;
    *nuniq = nu;
    return nr;
}

int64_t ocv_check(int64_t n, const int64_t *ppas, int64_t nwrites, const int64_t *counts,
                  int64_t nr_chunks, int64_t sectors, int64_t ws_min, int64_t ws_opt,
                  const int64_t *table, int64_t closed, int64_t offline, int64_t *scratch,
                  int64_t *uniq, int64_t *per, int64_t *nuniq,
                  int64_t *run_first, int64_t *run_len, int64_t *runs, int64_t *tmp, int64_t *err)
{
    int64_t nr = check(n, ppas, nwrites, counts, nr_chunks, sectors, ws_min, ws_opt, table, closed, offline,
                       scratch, uniq, per, nuniq, run_first, run_len, runs, tmp);
    if (nr >= 0)
        return nr;
    return diagnose(n, ppas, nwrites, counts, nr_chunks, sectors, ws_min, table, closed, offline, scratch,
                    uniq, per, tmp, err);
}

void ocv_apply(int64_t nuniq, const int64_t *uniq, const int64_t *per, int64_t *table, int64_t sectors,
               int64_t open, int64_t closed)
{
    for (int64_t u = 0; u < nuniq; u++) {
        int64_t *row = table + uniq[u] * COLS;
        row[WP] += per[u];
        row[STATE] = row[WP] == sectors ? closed : open;
    }
}

int64_t ocv_read_check(int64_t n, const int64_t *ppas, int64_t nr_chunks, int64_t sectors, int64_t mw_cunits,
                       const int64_t *table, int64_t closed, int64_t offline, int64_t *run_first, int64_t *run_len,
                       int64_t *err)
{
    int64_t nr = 0, total = nr_chunks * sectors, prev = -1, bad = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t p = ppas[i];
        if (p < 0 || p >= total) {
            bad = 1;
            break;
        }
        int64_t c = p / sectors;
        const int64_t *row = table + c * COLS;
        if (row[STATE] == offline || (row[STATE] != closed && p - c * sectors >= row[WP] - mw_cunits)) {
            bad = 1;
            break;
        }
        int64_t last = prev;        /* the previous sector's chunk */
        prev = c;
        if (i == 0 || p != ppas[i - 1] + 1 || c != last) {
            run_first[nr] = p;
            run_len[nr++] = 1;
        } else {
            run_len[nr - 1]++;
        }
    }
    if (!bad)
        return nr;
    /* refused: the first rule broken in devices/ocssd.py's order (inside, OFFLINE, readable) */
    int64_t code = first_misplaced(n, ppas, total, sectors, table, offline, err);
    if (code)
        return code;
    for (int64_t i = 0; i < n; i++) {
        int64_t c = ppas[i] / sectors;
        if (table[c * COLS + STATE] != closed && ppas[i] - c * sectors >= table[c * COLS + WP] - mw_cunits)
            return err[0] = i, OCV_UNREADABLE;
    }
    return OCV_UNREADABLE;      /* (not reached) */
}
