"""The files an MPI process keeps in /dev/shm, removed once it is gone — and only then, and only
those: a killed stand-in for a rank (a child process that maps a file, as MPICH's ranks do)
leaves its file; files of live processes, of other hosts and of other kinds stay."""

from __future__ import annotations

import contextlib
import json
import mmap
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from mpiworkbench.client.cluster import leftovers
from mpiworkbench.core import shm

pytestmark = pytest.mark.skipif(not os.path.isdir(shm.SHM_DIR) or not os.path.isdir("/proc"),
                                reason="needs Linux /dev/shm and /proc")

RANK = """
import json, mmap, os, sys, time
from mpiworkbench.core import shm
maps = []
for path in sys.argv[1:]:
    with open(path, "a+b") as f:
        f.truncate(4096)
        maps.append(mmap.mmap(f.fileno(), 4096))
print(json.dumps(shm.footprint()), flush=True)
time.sleep(600)
"""


@pytest.fixture
def world_file():
    """A fresh path named like an MPI world's file in /dev/shm, removed after the test."""
    made = []

    def make(prefix: str = "mpiworkbench-") -> Path:
        path = Path(shm.SHM_DIR) / f"{prefix}unittest-{uuid.uuid4().hex}"
        made.append(path)
        return path

    yield make
    for path in made:
        path.unlink(missing_ok=True)


@pytest.fixture
def killed_rank():
    """Start a process that maps *paths*, take its footprint, SIGKILL it (as a restart kills a
    rank) and wait for it: returns the footprint."""
    started = []

    def run(*paths: Path) -> dict:
        proc = subprocess.Popen([sys.executable, "-c", RANK, *map(str, paths)], stdout=subprocess.PIPE, text=True)
        started.append(proc)
        record = json.loads(proc.stdout.readline())
        proc.kill()
        proc.wait(timeout=60)
        return record

    yield run
    for proc in started:
        proc.kill()
        proc.wait(timeout=60)
        proc.stdout.close()


def test_a_footprint_lists_the_world_files_a_process_maps_or_holds_open(world_file):
    mapped, opened, other = world_file("mpich_shm_"), world_file(), world_file("psm_")
    with open(mapped, "w+b") as m, open(opened, "wb") as held, open(other, "wb"):
        m.truncate(4096)
        view = mmap.mmap(m.fileno(), 4096)
        try:
            record = shm.footprint()
        finally:
            view.close()
        assert held.fileno() >= 0
    assert {str(mapped), str(opened)} <= set(record["files"])
    assert str(other) not in record["files"], "only the MPI library's and the interposer's names"
    assert record["pid"] == os.getpid() and record["started"] == shm.started(os.getpid())


def test_a_killed_process_leaves_its_file_and_remove_left_behind_removes_it(world_file, killed_rank):
    path = world_file("mpich_shm_")
    record = killed_rank(path)
    assert str(path) in record["files"] and shm.gone(record)
    assert path.exists(), "SIGKILL leaves the file: nobody unlinked it"
    assert shm.remove_left_behind([record]) == [str(path)]
    assert not path.exists()


def test_files_in_use_or_of_live_processes_or_other_hosts_are_kept(world_file, killed_rank):
    held, shared, elsewhere = world_file(), world_file(), world_file()
    dead = killed_rank(held, shared, elsewhere)
    alive = shm.footprint()
    alive["files"] = [str(shared)]  # a live process recorded with the same file: a world still running
    other_host = {**dead, "host": dead["host"] + "-elsewhere"}
    with open(held, "rb"):  # a live process holds it open
        removed = shm.remove_left_behind([{**dead, "files": [str(held)]}, alive, other_host])
        assert removed == [] and held.exists() and shared.exists()
    assert shm.remove_left_behind([other_host]) == [], "another host's record is for that host"
    assert elsewhere.exists()


def test_a_reused_pid_does_not_make_a_dead_process_look_alive():
    me = shm.footprint()
    assert not shm.gone(me)
    assert shm.gone({**me, "started": me["started"] - 1}), "same pid, another start: the recorded one has ended"


def test_also_adds_files_the_process_made_after_its_record_and_only_world_files_go(world_file, killed_rank):
    later, foreign = world_file(), world_file("psm_")
    record = killed_rank()
    later.write_bytes(b"x")
    foreign.write_bytes(b"x")
    removed = shm.remove_left_behind([record], also=lambda pid: [str(later), str(foreign)])
    assert removed == [str(later)] and foreign.exists()


def test_footprints_left_in_a_directory_let_the_launcher_remove_an_aborted_jobs_files(world_file, killed_rank,
                                                                                     tmp_path, monkeypatch):
    # what a rank started by `mpiworkbench CMD --np N` does once MPI is initialised, and what
    # the launching process does once mpiexec has returned (core.launch.run_under_mpiexec)
    monkeypatch.delenv(shm.FOOTPRINT_DIR_VARIABLE, raising=False)
    assert shm.record_footprint() is None, "outside such a job it does nothing"
    monkeypatch.setenv(shm.FOOTPRINT_DIR_VARIABLE, str(tmp_path))
    mine = json.loads(Path(shm.record_footprint()).read_text())
    assert mine == {**shm.footprint(), "files": mine["files"], "launcher_files": shm.launcher_files(os.getppid())}
    segment = world_file("mpich_shm_")
    dead = killed_rank(segment)
    trace = Path(shm.SHM_DIR) / f"mpiworkbench-{dead['pid']}.events"  # made after the record
    trace.write_bytes(b"x")
    try:
        (tmp_path / f"{dead['host']}-{dead['pid']}.json").write_text(json.dumps(dead))
        (tmp_path / "half-written.json").write_text('{"pid": ')
        records = shm.read_footprints(str(tmp_path))
        assert sorted(r["pid"] for r in records) == sorted([dead["pid"], os.getpid()])
        assert shm.own_files(dead["pid"]) == [str(trace)]
        assert shm.remove_left_behind(records, also=shm.own_files) == sorted([str(segment), str(trace)])
        assert not trace.exists() and not segment.exists()
    finally:
        trace.unlink(missing_ok=True)


def test_wait_gone_is_bounded():
    assert shm.wait_gone([shm.footprint()], timeout=0.1) is False
    assert shm.wait_gone([{**shm.footprint(), "host": "elsewhere"}], timeout=0.1) is True


# ------------------------------------------------------------------ the notebook's records
class Cluster:
    engines: dict = {}


def test_after_a_kill_this_hosts_files_go_and_other_hosts_wait_for_their_next_ranks(world_file, killed_rank, monkeypatch):
    monkeypatch.setattr(leftovers, "_known", {})
    monkeypatch.setattr(leftovers, "_elsewhere", [])
    here, there = world_file("mpich_shm_"), world_file("mpich_shm_")
    there.write_bytes(b"x")  # stands for the file on the other host (same name there)
    local = {**killed_rank(here), "client": "c", "engine": 0}
    remote = {**local, "pid": local["pid"] + 1, "host": "elsewhere", "files": [str(there)], "engine": 1}
    leftovers.remember([local, remote])
    world = leftovers.before_kill(Cluster(), client=None, engine_ids=None)
    assert world == [], "without a client only the local launchers' ranks are found"

    class Client:
        class session:
            session = "c"

    world = leftovers.before_kill(Cluster(), Client(), engine_ids=[0, 1])
    assert {(r["host"], r["pid"]) for r in world} == {(local["host"], local["pid"]), ("elsewhere", remote["pid"])}
    removed = leftovers.after_kill(world)  # (and any MPICH segment nobody maps on this machine)
    assert [path for path in removed if path == str(here) or "/mpich_shm_" not in path] == [str(here)]
    assert not here.exists()
    assert there.exists(), "another host's file is removed there, not here"
    assert leftovers.elsewhere() == [remote | {"files": [str(there)]}]
    leftovers.handed_over(leftovers.elsewhere(), {"elsewhere"})
    assert leftovers.elsewhere() == [] and leftovers._known == {}


def test_open_mpis_and_intel_mpis_segments_are_world_files():
    for name in ("sm_segment.vm.0.7d330001.1", "vader_segment.vm.2b0c0001.1", "Intel_MPI_4hGdUL",
                 "mpich_shm_d6840a72_0"):
        assert shm.is_world_file(os.path.join(shm.SHM_DIR, name))
    assert not shm.is_world_file(os.path.join(shm.SHM_DIR, "psm_x"))


def test_a_launchers_session_directory_goes_once_nothing_uses_it(tmp_path, killed_rank):
    dead = killed_rank()  # its pid names the directory, as prterun's does (ompi.<pid>)
    session = tmp_path / f"ompi.{dead['pid']}"
    (session / "1").mkdir(parents=True)
    held = session / "1" / "pmix-gds-shmem2.jobdata"
    held.write_bytes(b"x")
    other = tmp_path / f"ompi.{dead['pid']}0"
    other.mkdir()
    assert shm.session_dirs(dead["pid"], str(tmp_path)) == [str(session)]
    with open(held, "rb"):  # a live process (a rank left running) still uses it
        assert shm.remove_session_dirs(dead["pid"], str(tmp_path)) == [] and session.exists()
    assert shm.remove_session_dirs(dead["pid"], str(tmp_path)) == [str(session)]
    assert not session.exists() and other.exists(), "only the directory named after that pid"


def test_an_mpich_segment_nobody_maps_is_removed_once_old_and_a_mapped_one_never():
    """A singleton's segment (``mpich_shm_<pid in hex>_0``: a kernel that imported mpi4py.MPI,
    then was killed) has no footprint; once nobody maps it, it is left behind."""
    import time

    tag = uuid.uuid4().hex[:8]
    left, held, young = (f"{shm.SHM_DIR}/mpich_shm_{tag}{name}_0" for name in ("a", "b", "c"))
    other = f"{shm.SHM_DIR}/sm_segment.{tag}"
    try:
        for path in (left, held, young, other):
            with open(path, "wb") as f:
                f.write(b"\0" * 4096)
        old = time.time() - 2 * shm.UNHELD_AFTER_S
        for path in (left, held, other):
            os.utime(path, (old, old))
        with open(held, "r+b") as f, mmap.mmap(f.fileno(), 4096):
            assert shm.in_use([held, left]) == {held}  # this process maps it
            removed = shm.remove_unheld_segments()
        assert left in removed and held not in removed and young not in removed and other not in removed
        assert not os.path.exists(left) and all(map(os.path.exists, (held, young, other)))
    finally:
        for path in (left, held, young, other):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
