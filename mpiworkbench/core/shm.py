"""The files an MPI process keeps in ``/dev/shm``, and removing them once it is gone.

MPICH maps one segment per host and world (``mpich_shm_<id>_<n>``, about 2 MB) and unlinks
it in ``MPI_Finalize``; Open MPI and Intel MPI keep files of their own
(:data:`WORLD_FILE_PREFIXES`), and Open MPI's launcher a session directory in the temporary
directory (:func:`remove_session_dirs`); the interposer keeps ``mpiworkbench-<pid>.slot``, ``.stack`` and, from a rank's
first trace on, ``.events`` (56 MB: one buffer per rank, which the next trace reuses, kept after a
trace so that a hang report can still read it), and removes them when its process exits. A rank killed with
SIGKILL (every restart kills the old world so) does neither, and its files stay until reboot.

A file is never chosen by its name alone. While a process lives, its :func:`footprint` is
recorded: the ``/dev/shm`` files it maps or holds open, read from ``/proc`` on its own host.
:func:`remove_left_behind` later removes a recorded file only on the host the record was
taken on, once every recorded process that had it is gone and no live process maps it or
holds it open — so files of live processes, of other clusters and of other users' MPI jobs
are never touched. Only files named like the MPI library's and the interposer's
(:data:`WORLD_FILE_PREFIXES`) are recorded: a segment the user's own code shares is not. MPICH
segments of processes that were never recorded (a singleton: a notebook kernel that imported
``mpi4py.MPI``, then was killed) go once no process maps them (:func:`remove_unheld_segments`).

Linux only (``/proc``); neither MPI nor ipyparallel: ranks and the notebook run the same code.
"""

from __future__ import annotations

import json
import os
import socket
import time
from typing import Callable, Iterable

SHM_DIR = "/dev/shm"
#: Name prefixes of the files an MPI world keeps in ``/dev/shm``: MPICH's shared-memory
#: segments, Open MPI's (``sm_segment.<host>.<uid>.<job>.<local rank>``, 16 MiB, one per rank,
#: removed by its ``prterun`` at the job's end — a killed ``prterun`` or a singleton leaves
#: them), Open MPI 4's (its ``vader`` transport: ``vader_segment.<host>.<job>.<local rank>``, what a
#: site's Open MPI 4.1 leaves as Open MPI 5 leaves ``sm_segment``), Intel MPI's
#: (``Intel_MPI_<random>``, unlinked once mapped: left only by a rank killed in between) and the
#: interposer's per-process files.
WORLD_FILE_PREFIXES = ("mpich_shm_", "sm_segment.", "vader_segment.", "Intel_MPI_", "mpiworkbench-")


def is_world_file(path: str) -> bool:
    """Whether *path* is a file of an MPI world in ``/dev/shm`` (by its name)."""
    return os.path.dirname(path) == SHM_DIR and os.path.basename(path).startswith(WORLD_FILE_PREFIXES)


def files_of(pid: int | str = "self") -> set[str]:
    """The world files (see :func:`is_world_file`) process *pid* of this host maps or holds
    open; empty when it is gone or not readable (another user's)."""
    found: set[str] = set()
    try:
        with open(f"/proc/{pid}/maps") as maps:
            for line in maps:
                fields = line.split(None, 5)
                if len(fields) == 6 and fields[5].startswith(SHM_DIR):
                    found.add(fields[5].rstrip("\n"))
    except OSError:
        pass
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        fds = []
    for fd in fds:
        try:
            found.add(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except OSError:
            continue
    # a file unlinked while mapped reads "<path> (deleted)": gone already
    return {path for path in found if is_world_file(path) and not path.endswith(" (deleted)")}


def own_prefix(pid: int) -> str:
    """How the interposer's files of process *pid* are named in ``/dev/shm``: ``mpiworkbench-<pid>.``"""
    return f"mpiworkbench-{int(pid)}."


def own_files(pid: int) -> list[str]:
    """The files the interposer names after process *pid* (``mpiworkbench-<pid>.*``): it may
    create them after the process's footprint was taken (the trace buffer)."""
    prefix = own_prefix(pid)
    try:
        names = os.listdir(SHM_DIR)
    except OSError:
        return []
    return [os.path.join(SHM_DIR, name) for name in names if name.startswith(prefix)]


def started(pid: int) -> int | None:
    """When process *pid* of this host started (clock ticks since boot: with the pid, it names
    one process even after the pid is reused); ``None`` when it is gone or a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()  # the command name may hold ')'
    except (OSError, IndexError):
        return None
    return None if fields[0] in ("Z", "X") else int(fields[19])


def footprint(pid: int | None = None) -> dict:
    """Process *pid* (this process by default) of this host: ``pid``, ``host``, ``started``
    and ``files``, its world files now. What :func:`remove_left_behind` needs after its death.

    Examples
    --------
    >>> sorted(footprint())
    ['files', 'host', 'pid', 'started']
    """
    pid = os.getpid() if pid is None else int(pid)
    return {"pid": pid, "host": socket.gethostname(), "started": started(pid), "files": sorted(files_of(pid))}


#: Directory in which a process leaves its :func:`footprint` once MPI is initialised
#: (:func:`record_footprint`), set by :func:`mpiworkbench.core.launch.run_under_mpiexec`.
FOOTPRINT_DIR_VARIABLE = "MPIWORKBENCH_FOOTPRINT_DIR"


def record_footprint(directory: str | None = None) -> str | None:
    """Write this process's :func:`footprint` into *directory* (default ``$MPIWORKBENCH_FOOTPRINT_DIR``,
    as ``<host>-<pid>.json``), for the process that launched it to read after its death; return
    the path written, ``None`` (nothing done) when that names no directory."""
    directory = directory if directory is not None else os.environ.get(FOOTPRINT_DIR_VARIABLE)
    if not directory or not os.path.isdir(directory):
        return None
    record = footprint()
    record["launcher_files"] = launcher_files(os.getppid())
    path = os.path.join(directory, f"{record['host']}-{record['pid']}.json")
    with open(path + ".part", "w") as out:
        json.dump(record, out)
    os.replace(path + ".part", path)
    return path


def read_footprints(directory: str) -> list[dict]:
    """The footprints :func:`record_footprint` left in *directory* (a record half-written by
    a process killed meanwhile is skipped)."""
    records = []
    for name in sorted(os.listdir(directory)):
        if name.endswith(".json"):
            try:
                with open(os.path.join(directory, name)) as record:
                    records.append(json.load(record))
            except (OSError, ValueError):
                continue
    return records


def drop_finished_records(directory: str) -> list[str]:
    """Remove the records of *directory* (:func:`record_footprint`) of this host's processes that
    have ended and whose files are all gone: what a record is for is done, and a world restarted
    for hours would otherwise gather one per rank and restart. A record naming a file still there
    stays (whoever removes left-behind files still needs it); return the records removed."""
    here, dropped = socket.gethostname(), []
    try:
        present = set(os.listdir(SHM_DIR))  # once, not once per record (own_files lists it)
    except OSError:
        return dropped
    for name in os.listdir(directory):
        path = os.path.join(directory, name)
        if not name.endswith(".json"):
            continue
        try:
            with open(path) as file:
                record = json.load(file)
            own = own_prefix(record["pid"])
            if (record.get("host") == here and gone(record)
                    and not any(os.path.lexists(f) for f in record.get("files", ()))
                    and not any(entry.startswith(own) for entry in present)):
                os.unlink(path)
                dropped.append(path)
        except (OSError, ValueError, KeyError, TypeError):  # being written, removed meanwhile, not a record
            continue
    return dropped


def gone(record: dict) -> bool:
    """Whether the process of *record* (a :func:`footprint` of this host) has ended."""
    now = started(record["pid"])
    return now is None or (record.get("started") is not None and now != record["started"])


def in_use(paths: Iterable[str]) -> set[str]:
    """Those of *paths* some live process of this host maps or holds open (processes of other
    users cannot be read; their files are not ours to remove anyway)."""
    wanted, found = set(paths), set()
    if not wanted:
        return found
    for entry in os.listdir("/proc"):
        if entry.isdigit():  # a zombie maps and holds nothing
            found |= files_of(entry) & wanted
    return found


def remove_left_behind(records: Iterable[dict], also: Callable[[int], Iterable[str]] | None = None) -> list[str]:
    """Remove the world files of the *records* (:func:`footprint`) of this host whose processes
    have ended; return the paths removed.

    A file is kept while a recorded process that had it still runs or any live process maps
    it or holds it open. Records of other hosts are skipped: their files are removed only by
    a process on their host. *also*: more files of a process, by pid, that it may have
    created after its record was taken (the interposer's trace buffer).
    """
    here, ended, kept = socket.gethostname(), set(), set()
    for record in records:
        if record.get("host") != here:
            continue
        files = set(record.get("files") or ()) | set(also(record["pid"]) if also else ())
        (ended if gone(record) else kept).update(path for path in files if is_world_file(path))
    candidates = {path for path in ended - kept if os.path.lexists(path)}
    return _unlink(candidates - in_use(candidates))


#: Seconds an MPICH segment must have existed before :func:`remove_unheld_segments` may take it
#: (a rank maps the segment it creates at once; this leaves any start far behind).
UNHELD_AFTER_S = 60.0


def remove_unheld_segments(directory: str = SHM_DIR, older_than: float = UNHELD_AFTER_S) -> list[str]:
    """Remove this user's MPICH segments in *directory* that no live process of this host maps or
    holds open, made more than *older_than* seconds ago; return the paths removed.

    Footprints cover the ranks of workbench worlds; this covers the rest. A process that
    initialised MPI by itself (a singleton: a notebook's kernel that imported ``mpi4py.MPI``)
    makes ``mpich_shm_<pid in hex>_0`` (1 MB), and a kernel killed (a restart from JupyterLab, a
    test client's time-out) leaves it. MPICH's segment means something only while a process of
    its world maps it, so one nobody maps is left behind whoever made it."""
    now, uid, candidates = time.time(), os.getuid(), []
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    for name in names:
        if not name.startswith("mpich_shm_"):
            continue
        path = os.path.join(directory, name)
        try:
            st = os.stat(path)
        except OSError:
            continue
        if st.st_uid == uid and now - st.st_mtime > older_than:
            candidates.append(path)
    return _unlink(set(candidates) - in_use(candidates))


def _unlink(paths: Iterable[str]) -> list[str]:
    """Remove *paths*; those removed, in order (one removed meanwhile, by another rank of this
    host, or not ours to remove, is skipped)."""
    removed = []
    for path in sorted(paths):
        try:
            os.unlink(path)
        except OSError:
            continue
        removed.append(path)
    return removed


def wait_gone(records: Iterable[dict], timeout: float) -> bool:
    """Wait up to *timeout* seconds until the processes of the *records* of this host have
    ended (a killed rank takes a moment to exit); whether they all have."""
    here = socket.gethostname()
    local = [record for record in records if record.get("host") == here]
    deadline = time.monotonic() + timeout
    while not all(gone(record) for record in local):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


#: The session directories an ``mpiexec`` keeps in the temporary directory, named after its
#: pid: Open MPI 5's ``prterun`` (``ompi.<pid>``: the PMIx server's files the ranks map, the
#: topology; removed when it exits, left when it is killed). MPICH's and Intel MPI's Hydra
#: keep none there that carries their pid.
SESSION_DIR_NAMES = ("ompi.{pid}", "prte.{pid}")


def session_dirs(pid: int, tmpdir: str) -> list[str]:
    """The session directories of the ``mpiexec`` of pid *pid* in *tmpdir* that exist."""
    paths = (os.path.join(tmpdir, name.format(pid=int(pid))) for name in SESSION_DIR_NAMES)
    return [path for path in paths if os.path.isdir(path) and not os.path.islink(path)]


def _uses_under(directory: str) -> bool:
    """Whether a live process of this host maps or holds open a file under *directory*."""
    inside = directory.rstrip("/") + "/"
    return _used(lambda path: path.startswith(inside), inside)


def _used(wanted: Callable[[str], bool], fragment: str) -> bool:
    """Whether a live process of this host maps (a line of its maps holding *fragment*) or holds
    open a file whose path is *wanted*."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/maps") as maps:
                if any(fragment in line for line in maps):
                    return True
        except OSError:
            pass
        try:
            fds = os.listdir(f"/proc/{entry}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if wanted(os.readlink(f"/proc/{entry}/fd/{fd}")):
                    return True
            except OSError:
                continue
    return False


def remove_session_dirs(pid: int, tmpdir: str) -> list[str]:
    """Remove the session directories (:data:`SESSION_DIR_NAMES`) of the ``mpiexec`` of pid
    *pid*, which has exited (its caller waited for it), in *tmpdir*, unless a live process
    still uses a file in one (a rank it left running); return the paths removed."""
    import shutil

    removed = []
    for path in session_dirs(pid, tmpdir):
        if not _uses_under(path):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


#: Files a launcher's proxy keeps in the temporary directory and holds open while its ranks
#: run: MPICH's Hydra (5.0.2) writes the machine's topology for its proxies
#: (``hydra_hwloc_xmlfile_<random>``) and leaves it behind when a job fails or outlives
#: ``MPIEXEC_TIMEOUT``. A rank records those its parent holds (:func:`record_footprint`).
LAUNCHER_FILE_PREFIXES = ("hydra_hwloc_xmlfile_",)


def is_launcher_file(path: str) -> bool:
    """Whether *path* is named like a launcher's file in the temporary directory."""
    import tempfile

    return (os.path.dirname(path) == tempfile.gettempdir()
            and os.path.basename(path).startswith(LAUNCHER_FILE_PREFIXES))


def launcher_files(pid: int) -> list[str]:
    """The launcher files (:data:`LAUNCHER_FILE_PREFIXES`) process *pid* of this host holds open."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return []
    found = set()
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if is_launcher_file(target):
            found.add(target)
    return sorted(found)


def remove_launcher_files(records: Iterable[dict]) -> list[str]:
    """Remove the launcher files the *records* of this host name (:func:`record_footprint`)
    that no live process holds open any more; return the paths removed."""
    here = socket.gethostname()
    paths = {path for record in records if record.get("host") == here
             for path in record.get("launcher_files") or () if is_launcher_file(path)}
    return _unlink(path for path in paths
                   if os.path.lexists(path) and not _used(lambda target, path=path: target == path, path))


def remove_after_exit(records: Iterable[dict], timeout: float) -> list[str]:
    """Once the processes of *records* (footprints, with their ``launcher_files``) have exited —
    waited for up to *timeout* seconds — remove what they left: their world files in ``/dev/shm``
    (:func:`remove_left_behind`, the interposer's too) and their launchers' files in the temporary
    directory (:func:`remove_launcher_files`); return the paths removed. What the CLI's job runner
    and the watchdog both do after the ranks they ended."""
    records = list(records)
    wait_gone(records, timeout)
    return remove_left_behind(records, also=own_files) + remove_launcher_files(records)

