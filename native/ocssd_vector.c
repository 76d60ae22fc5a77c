/* ocssd_vector.c - see ocssd_vector.h */
#include "ocssd_vector.h"

enum { STATE = 0, WP = 1, COLS = 3 };     /* the chunk log's columns (devices/ocssd.py) */

static int64_t fail(int64_t nu, const int64_t *uniq, int64_t *scratch)
{
    for (int64_t i = 0; i < nu; i++)
        scratch[uniq[i]] = -1;
    return -1;
}

int64_t ocv_check(int64_t n, const int64_t *ppas, int64_t nwrites, const int64_t *counts,
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
    if (nwrites && sum != n)
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
    int64_t nr = 0, a = 0, ws = nwrites ? nwrites : 1;
    for (int64_t w = 0; w < ws; w++) {
        int64_t b = nwrites ? a + counts[w] : n, r0 = nr;
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
                       const int64_t *table, int64_t closed, int64_t offline, int64_t *run_first, int64_t *run_len)
{
    int64_t nr = 0, total = nr_chunks * sectors, prev = -1;
    if (n <= 0)
        return -1;
    for (int64_t i = 0; i < n; i++) {
        int64_t p = ppas[i];
        if (p < 0 || p >= total)
            return -1;
        int64_t c = p / sectors;
        const int64_t *row = table + c * COLS;
        if (row[STATE] == offline || (row[STATE] != closed && p - c * sectors >= row[WP] - mw_cunits))
            return -1;
        int64_t last = prev;        /* the previous sector's chunk */
        prev = c;
        if (i == 0 || p != ppas[i - 1] + 1 || c != last) {
            run_first[nr] = p;
            run_len[nr++] = 1;
        } else {
            run_len[nr - 1]++;
        }
    }
    return nr;
}
