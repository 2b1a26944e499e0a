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
/* The MPI-4 large-count entry points (MPI_Send_c, ...) are wrapped only where the library has
 * them: Open MPI 5.0 is an MPI-3.1 library without them, and a wrapper whose PMPI_ call is
 * missing would end the rank in a symbol lookup error the first time mpi4py calls it. */
#if MPI_VERSION >= 4
#define WB_LARGE_COUNT 1
#else
#define WB_LARGE_COUNT 0
#endif
/* Persistent collectives and partitioned communication (MPI-4) likewise: Open MPI 5 has them,
 * Open MPI 4.1 (Debian 12's, many clusters') has neither. */
#if MPI_VERSION >= 4 || (defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
#define WB_MPI4_PERSISTENT 1
#else
#define WB_MPI4_PERSISTENT 0
#endif
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define WB_MAGIC 0x57425452u /* "WBTR" */
#define WB_VERSION 2
#define WB_RECENT 16

/* Call kinds: the order is the Python side's KINDS table (events.py; checked when read). */
enum {
    K_SEND, K_SSEND, K_RECV, K_ISEND, K_ISSEND, K_IRECV, K_SENDRECV, K_SENDRECV_REPLACE, K_PROBE,
    K_MPROBE, K_MRECV, K_WAIT, K_WAITALL, K_WAITANY, K_BARRIER, K_BCAST, K_REDUCE, K_ALLREDUCE,
    K_GATHER, K_GATHERV, K_SCATTER, K_SCATTERV, K_ALLGATHER, K_ALLGATHERV, K_ALLTOALL,
    K_ALLTOALLV, K_IBARRIER, K_IBCAST, K_IREDUCE, K_IALLREDUCE, K_IGATHER, K_ISCATTER,
    K_IALLGATHER, K_IALLTOALL, K_TEST, K_TESTALL, K_TESTANY, K_TESTSOME, K_WAITSOME, K_SEND_INIT,
    K_SSEND_INIT, K_RECV_INIT, K_BARRIER_INIT, K_BCAST_INIT, K_REDUCE_INIT, K_ALLREDUCE_INIT,
    K_ALLGATHER_INIT, K_ALLTOALL_INIT, K_START, K_STARTALL, K_REQUEST_FREE, K_PSEND_INIT,
    K_PRECV_INIT, K_PREADY, K_PREADY_RANGE, K_PARRIVED, K_WIN_CREATE, K_WIN_ALLOCATE, K_WIN_FREE,
    K_WIN_FENCE, K_WIN_LOCK, K_WIN_UNLOCK, K_WIN_LOCK_ALL, K_WIN_UNLOCK_ALL, K_WIN_FLUSH,
    K_WIN_FLUSH_ALL, K_PUT, K_GET, K_ACCUMULATE, K_GET_ACCUMULATE, K_FETCH_AND_OP,
    K_COMPARE_AND_SWAP, K_COMM_DUP, K_COMM_SPLIT, K_COMM_CREATE, K_COMM_SPLIT_TYPE, K_CART_CREATE,
    K_CART_SUB, K_COMM_FREE, K_NKINDS
};
static const char *KIND_NAMES[K_NKINDS] = {
    "MPI_Send", "MPI_Ssend", "MPI_Recv", "MPI_Isend", "MPI_Issend", "MPI_Irecv", "MPI_Sendrecv",
    "MPI_Sendrecv_replace", "MPI_Probe", "MPI_Mprobe", "MPI_Mrecv", "MPI_Wait", "MPI_Waitall",
    "MPI_Waitany", "MPI_Barrier", "MPI_Bcast", "MPI_Reduce", "MPI_Allreduce", "MPI_Gather",
    "MPI_Gatherv", "MPI_Scatter", "MPI_Scatterv", "MPI_Allgather", "MPI_Allgatherv",
    "MPI_Alltoall", "MPI_Alltoallv", "MPI_Ibarrier", "MPI_Ibcast", "MPI_Ireduce",
    "MPI_Iallreduce", "MPI_Igather", "MPI_Iscatter", "MPI_Iallgather", "MPI_Ialltoall",
    "MPI_Test", "MPI_Testall", "MPI_Testany", "MPI_Testsome", "MPI_Waitsome", "MPI_Send_init",
    "MPI_Ssend_init", "MPI_Recv_init", "MPI_Barrier_init", "MPI_Bcast_init", "MPI_Reduce_init",
    "MPI_Allreduce_init", "MPI_Allgather_init", "MPI_Alltoall_init", "MPI_Start",
    "MPI_Startall", "MPI_Request_free", "MPI_Psend_init", "MPI_Precv_init", "MPI_Pready",
    "MPI_Pready_range", "MPI_Parrived", "MPI_Win_create", "MPI_Win_allocate", "MPI_Win_free",
    "MPI_Win_fence", "MPI_Win_lock", "MPI_Win_unlock", "MPI_Win_lock_all", "MPI_Win_unlock_all",
    "MPI_Win_flush", "MPI_Win_flush_all", "MPI_Put", "MPI_Get", "MPI_Accumulate",
    "MPI_Get_accumulate", "MPI_Fetch_and_op", "MPI_Compare_and_swap", "MPI_Comm_dup",
    "MPI_Comm_split", "MPI_Comm_create", "MPI_Comm_split_type", "MPI_Cart_create",
    "MPI_Cart_sub", "MPI_Comm_free",
};

/* One recorded call: 72 bytes (the Python side's EVENT_DTYPE). */
typedef struct {
    double t0, t1;      /* entered, returned (CLOCK_MONOTONIC s) */
    double t_done;      /* non-blocking, started and one-sided operations: when the call that
                           completed it returned (0 if never seen) */
    int32_t kind;
    int32_t peer;       /* world rank of dest/source/root/target; -1 none, -2 any source */
    int32_t tag;        /* tag asked for (-1 any tag, -3 none); a split's colour */
    int32_t comm;       /* index of the communicator in this rank's table (-1 unknown) */
    int64_t bytes;      /* bytes sent (send side), received (receive side) or contributed */
    int32_t peer2;      /* Sendrecv: the source (world); receives: actual source */
    int32_t tag2;       /* Sendrecv: the receive tag; receives: actual tag */
    int32_t req;        /* request id (per rank), window id, or new communicator's index */
    int32_t op;         /* MPI_Start: the kind of the init it started; tests/waits: requests */
    int32_t count;      /* calls folded into this event (tests), partitions, dims */
    int32_t aux;        /* Pready/Parrived: the partition; tests: 1 if the last one completed */
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

/* ---------------------------------------------------------------- communicators
 * Every communicator this rank uses or makes gets an entry in a table (the Python side's
 * COMM_DTYPE), kept from MPI_Init to the end (freed ones are marked, not reused): events name
 * their communicator by its index (0 COMM_WORLD, 1 COMM_SELF), which stays meaningful after a
 * handle is freed and reused. An entry knows how it was made (the constructor's kind), from
 * which parent and as the how-manieth child of it (constructors are collective over the parent,
 * so the ordinal is the same on every member: the gathering side matches entries across ranks
 * by that lineage), and its members' world ranks (peers are recorded as world ranks). */
#define MAX_COMMS 1024
#define MAX_DIMS 4
enum { HOW_WORLD = -1, HOW_SELF = -2, HOW_SEEN = -3 };
typedef struct {
    int32_t handle, how, parent, ordinal, color, size, ndims, dims[MAX_DIMS], freed;
    char name[64];
} wb_comm;
static wb_comm comms[MAX_COMMS];
static int *members[MAX_COMMS];   /* world ranks (NULL for an inter-communicator) */
static int32_t children[MAX_COMMS];
static int ncomms = 0;
static int32_t last_handle = 0, last_index = -1;   /* a one-entry cache: most calls reuse one */

static int32_t comm_handle(MPI_Comm comm) { return (int32_t)(intptr_t)comm; }

/* A slot for a new entry: the next one, or, once the table is full (a long session that makes
 * and frees communicators all the time), the oldest freed one (events of this trace that named
 * it would then name its successor: the price of a bounded table). -1 if all are live. */
static int recycle_from = 2;
static int new_slot(void) {
    if (ncomms < MAX_COMMS) return ncomms++;
    for (int k = 0; k < MAX_COMMS - 2; k++) {
        int i = 2 + (recycle_from - 2 + k) % (MAX_COMMS - 2);
        if (comms[i].freed) {
            recycle_from = i + 1;
            free(members[i]);
            members[i] = NULL;
            children[i] = 0;
            return i;
        }
    }
    return -1;
}

static int add_comm(MPI_Comm comm, int how, int parent, int ordinal) {
    int i = new_slot();
    if (i < 0) return -1;
    wb_comm *c = &comms[i];
    memset(c, 0, sizeof *c);
    c->handle = comm_handle(comm); c->how = how; c->parent = parent; c->ordinal = ordinal; c->color = -1;
    int inter = 0, n = 0;
    PMPI_Comm_test_inter(comm, &inter);
    PMPI_Comm_size(comm, &n);
    c->size = n;
    members[i] = NULL;
    if (!inter) {
        int *ranks = malloc(sizeof(int) * (size_t)n), *world = malloc(sizeof(int) * (size_t)n);
        if (ranks && world) {
            MPI_Group g, wg;
            for (int k = 0; k < n; k++) ranks[k] = k;
            PMPI_Comm_group(comm, &g);
            PMPI_Comm_group(MPI_COMM_WORLD, &wg);
            PMPI_Group_translate_ranks(g, n, ranks, wg, world);
            PMPI_Group_free(&g);
            PMPI_Group_free(&wg);
            members[i] = world;
            world = NULL;
        }
        free(ranks);
        free(world);
    }
    last_handle = c->handle;
    last_index = i;
    return i;
}

/* The table index of a live communicator (added as "seen" when it was made out of sight). */
static int comm_index(MPI_Comm comm) {
    if (comm == MPI_COMM_WORLD) return ncomms > 0 ? 0 : -1;
    if (comm == MPI_COMM_SELF) return ncomms > 1 ? 1 : -1;
    if (comm == MPI_COMM_NULL) return -1;
    int32_t h = comm_handle(comm);
    if (h == last_handle && last_index >= 0 && !comms[last_index].freed) return last_index;
    for (int i = ncomms - 1; i >= 2; i--)
        if (comms[i].handle == h && !comms[i].freed) {
            last_handle = h;
            last_index = i;
            return i;
        }
    return ncomms >= 2 ? add_comm(comm, HOW_SEEN, -1, -1) : -1;
}

static int world_rank_in(int index, int r) {
    if (r < 0 || index <= 0) return r;
    if (index == 1) return slot->rank;
    return members[index] && r < comms[index].size ? members[index][r] : r;
}

/* The world rank of rank *r* of a communicator the table has no room for (every entry live):
 * translated on each call, slower but right. */
static int translate(MPI_Comm comm, int r) {
    int inter = 0;
    PMPI_Comm_test_inter(comm, &inter);
    if (inter) return r;
    MPI_Group g, wg;
    int out = r;
    PMPI_Comm_group(comm, &g);
    PMPI_Comm_group(MPI_COMM_WORLD, &wg);
    PMPI_Group_translate_ranks(g, 1, &r, wg, &out);
    PMPI_Group_free(&g);
    PMPI_Group_free(&wg);
    return out;
}

static int world_rank(MPI_Comm comm, int r) {
    if (r < 0 || comm == MPI_COMM_WORLD) return r;
    int index = comm_index(comm);
    return index < 0 && comm != MPI_COMM_NULL ? translate(comm, r) : world_rank_in(index, r);
}

/* A constructor on *parent* returned *made*: count the call on the parent (also when this rank
 * got MPI_COMM_NULL, so that ordinals agree across ranks) and add the new entry. */
static int made_comm(MPI_Comm parent, MPI_Comm made, int how) {
    int p = comm_index(parent);
    int ordinal = p >= 0 ? children[p]++ : -1;
    if (made == MPI_COMM_NULL) return -1;
    return add_comm(made, how, p, ordinal);
}

int wbtrace_ncomms(void) { return ncomms; }
int wbtrace_sizeof_comm(void) { return (int)sizeof(wb_comm); }
const void *wbtrace_comms(void) { return comms; }
/* Copies the world ranks of entry *i*'s members into *out* (at most *n*); returns how many. */
int wbtrace_comm_members(int i, int32_t *out, int n) {
    if (i < 0 || i >= ncomms || !members[i]) return 0;
    int m = comms[i].size < n ? comms[i].size : n;
    for (int k = 0; k < m; k++) out[k] = members[i][k];
    return m;
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
    int index = comm == MPI_COMM_WORLD ? 0 : comm_index(comm);
    int world = index < 0 && comm != MPI_COMM_NULL && peer >= 0 ? translate(comm, peer) : world_rank_in(index, peer);
    call_t c = {now(), kind, world, tag, index, bytes};
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

/* Append the event of call *c* (NULL when tracing is off or the buffer is full). */
static inline wb_event *record(const call_t *c) {
    if (!slot->on || !events) return NULL;
    if (slot->nevents >= slot->capacity) { slot->dropped++; return NULL; }
    wb_event *e = &events[slot->nevents++];
    e->t0 = c->t0; e->t1 = now(); e->t_done = 0;
    e->kind = c->kind; e->peer = c->peer; e->tag = c->tag; e->comm = c->comm;
    e->bytes = c->bytes; e->peer2 = -3; e->tag2 = -3;
    e->req = -1; e->op = -1; e->count = 1; e->aux = -1;
    return e;
}

/* Leave a call; returns the event recorded (NULL when tracing is off or the buffer is full). */
static inline wb_event *leave(const call_t *c) {
    slot->depth--;
    return record(c);
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

static inline int is_receive(const wb_event *e) {
    return e->kind == K_IRECV || ((e->kind == K_START || e->kind == K_STARTALL) &&
                                  (e->op == K_RECV_INIT || e->op == K_PRECV_INIT));
}

static inline size_t req_hash(MPI_Request r) { return ((size_t)(intptr_t)r * 2654435761u) % REQS; }

static void remember(MPI_Request r, int64_t event, MPI_Comm comm) {
    size_t h = req_hash(r);
    for (size_t i = 0; i < REQS; i++, h = (h + 1) % REQS)
        /* a free slot, or a stale entry of the same handle (completed out of sight) */
        if (reqs[h].event == 0 || reqs[h].req == r) {
            reqs[h].req = r; reqs[h].event = event + 1; reqs[h].comm = comm; return;
        }
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
            if (is_receive(e)) received(e, reqs[h].comm, st);
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

/* The event a live request was recorded by (NULL if none). */
static wb_event *event_of(MPI_Request r) {
    if (r == MPI_REQUEST_NULL || !events) return NULL;
    size_t h = req_hash(r);
    for (size_t i = 0; i < REQS && reqs[h].event != 0; i++, h = (h + 1) % REQS)
        if (reqs[h].req == r) return reqs[h].event - 1 < slot->nevents ? &events[reqs[h].event - 1] : NULL;
    return NULL;
}

static int32_t next_req = 0;   /* request ids, per rank, in the order operations were started */

/* A non-blocking operation was started by the call of event *e*: number it and remember its
 * request, so that the Wait or Test that completes it can say when. */
static inline void started(wb_event *e, int err, const MPI_Request *req, MPI_Comm comm) {
    if (!e) return;
    e->req = next_req++;
    if (err == MPI_SUCCESS) remember(*req, event_index(e), comm);
}

/* One-sided operations not yet completed by a fence, unlock or flush (while tracing). */
#define PENDING 4096
static struct { int64_t event; int32_t win, target; } pending[PENDING];
static int npending = 0;

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
    npending = 0;
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

static void init_comms(void) {
    if (ncomms) return;
    add_comm(MPI_COMM_WORLD, HOW_WORLD, -1, -1);
    add_comm(MPI_COMM_SELF, HOW_SELF, -1, -1);
    strcpy(comms[0].name, "MPI_COMM_WORLD");
    strcpy(comms[1].name, "MPI_COMM_SELF");
}

int MPI_Init(int *argc, char ***argv) {
    int err = PMPI_Init(argc, argv);
    if (err == MPI_SUCCESS) { init_comms(); map_slot(); }
    return err;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
    int err = PMPI_Init_thread(argc, argv, required, provided);
    if (err == MPI_SUCCESS) { init_comms(); map_slot(); }
    return err;
}

int wbtrace_loaded(void) { return slot != &local_slot; }


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
#if WB_LARGE_COUNT
SEND_LIKE(MPI_Send_c, K_SEND, MPI_Count)
#endif
#if WB_LARGE_COUNT
SEND_LIKE(MPI_Ssend_c, K_SSEND, MPI_Count)
#endif

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
#if WB_LARGE_COUNT
RECV_LIKE(MPI_Recv_c, MPI_Count)
#endif

#define ISEND_LIKE(NAME, KIND, CT)                                                          \
    int NAME(const void *buf, CT count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, \
             MPI_Request *req) {                                                            \
        call_t c = enter(KIND, comm, dest, tag, nbytes(count, type));                        \
        sent(&c);                                                                            \
        int err = P##NAME(buf, count, type, dest, tag, comm, req);                           \
        started(leave(&c), err, req, comm);                                                  \
        return err;                                                                          \
    }
ISEND_LIKE(MPI_Isend, K_ISEND, int)
ISEND_LIKE(MPI_Issend, K_ISSEND, int)
#if WB_LARGE_COUNT
ISEND_LIKE(MPI_Isend_c, K_ISEND, MPI_Count)
#endif
#if WB_LARGE_COUNT
ISEND_LIKE(MPI_Issend_c, K_ISSEND, MPI_Count)
#endif

#define IRECV_LIKE(NAME, CT)                                                                 \
    int NAME(void *buf, CT count, MPI_Datatype type, int source, int tag, MPI_Comm comm,    \
             MPI_Request *req) {                                                            \
        call_t c = enter(K_IRECV, comm, source, tag, nbytes(count, type));                  \
        int err = P##NAME(buf, count, type, source, tag, comm, req);                         \
        started(leave(&c), err, req, comm);                                                  \
        return err;                                                                          \
    }
IRECV_LIKE(MPI_Irecv, int)
#if WB_LARGE_COUNT
IRECV_LIKE(MPI_Irecv_c, MPI_Count)
#endif

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
#if WB_LARGE_COUNT
SENDRECV_LIKE(MPI_Sendrecv_c, MPI_Count)
#endif

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
#if WB_LARGE_COUNT
SENDRECV_REPLACE_LIKE(MPI_Sendrecv_replace_c, MPI_Count)
#endif

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
        call_t c = enter(K_MRECV, MPI_COMM_NULL, -1, -3, nbytes(count, type));                \
        int err = P##NAME(buf, count, type, message, status);                                   \
        wb_event *e = leave(&c);                                                                \
        if (e) { e->tag2 = status->MPI_TAG; e->bytes = status_bytes(status); }                  \
        return err;                                                                             \
    }
MRECV_LIKE(MPI_Mrecv, int)
#if WB_LARGE_COUNT
MRECV_LIKE(MPI_Mrecv_c, MPI_Count)
#endif

/* ---------------------------------------------------------------- completion */
int MPI_Wait(MPI_Request *req, MPI_Status *status) {
    MPI_Status own;
    if (status == MPI_STATUS_IGNORE) status = &own;
    MPI_Request r = *req;
    call_t c = enter(K_WAIT, MPI_COMM_NULL, -1, -3, 0);
    int err = PMPI_Wait(req, status);
    wb_event *e = leave(&c);
    if (e) completed(r, status, e->t1);
    return err;
}

#define MANY 64
/* While tracing, a copy of the requests a completion call is given (it frees them; their
 * events are found by handle afterwards); 0 when not tracing, or too many to copy. */
static inline int copied(int n, const MPI_Request *reqs_, MPI_Request *copy) {
    if (!slot->on || n > MANY) return 0;
    memcpy(copy, reqs_, sizeof(MPI_Request) * (size_t)n);
    return 1;
}
int MPI_Waitall(int n, MPI_Request reqs_[], MPI_Status statuses[]) {
    MPI_Request copy[MANY];
    MPI_Status own[MANY];
    int track = copied(n, reqs_, copy);
    if (track && statuses == MPI_STATUSES_IGNORE) statuses = own;
    call_t c = enter(K_WAITALL, MPI_COMM_NULL, -1, -3, 0);
    int err = PMPI_Waitall(n, reqs_, statuses);
    wb_event *e = leave(&c);
    if (e && track)
        for (int i = 0; i < n; i++) completed(copy[i], &statuses[i], e->t1);
    return err;
}

int MPI_Waitany(int n, MPI_Request reqs_[], int *index, MPI_Status *status) {
    MPI_Request copy[MANY];
    MPI_Status own;
    int track = copied(n, reqs_, copy);
    if (status == MPI_STATUS_IGNORE) status = &own;
    call_t c = enter(K_WAITANY, MPI_COMM_NULL, -1, -3, 0);
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
#if WB_LARGE_COUNT
BCAST_LIKE(MPI_Bcast_c, MPI_Count)
#endif

#define REDUCE_LIKE(NAME, CT)                                                                \
    int NAME(const void *s, void *r, CT count, MPI_Datatype type, MPI_Op op, int root,          \
             MPI_Comm comm) {                                                                  \
        ROOTED(K_REDUCE, comm, root, nbytes(count, type), P##NAME(s, r, count, type, op, root, comm)); \
    }
REDUCE_LIKE(MPI_Reduce, int)
#if WB_LARGE_COUNT
REDUCE_LIKE(MPI_Reduce_c, MPI_Count)
#endif

#define ALLREDUCE_LIKE(NAME, CT)                                                             \
    int NAME(const void *s, void *r, CT count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {   \
        ROOTED(K_ALLREDUCE, comm, -1, nbytes(count, type), P##NAME(s, r, count, type, op, comm)); \
    }
ALLREDUCE_LIKE(MPI_Allreduce, int)
#if WB_LARGE_COUNT
ALLREDUCE_LIKE(MPI_Allreduce_c, MPI_Count)
#endif

/* Gather, Scatter: bytes are this rank's own part (sent, or received for a scatter). */
#define GATHER_LIKE(NAME, KIND, CT, MINE)                                                    \
    int NAME(const void *s, CT sc, MPI_Datatype st, void *r, CT rc, MPI_Datatype rt, int root,  \
             MPI_Comm comm) {                                                                  \
        ROOTED(KIND, comm, root, MINE, P##NAME(s, sc, st, r, rc, rt, root, comm));               \
    }
GATHER_LIKE(MPI_Gather, K_GATHER, int, nbytes(sc, st))
#if WB_LARGE_COUNT
GATHER_LIKE(MPI_Gather_c, K_GATHER, MPI_Count, nbytes(sc, st))
#endif
GATHER_LIKE(MPI_Scatter, K_SCATTER, int, nbytes(rc, rt))
#if WB_LARGE_COUNT
GATHER_LIKE(MPI_Scatter_c, K_SCATTER, MPI_Count, nbytes(rc, rt))
#endif

#define GATHERV_LIKE(NAME, CT, DT)                                                           \
    int NAME(const void *s, CT sc, MPI_Datatype st, void *r, const CT rc[], const DT d[],       \
             MPI_Datatype rt, int root, MPI_Comm comm) {                                       \
        ROOTED(K_GATHERV, comm, root, nbytes(sc, st), P##NAME(s, sc, st, r, rc, d, rt, root, comm)); \
    }
GATHERV_LIKE(MPI_Gatherv, int, int)
#if WB_LARGE_COUNT
GATHERV_LIKE(MPI_Gatherv_c, MPI_Count, MPI_Aint)
#endif

#define SCATTERV_LIKE(NAME, CT, DT)                                                          \
    int NAME(const void *s, const CT sc[], const DT d[], MPI_Datatype st, void *r, CT rc,       \
             MPI_Datatype rt, int root, MPI_Comm comm) {                                       \
        ROOTED(K_SCATTERV, comm, root, nbytes(rc, rt), P##NAME(s, sc, d, st, r, rc, rt, root, comm)); \
    }
SCATTERV_LIKE(MPI_Scatterv, int, int)
#if WB_LARGE_COUNT
SCATTERV_LIKE(MPI_Scatterv_c, MPI_Count, MPI_Aint)
#endif

#define ALLGATHER_LIKE(NAME, KIND, CT)                                                       \
    int NAME(const void *s, CT sc, MPI_Datatype st, void *r, CT rc, MPI_Datatype rt,            \
             MPI_Comm comm) {                                                                  \
        ROOTED(KIND, comm, -1, nbytes(sc, st), P##NAME(s, sc, st, r, rc, rt, comm));             \
    }
ALLGATHER_LIKE(MPI_Allgather, K_ALLGATHER, int)
#if WB_LARGE_COUNT
ALLGATHER_LIKE(MPI_Allgather_c, K_ALLGATHER, MPI_Count)
#endif
ALLGATHER_LIKE(MPI_Alltoall, K_ALLTOALL, int)
#if WB_LARGE_COUNT
ALLGATHER_LIKE(MPI_Alltoall_c, K_ALLTOALL, MPI_Count)
#endif

#define ALLGATHERV_LIKE(NAME, CT, DT)                                                        \
    int NAME(const void *s, CT sc, MPI_Datatype st, void *r, const CT rc[], const DT d[],       \
             MPI_Datatype rt, MPI_Comm comm) {                                                 \
        ROOTED(K_ALLGATHERV, comm, -1, nbytes(sc, st), P##NAME(s, sc, st, r, rc, d, rt, comm));  \
    }
ALLGATHERV_LIKE(MPI_Allgatherv, int, int)
#if WB_LARGE_COUNT
ALLGATHERV_LIKE(MPI_Allgatherv_c, MPI_Count, MPI_Aint)
#endif

#define ALLTOALLV_LIKE(NAME, CT, DT)                                                         \
    int NAME(const void *s, const CT sc[], const DT sd[], MPI_Datatype st, void *r,             \
             const CT rc[], const DT rd[], MPI_Datatype rt, MPI_Comm comm) {                   \
        ROOTED(K_ALLTOALLV, comm, -1, 0, P##NAME(s, sc, sd, st, r, rc, rd, rt, comm));           \
    }
ALLTOALLV_LIKE(MPI_Alltoallv, int, int)
#if WB_LARGE_COUNT
ALLTOALLV_LIKE(MPI_Alltoallv_c, MPI_Count, MPI_Aint)
#endif

/* ================================================================ MPI-2/3/4 families */

/* ---------------------------------------------------------------- tests
 * A polling loop calls MPI_Test thousands of times: consecutive tests of the same request(s)
 * that found nothing complete fold into one event (count: calls, t1: the last one's return);
 * the test that completes them sets t_done. */
static wb_event *tested(const call_t *c, int32_t req, int32_t nreq, int32_t partition, int done) {
    slot->depth--;
    if (!slot->on || !events) return NULL;
    wb_event *e = NULL;
    if (slot->nevents > 0) {
        wb_event *last = &events[slot->nevents - 1];
        if (last->kind == c->kind && last->req == req && last->op == nreq && last->aux == partition &&
            last->t_done == 0 && last->count < INT32_MAX) {
            e = last;
            e->t1 = now();
            e->count++;
        }
    }
    if (!e) {
        e = record(c);
        if (!e) return NULL;
        e->req = req; e->op = nreq; e->aux = partition;
    }
    if (done) e->t_done = e->t1;
    return e;
}

/* ---------------------------------------------------------------- persistent requests
 * Inits are remembered always (a loop is often traced after its requests were made), so each
 * MPI_Start can say what it starts: the op, peer, tag, bytes and communicator of its init. */
#define MAX_PERSISTENT 1024
typedef struct {
    MPI_Request req; MPI_Comm comm;
    int32_t kind, peer, tag, comm_index, id, partitions;
    int64_t bytes;
} wb_persistent;
static wb_persistent pers[MAX_PERSISTENT];
static int npers = 0;

static wb_persistent *persistent(MPI_Request r) {
    if (r == MPI_REQUEST_NULL) return NULL;
    for (int i = 0; i < npers; i++)
        if (pers[i].req == r) return &pers[i];
    return NULL;
}

static void persist(MPI_Request r, const call_t *c, MPI_Comm comm, int partitions, wb_event *e) {
    wb_persistent *p = persistent(r);
    if (!p) {
        for (int i = 0; i < npers && !p; i++)
            if (pers[i].req == MPI_REQUEST_NULL) p = &pers[i];
        if (!p && npers < MAX_PERSISTENT) p = &pers[npers++];
    }
    int32_t id = next_req++;
    if (e) { e->req = id; e->count = partitions; }
    if (!p) return;
    p->req = r; p->comm = comm; p->kind = c->kind; p->peer = c->peer; p->tag = c->tag;
    p->comm_index = c->comm; p->id = id; p->partitions = partitions; p->bytes = c->bytes;
}

#define PINIT(KIND, COMM, PEER, TAG, BYTES, PARTS, CALL)                                     \
    do {                                                                                     \
        call_t c = enter(KIND, COMM, PEER, TAG, BYTES);                                      \
        int err = CALL;                                                                      \
        wb_event *e = leave(&c);                                                             \
        if (err == MPI_SUCCESS) persist(*req, &c, COMM, PARTS, e);                           \
        return err;                                                                          \
    } while (0)

#define P2P_INIT(NAME, KIND, CT, CONST)                                                      \
    int NAME(CONST void *buf, CT count, MPI_Datatype type, int peer, int tag, MPI_Comm comm,   \
             MPI_Request *req) {                                                            \
        PINIT(KIND, comm, peer, tag, nbytes(count, type), 0,                                  \
              P##NAME(buf, count, type, peer, tag, comm, req));                             \
    }
P2P_INIT(MPI_Send_init, K_SEND_INIT, int, const)
#if WB_LARGE_COUNT
P2P_INIT(MPI_Send_init_c, K_SEND_INIT, MPI_Count, const)
#endif
P2P_INIT(MPI_Ssend_init, K_SSEND_INIT, int, const)
#if WB_LARGE_COUNT
P2P_INIT(MPI_Ssend_init_c, K_SSEND_INIT, MPI_Count, const)
#endif
P2P_INIT(MPI_Recv_init, K_RECV_INIT, int, )
#if WB_LARGE_COUNT
P2P_INIT(MPI_Recv_init_c, K_RECV_INIT, MPI_Count, )
#endif

#if WB_MPI4_PERSISTENT
int MPI_Barrier_init(MPI_Comm comm, MPI_Info info, MPI_Request *req) {
    PINIT(K_BARRIER_INIT, comm, -1, -3, 0, 0, PMPI_Barrier_init(comm, info, req));
}
#define BCAST_INIT(NAME, CT)                                                                 \
    int NAME(void *buf, CT count, MPI_Datatype type, int root, MPI_Comm comm, MPI_Info info,  \
             MPI_Request *req) {                                                            \
        PINIT(K_BCAST_INIT, comm, root, -3, nbytes(count, type), 0,                          \
              P##NAME(buf, count, type, root, comm, info, req));                            \
    }
BCAST_INIT(MPI_Bcast_init, int)
#if WB_LARGE_COUNT
BCAST_INIT(MPI_Bcast_init_c, MPI_Count)
#endif
#define REDUCE_INIT(NAME, CT)                                                                \
    int NAME(const void *s, void *r, CT count, MPI_Datatype type, MPI_Op op, int root,        \
             MPI_Comm comm, MPI_Info info, MPI_Request *req) {                              \
        PINIT(K_REDUCE_INIT, comm, root, -3, nbytes(count, type), 0,                         \
              P##NAME(s, r, count, type, op, root, comm, info, req));                       \
    }
REDUCE_INIT(MPI_Reduce_init, int)
#if WB_LARGE_COUNT
REDUCE_INIT(MPI_Reduce_init_c, MPI_Count)
#endif
#define ALLREDUCE_INIT(NAME, CT)                                                             \
    int NAME(const void *s, void *r, CT count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,   \
             MPI_Info info, MPI_Request *req) {                                             \
        PINIT(K_ALLREDUCE_INIT, comm, -1, -3, nbytes(count, type), 0,                        \
              P##NAME(s, r, count, type, op, comm, info, req));                             \
    }
ALLREDUCE_INIT(MPI_Allreduce_init, int)
#if WB_LARGE_COUNT
ALLREDUCE_INIT(MPI_Allreduce_init_c, MPI_Count)
#endif
#define ALLGATHER_INIT(NAME, KIND, CT)                                                       \
    int NAME(const void *s, CT sc, MPI_Datatype st, void *r, CT rc, MPI_Datatype rt,          \
             MPI_Comm comm, MPI_Info info, MPI_Request *req) {                              \
        PINIT(KIND, comm, -1, -3, nbytes(sc, st), 0, P##NAME(s, sc, st, r, rc, rt, comm, info, req)); \
    }
ALLGATHER_INIT(MPI_Allgather_init, K_ALLGATHER_INIT, int)
#if WB_LARGE_COUNT
ALLGATHER_INIT(MPI_Allgather_init_c, K_ALLGATHER_INIT, MPI_Count)
#endif
ALLGATHER_INIT(MPI_Alltoall_init, K_ALLTOALL_INIT, int)
#if WB_LARGE_COUNT
ALLGATHER_INIT(MPI_Alltoall_init_c, K_ALLTOALL_INIT, MPI_Count)
#endif

/* Partitioned (MPI-4): bytes are the whole message's, count the partitions. */
int MPI_Psend_init(const void *buf, int partitions, MPI_Count count, MPI_Datatype type, int dest,
                   int tag, MPI_Comm comm, MPI_Info info, MPI_Request *req) {
    PINIT(K_PSEND_INIT, comm, dest, tag, partitions * nbytes(count, type), partitions,
          PMPI_Psend_init(buf, partitions, count, type, dest, tag, comm, info, req));
}
int MPI_Precv_init(void *buf, int partitions, MPI_Count count, MPI_Datatype type, int source,
                   int tag, MPI_Comm comm, MPI_Info info, MPI_Request *req) {
    PINIT(K_PRECV_INIT, comm, source, tag, partitions * nbytes(count, type), partitions,
          PMPI_Precv_init(buf, partitions, count, type, source, tag, comm, info, req));
}

#endif /* WB_MPI4_PERSISTENT */

/* One MPI_Start(all) event per started request, carrying what its init said. */
static void started_persistent(const call_t *call, MPI_Request r) {
    wb_persistent *p = persistent(r);
    call_t c = *call;
    if (p) { c.peer = p->peer; c.tag = p->tag; c.comm = p->comm_index; c.bytes = p->bytes; }
    wb_event *e = record(&c);
    if (!e || !p) return;
    e->op = p->kind; e->req = p->id; e->count = p->partitions;
    remember(r, event_index(e), p->comm);
}

int MPI_Start(MPI_Request *req) {
    call_t c = enter(K_START, MPI_COMM_NULL, -1, -3, 0);
    int err = PMPI_Start(req);
    slot->depth--;
    if (err == MPI_SUCCESS) started_persistent(&c, *req);
    return err;
}

int MPI_Startall(int n, MPI_Request reqs_[]) {
    call_t c = enter(K_STARTALL, MPI_COMM_NULL, -1, -3, 0);
    int err = PMPI_Startall(n, reqs_);
    slot->depth--;
    if (err == MPI_SUCCESS)
        for (int i = 0; i < n; i++) started_persistent(&c, reqs_[i]);
    return err;
}

int MPI_Request_free(MPI_Request *req) {
    MPI_Request r = *req;
    wb_persistent *p = persistent(r);
    call_t c = enter(K_REQUEST_FREE, MPI_COMM_NULL, -1, -3, 0);
    if (p) { c.peer = p->peer; c.tag = p->tag; c.comm = p->comm_index; }
    int err = PMPI_Request_free(req);
    wb_event *e = leave(&c);
    if (e && p) { e->req = p->id; e->op = p->kind; }
    if (p && err == MPI_SUCCESS) p->req = MPI_REQUEST_NULL;
    return err;
}

#if WB_MPI4_PERSISTENT
/* Pready and Parrived: the partitioned request's peer, tag, communicator, and the bytes of the
 * partitions named (aux: the first partition, count: how many). */
static call_t partition_call(int kind, MPI_Request r, int lo, int hi, wb_persistent **found) {
    wb_persistent *p = persistent(r);
    call_t c = enter(kind, MPI_COMM_NULL, -1, -3, 0);
    if (p) {
        c.peer = p->peer; c.tag = p->tag; c.comm = p->comm_index;
        c.bytes = p->partitions > 0 ? p->bytes / p->partitions * (hi - lo + 1) : 0;
    }
    *found = p;
    return c;
}

int MPI_Pready(int partition, MPI_Request req) {
    wb_persistent *p;
    call_t c = partition_call(K_PREADY, req, partition, partition, &p);
    int err = PMPI_Pready(partition, req);
    wb_event *e = leave(&c);
    if (e) { e->aux = partition; e->req = p ? p->id : -1; }
    return err;
}

int MPI_Pready_range(int lo, int hi, MPI_Request req) {
    wb_persistent *p;
    call_t c = partition_call(K_PREADY_RANGE, req, lo, hi, &p);
    int err = PMPI_Pready_range(lo, hi, req);
    wb_event *e = leave(&c);
    if (e) { e->aux = lo; e->count = hi - lo + 1; e->req = p ? p->id : -1; }
    return err;
}

int MPI_Parrived(MPI_Request req, int partition, int *flag) {
    wb_persistent *p;
    call_t c = partition_call(K_PARRIVED, req, partition, partition, &p);
    int err = PMPI_Parrived(req, partition, flag);
    tested(&c, p ? p->id : -1, -1, partition, err == MPI_SUCCESS && *flag);
    return err;
}

#endif /* WB_MPI4_PERSISTENT */

/* ---------------------------------------------------------------- completion: tests, Waitsome */
static int32_t req_id(MPI_Request r) {
    wb_event *e = event_of(r);
    if (e) return e->req;
    wb_persistent *p = persistent(r);
    return p ? p->id : -1;
}

int MPI_Test(MPI_Request *req, int *flag, MPI_Status *status) {
    MPI_Status own;
    if (status == MPI_STATUS_IGNORE) status = &own;
    MPI_Request r = *req;
    int32_t id = slot->on ? req_id(r) : -1;
    call_t c = enter(K_TEST, MPI_COMM_NULL, -1, -3, 0);
    int err = PMPI_Test(req, flag, status);
    wb_event *e = tested(&c, id, 1, -1, *flag);
    if (e && *flag) completed(r, status, e->t1);
    return err;
}

int MPI_Testall(int n, MPI_Request reqs_[], int *flag, MPI_Status statuses[]) {
    MPI_Request copy[MANY];
    MPI_Status own[MANY];
    int track = copied(n, reqs_, copy);
    if (track && statuses == MPI_STATUSES_IGNORE) statuses = own;
    int32_t id = track && n > 0 ? req_id(copy[0]) : -1;
    call_t c = enter(K_TESTALL, MPI_COMM_NULL, -1, -3, 0);
    int err = PMPI_Testall(n, reqs_, flag, statuses);
    wb_event *e = tested(&c, id, n, -1, *flag);
    if (e && track && *flag)
        for (int i = 0; i < n; i++) completed(copy[i], &statuses[i], e->t1);
    return err;
}

int MPI_Testany(int n, MPI_Request reqs_[], int *index, int *flag, MPI_Status *status) {
    MPI_Request copy[MANY];
    MPI_Status own;
    int track = copied(n, reqs_, copy);
    if (status == MPI_STATUS_IGNORE) status = &own;
    int32_t id = track && n > 0 ? req_id(copy[0]) : -1;
    call_t c = enter(K_TESTANY, MPI_COMM_NULL, -1, -3, 0);
    int err = PMPI_Testany(n, reqs_, index, flag, status);
    int done = *flag && *index != MPI_UNDEFINED;
    wb_event *e = tested(&c, id, n, -1, done);
    if (e && track && done) completed(copy[*index], status, e->t1);
    return err;
}

#define SOME_LIKE(NAME, KIND, FOLD)                                                          \
    int NAME(int n, MPI_Request reqs_[], int *outcount, int indices[], MPI_Status statuses[]) { \
        MPI_Request copy[MANY];                                                              \
        MPI_Status own[MANY];                                                                \
        int track = copied(n, reqs_, copy);                                                  \
        if (track && statuses == MPI_STATUSES_IGNORE) statuses = own;                        \
        int32_t id = track && n > 0 ? req_id(copy[0]) : -1;                                  \
        call_t c = enter(KIND, MPI_COMM_NULL, -1, -3, 0);                                   \
        int err = P##NAME(n, reqs_, outcount, indices, statuses);                            \
        int done = *outcount != MPI_UNDEFINED && *outcount > 0;                              \
        wb_event *e;                                                                         \
        if (FOLD) e = tested(&c, id, n, -1, done);                                           \
        else { e = leave(&c); if (e) { e->req = id; e->op = n; e->count = done ? *outcount : 0; } } \
        if (e && track && done)                                                              \
            for (int i = 0; i < *outcount; i++) completed(copy[indices[i]], &statuses[i], e->t1); \
        return err;                                                                          \
    }
SOME_LIKE(MPI_Testsome, K_TESTSOME, 1)
SOME_LIKE(MPI_Waitsome, K_WAITSOME, 0)

/* ---------------------------------------------------------------- non-blocking collectives */
#define NBC(KIND, COMM, ROOT, BYTES, CALL)                                                   \
    do {                                                                                     \
        call_t c = enter(KIND, COMM, ROOT, -3, BYTES);                                       \
        int err = CALL;                                                                      \
        started(leave(&c), err, req, COMM);                                                  \
        return err;                                                                          \
    } while (0)

int MPI_Ibarrier(MPI_Comm comm, MPI_Request *req) { NBC(K_IBARRIER, comm, -1, 0, PMPI_Ibarrier(comm, req)); }

#define IBCAST_LIKE(NAME, CT)                                                                \
    int NAME(void *buf, CT count, MPI_Datatype type, int root, MPI_Comm comm, MPI_Request *req) { \
        NBC(K_IBCAST, comm, root, nbytes(count, type), P##NAME(buf, count, type, root, comm, req)); \
    }
IBCAST_LIKE(MPI_Ibcast, int)
#if WB_LARGE_COUNT
IBCAST_LIKE(MPI_Ibcast_c, MPI_Count)
#endif

#define IREDUCE_LIKE(NAME, CT)                                                               \
    int NAME(const void *s, void *r, CT count, MPI_Datatype type, MPI_Op op, int root,        \
             MPI_Comm comm, MPI_Request *req) {                                             \
        NBC(K_IREDUCE, comm, root, nbytes(count, type), P##NAME(s, r, count, type, op, root, comm, req)); \
    }
IREDUCE_LIKE(MPI_Ireduce, int)
#if WB_LARGE_COUNT
IREDUCE_LIKE(MPI_Ireduce_c, MPI_Count)
#endif

#define IALLREDUCE_LIKE(NAME, CT)                                                            \
    int NAME(const void *s, void *r, CT count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,   \
             MPI_Request *req) {                                                            \
        NBC(K_IALLREDUCE, comm, -1, nbytes(count, type), P##NAME(s, r, count, type, op, comm, req)); \
    }
IALLREDUCE_LIKE(MPI_Iallreduce, int)
#if WB_LARGE_COUNT
IALLREDUCE_LIKE(MPI_Iallreduce_c, MPI_Count)
#endif

#define IGATHER_LIKE(NAME, KIND, CT, MINE)                                                   \
    int NAME(const void *s, CT sc, MPI_Datatype st, void *r, CT rc, MPI_Datatype rt, int root, \
             MPI_Comm comm, MPI_Request *req) {                                             \
        NBC(KIND, comm, root, MINE, P##NAME(s, sc, st, r, rc, rt, root, comm, req));          \
    }
IGATHER_LIKE(MPI_Igather, K_IGATHER, int, nbytes(sc, st))
#if WB_LARGE_COUNT
IGATHER_LIKE(MPI_Igather_c, K_IGATHER, MPI_Count, nbytes(sc, st))
#endif
IGATHER_LIKE(MPI_Iscatter, K_ISCATTER, int, nbytes(rc, rt))
#if WB_LARGE_COUNT
IGATHER_LIKE(MPI_Iscatter_c, K_ISCATTER, MPI_Count, nbytes(rc, rt))
#endif

#define IALLGATHER_LIKE(NAME, KIND, CT)                                                      \
    int NAME(const void *s, CT sc, MPI_Datatype st, void *r, CT rc, MPI_Datatype rt,          \
             MPI_Comm comm, MPI_Request *req) {                                             \
        NBC(KIND, comm, -1, nbytes(sc, st), P##NAME(s, sc, st, r, rc, rt, comm, req));        \
    }
IALLGATHER_LIKE(MPI_Iallgather, K_IALLGATHER, int)
#if WB_LARGE_COUNT
IALLGATHER_LIKE(MPI_Iallgather_c, K_IALLGATHER, MPI_Count)
#endif
IALLGATHER_LIKE(MPI_Ialltoall, K_IALLTOALL, int)
#if WB_LARGE_COUNT
IALLGATHER_LIKE(MPI_Ialltoall_c, K_IALLTOALL, MPI_Count)
#endif

/* ---------------------------------------------------------------- one-sided
 * Windows are numbered per rank in creation order (collective over their communicator: the
 * same number on every member). A Put/Get/Accumulate is complete at the origin when the
 * fence, unlock or flush that covers it returns: that moment becomes its t_done. */
#define MAX_WINS 256
static struct { MPI_Win win; int32_t comm; int live; } wins[MAX_WINS];
static int nwins = 0;

static int win_index(MPI_Win w) {
    for (int i = nwins - 1; i >= 0; i--)
        if (wins[i].live && wins[i].win == w) return i;
    return -1;
}

static int add_win(MPI_Win w, int comm) {
    if (nwins >= MAX_WINS) return -1;
    wins[nwins].win = w; wins[nwins].comm = comm; wins[nwins].live = 1;
    return nwins++;
}

static void complete_rma(int win, int target, double t) {
    for (int i = 0; i < npending;) {
        if (pending[i].win == win && (target < 0 || pending[i].target == target)) {
            if (pending[i].event < slot->nevents) events[pending[i].event].t_done = t;
            pending[i] = pending[--npending];
        } else {
            i++;
        }
    }
}

/* Enter a call on window *win* with target *target* (a rank of the window's communicator, or
 * -1): the event names the window's communicator and the target's world rank. */
static call_t win_call(int kind, MPI_Win win, int target, int64_t bytes, int *wi) {
    *wi = win_index(win);
    call_t c = enter(kind, MPI_COMM_NULL, -1, -3, bytes);
    if (*wi >= 0) { c.comm = wins[*wi].comm; c.peer = world_rank_in(wins[*wi].comm, target); }
    return c;
}

/* An operation on window *wi* towards *target*, complete once a synchronisation covers it. */
static void pend(wb_event *e, int wi, int target) {
    e->req = wi;
    e->aux = target;
    if (npending >= PENDING) return;
    pending[npending].event = event_index(e);
    pending[npending].win = wi;
    pending[npending].target = target;
    npending++;
}

#define RMA(KIND, TARGET, BYTES, WIN, CALL)                                                  \
    do {                                                                                     \
        int wi;                                                                              \
        call_t c = win_call(KIND, WIN, TARGET, BYTES, &wi);                                  \
        int err = CALL;                                                                      \
        wb_event *e = leave(&c);                                                             \
        if (e) pend(e, wi, TARGET);                                                          \
        return err;                                                                          \
    } while (0)

#define PUT_LIKE(NAME, KIND, CT, CONST)                                                      \
    int NAME(CONST void *o, CT oc, MPI_Datatype ot, int target, MPI_Aint disp, CT tc,         \
             MPI_Datatype tt, MPI_Win win) {                                                \
        RMA(KIND, target, nbytes(oc, ot), win, P##NAME(o, oc, ot, target, disp, tc, tt, win)); \
    }
PUT_LIKE(MPI_Put, K_PUT, int, const)
#if WB_LARGE_COUNT
PUT_LIKE(MPI_Put_c, K_PUT, MPI_Count, const)
#endif
PUT_LIKE(MPI_Get, K_GET, int, )
#if WB_LARGE_COUNT
PUT_LIKE(MPI_Get_c, K_GET, MPI_Count, )
#endif

#define ACC_LIKE(NAME, CT)                                                                   \
    int NAME(const void *o, CT oc, MPI_Datatype ot, int target, MPI_Aint disp, CT tc,         \
             MPI_Datatype tt, MPI_Op op, MPI_Win win) {                                     \
        RMA(K_ACCUMULATE, target, nbytes(oc, ot), win, P##NAME(o, oc, ot, target, disp, tc, tt, op, win)); \
    }
ACC_LIKE(MPI_Accumulate, int)
#if WB_LARGE_COUNT
ACC_LIKE(MPI_Accumulate_c, MPI_Count)
#endif

#define GET_ACC_LIKE(NAME, CT)                                                               \
    int NAME(const void *o, CT oc, MPI_Datatype ot, void *r, CT rc, MPI_Datatype rt,          \
             int target, MPI_Aint disp, CT tc, MPI_Datatype tt, MPI_Op op, MPI_Win win) {   \
        RMA(K_GET_ACCUMULATE, target, nbytes(oc, ot) + nbytes(rc, rt), win,                  \
            P##NAME(o, oc, ot, r, rc, rt, target, disp, tc, tt, op, win));                  \
    }
GET_ACC_LIKE(MPI_Get_accumulate, int)
#if WB_LARGE_COUNT
GET_ACC_LIKE(MPI_Get_accumulate_c, MPI_Count)
#endif

int MPI_Fetch_and_op(const void *o, void *r, MPI_Datatype type, int target, MPI_Aint disp, MPI_Op op,
                     MPI_Win win) {
    RMA(K_FETCH_AND_OP, target, nbytes(1, type), win, PMPI_Fetch_and_op(o, r, type, target, disp, op, win));
}

int MPI_Compare_and_swap(const void *o, const void *cmp, void *r, MPI_Datatype type, int target,
                         MPI_Aint disp, MPI_Win win) {
    RMA(K_COMPARE_AND_SWAP, target, nbytes(1, type), win,
        PMPI_Compare_and_swap(o, cmp, r, type, target, disp, win));
}

/* Synchronisation: *TARGET* < 0 completes every pending operation of the window. */
#define WIN_SYNC(KIND, WIN, TARGET, COMPLETES, CALL)                                         \
    do {                                                                                     \
        int wi;                                                                              \
        call_t c = win_call(KIND, WIN, TARGET, 0, &wi);                                      \
        int err = CALL;                                                                      \
        wb_event *e = leave(&c);                                                             \
        if (e) e->req = wi;                                                                  \
        if (COMPLETES && wi >= 0 && events) complete_rma(wi, TARGET, e ? e->t1 : now());     \
        return err;                                                                          \
    } while (0)

int MPI_Win_fence(int assert_, MPI_Win win) { WIN_SYNC(K_WIN_FENCE, win, -1, 1, PMPI_Win_fence(assert_, win)); }
int MPI_Win_lock(int type, int rank, int assert_, MPI_Win win) {
    WIN_SYNC(K_WIN_LOCK, win, rank, 0, PMPI_Win_lock(type, rank, assert_, win));
}
int MPI_Win_unlock(int rank, MPI_Win win) { WIN_SYNC(K_WIN_UNLOCK, win, rank, 1, PMPI_Win_unlock(rank, win)); }
int MPI_Win_lock_all(int assert_, MPI_Win win) { WIN_SYNC(K_WIN_LOCK_ALL, win, -1, 0, PMPI_Win_lock_all(assert_, win)); }
int MPI_Win_unlock_all(MPI_Win win) { WIN_SYNC(K_WIN_UNLOCK_ALL, win, -1, 1, PMPI_Win_unlock_all(win)); }
int MPI_Win_flush(int rank, MPI_Win win) { WIN_SYNC(K_WIN_FLUSH, win, rank, 1, PMPI_Win_flush(rank, win)); }
int MPI_Win_flush_all(MPI_Win win) { WIN_SYNC(K_WIN_FLUSH_ALL, win, -1, 1, PMPI_Win_flush_all(win)); }

#define WIN_MAKE(KIND, COMM, BYTES, CALL)                                                    \
    do {                                                                                     \
        call_t c = enter(KIND, COMM, -1, -3, BYTES);                                         \
        int err = CALL;                                                                      \
        int wi = err == MPI_SUCCESS ? add_win(*win, c.comm) : -1;                            \
        wb_event *e = leave(&c);                                                             \
        if (e) e->req = wi;                                                                  \
        return err;                                                                          \
    } while (0)

int MPI_Win_create(void *base, MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, MPI_Win *win) {
    WIN_MAKE(K_WIN_CREATE, comm, size, PMPI_Win_create(base, size, disp_unit, info, comm, win));
}
#if WB_LARGE_COUNT
int MPI_Win_create_c(void *base, MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm comm, MPI_Win *win) {
    WIN_MAKE(K_WIN_CREATE, comm, size, PMPI_Win_create_c(base, size, disp_unit, info, comm, win));
}
#endif
int MPI_Win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr, MPI_Win *win) {
    WIN_MAKE(K_WIN_ALLOCATE, comm, size, PMPI_Win_allocate(size, disp_unit, info, comm, baseptr, win));
}
#if WB_LARGE_COUNT
int MPI_Win_allocate_c(MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr,
                       MPI_Win *win) {
    WIN_MAKE(K_WIN_ALLOCATE, comm, size, PMPI_Win_allocate_c(size, disp_unit, info, comm, baseptr, win));
}
#endif

int MPI_Win_free(MPI_Win *win) {
    int wi;
    call_t c = win_call(K_WIN_FREE, *win, -1, 0, &wi);
    int err = PMPI_Win_free(win);
    wb_event *e = leave(&c);
    if (e) e->req = wi;
    if (wi >= 0 && err == MPI_SUCCESS) {
        wins[wi].live = 0;
        complete_rma(wi, -1, 0);   /* forget what never saw its synchronisation */
    }
    return err;
}

/* ---------------------------------------------------------------- communicators
 * Constructors: the event's comm is the parent, req the new communicator's index, bytes its
 * size, tag a split's colour, count a Cartesian grid's dimensions. */
static int made(call_t *c, MPI_Comm parent, int err, const MPI_Comm *newcomm, int count) {
    int idx = made_comm(parent, err == MPI_SUCCESS ? *newcomm : MPI_COMM_NULL, c->kind);
    wb_event *e = leave(c);
    if (e) { e->req = idx; e->bytes = idx >= 0 ? comms[idx].size : 0; e->count = count; }
    return idx;
}

/* A constructor on COMM writing *newcomm: enter, call, record; leaves the new communicator's
 * table index in `idx` (-1: none on this rank) and the call's result in `err`. */
#define MAKE_COMM(KIND, COMM, TAG, COUNT, CALL)                                              \
    call_t c = enter(KIND, COMM, -1, TAG, 0);                                                \
    int err = CALL;                                                                          \
    int idx = made(&c, COMM, err, newcomm, COUNT)

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm) {
    MAKE_COMM(K_COMM_DUP, comm, -3, 1, PMPI_Comm_dup(comm, newcomm));
    (void)idx;
    return err;
}

int MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm) {
    MAKE_COMM(K_COMM_DUP, comm, -3, 1, PMPI_Comm_dup_with_info(comm, info, newcomm));
    (void)idx;
    return err;
}

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm) {
    MAKE_COMM(K_COMM_SPLIT, comm, color, 1, PMPI_Comm_split(comm, color, key, newcomm));
    if (idx >= 0) comms[idx].color = color;
    return err;
}

int MPI_Comm_split_type(MPI_Comm comm, int type, int key, MPI_Info info, MPI_Comm *newcomm) {
    MAKE_COMM(K_COMM_SPLIT_TYPE, comm, type, 1, PMPI_Comm_split_type(comm, type, key, info, newcomm));
    (void)idx;
    return err;
}

int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm) {
    MAKE_COMM(K_COMM_CREATE, comm, -3, 1, PMPI_Comm_create(comm, group, newcomm));
    (void)idx;
    return err;
}

int MPI_Cart_create(MPI_Comm comm, int ndims, const int dims[], const int periods[], int reorder,
                    MPI_Comm *newcomm) {
    MAKE_COMM(K_CART_CREATE, comm, -3, ndims, PMPI_Cart_create(comm, ndims, dims, periods, reorder, newcomm));
    if (idx >= 0) {
        comms[idx].ndims = ndims;
        for (int i = 0; i < ndims && i < MAX_DIMS; i++) comms[idx].dims[i] = dims[i];
    }
    return err;
}

int MPI_Cart_sub(MPI_Comm comm, const int remain[], MPI_Comm *newcomm) {
    MAKE_COMM(K_CART_SUB, comm, -3, 1, PMPI_Cart_sub(comm, remain, newcomm));
    (void)idx;
    return err;
}

int MPI_Comm_free(MPI_Comm *comm) {
    int idx = comm_index(*comm);
    call_t c = enter(K_COMM_FREE, *comm, -1, -3, 0);
    int err = PMPI_Comm_free(comm);
    wb_event *e = leave(&c);
    if (e) e->req = idx;
    if (idx >= 2 && err == MPI_SUCCESS) {
        comms[idx].freed = 1;
        if (last_index == idx) last_index = -1;
    }
    return err;
}

int MPI_Comm_set_name(MPI_Comm comm, const char *name) {
    int idx = comm_index(comm);
    if (idx >= 0 && name) {
        strncpy(comms[idx].name, name, sizeof comms[idx].name - 1);
        comms[idx].name[sizeof comms[idx].name - 1] = 0;
    }
    return PMPI_Comm_set_name(comm, name);
}
