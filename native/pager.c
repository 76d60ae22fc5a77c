/* userfaultfd pager core (see pager.h for the API, docs/design.md "The pager" for the picture).
 *
 * THE PROTOCOL. One mutex (mu) guards every page's state; every state change and every uffd
 * ioctl that goes with it happens under it, so the handler thread and the resolver (the Python
 * thread calling pg_take_fetch / pg_fetched / pg_evict_* / pg_take_discards / pg_discarded) see a
 * state and the mapping agree.
 *
 * Page states:  NEVER     unmapped, no backend copy: its contents are zeros
 *               STORED    unmapped, the backend holds its contents
 *               QUEUED    a fault is waiting for it; in the fetch queue, room reserved
 *               FETCHING  taken by the resolver, backend read in progress, room reserved
 *               RESIDENT  mapped; write-protected unless DIRTY
 *               EVICTING  mapped and write-protected; chosen as a victim, write-out in progress
 * Flags: DIRTY (written since mapped: the WP fault saw it), REF (faulted since the CLOCK hand
 * last passed), COPY (the backend holds a copy; valid iff not DIRTY), WAITER (a write faulted on
 * it while EVICTING), STALE (discard_on_write only: the backend holds an out-of-date copy that is
 * queued for discard; never with COPY, always with DIRTY), SPEC (read by fault-around and not
 * touched since: no fault has named it), AHEAD (claimed by fault-around, until pg_fetched),
 * REARMED (rearm_wp only: a RESIDENT|DIRTY page the CLOCK hand write-protected again when it
 * cleared REF; only ever on a RESIDENT, mapped page, always with DIRTY).
 * Invariant: a RESIDENT page without
 * DIRTY is write-protected, so a write to it cannot go unseen; a RESIDENT|DIRTY page is
 * write-protected iff REARMED (or after an aborted eviction, below); write protection is only
 * ever set on a mapped page (RESIDENT or EVICTING); "used" = RESIDENT + EVICTING + QUEUED +
 * FETCHING pages <= budget.
 *
 * MISSING fault on NEVER/STORED: if used < budget, admit it: NEVER -> UFFDIO_COPY of zeros
 *   (with MODE_WP, or without and DIRTY for a write fault) -> RESIDENT; STORED -> QUEUED (the
 *   faulting tid is remembered for SIGBUS). Otherwise the fault waits in the pending FIFO and
 *   eviction is asked for; pending faults are admitted first whenever room frees.
 * MISSING on QUEUED/FETCHING: remember the tid; the UFFDIO_COPY that maps the page wakes it.
 * Resolver: pg_take_fetch (QUEUED -> FETCHING), backend.swap_in, pg_fetched: UFFDIO_COPY with
 *   MODE_WP -> RESIDENT|COPY; or on failure tgkill(SIGBUS) each waiting tid, wake them, back to
 *   STORED (a later touch retries the read).
 * WP fault on RESIDENT: DIRTY|REF, UFFDIO_WRITEPROTECT mode 0 (which wakes the writer). With
 *   discard_on_write and COPY: the copy is stale now: COPY -> STALE and the page joins the discard
 *   queue (a FIFO of page numbers; an entry whose page has lost STALE since is skipped).
 *   A WP fault on a RESIDENT|REARMED page (rearm_wp) only clears REARMED, sets REF and
 *   unprotects: the page is DIRTY already, so the discard test (COPY without DIRTY) cannot queue
 *   it again, and its backend copy state (COPY/STALE) is untouched.
 * WP fault on EVICTING: WAITER; the writer sleeps until the eviction ends (below).
 * Eviction (resolver, when used + pending > budget - headroom/2, down to budget - headroom):
 *   pg_evict_begin: CLOCK over the RESIDENT pages in fault order (a REF page loses REF and goes
 *   round again) -> EVICTING; with rearm_wp a DIRTY page losing REF is write-protected again and
 *   marked REARMED (so a write to it is a referenced signal again: without it, a dirty page in
 *   constant use gives no signal after its first write and CLOCK degrades to FIFO for it); the
 *   re-arms are issued after the hand stops, sorted and merged into ranges of adjacent pages, under
 *   the lock, for the pages still RESIDENT|REARMED (a page re-armed and then taken as a victim in
 *   the same scan loses REARMED and is protected as a victim instead). Every page the hand passes is
 *   RESIDENT (mapped) and stays so while the lock is held, so a re-arm never lands on an unmapped
 *   page; a WP event already read for it before the lock is taken is handled by its state then
 *   (RESIDENT|REARMED: unprotect; EVICTING: WAITER). Victims lose REARMED: they are protected as
 *   victims; on ok=0 they are RESIDENT|DIRTY write-protected without REARMED, which the plain WP
 *   path handles (DIRTY|REF, unprotect). Each dirty victim is write-protected *then* copied, so a write
 *   after the copy faults and waits. Python writes the dirty copies with one swap_out.
 *   pg_evict_end(ok=1): MADV_DONTNEED each victim -> STORED (dirty, or clean with COPY) or NEVER
 *   (clean, never stored: still zeros), and wake its WAITERs: they fault again as MISSING and read
 *   the page back, write included after. ok=0 (swap_out failed): the clean victims are released
 *   all the same (they needed no write: a full backend still leaves them as room); the dirty ones go
 *   back to RESIDENT, still DIRTY (now write-protected: the next write faults and unprotects again).
 * A backend that keeps failing the write-outs (full): faults waiting for room would wait forever, so
 *   the resolver, after EVICT_GIVE_UP failed evictions in a row that released no page, calls pg_fail_waiting: every fault
 *   waiting for room gets SIGBUS (as a failed read), with a line on stderr naming the backend's error.
 * Only RESIDENT pages are victims, so a page whose fault is in flight is never evicted.
 * Discards (discard_on_write): pg_take_discards hands out the queued pages still STALE and clears
 *   STALE (so a page queued twice is handed out once); Python calls backend.discard once for them,
 *   then pg_discarded: ok=1 counts them; ok=0 (discard failed) sets STALE again without requeueing
 *   (the stale copy is dropped when the page is written out, else at close). The resolver takes the
 *   discards whenever the queue is not empty, after fetching and before evicting, so it never
 *   blocks with discards queued. Ordering against swap_out of the same page — a discard must never
 *   hit a copy written after it was queued: (1) a victim that is STALE when its eviction ends with
 *   ok=1 has just been overwritten by swap_out, so it loses STALE (-> COPY) and its queue entry
 *   becomes a skipped one: the new copy is never discarded, and the old one needed no discard
 *   (counted in discards_skipped);
 *   (2) discards taken and evictions are mutually exclusive: pg_take_discards fails with EBUSY while
 *   an eviction is open and pg_evict_begin while taken discards are not yet pg_discarded, so a
 *   page's discard is never in flight beside its swap_out; (3) a taken page is RESIDENT and DIRTY
 *   and stays so until pg_discarded (only an eviction could change it), so ok=0 can restore STALE.
 *   pg_stored_pages lists COPY and STALE pages, so close discards the stale copies still queued.
 * Fault-around: after pg_take_fetch the resolver may pg_claim pages the backend says are likely
 *   needed with the taken ones: only STORED pages with a valid COPY, in the order given, while
 *   used + pending < budget (so a claim never makes a fault wait, and asks for no eviction the
 *   headroom rule would not ask for anyway). Claimed: STORED -> FETCHING|SPEC, room reserved, read in
 *   the same swap_in and resolved by the same pg_fetched as the taken pages (a fault on one meanwhile
 *   waits like on any FETCHING page). Mapped without REF (so CLOCK takes an untouched one first).
 *   Any fault event naming a SPEC page (a read that came before it was mapped, a first write) clears
 *   SPEC and counts a hit; a SPEC page evicted counts unused. Reads of a mapped page make no fault, so
 *   a page only read after it was mapped counts unused: the hit count is a lower bound.
 * Prefetch (pg_prefetch): like a claim, but the page is queued (STORED -> QUEUED|SPEC|AHEAD, room
 *   reserved) with no waiter, and the resolver takes it with the faults; a fault on it meanwhile
 *   waits like on any QUEUED page (touch() leaves the hit to pg_fetched, as for FETCHING).
 *   With make_room, a page with no room yet joins the pending FIFO as a record with tid 0 (no
 *   thread: never signalled, never a waiter), so eviction is asked for it as for a fault and it is
 *   admitted in order when room frees (admit_ahead: read only if it still holds only a backend
 *   copy); at most budget/2 records pending, so one call cannot evict what it read. This is the
 *   single-threaded batching path: the caller announces a batch, the resolver reads it in swap_ins
 *   of up to fetch_batch pages and the evictions that make room are swap_outs of evict_batch.
 * A backend process (pg_serve): the resolver's calls above arrive from another process through the
 *   bridge thread, which makes them on this pager exactly as a resolver thread would. If that
 *   process ends while the pager is open (its pidfd turns readable, not at close), backend_gone:
 *   queued and being-read pages go back to STORED and their waiters get SIGBUS, an open eviction is
 *   undone (every victim RESIDENT again, its writers woken), discards taken are forgotten, and the
 *   faults waiting for room are admitted again; from then on admit() fails with SIGBUS any fault
 *   that needs the backend (a STORED page, or room when used >= budget), never queueing it, and no
 *   eviction is asked for. Pages mapped and pages never written keep working.
 * Any other event (a MISSING for a mapped page, a WP for an unmapped one) is stale: a thread
 * may have been woken already, or a signal interrupted its wait; UFFDIO_WAKE it again, it
 * retries the access and faults afresh if it must.
 */
#define _GNU_SOURCE
#include "pager.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { ST_NEVER, ST_STORED, ST_QUEUED, ST_FETCHING, ST_RESIDENT, ST_EVICTING };
enum { F_DIRTY = 1, F_REF = 2, F_COPY = 4, F_WAITER = 8, F_STALE = 16, F_SPEC = 32, F_AHEAD = 64, F_REARMED = 128 };
#define MSG_BATCH 64
#define STUCK_NS 10000000000LL  /* warn once when faults wait this long for a resolver that does not come */
#define CHECK_NS 1000000000LL   /* how often the handler looks for faults waiting on an absent resolver */

typedef struct { uint64_t addr, npages, first; int64_t stream; } region;
typedef struct { uint64_t page; uint32_t tid; uint32_t write; } fault_rec;
typedef struct { uint64_t *v; uint64_t cap, head, len; } fifo;  /* growable ring of page numbers */

struct pg_pager {
    int uffd, efd;
    uint32_t ps;
    uint64_t budget, low, trigger;
    pid_t pid;
    pthread_t handler;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    region *regions;
    uint32_t nregions;
    size_t cap_regions;
    uint8_t *state, *flags;
    uint64_t npages;
    size_t cap_state, cap_flags;
    fifo clock;                 /* RESIDENT pages in fault order: the CLOCK */
    fifo fetchq;                /* QUEUED pages */
    fifo discardq;              /* pages whose stale backend copy awaits a discard (STALE; else skipped) */
    uint32_t ndiscarding;       /* pages handed out by pg_take_discards, not yet pg_discarded */
    int discard_on_write;
    int rearm_wp;               /* the CLOCK hand write-protects DIRTY pages again when it clears REF */
    uint64_t *rearm;            /* pages re-armed by the current pg_evict_begin scan */
    size_t cap_rearm;
    fault_rec *waiters;         /* threads blocked on QUEUED/FETCHING pages (for SIGBUS) */
    size_t nwaiters, cap_waiters;
    fault_rec *pending;         /* faults waiting for room, FIFO from pending_head */
    size_t pending_head, pending_end, cap_pending;
    uint64_t resident, reserved;
    uint64_t *victims;
    uint8_t *victim_dirty;
    uint32_t nvictims;
    size_t cap_victims, cap_victim_dirty;
    int evicting, stopping, warned;
    int64_t resolver_seen_ns;   /* when the resolver last came for work */
    int64_t abort_ns;           /* abort() when faults wait this long for an absent resolver (0: never) */
    int64_t checked_ns;         /* when the handler last looked for that */
    pg_stats st;
    uint8_t *zero;
    /* serving a backend process (pg_serve) */
    pthread_t bridge;
    int serving, req_fd, rep_fd, pidfd;
    pg_channel *chan;
    int gone;                   /* the backend process ended while open: faults needing it fail */
    char gone_why[256];
};

/* ---------------------------------------------------------------- small containers */
static int fifo_push(fifo *q, uint64_t x) {
    if (q->len == q->cap) {
        uint64_t cap = q->cap ? 2 * q->cap : 1024;
        uint64_t *v = malloc(cap * sizeof *v);
        if (!v) return -ENOMEM;
        for (uint64_t i = 0; i < q->len; i++) v[i] = q->v[(q->head + i) % q->cap];
        free(q->v);
        q->v = v, q->cap = cap, q->head = 0;
    }
    q->v[(q->head + q->len++) % q->cap] = x;
    return 0;
}

static uint64_t fifo_pop(fifo *q) {
    uint64_t x = q->v[q->head];
    q->head = (q->head + 1) % q->cap, q->len--;
    return x;
}

static int grow(void **v, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return 0;
    size_t cap2 = *cap ? *cap : 64;
    while (cap2 < need) cap2 *= 2;
    void *n = realloc(*v, cap2 * elem);
    if (!n) return -ENOMEM;
    *v = n, *cap = cap2;
    return 0;
}

/* ---------------------------------------------------------------- pages and the uffd */
static int64_t page_of(const pg_pager *p, uint64_t addr) {
    for (uint32_t i = 0; i < p->nregions; i++) {
        const region *r = &p->regions[i];
        if (addr >= r->addr && addr < r->addr + r->npages * p->ps)
            return (int64_t)(r->first + (addr - r->addr) / p->ps);
    }
    return -1;
}

static const region *region_of(const pg_pager *p, uint64_t page) {
    uint32_t lo = 0, hi = p->nregions;  /* regions are numbered in order: binary search on first */
    while (hi - lo > 1) {
        uint32_t mid = (lo + hi) / 2;
        if (p->regions[mid].first <= page) lo = mid; else hi = mid;
    }
    return &p->regions[lo];
}

static uint64_t addr_of(const pg_pager *p, uint64_t page) {
    const region *r = region_of(p, page);
    return r->addr + (page - r->first) * p->ps;
}

static int u_copy(pg_pager *p, uint64_t addr, const uint8_t *src, int wp) {
    for (;;) {
        struct uffdio_copy c = {.dst = addr, .src = (uint64_t)(uintptr_t)src, .len = p->ps,
                                .mode = wp ? UFFDIO_COPY_MODE_WP : 0, .copy = 0};
        if (ioctl(p->uffd, UFFDIO_COPY, &c) == 0) return 0;
        if (errno != EAGAIN) return -errno;  /* EAGAIN: the mm is changing; retry */
    }
}

static int u_protect_range(pg_pager *p, uint64_t addr, uint64_t len, int on) {
    struct uffdio_writeprotect w = {.range = {.start = addr, .len = len},
                                    .mode = on ? UFFDIO_WRITEPROTECT_MODE_WP : 0};
    while (ioctl(p->uffd, UFFDIO_WRITEPROTECT, &w) != 0) {
        if (errno != EAGAIN) { p->st.uffd_errors++; return -errno; }
    }
    return 0;
}

static int u_protect(pg_pager *p, uint64_t addr, int on) { return u_protect_range(p, addr, p->ps, on); }

static void u_wake(pg_pager *p, uint64_t addr) {
    struct uffdio_range r = {.start = addr, .len = p->ps};
    if (ioctl(p->uffd, UFFDIO_WAKE, &r) != 0) p->st.uffd_errors++;
}

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static uint64_t used(const pg_pager *p) { return p->resident + p->reserved; }
static uint64_t npending(const pg_pager *p) { return p->pending_end - p->pending_head; }

static int need_evict(const pg_pager *p) {
    return !p->evicting && !p->stopping && !p->gone && p->clock.len > 0 && used(p) + npending(p) > p->trigger;
}

static void note_used(pg_pager *p) {
    if (used(p) > p->st.max_resident) p->st.max_resident = used(p);
}

static void add_waiter(pg_pager *p, uint64_t page, uint32_t tid) {
    if (!tid) return;  /* a prefetch record: no thread waits */
    for (size_t i = 0; i < p->nwaiters; i++)
        if (p->waiters[i].page == page && p->waiters[i].tid == tid) return;
    if (grow((void **)&p->waiters, &p->cap_waiters, p->nwaiters + 1, sizeof *p->waiters)) return;
    p->waiters[p->nwaiters++] = (fault_rec){.page = page, .tid = tid};
}

/* SIGBUS to thread tid, faulting at addr, with one line on stderr saying why (the thread takes it
 * on its way back from the fault: the default action ends the process). */
static void sigbus(pg_pager *p, uint32_t tid, uint64_t addr, const char *why) {
    if (!tid) return;  /* a prefetch record: no thread to fail */
    fprintf(stderr, "zswap pager: SIGBUS to thread %u touching %#llx: %s\n", tid, (unsigned long long)addr,
            why && *why ? why : "the backend failed");
    if (syscall(SYS_tgkill, p->pid, tid, SIGBUS) == 0) p->st.sigbus++;
}

/* Forget the threads waiting on page; with fail, SIGBUS each of them first (why: the reason). */
static void release_waiters(pg_pager *p, uint64_t page, int fail, const char *why) {
    for (size_t i = 0; i < p->nwaiters;) {
        if (p->waiters[i].page != page) { i++; continue; }
        if (fail) sigbus(p, p->waiters[i].tid, addr_of(p, page), why);
        p->waiters[i] = p->waiters[--p->nwaiters];
    }
}

static void make_resident(pg_pager *p, uint64_t page, uint8_t flags) {
    p->state[page] = ST_RESIDENT;
    p->flags[page] = (uint8_t)((p->flags[page] & F_COPY) | flags | F_REF);
    p->resident++;
    if (fifo_push(&p->clock, page)) p->st.uffd_errors++;
    note_used(p);
}

/* A fault event named page: a page read by fault-around was wanted after all (a hit; one still
 * being read is counted by pg_fetched once mapped). Lock held. */
static void touch(pg_pager *p, uint64_t page) {
    if (!(p->flags[page] & F_SPEC)) return;
    p->flags[page] = (uint8_t)((p->flags[page] & ~F_SPEC) | F_REF);
    if (p->state[page] != ST_FETCHING && p->state[page] != ST_QUEUED) p->st.spec_hits++;  /* else pg_fetched counts it */
}

/* A page only the backend holds (a valid copy, not mapped, not in flight): what a prefetch may read. */
static int readable_ahead(const pg_pager *p, uint64_t page) {
    return page < p->npages && p->state[page] == ST_STORED && (p->flags[page] & (F_COPY | F_DIRTY)) == F_COPY;
}

/* Queue page for reading as read-ahead, with no waiter. Lock held. */
static int queue_ahead(pg_pager *p, uint64_t page) {
    if (fifo_push(&p->fetchq, page)) { p->st.uffd_errors++; return -ENOMEM; }
    p->state[page] = ST_QUEUED;
    p->flags[page] |= F_SPEC | F_AHEAD;
    p->reserved++;
    return 0;
}

/* A prefetch record (tid 0, pg_prefetch with make_room) admitted: read the page if it still holds
 * only a backend copy; else (mapped, in flight, never written, the backend gone) nothing to read. */
static void admit_ahead(pg_pager *p, uint64_t page) {
    if (p->gone || p->stopping || !readable_ahead(p, page)) return;
    if (used(p) >= p->budget) {  /* only from backend_gone's re-admission; drop it */
        return;
    }
    queue_ahead(p, page);
    note_used(p);
}

/* A MISSING fault (or a pending one being retried) on page. Lock held. */
static void admit(pg_pager *p, uint64_t page, uint32_t tid, int write) {
    if (!tid) { admit_ahead(p, page); return; }
    uint64_t addr = addr_of(p, page);
    touch(p, page);
    switch (p->state[page]) {
    case ST_RESIDENT:
    case ST_EVICTING:
        p->st.stale_events++;
        u_wake(p, addr);
        return;
    case ST_QUEUED:
    case ST_FETCHING:
        add_waiter(p, page, tid);
        return;
    }
    if (p->gone && (p->state[page] == ST_STORED || used(p) >= p->budget)) {  /* only the backend could serve it */
        sigbus(p, tid, addr, p->gone_why);
        u_wake(p, addr);
        return;
    }
    if (used(p) >= p->budget) {
        if (grow((void **)&p->pending, &p->cap_pending, p->pending_end + 1, sizeof *p->pending) == 0) {
            p->pending[p->pending_end++] = (fault_rec){.page = page, .tid = tid, .write = (uint32_t)write};
            p->st.deferred++;
        }
        return;
    }
    if (p->state[page] == ST_NEVER) {
        int rc = u_copy(p, addr, p->zero, !write);
        if (rc == -EEXIST) p->st.uffd_errors++, write = 1;  /* mapped behind our back: keep it, dirty */
        else if (rc) { p->st.uffd_errors++; u_wake(p, addr); return; }
        p->st.zero_fills++;
        make_resident(p, page, write ? F_DIRTY : 0);
    } else {  /* ST_STORED */
        p->state[page] = ST_QUEUED;
        p->reserved++;
        if (fifo_push(&p->fetchq, page)) p->st.uffd_errors++;
        add_waiter(p, page, tid);
        note_used(p);
    }
}

/* Admit the pending faults, oldest first, while there is room. Lock held. */
static void drain_pending(pg_pager *p) {
    while (p->pending_head < p->pending_end) {
        fault_rec r = p->pending[p->pending_head];
        uint8_t s = p->state[r.page];
        if ((s == ST_NEVER || s == ST_STORED) && used(p) >= p->budget && (r.tid || readable_ahead(p, r.page))) break;
        p->pending_head++;
        admit(p, r.page, r.tid, (int)r.write);
    }
    if (p->pending_head == p->pending_end) p->pending_head = p->pending_end = 0;
    else if (p->pending_head > 1024 && p->pending_head * 2 > p->pending_end) {
        memmove(p->pending, p->pending + p->pending_head, npending(p) * sizeof *p->pending);
        p->pending_end -= p->pending_head, p->pending_head = 0;
    }
}

static void on_fault(pg_pager *p, const struct uffd_msg *m) {
    uint64_t addr = m->arg.pagefault.address & ~(uint64_t)(p->ps - 1);
    int64_t page = page_of(p, addr);
    if (page < 0) { p->st.stale_events++; return; }
    if (m->arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WP) {
        p->st.faults_wp++;
        touch(p, (uint64_t)page);
        switch (p->state[page]) {
        case ST_RESIDENT:
            if (p->flags[page] & F_REARMED) {  /* re-armed by the hand: DIRTY already, only a reference */
                p->flags[page] = (uint8_t)((p->flags[page] & ~F_REARMED) | F_REF);
                p->st.rearm_faults++;
                u_protect(p, addr, 0);  /* wakes the writer */
                break;
            }
            if (p->discard_on_write && (p->flags[page] & (F_COPY | F_DIRTY)) == F_COPY) {
                p->flags[page] = (uint8_t)((p->flags[page] & ~F_COPY) | F_STALE);
                if (fifo_push(&p->discardq, (uint64_t)page)) p->st.uffd_errors++;
                p->st.stale_copies++;
            }
            p->flags[page] |= F_DIRTY | F_REF;
            u_protect(p, addr, 0);  /* wakes the writer */
            break;
        case ST_EVICTING:
            if (!(p->flags[page] & F_WAITER)) p->st.evict_waits++;
            p->flags[page] |= F_WAITER;  /* woken by pg_evict_end */
            break;
        default:
            p->st.stale_events++;
            u_wake(p, addr);
        }
        return;
    }
    p->st.faults_missing++;
    admit(p, (uint64_t)page, m->arg.pagefault.feat.ptid,
          (m->arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WRITE) != 0);
}

/* Faults waiting on a resolver that has not come for a while: the likely cause is a thread touching
 * paged memory while it holds the GIL, which the resolver (Python) needs. Warn once after STUCK_NS;
 * after abort_ns, abort with what happened and what to do (a GIL deadlock never ends). */
static void check_stuck(pg_pager *p) {
    pthread_mutex_lock(&p->mu);
    int64_t now = now_ns(), waited = now - p->resolver_seen_ns;
    p->checked_ns = now;
    int evict_waiters = 0;
    for (uint32_t i = 0; p->evicting && i < p->nvictims && !evict_waiters; i++)
        evict_waiters = (p->flags[p->victims[i]] & F_WAITER) != 0;
    int waiting = p->fetchq.len || p->nwaiters || npending(p) || evict_waiters;
    if (!p->warned && waiting && waited > STUCK_NS && (p->abort_ns == 0 || p->abort_ns > STUCK_NS)) {
        p->warned = 1;
        fprintf(stderr, "zswap pager: page faults have waited over %lld s for the resolver thread: "
                "is a thread touching paged memory while holding the GIL (docs/design.md, "
                "\"The pager\"), or is the backend stuck?\n", STUCK_NS / 1000000000LL);
    }
    if (waiting && p->abort_ns > 0 && waited > p->abort_ns && p->serving) {  /* no GIL involved: a stuck backend */
        fprintf(stderr,
                "zswap pager: aborting: page faults have waited %.0f s for the backend process's resolver, which has "
                "not come back since: its backend call has not returned. ZSWAP_PAGER_ABORT_S=%.0f set this limit "
                "(0: never abort).\n", (double)waited / 1e9, (double)p->abort_ns / 1e9);
        abort();
    }
    if (waiting && p->abort_ns > 0 && waited > p->abort_ns) {
        fprintf(stderr,
                "zswap pager: aborting: page faults have waited %.0f s for the resolver thread, which has not "
                "run since. The usual cause: a call that holds the GIL (a numpy reduction with dtype=, a scalar "
                "access, a small slice) touched paged memory that was not resident, and the resolver is Python, "
                "so it can never run; else the backend's call has not returned. What to do: touch paged memory "
                "only from calls that release the GIL (Pager.copy, torch ops; docs/design.md \"The pager\" lists "
                "which calls are safe), or raise the budget. ZSWAP_PAGER_ABORT_S=%.0f set this limit (0: never "
                "abort).\n", (double)waited / 1e9, (double)p->abort_ns / 1e9);
        abort();
    }
    pthread_mutex_unlock(&p->mu);
}

static void *handler_main(void *arg) {
    pg_pager *p = arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);  /* Python's signals go to its own threads */
    struct uffd_msg msgs[MSG_BATCH];
    struct pollfd fds[2] = {{.fd = p->uffd, .events = POLLIN}, {.fd = p->efd, .events = POLLIN}};
    for (;;) {
        int r = poll(fds, 2, 1000);
        if (r < 0) {
            if (errno == EINTR) continue;
            break;
        }
        if (now_ns() - p->checked_ns >= CHECK_NS) check_stuck(p);
        if (r == 0) continue;
        if (fds[1].revents) break;
        ssize_t n = read(p->uffd, msgs, sizeof msgs);
        if (n < 0) {
            if (errno == EAGAIN || errno == EINTR) continue;
            break;
        }
        pthread_mutex_lock(&p->mu);
        for (size_t i = 0; i < (size_t)n / sizeof msgs[0]; i++)
            if (msgs[i].event == UFFD_EVENT_PAGEFAULT) on_fault(p, &msgs[i]);
        if (p->fetchq.len || p->discardq.len || need_evict(p)) pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
    }
    return NULL;
}

/* ---------------------------------------------------------------- the API */
static int open_uffd(void) {
    int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
    if (fd >= 0) return fd;
    int err = errno;
    int dev = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);  /* Linux >= 6.1 */
    if (dev < 0) return -err;
    fd = ioctl(dev, USERFAULTFD_IOC_NEW, O_CLOEXEC | O_NONBLOCK);
    err = errno;
    close(dev);
    return fd >= 0 ? fd : -err;
}

int pg_open(uint64_t budget_pages, uint64_t headroom_pages, uint32_t page_size, int discard_on_write,
            int rearm_wp, double abort_s, pg_pager **out) {
    if (budget_pages < 16 || headroom_pages < 1 || headroom_pages >= budget_pages ||
        page_size != (uint32_t)sysconf(_SC_PAGESIZE))
        return -EINVAL;
    pg_pager *p = calloc(1, sizeof *p);
    if (!p) return -ENOMEM;
    p->ps = page_size, p->budget = budget_pages, p->pid = getpid();
    p->discard_on_write = discard_on_write != 0;
    p->rearm_wp = rearm_wp != 0;
    p->low = budget_pages - headroom_pages;
    p->trigger = budget_pages - headroom_pages / 2;
    p->efd = -1;
    p->resolver_seen_ns = now_ns();
    p->abort_ns = abort_s > 0 ? (int64_t)(abort_s * 1e9) : 0;
    p->checked_ns = p->resolver_seen_ns;
    p->uffd = open_uffd();
    int rc = p->uffd < 0 ? p->uffd : 0;
    if (!rc) {
        struct uffdio_api api = {.api = UFFD_API, .features = UFFD_FEATURE_THREAD_ID};
        if (ioctl(p->uffd, UFFDIO_API, &api) != 0) rc = -errno;
    }
    if (!rc && (p->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) rc = -errno;
    if (!rc && !(p->zero = aligned_alloc(page_size, page_size))) rc = -ENOMEM;
    if (!rc) {
        memset(p->zero, 0, page_size);
        pthread_mutex_init(&p->mu, NULL);
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&p->cv, &ca);
        pthread_condattr_destroy(&ca);
        rc = -pthread_create(&p->handler, NULL, handler_main, p);
        if (rc) pthread_mutex_destroy(&p->mu), pthread_cond_destroy(&p->cv);
    }
    if (rc) {
        if (p->uffd >= 0) close(p->uffd);
        if (p->efd >= 0) close(p->efd);
        free(p->zero);
        free(p);
        return rc;
    }
    *out = p;
    return 0;
}

int pg_add_region(pg_pager *p, uint64_t npages, int64_t stream, uint64_t *addr, uint64_t *first) {
    if (npages == 0) return -EINVAL;
    size_t len = npages * p->ps;
    void *a = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (a == MAP_FAILED) return -errno;
    madvise(a, len, MADV_NOHUGEPAGE);  /* UFFDIO_COPY maps 4 KiB pages; keep khugepaged away too */
    struct uffdio_register reg = {.range = {.start = (uint64_t)(uintptr_t)a, .len = len},
                                  .mode = UFFDIO_REGISTER_MODE_MISSING | UFFDIO_REGISTER_MODE_WP};
    int rc = 0;
    if (ioctl(p->uffd, UFFDIO_REGISTER, &reg) != 0) rc = -errno;
    else if (!(reg.ioctls & (1ULL << _UFFDIO_COPY)) || !(reg.ioctls & (1ULL << _UFFDIO_WRITEPROTECT))) {
        ioctl(p->uffd, UFFDIO_UNREGISTER, &reg.range);
        rc = -EOPNOTSUPP;
    }
    pthread_mutex_lock(&p->mu);
    if (!rc && (grow((void **)&p->regions, &p->cap_regions, p->nregions + 1, sizeof *p->regions) ||
                grow((void **)&p->state, &p->cap_state, p->npages + npages, 1) ||
                grow((void **)&p->flags, &p->cap_flags, p->npages + npages, 1)))
        rc = -ENOMEM;
    if (!rc) {
        memset(p->state + p->npages, ST_NEVER, npages);
        memset(p->flags + p->npages, 0, npages);
        p->regions[p->nregions++] = (region){.addr = (uint64_t)(uintptr_t)a, .npages = npages, .first = p->npages,
                                             .stream = stream};
        *addr = (uint64_t)(uintptr_t)a, *first = p->npages;
        p->npages += npages;
    }
    pthread_mutex_unlock(&p->mu);
    if (rc) {
        if (rc != -EOPNOTSUPP) ioctl(p->uffd, UFFDIO_UNREGISTER, &reg.range);
        munmap(a, len);
    }
    return rc;
}

/* the CLOCK_MONOTONIC time timeout_ms from now (the condition variable's clock) */
static struct timespec deadline(int timeout_ms) {
    struct timespec dl;
    clock_gettime(CLOCK_MONOTONIC, &dl);
    dl.tv_sec += timeout_ms / 1000;
    dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (dl.tv_nsec >= 1000000000L) dl.tv_sec++, dl.tv_nsec -= 1000000000L;
    return dl;
}

int pg_wait(pg_pager *p, int timeout_ms) {
    struct timespec dl = deadline(timeout_ms);
    pthread_mutex_lock(&p->mu);
    p->resolver_seen_ns = now_ns();
    while (!p->stopping && p->fetchq.len == 0 && p->discardq.len == 0 && !need_evict(p))
        if (pthread_cond_timedwait(&p->cv, &p->mu, &dl) == ETIMEDOUT) break;
    p->resolver_seen_ns = now_ns();
    int mask = (p->fetchq.len ? PG_FETCH : 0) | (need_evict(p) ? PG_EVICT : 0) | (p->stopping ? PG_STOPPED : 0) |
               (p->discardq.len ? PG_DISCARD : 0);
    pthread_mutex_unlock(&p->mu);
    return mask;
}

int pg_take_fetch(pg_pager *p, uint64_t *pages, uint32_t cap) {
    pthread_mutex_lock(&p->mu);
    p->resolver_seen_ns = now_ns();
    uint32_t n = 0;
    while (n < cap && p->fetchq.len) {
        uint64_t page = fifo_pop(&p->fetchq);
        p->state[page] = ST_FETCHING;
        pages[n++] = page;
    }
    pthread_mutex_unlock(&p->mu);
    return (int)n;
}

int pg_claim(pg_pager *p, const uint64_t *candidates, uint32_t n, uint64_t *out, uint32_t cap) {
    pthread_mutex_lock(&p->mu);
    uint32_t k = 0;
    for (uint32_t i = 0; i < n && k < cap && used(p) + npending(p) < p->budget && !p->stopping; i++) {
        uint64_t page = candidates[i];
        if (page >= p->npages || p->state[page] != ST_STORED || (p->flags[page] & (F_COPY | F_DIRTY)) != F_COPY)
            continue;
        p->state[page] = ST_FETCHING;
        p->flags[page] |= F_SPEC | F_AHEAD;
        p->reserved++;
        out[k++] = page;
    }
    note_used(p);
    pthread_mutex_unlock(&p->mu);
    return (int)k;
}

int pg_prefetch(pg_pager *p, const uint64_t *pages, uint32_t n, int make_room) {
    pthread_mutex_lock(&p->mu);
    uint32_t k = 0;
    for (uint32_t i = 0; i < n && !p->stopping && !p->gone; i++) {
        uint64_t page = pages[i];
        if (!readable_ahead(p, page)) continue;
        if (used(p) + npending(p) < p->budget) {
            if (queue_ahead(p, page)) break;
        } else if (make_room && npending(p) < p->budget / 2) {  /* waits for room behind the faults */
            if (grow((void **)&p->pending, &p->cap_pending, p->pending_end + 1, sizeof *p->pending)) break;
            p->pending[p->pending_end++] = (fault_rec){.page = page, .tid = 0, .write = 0};
        } else {
            break;
        }
        k++;
    }
    note_used(p);
    if (k) pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    return (int)k;
}

int pg_fetched(pg_pager *p, const uint64_t *pages, const uint8_t *data, const uint8_t *ok, uint32_t n,
               const char *why) {
    int bad = 0;
    pthread_mutex_lock(&p->mu);
    p->resolver_seen_ns = now_ns();
    for (uint32_t i = 0; i < n; i++) {
        uint64_t page = pages[i];
        if (page >= p->npages || p->state[page] != ST_FETCHING) { bad = -EINVAL; continue; }
        uint64_t addr = addr_of(p, page);
        int rc = ok[i] ? u_copy(p, addr, data + (size_t)i * p->ps, 1) : -EIO;
        if (rc == -EEXIST) p->st.uffd_errors++, rc = 0;
        p->reserved--;
        uint8_t spec = p->flags[page] & F_SPEC;  /* still set: no fault has asked for it */
        uint8_t ahead = p->flags[page] & F_AHEAD;
        p->flags[page] &= (uint8_t)~(F_SPEC | F_AHEAD);
        if (rc == 0) {
            p->flags[page] |= F_COPY;
            make_resident(p, page, 0);
            if (spec) p->flags[page] = (uint8_t)((p->flags[page] & ~F_REF) | F_SPEC);
            p->st.pages_in++;
            p->st.spec_pages_in += ahead != 0;
            p->st.spec_hits += ahead && !spec;  /* touched while it was being read */
            release_waiters(p, page, 0, NULL);  /* UFFDIO_COPY woke them */
        } else {
            if (rc != -EIO) p->st.uffd_errors++;
            p->state[page] = ST_STORED;
            p->st.fetch_failures++;
            release_waiters(p, page, 1, why);
            u_wake(p, addr);  /* they take the signal on the way back (their wait is interruptible anyway) */
        }
    }
    p->st.fetch_batches++;
    drain_pending(p);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    return bad;
}

int pg_take_discards(pg_pager *p, uint64_t *pages, uint32_t cap) {
    pthread_mutex_lock(&p->mu);
    p->resolver_seen_ns = now_ns();
    if (p->evicting || p->ndiscarding) { pthread_mutex_unlock(&p->mu); return -EBUSY; }
    uint32_t n = 0;
    while (n < cap && p->discardq.len) {
        uint64_t page = fifo_pop(&p->discardq);
        if (!(p->flags[page] & F_STALE)) continue;  /* written out since, or handed out already */
        p->flags[page] &= (uint8_t)~F_STALE;
        pages[n++] = page;
    }
    p->ndiscarding = n;
    if (!p->discardq.len) pthread_cond_broadcast(&p->cv);  /* pg_quiesce may be waiting for it */
    pthread_mutex_unlock(&p->mu);
    return (int)n;
}

int pg_discarded(pg_pager *p, const uint64_t *pages, uint32_t n, int ok) {
    pthread_mutex_lock(&p->mu);
    if (n != p->ndiscarding) { pthread_mutex_unlock(&p->mu); return -EINVAL; }
    if (ok) p->st.discards += n, p->st.discard_batches += n > 0;
    else
        for (uint32_t i = 0; i < n; i++) p->flags[pages[i]] |= F_STALE;  /* still RESIDENT|DIRTY: see above */
    p->ndiscarding = 0;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    return 0;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Write-protect the re-armed pages p->rearm[0..n) still RESIDENT|REARMED, adjacent ones as one
 * range (same region: contiguous addresses). Lock held; every such page is mapped. */
static void rearm_pages(pg_pager *p, size_t n) {
    qsort(p->rearm, n, sizeof *p->rearm, cmp_u64);
    uint64_t start = 0, len = 0;  /* the open range: address, bytes, from p->rearm[i0] */
    size_t i0 = 0;
    for (size_t i = 0; i <= n; i++) {
        uint64_t page = i < n ? p->rearm[i] : 0, addr = 0;
        if (i < n) {
            if (p->state[page] != ST_RESIDENT || !(p->flags[page] & F_REARMED)) continue;
            addr = addr_of(p, page);
            if (len && addr == start + len) { len += p->ps; continue; }
        }
        if (len && u_protect_range(p, start, len, 1) == 0) p->st.rearms += len / p->ps;
        else if (len)  /* not protected (counted in uffd_errors): the pages stay plain DIRTY */
            for (size_t k = i0; k < i; k++) p->flags[p->rearm[k]] &= (uint8_t)~F_REARMED;
        start = addr, len = p->ps, i0 = i;
    }
}

int pg_evict_begin(pg_pager *p, uint32_t cap, uint64_t *pages, uint8_t *buf, uint32_t *ndirty) {
    *ndirty = 0;
    pthread_mutex_lock(&p->mu);
    p->resolver_seen_ns = now_ns();
    if (p->evicting || p->ndiscarding) { pthread_mutex_unlock(&p->mu); return -EBUSY; }
    if (p->stopping) { pthread_mutex_unlock(&p->mu); return 0; }
    uint64_t want = used(p) + npending(p) > p->low ? used(p) + npending(p) - p->low : 0;
    if (want > cap) want = cap;
    if (grow((void **)&p->victims, &p->cap_victims, want, sizeof *p->victims) ||
        grow((void **)&p->victim_dirty, &p->cap_victim_dirty, want, 1) ||
        (p->rearm_wp && grow((void **)&p->rearm, &p->cap_rearm, p->clock.len + 1, sizeof *p->rearm))) {
        pthread_mutex_unlock(&p->mu);
        return -ENOMEM;
    }
    uint32_t n = 0;
    size_t nrearm = 0;
    for (uint64_t spins = 2 * p->clock.len + 1; n < want && p->clock.len && spins; spins--) {
        uint64_t page = fifo_pop(&p->clock);
        if (p->flags[page] & F_REF) {  /* second chance */
            p->flags[page] &= (uint8_t)~F_REF;
            if (p->rearm_wp && (p->flags[page] & (F_DIRTY | F_REARMED)) == F_DIRTY && nrearm < p->cap_rearm) {
                p->flags[page] |= F_REARMED;  /* protected below, before the lock is released */
                p->rearm[nrearm++] = page;
            }
            fifo_push(&p->clock, page);
            continue;
        }
        p->flags[page] &= (uint8_t)~F_REARMED;  /* a victim: protected as one below */
        p->victims[n++] = page;
    }
    if (nrearm) rearm_pages(p, nrearm);
    /* dirty victims first: protect, then copy (a later write faults and waits for the end) */
    uint32_t d = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t page = p->victims[i];
        p->state[page] = ST_EVICTING;
        if (!(p->flags[page] & F_DIRTY)) continue;
        uint64_t addr = addr_of(p, page);
        u_protect(p, addr, 1);
        memcpy(buf + (size_t)d * p->ps, (const void *)(uintptr_t)addr, p->ps);
        p->victims[i] = p->victims[d], p->victims[d++] = page;
    }
    for (uint32_t i = 0; i < n; i++) {
        p->victim_dirty[i] = i < d;
        pages[i] = p->victims[i];
    }
    p->nvictims = n;
    p->evicting = n > 0;
    if (n) p->st.evict_batches++;
    pthread_mutex_unlock(&p->mu);
    *ndirty = d;
    return (int)n;
}

int pg_evict_end(pg_pager *p, int ok) {
    pthread_mutex_lock(&p->mu);
    p->resolver_seen_ns = now_ns();
    if (!p->evicting) { pthread_mutex_unlock(&p->mu); return -EINVAL; }
    int released = 0;
    for (uint32_t i = 0; i < p->nvictims; i++) {
        uint64_t page = p->victims[i], addr = addr_of(p, page);
        uint8_t f = p->flags[page];
        if (ok || !p->victim_dirty[i]) {  /* a clean victim needs no write: released either way */
            if (madvise((void *)(uintptr_t)addr, p->ps, MADV_DONTNEED) != 0) p->st.uffd_errors++;
            if (p->victim_dirty[i]) p->st.pages_out++, f |= F_COPY;  /* overwrites a STALE copy */
            else p->st.clean_drops++;
            if (f & F_STALE) p->st.discards_skipped++;
            if (f & F_SPEC) p->st.spec_unused++;
            p->state[page] = (f & F_COPY) ? ST_STORED : ST_NEVER;
            p->flags[page] = f & F_COPY;  /* STALE goes: its queue entry is skipped */
            p->resident--;
            p->st.evictions++;
            released++;
        } else {
            p->state[page] = ST_RESIDENT;
            p->flags[page] = f & (uint8_t)~F_WAITER;
            fifo_push(&p->clock, page);
        }
        if (f & F_WAITER) u_wake(p, addr);  /* the writer faults again and finds the page's new state */
    }
    if (!ok) p->st.evict_aborts++;
    p->evicting = 0, p->nvictims = 0;
    drain_pending(p);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    return released;
}

int pg_fail_waiting(pg_pager *p, const char *why) {
    pthread_mutex_lock(&p->mu);
    p->resolver_seen_ns = now_ns();
    size_t n = 0;  /* the faults still waiting for room, compacted to the front */
    for (size_t i = p->pending_head; i < p->pending_end; i++) {
        fault_rec r = p->pending[i];
        uint8_t st = p->state[r.page];
        if (st != ST_NEVER && st != ST_STORED) { u_wake(p, addr_of(p, r.page)); continue; }  /* served since */
        if (!r.tid) continue;  /* a prefetch record: dropped */
        p->pending[n++] = r;
    }
    for (size_t i = 0; i < n; i++) {
        int again = 0;  /* one signal and one line per thread */
        for (size_t j = 0; j < i && !again; j++) again = p->pending[j].tid == p->pending[i].tid;
        uint64_t addr = addr_of(p, p->pending[i].page);
        if (!again) sigbus(p, p->pending[i].tid, addr, why);
        u_wake(p, addr);
    }
    p->pending_head = p->pending_end = 0;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    return (int)n;
}

int64_t pg_stored_pages(pg_pager *p, uint64_t *pages, uint64_t cap) {
    pthread_mutex_lock(&p->mu);
    int64_t n = 0;
    for (uint64_t i = 0; i < p->npages; i++)
        if (p->flags[i] & (F_COPY | F_STALE)) {
            if ((uint64_t)n < cap) pages[n] = i;
            n++;
        }
    pthread_mutex_unlock(&p->mu);
    return n;
}

void pg_get_stats(pg_pager *p, pg_stats *out) {
    pthread_mutex_lock(&p->mu);
    *out = p->st;
    out->resident = p->resident;
    out->in_flight = p->reserved;
    out->waiting = npending(p);
    pthread_mutex_unlock(&p->mu);
}

static int busy(const pg_pager *p) {
    return !p->stopping && !p->gone && (p->fetchq.len || p->reserved || p->evicting || npending(p) || need_evict(p) ||
                            p->discardq.len || p->ndiscarding);
}

int pg_quiesce(pg_pager *p, int timeout_ms) {
    struct timespec dl = deadline(timeout_ms);
    pthread_mutex_lock(&p->mu);
    while (busy(p))
        if (pthread_cond_timedwait(&p->cv, &p->mu, &dl) == ETIMEDOUT) break;
    int quiet = !busy(p);
    pthread_mutex_unlock(&p->mu);
    return quiet;
}

void pg_stop(pg_pager *p) {
    pthread_mutex_lock(&p->mu);
    p->stopping = 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

int pg_close(pg_pager *p) {
    pg_stop(p);
    uint64_t one = 1;
    if (write(p->efd, &one, sizeof one) != sizeof one) return -errno;
    pthread_join(p->handler, NULL);
    if (p->serving) pthread_join(p->bridge, NULL);  /* it polls efd too */
    if (p->chan) munmap(p->chan, p->chan->bytes);
    /* Threads still waiting on a fault (the caller broke the contract: close() while they touch the
       memory) get SIGBUS with a line saying so, rather than waking up on memory that reads as zeros
       (unregistered) or is gone: unmap first, the registration goes with the mapping; closing the
       uffd then wakes every waiter, and it takes its signal (a later touch is a plain SIGSEGV). */
    struct uffd_msg msgs[MSG_BATCH];
    ssize_t got;
    while ((got = read(p->uffd, msgs, sizeof msgs)) > 0)  /* faults the handler never read */
        for (size_t i = 0; i < (size_t)got / sizeof msgs[0]; i++)
            if (msgs[i].event == UFFD_EVENT_PAGEFAULT)
                add_waiter(p, UINT64_MAX, msgs[i].arg.pagefault.feat.ptid);  /* only the thread matters now */
    for (size_t i = p->pending_head; i < p->pending_end; i++)
        add_waiter(p, p->pending[i].page, p->pending[i].tid);
    static const char closed[] = "the pager was closed while this thread waited for a page of it (close() needs "
                                 "every thread to have stopped touching paged memory)";
    for (size_t i = 0; i < p->nwaiters; i++) {
        int again = 0;
        for (size_t j = 0; j < i && !again; j++) again = p->waiters[j].tid == p->waiters[i].tid;
        if (!again) {
            fprintf(stderr, "zswap pager: SIGBUS to thread %u: %s\n", p->waiters[i].tid, closed);
            syscall(SYS_tgkill, p->pid, p->waiters[i].tid, SIGBUS);
        }
    }
    int rc = 0;
    for (uint32_t i = 0; i < p->nregions; i++)
        if (munmap((void *)(uintptr_t)p->regions[i].addr, p->regions[i].npages * p->ps) != 0) rc = -errno;
    close(p->uffd);
    close(p->efd);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p->regions), free(p->state), free(p->flags), free(p->clock.v), free(p->fetchq.v), free(p->discardq.v);
    free(p->waiters), free(p->pending), free(p->victims), free(p->victim_dirty), free(p->zero);
    free(p->rearm);
    free(p);
    return rc;
}

void pg_memcpy(uint64_t dst, uint64_t src, uint64_t n) {
    /* page by page, in order: a large memcpy may walk several pages at once (glibc's 4-page
       interleaved loop on CPUs with large caches), and a page the pager evicts while the copy is
       still in it faults again; in order, a copy faults each page it reads once */
    char *d = (char *)(uintptr_t)dst;
    const char *s = (const char *)(uintptr_t)src;
    while (n) {
        uint64_t k = 4096 - ((uintptr_t)s & 4095);
        if (k > n)
            k = n;
        memcpy(d, s, k);
        d += k;
        s += k;
        n -= k;
    }
}

/* ---------------------------------------------------------------- a backend served by another process */
int pg_page_streams(pg_pager *p, const uint64_t *pages, uint32_t n, int64_t *out) {
    int rc = 0;
    pthread_mutex_lock(&p->mu);
    for (uint32_t i = 0; i < n; i++) {
        if (pages[i] >= p->npages) { rc = -EINVAL; out[i] = 0; continue; }
        out[i] = region_of(p, pages[i])->stream;
    }
    pthread_mutex_unlock(&p->mu);
    return rc;
}

static uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

uint64_t pg_channel_bytes(uint32_t cap, uint32_t page_size) {
    uint64_t off = align_up(sizeof(pg_channel), 64);
    off += 2 * align_up((uint64_t)cap * 8, 64) + align_up(cap, 64);  /* pages, aux, ok */
    off = align_up(off, page_size);
    return off + (uint64_t)cap * page_size;                         /* data */
}

/* The backend process ended while the pager was open (see pager.h). Lock held. */
static void backend_gone(pg_pager *p, const char *why) {
    p->gone = 1;
    snprintf(p->gone_why, sizeof p->gone_why, "%s", why);
    while (p->fetchq.len) {  /* queued for a read that will never come */
        uint64_t page = fifo_pop(&p->fetchq);
        if (p->state[page] == ST_QUEUED) p->state[page] = ST_STORED, p->reserved--;
        p->flags[page] &= (uint8_t)~(F_SPEC | F_AHEAD);  /* prefetched, never read */
    }
    for (uint64_t page = 0; page < p->npages; page++)  /* taken by the dead resolver */
        if (p->state[page] == ST_FETCHING) {
            p->state[page] = ST_STORED, p->reserved--;
            p->flags[page] &= (uint8_t)~(F_SPEC | F_AHEAD);
        }
    for (size_t i = 0; i < p->nwaiters; i++) {  /* one signal and one line per thread */
        int again = 0;
        for (size_t j = 0; j < i && !again; j++) again = p->waiters[j].tid == p->waiters[i].tid;
        uint64_t addr = p->waiters[i].page < p->npages ? addr_of(p, p->waiters[i].page) : 0;
        if (!again) sigbus(p, p->waiters[i].tid, addr, p->gone_why);
        if (addr) u_wake(p, addr);
    }
    p->nwaiters = 0;
    for (uint32_t i = 0; p->evicting && i < p->nvictims; i++) {  /* undone: every victim stays mapped */
        uint64_t page = p->victims[i];
        if (p->flags[page] & F_WAITER) u_wake(p, addr_of(p, page));
        p->state[page] = ST_RESIDENT;
        p->flags[page] &= (uint8_t)~F_WAITER;  /* write-protected now: a write takes the plain WP path */
        fifo_push(&p->clock, page);
    }
    p->evicting = 0, p->nvictims = 0, p->ndiscarding = 0;
    size_t head = p->pending_head, end = p->pending_end;
    p->pending_head = p->pending_end = 0;
    for (size_t i = head; i < end; i++) {  /* waiting for room: admit them again, which fails them */
        fault_rec r = p->pending[i];
        admit(p, r.page, r.tid, (int)r.write);
    }
    pthread_cond_broadcast(&p->cv);
}

static void describe_exit(pg_pager *p, char *out, size_t len) {
    siginfo_t info;
    memset(&info, 0, sizeof info);
    pid_t pid = 0;
    if (waitid((idtype_t)3 /* P_PIDFD */, (id_t)p->pidfd, &info, WEXITED | WNOHANG | WNOWAIT) == 0) pid = info.si_pid;
    if (pid && info.si_code == CLD_EXITED)
        snprintf(out, len, "the backend process (pid %d) exited with status %d: pages it holds cannot be read "
                 "and no room can be made", pid, info.si_status);
    else if (pid)
        snprintf(out, len, "the backend process (pid %d) was killed by signal %d: pages it holds cannot be read "
                 "and no room can be made", pid, info.si_status);
    else
        snprintf(out, len, "the backend process ended: pages it holds cannot be read and no room can be made");
}

#define ROWS(p, off, type) ((type *)((char *)(p)->chan + (p)->chan->off))

static void serve_call(pg_pager *p) {
    pg_channel *ch = p->chan;
    uint32_t n = ch->n < ch->cap ? ch->n : ch->cap;
    uint64_t *pages = ROWS(p, off_pages, uint64_t), *aux = ROWS(p, off_aux, uint64_t);
    uint8_t *ok = ROWS(p, off_ok, uint8_t), *data = ROWS(p, off_data, uint8_t);
    ch->why[sizeof ch->why - 1] = 0;
    switch (ch->op) {
    case PG_OP_WAIT:
        ch->rc = pg_wait(p, ch->arg);
        ch->taken = ch->rc > 0 && (ch->rc & PG_FETCH) && n ? (uint32_t)pg_take_fetch(p, pages, n) : 0;
        break;
    case PG_OP_TAKE_FETCH: ch->rc = pg_take_fetch(p, pages, n); break;
    case PG_OP_CLAIM: {
        uint32_t cap = (uint32_t)ch->arg < ch->cap ? (uint32_t)ch->arg : ch->cap;
        ch->rc = pg_claim(p, aux, n, pages, cap);
        break;
    }
    case PG_OP_FETCHED: ch->rc = pg_fetched(p, pages, data, ok, n, ch->why); break;
    case PG_OP_TAKE_DISCARDS: ch->rc = pg_take_discards(p, pages, n); break;
    case PG_OP_DISCARDED: ch->rc = pg_discarded(p, pages, n, ch->arg); break;
    case PG_OP_EVICT_BEGIN: ch->rc = pg_evict_begin(p, n, pages, data, &ch->ndirty); break;
    case PG_OP_EVICT_END: ch->rc = pg_evict_end(p, ch->arg); break;
    case PG_OP_FAIL_WAITING: ch->rc = pg_fail_waiting(p, ch->why); break;
    case PG_OP_STREAMS: ch->rc = pg_page_streams(p, pages, n, (int64_t *)aux); break;
    default: ch->rc = -ENOSYS;
    }
}

static void *bridge_main(void *arg) {
    pg_pager *p = arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    struct pollfd fds[3] = {{.fd = p->req_fd, .events = POLLIN}, {.fd = p->pidfd, .events = POLLIN},
                            {.fd = p->efd, .events = POLLIN}};
    for (;;) {
        if (poll(fds, 3, -1) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        if (fds[2].revents) break;  /* pg_close */
        if (fds[0].revents & POLLIN) {  /* a call from the child (served even if it has died since) */
            uint64_t v = 1;
            if (read(p->req_fd, &v, sizeof v) != sizeof v) continue;
            serve_call(p);
            v = 1;
            if (write(p->rep_fd, &v, sizeof v) != sizeof v) p->st.uffd_errors++;
            continue;
        }
        if (fds[1].revents) {  /* the child ended */
            char why[256];
            describe_exit(p, why, sizeof why);
            pthread_mutex_lock(&p->mu);
            if (!p->stopping) backend_gone(p, why);  /* at close it is expected */
            pthread_mutex_unlock(&p->mu);
            break;
        }
        if (fds[0].revents) break;  /* POLLERR/POLLHUP on the eventfd: cannot happen */
    }
    return NULL;
}

int pg_serve(pg_pager *p, int shm_fd, uint32_t cap, int req_fd, int rep_fd, int pidfd) {
    if (p->serving || cap == 0) return -EINVAL;
    uint64_t bytes = pg_channel_bytes(cap, p->ps);
    void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, shm_fd, 0);
    if (m == MAP_FAILED) return -errno;
    pg_channel *ch = m;
    memset(ch, 0, sizeof *ch);
    ch->cap = cap;
    ch->bytes = bytes;
    ch->off_pages = align_up(sizeof *ch, 64);
    ch->off_aux = ch->off_pages + align_up((uint64_t)cap * 8, 64);
    ch->off_ok = ch->off_aux + align_up((uint64_t)cap * 8, 64);
    ch->off_data = align_up(ch->off_ok + align_up(cap, 64), p->ps);
    p->chan = ch, p->req_fd = req_fd, p->rep_fd = rep_fd, p->pidfd = pidfd;
    int rc = -pthread_create(&p->bridge, NULL, bridge_main, p);
    if (rc) { munmap(m, bytes); p->chan = NULL; return rc; }
    p->serving = 1;
    return 0;
}

int pg_backend_gone(pg_pager *p) {
    pthread_mutex_lock(&p->mu);
    int g = p->gone;
    pthread_mutex_unlock(&p->mu);
    return g;
}
