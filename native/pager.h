/* userfaultfd pager core: the zswap_host._pager extension, used by zswap_host/pager/.
 *
 * A pager owns one userfaultfd, a handler thread that reads its fault events, and regions of
 * anonymous memory registered MISSING|WP. Pages are numbered across regions (a region's pages are
 * [first, first + npages)); the Python side turns a page number into a backend id. The backend is
 * Python (a thread of this process, or a process of its own reached through pg_serve's bridge
 * thread, below), so the C side never does I/O: pages to read are handed out (pg_take_fetch), pages to
 * read ahead with them claimed (pg_claim, fault-around), and their data handed back (pg_fetched); victims to write are handed out with their bytes
 * (pg_evict_begin) and the outcome handed back (pg_evict_end); with discard_on_write, pages whose
 * backend copy went stale are handed out to discard (pg_take_discards, pg_discarded). The
 * protocol is at the top of pager.c. Every call here releases the GIL (cffi's default); none of
 * them touches Python.
 *
 * Return values: 0 or a count on success, -errno on failure. */
#ifndef ZSWAP_PAGER_H
#define ZSWAP_PAGER_H
#include <stdint.h>
#include <stddef.h>

/* cffi:begin */
typedef struct pg_pager pg_pager;

/* counters since pg_open (monotonic unless marked "now") */
typedef struct {
    uint64_t faults_missing;     /* MISSING fault events read */
    uint64_t faults_wp;          /* write-protect fault events read */
    uint64_t zero_fills;         /* pages never written mapped as zeros (no I/O) */
    uint64_t fetch_batches;      /* pg_fetched calls */
    uint64_t pages_in;           /* pages mapped from backend data */
    uint64_t fetch_failures;     /* pages whose backend read failed */
    uint64_t sigbus;             /* SIGBUS signals sent to faulting threads */
    uint64_t evict_batches;      /* pg_evict_begin calls that chose victims */
    uint64_t evictions;          /* pages released (MADV_DONTNEED) by eviction */
    uint64_t pages_out;          /* dirty pages written out by eviction */
    uint64_t clean_drops;        /* pages released without I/O (clean) */
    uint64_t evict_aborts;       /* evictions undone because the write-out failed */
    uint64_t deferred;           /* faults that waited for room (resident at budget) */
    uint64_t evict_waits;        /* writes that faulted on a page being evicted (waited for it) */
    uint64_t stale_events;       /* events for pages already resolved (woken again) */
    uint64_t stale_copies;       /* discard_on_write: first writes that made a backend copy stale (queued) */
    uint64_t discards;           /* discard_on_write: stale copies discarded (pg_discarded ok) */
    uint64_t discard_batches;    /* discard_on_write: backend discard calls that succeeded */
    uint64_t discards_skipped;   /* discard_on_write: stale copies written over by an eviction before
                                    their discard ran (no discard needed) */
    uint64_t spec_pages_in;      /* fault-around: pages read speculatively (pg_claim) and mapped */
    uint64_t spec_hits;          /* fault-around: of those, touched before eviction (a fault on them) */
    uint64_t spec_unused;        /* fault-around: of those, evicted untouched */
    uint64_t rearms;             /* rearm_wp: dirty pages write-protected again by the CLOCK hand */
    uint64_t rearm_faults;       /* rearm_wp: WP faults on re-armed pages (only set REF, unprotect) */
    uint64_t uffd_errors;        /* unexpected ioctl failures (should stay 0) */
    uint64_t resident;           /* now: pages mapped in the regions */
    uint64_t max_resident;       /* most pages mapped + being fetched at once */
    uint64_t in_flight;          /* now: pages queued for or being fetched */
    uint64_t waiting;            /* now: faults waiting for room */
} pg_stats;

/* Open a pager holding at most budget_pages pages mapped (budget_pages >= 16), evicting when
 * full down to budget_pages - headroom_pages. page_size must be the system page size. Opens
 * the userfaultfd (syscall, else /dev/userfaultfd) and starts the handler thread.
 * discard_on_write: the first write to a mapped page with a backend copy queues that copy for a
 * discard (pg_take_discards); otherwise the stale copy stays until the page is written out.
 * rearm_wp: when the CLOCK hand clears a dirty page's referenced bit it write-protects the page
 * again, so its next write is a reference (one WP fault); otherwise a dirty page is referenced
 * only by faults, i.e. never again once written. abort_s > 0: abort the process, with a message
 * on stderr, when page faults have waited that long for a resolver that has not come (a GIL
 * deadlock); 0: never. */
int pg_open(uint64_t budget_pages, uint64_t headroom_pages, uint32_t page_size, int discard_on_write,
            int rearm_wp, double abort_s, pg_pager **out);
/* Map a region of npages (MAP_PRIVATE|MAP_ANONYMOUS|MAP_NORESERVE) and register it MISSING|WP.
 * stream: the placement hint its pages are written with (pg_page_streams). *addr: its address;
 * *first: the number of its first page. */
int pg_add_region(pg_pager *p, uint64_t npages, int64_t stream, uint64_t *addr, uint64_t *first);
/* The stream of each of pages[0..n) (its region's) into out; -EINVAL if one is out of range. */
int pg_page_streams(pg_pager *p, const uint64_t *pages, uint32_t n, int64_t *out);
/* Wait up to timeout_ms for work: returns a mask of PG_FETCH (pages to read), PG_EVICT
 * (eviction needed), PG_DISCARD (stale copies to discard), PG_STOPPED (pg_stop was called), or 0
 * on timeout. */
int pg_wait(pg_pager *p, int timeout_ms);
/* Take up to cap queued pages to read (they become "being fetched"). Returns how many. */
int pg_take_fetch(pg_pager *p, uint64_t *pages, uint32_t cap);
/* Fault-around: claim pages to read speculatively with the pages taken. candidates[0..n) in order
 * of preference; a candidate is claimed when it is a page of this pager whose only contents are a
 * valid backend copy (not mapped, not queued or being read, not dirty) and there is room (pages
 * mapped + in flight + faults waiting for room < budget; no eviction is asked for on its behalf). A
 * claimed page is "being fetched" exactly like a taken one (never a victim; a fault on it waits for
 * pg_fetched) and must be resolved by pg_fetched. Up to cap into out; returns how many. Candidates
 * out of range or not claimable are skipped. */
int pg_claim(pg_pager *p, const uint64_t *candidates, uint32_t n, uint64_t *out, uint32_t cap);
/* Prefetch (an MADV_WILLNEED): queue pages[0..n) for reading as if a fault had asked for them, without
 * a waiting thread. A page is queued when it is a page of this pager whose only contents are a valid
 * backend copy (as pg_claim) and there is room (pages mapped + in flight + faults waiting for room <
 * budget: a prefetch never makes a fault wait and asks for no eviction of its own, so one call reads
 * at most the free room, about the eviction headroom when the budget is in use). Queued pages count
 * as read-ahead (spec_pages_in, spec_hits when touched). Returns how many were queued.
 * make_room = 1: pages beyond the room wait for it instead, behind the faults waiting for room (an
 * eviction is asked for them, as for faults; no thread waits), up to budget/2 such pages pending. */
int pg_prefetch(pg_pager *p, const uint64_t *pages, uint32_t n, int make_room);
/* Resolve taken pages: ok[i] = 1: data row i (page_size bytes) is page pages[i]'s contents,
 * mapped write-protected; ok[i] = 0: the read failed, each thread waiting on the page gets
 * SIGBUS, with a line on stderr ending in why (the backend's error; NULL: a generic one), and the
 * page stays in the backend. data may be NULL when every ok[i] is 0. */
int pg_fetched(pg_pager *p, const uint64_t *pages, const uint8_t *data, const uint8_t *ok, uint32_t n,
               const char *why);
/* Choose up to cap victims by CLOCK, write-protect them, and copy the dirty ones into buf
 * (row i = pages[i], for i < *ndirty; the clean ones follow in pages[]). Returns the number of
 * victims (0: nothing to do). Exactly one eviction may be open at a time. */
int pg_evict_begin(pg_pager *p, uint32_t cap, uint64_t *pages, uint8_t *buf, uint32_t *ndirty);
/* Take up to cap pages whose backend copy is stale (discard_on_write) for one backend discard;
 * returns how many (0: none left). -EBUSY while an eviction is open or taken discards are not yet
 * reported; pg_evict_begin is likewise -EBUSY until pg_discarded. */
int pg_take_discards(pg_pager *p, uint64_t *pages, uint32_t cap);
/* Report the discard of the n pages pg_take_discards handed out: ok = 1 done; ok = 0 (failed):
 * the copies stay stale (dropped when the page is written out, or at close). */
int pg_discarded(pg_pager *p, const uint64_t *pages, uint32_t n, int ok);
/* Close the open eviction: ok = 1 (the dirty victims are stored): release every victim;
 * ok = 0 (the write failed): release the clean victims, keep the dirty ones resident and dirty.
 * Returns how many victims were released. */
int pg_evict_end(pg_pager *p, int ok);
/* Fail every fault waiting for room in the budget (the backend keeps failing the write-outs that
 * would make it): SIGBUS to each waiting thread, with a line on stderr ending in why. Returns how
 * many faults were failed. */
int pg_fail_waiting(pg_pager *p, const char *why);
/* Pages that have a copy in the backend, valid or stale (for discarding them at close): up to
 * cap into pages; returns how many there are in all. */
int64_t pg_stored_pages(pg_pager *p, uint64_t *pages, uint64_t cap);
void pg_get_stats(pg_pager *p, pg_stats *out);
/* Wait up to timeout_ms until the resolver has nothing to do: no page queued or being read, no
 * fault waiting for room, no eviction open or due, no discard queued or running (or pg_stop was
 * called). Returns 1 when quiet, 0 on timeout. With no thread touching paged memory, the pager then makes no backend call until
 * the next fault, so the caller may use the backend itself. */
int pg_quiesce(pg_pager *p, int timeout_ms);
/* Make pg_wait return PG_STOPPED from now on (the resolver then finishes and exits). */
void pg_stop(pg_pager *p);
/* Stop the handler thread, unmap every region (its registration goes with it), close the fds, free.
 * A thread still waiting on a fault then gets SIGBUS, with a line on stderr saying the pager was
 * closed under it; a touch after close is a plain SIGSEGV (the memory is gone). */
int pg_close(pg_pager *p);
/* memcpy without the GIL: Python code touching paged memory must not hold the GIL (see
 * docs/design.md, "The pager"); this is the plain way to do it from Python. */
void pg_memcpy(uint64_t dst, uint64_t src, uint64_t n);

/* Serving the backend from another process (Pager.process; pager/process.py, pager/channel.py).
 * The resolver then runs in that process and calls the functions above through a channel: one
 * shared-memory block (a pg_channel header, then the rows below) and two eventfds. For each call
 * the child fills the header and the rows, writes 1 to req_fd and reads rep_fd; the bridge, a C
 * thread of this process started by pg_serve (no Python, no GIL), makes the call on the pager and
 * answers in the same block. Rows: pages (u64), aux (u64 or i64), ok (u8), data (page_size bytes
 * each), cap of each. Per op (n, arg in; rc out: the call's return value, a count or -errno):
 *   WAIT        arg = timeout_ms, n = fetch cap       rc = pg_wait's mask; with PG_FETCH and n > 0 the
 *                                                     bridge also takes the queued pages: pages[0..taken)
 *                                                     (one round trip less per fetch)
 *   TAKE_FETCH  n = cap                               pages[0..rc)
 *   CLAIM       aux[0..n) candidates, arg = cap       pages[0..rc) claimed
 *   FETCHED     pages, data, ok [0..n), why           rc
 *   TAKE_DISCARDS n = cap                             pages[0..rc)
 *   DISCARDED   pages[0..n), arg = ok                 rc
 *   EVICT_BEGIN n = cap                               pages[0..rc), data[0..ndirty) (the dirty ones)
 *   EVICT_END   arg = ok                              rc = released
 *   FAIL_WAITING why                                  rc
 *   STREAMS     pages[0..n)                           aux[0..n) as int64 streams
 * When the child exits while the pager is open (pidfd readable), the backend is gone: every fault
 * waiting for a read or for room, and every later one that needs the backend (a page it holds, or
 * room when the budget is full), gets SIGBUS with a line naming how the child ended; an eviction
 * open then is undone (its victims stay mapped); pages never written still fault in as zeros. */
typedef struct {
    uint32_t op;         /* PG_OP_*, set by the child */
    int32_t rc;          /* the call's result, set by the bridge */
    int32_t arg;         /* timeout_ms (WAIT), cap (CLAIM), ok (DISCARDED, EVICT_END) */
    uint32_t n;          /* rows in, or the cap of rows out */
    uint32_t ndirty;     /* EVICT_BEGIN: dirty victims (their rows in data) */
    uint32_t taken;      /* WAIT: pages taken to fetch (pg_take_fetch) with the wait */
    uint32_t cap;        /* rows of each array (set by pg_serve) */
    uint64_t off_pages, off_aux, off_ok, off_data, bytes;  /* the layout (set by pg_serve) */
    char why[512];       /* FETCHED, FAIL_WAITING: the reason, NUL-terminated */
} pg_channel;
enum { PG_OP_WAIT = 1, PG_OP_TAKE_FETCH = 2, PG_OP_CLAIM = 3, PG_OP_FETCHED = 4, PG_OP_TAKE_DISCARDS = 5,
       PG_OP_DISCARDED = 6, PG_OP_EVICT_BEGIN = 7, PG_OP_EVICT_END = 8, PG_OP_FAIL_WAITING = 9,
       PG_OP_STREAMS = 10 };
/* Bytes of a channel of cap rows (the size to give shm_fd). */
uint64_t pg_channel_bytes(uint32_t cap, uint32_t page_size);
/* Map shm_fd (pg_channel_bytes(cap) bytes), write its header, and start the bridge thread serving
 * the child's calls from req_fd/rep_fd until pg_close, or until pidfd (the child's) is readable.
 * At most once per pager; the fds stay the caller's (close them after pg_close). */
int pg_serve(pg_pager *p, int shm_fd, uint32_t cap, int req_fd, int rep_fd, int pidfd);
/* 1 when the backend process has ended while the pager was open (faults needing it fail), else 0. */
int pg_backend_gone(pg_pager *p);

enum { PG_FETCH = 1, PG_EVICT = 2, PG_STOPPED = 4, PG_DISCARD = 8 };
/* cffi:end */
#endif
