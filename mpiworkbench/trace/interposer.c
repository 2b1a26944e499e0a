/* mpiworkbench's MPI interposer (the MPI profiling interface, PMPI).
 *
 * Loaded ahead of libmpi (LD_PRELOAD, or dlopen'ed RTLD_GLOBAL before mpi4py loads MPI), each
 * MPI_X below runs instead of libmpi's and calls PMPI_X. For every call it does two things:
 *
 *  1. always: writes an *in-flight record* (which call, peer, tag, bytes, since when) and a ring
 *     of the last point-to-point sends into a small shared-memory slot of this process,
 *     /dev/shm/mpiworkbench-<pid>.slot, which a hang report reads from outside while the rank
 *     sits blocked inside MPI;
 *  2. only while tracing is on: appends one fixed-size event to a preallocated buffer,
 *     /dev/shm/mpiworkbench-<pid>.events (also readable from outside).
 *
 * Timestamps are CLOCK_MONOTONIC seconds: one clock for every process of a host, the clock
 * Python's time.monotonic() reads, so an outside reader can say "blocked for 31 s".
 * Peers are world ranks (translated from the call's communicator, cached per communicator).
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define WB_MAGIC 0x57425452u /* "WBTR" */
#define WB_VERSION 1
#define WB_RECENT 16

/* Call kinds: the order is the Python side's KINDS table (wbtrace_kind_name). */
enum {
    K_SEND, K_SSEND, K_RECV, K_ISEND, K_ISSEND, K_IRECV, K_SENDRECV, K_SENDRECV_REPLACE,
    K_PROBE, K_MPROBE, K_MRECV, K_WAIT, K_WAITALL, K_WAITANY,
    K_BARRIER, K_BCAST, K_REDUCE, K_ALLREDUCE, K_GATHER, K_GATHERV, K_SCATTER, K_SCATTERV,
    K_ALLGATHER, K_ALLGATHERV, K_ALLTOALL, K_ALLTOALLV, K_NKINDS
};
static const char *KIND_NAMES[K_NKINDS] = {
    "MPI_Send", "MPI_Ssend", "MPI_Recv", "MPI_Isend", "MPI_Issend", "MPI_Irecv", "MPI_Sendrecv",
    "MPI_Sendrecv_replace", "MPI_Probe", "MPI_Mprobe", "MPI_Mrecv", "MPI_Wait", "MPI_Waitall",
    "MPI_Waitany", "MPI_Barrier", "MPI_Bcast", "MPI_Reduce", "MPI_Allreduce", "MPI_Gather",
    "MPI_Gatherv", "MPI_Scatter", "MPI_Scatterv", "MPI_Allgather", "MPI_Allgatherv",
    "MPI_Alltoall", "MPI_Alltoallv",
};

/* One recorded call: 56 bytes (the Python side's EVENT_DTYPE). */
typedef struct {
    double t0, t1;      /* entered, returned (CLOCK_MONOTONIC s) */
    double t_done;      /* for Isend/Irecv: when a Wait completed it (0 if never seen) */
    int32_t kind;
    int32_t peer;       /* world rank of dest/source/root; -1 none, -2 any source */
    int32_t tag;        /* tag asked for (-1 any tag, -3 none) */
    int32_t comm;       /* communicator handle (32 bits) */
    int64_t bytes;      /* bytes sent (send side), received (receive side) or contributed */
    int32_t peer2;      /* Sendrecv: the source (world); receives: actual source */
    int32_t tag2;       /* Sendrecv: the receive tag; receives: actual tag */
} wb_event;

typedef struct {
    double t;
    int32_t dest, tag;  /* world rank, tag */
    int64_t bytes;
    int32_t kind, comm;
} wb_sent;

/* The shared-memory slot (the Python side's SLOT_DTYPE). */
typedef struct {
    uint32_t magic, version;
    int32_t pid, rank, size, on;
    volatile int64_t calls;     /* MPI calls entered so far */
    volatile int32_t depth;     /* > 0 while inside a wrapped call */
    int32_t kind, peer, tag;
    int32_t comm, comm_size;
    int64_t bytes;
    double since;
    int64_t nsent;              /* sends so far; the last WB_RECENT are in sent[] */
    int64_t nevents, capacity, dropped;
    wb_sent sent[WB_RECENT];
} wb_slot;

static wb_slot local_slot;           /* used until MPI_Init maps the shared one */
static wb_slot *slot = &local_slot;
static wb_event *events = NULL;
static char slot_path[96], events_path[96];

static inline double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---------------------------------------------------------------- communicators */
#define COMM_CACHE 16
static struct { int32_t handle; int size; int *world; } comm_cache[COMM_CACHE];
static int comm_cache_next = 0;

static int32_t comm_id(MPI_Comm comm) { return (int32_t)(intptr_t)comm; }

static int world_rank(MPI_Comm comm, int r) {
    if (r < 0 || comm == MPI_COMM_WORLD) return r;
    if (comm == MPI_COMM_SELF) return slot->rank;
    int32_t id = comm_id(comm);
    for (int i = 0; i < COMM_CACHE; i++)
        if (comm_cache[i].world && comm_cache[i].handle == id)
            return r < comm_cache[i].size ? comm_cache[i].world[r] : r;
    int inter = 0;
    PMPI_Comm_test_inter(comm, &inter);
    if (inter) return r;
    MPI_Group g, wg;
    int n;
    PMPI_Comm_size(comm, &n);
    int *ranks = malloc(sizeof(int) * (size_t)n), *world = malloc(sizeof(int) * (size_t)n);
    if (!ranks || !world) { free(ranks); free(world); return r; }
    for (int i = 0; i < n; i++) ranks[i] = i;
    PMPI_Comm_group(comm, &g);
    PMPI_Comm_group(MPI_COMM_WORLD, &wg);
    PMPI_Group_translate_ranks(g, n, ranks, wg, world);
    PMPI_Group_free(&g);
    PMPI_Group_free(&wg);
    free(ranks);
    int i = comm_cache_next++ % COMM_CACHE;
    free(comm_cache[i].world);
    comm_cache[i].handle = id;
    comm_cache[i].size = n;
    comm_cache[i].world = world;
    return r < n ? world[r] : r;
}

static void forget_comm(MPI_Comm comm) {
    int32_t id = comm_id(comm);
    for (int i = 0; i < COMM_CACHE; i++)
        if (comm_cache[i].world && comm_cache[i].handle == id) {
            free(comm_cache[i].world);
            comm_cache[i].world = NULL;
        }
}

static inline int64_t nbytes(MPI_Count count, MPI_Datatype type) {
    int size = 0;
    if (type == MPI_DATATYPE_NULL || count <= 0) return 0;
    PMPI_Type_size(type, &size);
    return (int64_t)count * size;
}

static inline int64_t status_bytes(const MPI_Status *st) {
    int count = 0;
    PMPI_Get_count(st, MPI_BYTE, &count);
    return count == MPI_UNDEFINED ? 0 : count;
}

/* ---------------------------------------------------------------- record */
typedef struct { double t0; int32_t kind, peer, tag, comm; int64_t bytes; } call_t;

static inline call_t enter(int kind, MPI_Comm comm, int peer, int tag, int64_t bytes) {
    call_t c = {now(), kind, 0, tag, comm_id(comm), bytes};
    c.peer = world_rank(comm, peer);
    if (slot->depth++ == 0) {
        slot->kind = kind;
        slot->peer = c.peer;
        slot->tag = tag;
        slot->bytes = bytes;
        slot->comm = c.comm;
        slot->comm_size = 0;
        slot->since = c.t0;
    }
    slot->calls++;
    return c;
}

static inline void sent(const call_t *c) {
    if (c->peer < 0) return;
    wb_sent *s = &slot->sent[slot->nsent % WB_RECENT];
    s->t = c->t0; s->dest = c->peer; s->tag = c->tag; s->bytes = c->bytes;
    s->kind = c->kind; s->comm = c->comm;
    slot->nsent++;
}

/* Leave a call; returns the event recorded (NULL when tracing is off or the buffer is full). */
static inline wb_event *leave(const call_t *c) {
    slot->depth--;
    if (!slot->on || !events) return NULL;
    if (slot->nevents >= slot->capacity) { slot->dropped++; return NULL; }
    wb_event *e = &events[slot->nevents++];
    e->t0 = c->t0; e->t1 = now(); e->t_done = 0;
    e->kind = c->kind; e->peer = c->peer; e->tag = c->tag; e->comm = c->comm;
    e->bytes = c->bytes; e->peer2 = -3; e->tag2 = -3;
    return e;
}

static inline void received(wb_event *e, MPI_Comm comm, const MPI_Status *st) {
    if (!e || st == MPI_STATUS_IGNORE) return;
    e->peer2 = world_rank(comm, st->MPI_SOURCE);
    e->tag2 = st->MPI_TAG;
    e->bytes = status_bytes(st);
}

/* ---------------------------------------------------------------- requests (while tracing)
 * Isend/Irecv events are remembered by request handle, so the Wait that completes them can
 * set their completion time and, for receives, the actual source, tag and bytes. */
#define REQS 4096
static struct { MPI_Request req; int64_t event; MPI_Comm comm; } reqs[REQS];

static inline size_t req_hash(MPI_Request r) { return ((size_t)(intptr_t)r * 2654435761u) % REQS; }

static void remember(MPI_Request r, int64_t event, MPI_Comm comm) {
    size_t h = req_hash(r);
    for (size_t i = 0; i < REQS; i++, h = (h + 1) % REQS)
        if (reqs[h].event == 0) { reqs[h].req = r; reqs[h].event = event + 1; reqs[h].comm = comm; return; }
}

static void completed(MPI_Request r, const MPI_Status *st, double t) {
    if (r == MPI_REQUEST_NULL) return;
    size_t h = req_hash(r);
    for (size_t i = 0; i < REQS && reqs[h].event != 0; i++, h = (h + 1) % REQS) {
        if (reqs[h].req != r) continue;
        int64_t idx = reqs[h].event - 1;
        if (events && idx < slot->nevents) {
            wb_event *e = &events[idx];
            e->t_done = t;
            if (e->kind == K_IRECV) received(e, reqs[h].comm, st);
        }
        /* delete with backward-shift so later probes still find their entries */
        size_t hole = h;
        for (size_t j = (h + 1) % REQS; reqs[j].event != 0; j = (j + 1) % REQS) {
            size_t home = req_hash(reqs[j].req);
            if ((j > hole && (home <= hole || home > j)) || (j < hole && home <= hole && home > j)) {
                reqs[hole] = reqs[j];
                hole = j;
            }
        }
        reqs[hole].event = 0;
        return;
    }
}

static int64_t event_index(const wb_event *e) { return e ? (int64_t)(e - events) : -1; }

/* ---------------------------------------------------------------- control (ctypes) */
const char *wbtrace_kind_name(int kind) { return kind >= 0 && kind < K_NKINDS ? KIND_NAMES[kind] : "?"; }
int wbtrace_nkinds(void) { return K_NKINDS; }
int wbtrace_sizeof_event(void) { return (int)sizeof(wb_event); }
int wbtrace_sizeof_slot(void) { return (int)sizeof(wb_slot); }
const char *wbtrace_slot_path(void) { return slot_path; }
const char *wbtrace_events_path(void) { return events_path; }
int64_t wbtrace_calls(void) { return slot->calls; }
int64_t wbtrace_nevents(void) { return slot->nevents; }
int64_t wbtrace_dropped(void) { return slot->dropped; }
double wbtrace_now(void) { return now(); }

/* Switch recording on into a fresh buffer of *capacity* events (0 on success). */
int wbtrace_start(int64_t capacity) {
    slot->on = 0;
    if (events) { munmap(events, (size_t)slot->capacity * sizeof(wb_event)); events = NULL; }
    memset(reqs, 0, sizeof reqs);
    slot->nevents = 0; slot->dropped = 0; slot->capacity = 0;
    if (capacity <= 0) return -1;
    snprintf(events_path, sizeof events_path, "/dev/shm/mpiworkbench-%d.events", (int)getpid());
    int fd = open(events_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) return -2;
    size_t len = (size_t)capacity * sizeof(wb_event);
    if (ftruncate(fd, (off_t)len) != 0) { close(fd); return -3; }
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) return -4;
    memset(p, 0, len); /* touch every page now, not during the traced calls */
    events = p;
    slot->capacity = capacity;
    slot->on = 1;
    return 0;
}

void wbtrace_stop(void) { slot->on = 0; }
int wbtrace_is_on(void) { return slot->on; }
const void *wbtrace_events(void) { return events; }

/* ---------------------------------------------------------------- init / finalize */
static void map_slot(void) {
    if (slot != &local_slot) return;
    snprintf(slot_path, sizeof slot_path, "/dev/shm/mpiworkbench-%d.slot", (int)getpid());
    int fd = open(slot_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) return;
    if (ftruncate(fd, (off_t)sizeof(wb_slot)) != 0) { close(fd); return; }
    void *p = mmap(NULL, sizeof(wb_slot), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) return;
    memcpy(p, &local_slot, sizeof(wb_slot));
    slot = p;
    slot->magic = WB_MAGIC;
    slot->version = WB_VERSION;
    slot->pid = (int32_t)getpid();
    slot->rank = -1;
    PMPI_Comm_rank(MPI_COMM_WORLD, &slot->rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &slot->size);
}

__attribute__((destructor)) static void unmap_files(void) {
    if (events_path[0]) unlink(events_path);
    if (slot_path[0]) unlink(slot_path);
}

int MPI_Init(int *argc, char ***argv) {
    int err = PMPI_Init(argc, argv);
    if (err == MPI_SUCCESS) map_slot();
    return err;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
    int err = PMPI_Init_thread(argc, argv, required, provided);
    if (err == MPI_SUCCESS) map_slot();
    return err;
}

int wbtrace_loaded(void) { return slot != &local_slot; }

int MPI_Comm_free(MPI_Comm *comm) {
    forget_comm(*comm);
    return PMPI_Comm_free(comm);
}

/* ---------------------------------------------------------------- point to point */
#define SEND_LIKE(NAME, KIND, CT)                                                           \
    int NAME(const void *buf, CT count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) { \
        call_t c = enter(KIND, comm, dest, tag, nbytes(count, type));                        \
        sent(&c);                                                                            \
        int err = P##NAME(buf, count, type, dest, tag, comm);                                \
        leave(&c);                                                                           \
        return err;                                                                          \
    }
SEND_LIKE(MPI_Send, K_SEND, int)
SEND_LIKE(MPI_Ssend, K_SSEND, int)
SEND_LIKE(MPI_Send_c, K_SEND, MPI_Count)
SEND_LIKE(MPI_Ssend_c, K_SSEND, MPI_Count)

#define RECV_LIKE(NAME, CT)                                                                  \
    int NAME(void *buf, CT count, MPI_Datatype type, int source, int tag, MPI_Comm comm,    \
             MPI_Status *status) {                                                          \
        MPI_Status own;                                                                      \
        if (status == MPI_STATUS_IGNORE) status = &own;                                     \
        call_t c = enter(K_RECV, comm, source, tag, nbytes(count, type));                   \
        int err = P##NAME(buf, count, type, source, tag, comm, status);                      \
        received(leave(&c), comm, status);                                                   \
        return err;                                                                          \
    }
RECV_LIKE(MPI_Recv, int)
RECV_LIKE(MPI_Recv_c, MPI_Count)

#define ISEND_LIKE(NAME, KIND, CT)                                                          \
    int NAME(const void *buf, CT count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, \
             MPI_Request *req) {                                                            \
        call_t c = enter(KIND, comm, dest, tag, nbytes(count, type));                        \
        sent(&c);                                                                            \
        int err = P##NAME(buf, count, type, dest, tag, comm, req);                           \
        wb_event *e = leave(&c);                                                             \
        if (e && err == MPI_SUCCESS) remember(*req, event_index(e), comm);                   \
        return err;                                                                          \
    }
ISEND_LIKE(MPI_Isend, K_ISEND, int)
ISEND_LIKE(MPI_Issend, K_ISSEND, int)
ISEND_LIKE(MPI_Isend_c, K_ISEND, MPI_Count)
ISEND_LIKE(MPI_Issend_c, K_ISSEND, MPI_Count)

#define IRECV_LIKE(NAME, CT)                                                                 \
    int NAME(void *buf, CT count, MPI_Datatype type, int source, int tag, MPI_Comm comm,    \
             MPI_Request *req) {                                                            \
        call_t c = enter(K_IRECV, comm, source, tag, nbytes(count, type));                  \
        int err = P##NAME(buf, count, type, source, tag, comm, req);                         \
        wb_event *e = leave(&c);                                                             \
        if (e && err == MPI_SUCCESS) remember(*req, event_index(e), comm);                   \
        return err;                                                                          \
    }
IRECV_LIKE(MPI_Irecv, int)
IRECV_LIKE(MPI_Irecv_c, MPI_Count)

#define SENDRECV_LIKE(NAME, CT)                                                              \
    int NAME(const void *sbuf, CT scount, MPI_Datatype stype, int dest, int stag, void *rbuf,   \
             CT rcount, MPI_Datatype rtype, int source, int rtag, MPI_Comm comm,               \
             MPI_Status *status) {                                                             \
        MPI_Status own;                                                                         \
        if (status == MPI_STATUS_IGNORE) status = &own;                                        \
        call_t c = enter(K_SENDRECV, comm, dest, stag, nbytes(scount, stype));                 \
        sent(&c);                                                                               \
        int err = P##NAME(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, source, rtag,   \
                          comm, status);                                                        \
        wb_event *e = leave(&c);                                                                \
        if (e) { e->peer2 = world_rank(comm, status->MPI_SOURCE); e->tag2 = status->MPI_TAG; }  \
        return err;                                                                             \
    }
SENDRECV_LIKE(MPI_Sendrecv, int)
SENDRECV_LIKE(MPI_Sendrecv_c, MPI_Count)

#define SENDRECV_REPLACE_LIKE(NAME, CT)                                                      \
    int NAME(void *buf, CT count, MPI_Datatype type, int dest, int stag, int source, int rtag,  \
             MPI_Comm comm, MPI_Status *status) {                                              \
        MPI_Status own;                                                                         \
        if (status == MPI_STATUS_IGNORE) status = &own;                                        \
        call_t c = enter(K_SENDRECV_REPLACE, comm, dest, stag, nbytes(count, type));           \
        sent(&c);                                                                               \
        int err = P##NAME(buf, count, type, dest, stag, source, rtag, comm, status);            \
        wb_event *e = leave(&c);                                                                \
        if (e) { e->peer2 = world_rank(comm, status->MPI_SOURCE); e->tag2 = status->MPI_TAG; }  \
        return err;                                                                             \
    }
SENDRECV_REPLACE_LIKE(MPI_Sendrecv_replace, int)
SENDRECV_REPLACE_LIKE(MPI_Sendrecv_replace_c, MPI_Count)

int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status) {
    MPI_Status own;
    if (status == MPI_STATUS_IGNORE) status = &own;
    call_t c = enter(K_PROBE, comm, source, tag, 0);
    int err = PMPI_Probe(source, tag, comm, status);
    received(leave(&c), comm, status);
    return err;
}

int MPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message *message, MPI_Status *status) {
    MPI_Status own;
    if (status == MPI_STATUS_IGNORE) status = &own;
    call_t c = enter(K_MPROBE, comm, source, tag, 0);
    int err = PMPI_Mprobe(source, tag, comm, message, status);
    received(leave(&c), comm, status);
    return err;
}

/* The status's source is a rank of the probed communicator, unknown here; the Python side
 * takes the source from the Mprobe before it (mpi4py's comm.recv is an Mprobe then an Mrecv). */
#define MRECV_LIKE(NAME, CT)                                                                 \
    int NAME(void *buf, CT count, MPI_Datatype type, MPI_Message *message, MPI_Status *status) { \
        MPI_Status own;                                                                         \
        if (status == MPI_STATUS_IGNORE) status = &own;                                        \
        call_t c = enter(K_MRECV, MPI_COMM_WORLD, -1, -3, nbytes(count, type));                \
        int err = P##NAME(buf, count, type, message, status);                                   \
        wb_event *e = leave(&c);                                                                \
        if (e) { e->tag2 = status->MPI_TAG; e->bytes = status_bytes(status); }                  \
        return err;                                                                             \
    }
MRECV_LIKE(MPI_Mrecv, int)
MRECV_LIKE(MPI_Mrecv_c, MPI_Count)

/* ---------------------------------------------------------------- completion */
int MPI_Wait(MPI_Request *req, MPI_Status *status) {
    MPI_Status own;
    if (status == MPI_STATUS_IGNORE) status = &own;
    MPI_Request r = *req;
    call_t c = enter(K_WAIT, MPI_COMM_WORLD, -1, -3, 0);
    int err = PMPI_Wait(req, status);
    wb_event *e = leave(&c);
    if (e) completed(r, status, e->t1);
    return err;
}

#define MANY 64
int MPI_Waitall(int n, MPI_Request reqs_[], MPI_Status statuses[]) {
    MPI_Request copy[MANY];
    MPI_Status own[MANY];
    int track = slot->on && n <= MANY;
    if (track) {
        memcpy(copy, reqs_, sizeof(MPI_Request) * (size_t)n);
        if (statuses == MPI_STATUSES_IGNORE) statuses = own;
    }
    call_t c = enter(K_WAITALL, MPI_COMM_WORLD, -1, -3, 0);
    int err = PMPI_Waitall(n, reqs_, statuses);
    wb_event *e = leave(&c);
    if (e && track)
        for (int i = 0; i < n; i++) completed(copy[i], &statuses[i], e->t1);
    return err;
}

int MPI_Waitany(int n, MPI_Request reqs_[], int *index, MPI_Status *status) {
    MPI_Request copy[MANY];
    MPI_Status own;
    int track = slot->on && n <= MANY;
    if (track) memcpy(copy, reqs_, sizeof(MPI_Request) * (size_t)n);
    if (status == MPI_STATUS_IGNORE) status = &own;
    call_t c = enter(K_WAITANY, MPI_COMM_WORLD, -1, -3, 0);
    int err = PMPI_Waitany(n, reqs_, index, status);
    wb_event *e = leave(&c);
    if (e && track && *index != MPI_UNDEFINED) completed(copy[*index], status, e->t1);
    return err;
}

/* ---------------------------------------------------------------- collectives */
#define ROOTED(KIND, COMM, ROOT, BYTES, CALL)                                               \
    do {                                                                                     \
        call_t c = enter(KIND, COMM, ROOT, -3, BYTES);                                       \
        int err = CALL;                                                                      \
        leave(&c);                                                                           \
        return err;                                                                          \
    } while (0)

int MPI_Barrier(MPI_Comm comm) { ROOTED(K_BARRIER, comm, -1, 0, PMPI_Barrier(comm)); }

#define BCAST_LIKE(NAME, CT)                                                                 \
    int NAME(void *buf, CT count, MPI_Datatype type, int root, MPI_Comm comm) {                 \
        ROOTED(K_BCAST, comm, root, nbytes(count, type), P##NAME(buf, count, type, root, comm)); \
    }
BCAST_LIKE(MPI_Bcast, int)
BCAST_LIKE(MPI_Bcast_c, MPI_Count)

#define REDUCE_LIKE(NAME, CT)                                                                \
    int NAME(const void *s, void *r, CT count, MPI_Datatype type, MPI_Op op, int root,          \
             MPI_Comm comm) {                                                                  \
        ROOTED(K_REDUCE, comm, root, nbytes(count, type), P##NAME(s, r, count, type, op, root, comm)); \
    }
REDUCE_LIKE(MPI_Reduce, int)
REDUCE_LIKE(MPI_Reduce_c, MPI_Count)

#define ALLREDUCE_LIKE(NAME, CT)                                                             \
    int NAME(const void *s, void *r, CT count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {   \
        ROOTED(K_ALLREDUCE, comm, -1, nbytes(count, type), P##NAME(s, r, count, type, op, comm)); \
    }
ALLREDUCE_LIKE(MPI_Allreduce, int)
ALLREDUCE_LIKE(MPI_Allreduce_c, MPI_Count)

/* Gather, Scatter: bytes are this rank's own part (sent, or received for a scatter). */
#define GATHER_LIKE(NAME, KIND, CT, MINE)                                                    \
    int NAME(const void *s, CT sc, MPI_Datatype st, void *r, CT rc, MPI_Datatype rt, int root,  \
             MPI_Comm comm) {                                                                  \
        ROOTED(KIND, comm, root, MINE, P##NAME(s, sc, st, r, rc, rt, root, comm));               \
    }
GATHER_LIKE(MPI_Gather, K_GATHER, int, nbytes(sc, st))
GATHER_LIKE(MPI_Gather_c, K_GATHER, MPI_Count, nbytes(sc, st))
GATHER_LIKE(MPI_Scatter, K_SCATTER, int, nbytes(rc, rt))
GATHER_LIKE(MPI_Scatter_c, K_SCATTER, MPI_Count, nbytes(rc, rt))

#define GATHERV_LIKE(NAME, CT, DT)                                                           \
    int NAME(const void *s, CT sc, MPI_Datatype st, void *r, const CT rc[], const DT d[],       \
             MPI_Datatype rt, int root, MPI_Comm comm) {                                       \
        ROOTED(K_GATHERV, comm, root, nbytes(sc, st), P##NAME(s, sc, st, r, rc, d, rt, root, comm)); \
    }
GATHERV_LIKE(MPI_Gatherv, int, int)
GATHERV_LIKE(MPI_Gatherv_c, MPI_Count, MPI_Aint)

#define SCATTERV_LIKE(NAME, CT, DT)                                                          \
    int NAME(const void *s, const CT sc[], const DT d[], MPI_Datatype st, void *r, CT rc,       \
             MPI_Datatype rt, int root, MPI_Comm comm) {                                       \
        ROOTED(K_SCATTERV, comm, root, nbytes(rc, rt), P##NAME(s, sc, d, st, r, rc, rt, root, comm)); \
    }
SCATTERV_LIKE(MPI_Scatterv, int, int)
SCATTERV_LIKE(MPI_Scatterv_c, MPI_Count, MPI_Aint)

#define ALLGATHER_LIKE(NAME, KIND, CT)                                                       \
    int NAME(const void *s, CT sc, MPI_Datatype st, void *r, CT rc, MPI_Datatype rt,            \
             MPI_Comm comm) {                                                                  \
        ROOTED(KIND, comm, -1, nbytes(sc, st), P##NAME(s, sc, st, r, rc, rt, comm));             \
    }
ALLGATHER_LIKE(MPI_Allgather, K_ALLGATHER, int)
ALLGATHER_LIKE(MPI_Allgather_c, K_ALLGATHER, MPI_Count)
ALLGATHER_LIKE(MPI_Alltoall, K_ALLTOALL, int)
ALLGATHER_LIKE(MPI_Alltoall_c, K_ALLTOALL, MPI_Count)

#define ALLGATHERV_LIKE(NAME, CT, DT)                                                        \
    int NAME(const void *s, CT sc, MPI_Datatype st, void *r, const CT rc[], const DT d[],       \
             MPI_Datatype rt, MPI_Comm comm) {                                                 \
        ROOTED(K_ALLGATHERV, comm, -1, nbytes(sc, st), P##NAME(s, sc, st, r, rc, d, rt, comm));  \
    }
ALLGATHERV_LIKE(MPI_Allgatherv, int, int)
ALLGATHERV_LIKE(MPI_Allgatherv_c, MPI_Count, MPI_Aint)

#define ALLTOALLV_LIKE(NAME, CT, DT)                                                         \
    int NAME(const void *s, const CT sc[], const DT sd[], MPI_Datatype st, void *r,             \
             const CT rc[], const DT rd[], MPI_Datatype rt, MPI_Comm comm) {                   \
        ROOTED(K_ALLTOALLV, comm, -1, 0, P##NAME(s, sc, sd, st, r, rc, rd, rt, comm));           \
    }
ALLTOALLV_LIKE(MPI_Alltoallv, int, int)
ALLTOALLV_LIKE(MPI_Alltoallv_c, MPI_Count, MPI_Aint)
