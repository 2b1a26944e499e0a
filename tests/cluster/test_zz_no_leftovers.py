"""Runs last in the cluster tier: once the shared cluster is stopped, nothing is left — no
process, and no file of an MPI world in /dev/shm (MPICH's segments, the interposer's files)."""

from tests.process_tree import leftover_cluster_processes, leftover_world_files


def test_no_engine_controller_or_mpiexec_left_behind(wb):
    assert leftover_cluster_processes(), "the shared cluster should be running before we stop it"
    wb.stop()  # the fixture's own finalizer stop() is then a no-op
    leftovers = leftover_cluster_processes()
    assert leftovers == [], "\n".join(leftovers)


def test_no_mpi_world_files_left_in_dev_shm(wb, shm_at_start):
    wb.stop()  # every cluster of the tier is stopped (no-op after the test above)
    left = leftover_world_files(set(shm_at_start))
    assert left == [], ("files of ended MPI worlds left in /dev/shm since the session started "
                        "(restarts and stops must remove them):\n" + "\n".join(left))


def test_no_engine_state_file_of_a_stopped_workbench_cluster_left_in_the_profiles(wb):
    import os
    from pathlib import Path

    wb.stop()
    # ipyparallel's hub writes <profile>/log/engines<cluster id>.json and never removes it; the
    # tier's IPython directory, with each pytest-xdist worker's below it (tests/conftest.py)
    root = Path(os.environ["MPIWORKBENCH_TEST_IPYTHONDIR"])
    left = sorted(str(p) for p in root.glob("**/profile_*/log/enginesmpiwb-*.json"))
    assert left == [], "engine state files of stopped workbench clusters:\n" + "\n".join(left)
