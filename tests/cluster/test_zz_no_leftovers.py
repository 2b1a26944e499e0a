"""Runs last in the cluster tier: once the shared cluster is stopped, nothing is left."""

from tests.process_tree import leftover_cluster_processes


def test_no_engine_controller_or_mpiexec_left_behind(wb):
    assert leftover_cluster_processes(), "the shared cluster should be running before we stop it"
    wb.stop()  # the fixture's own finalizer stop() is then a no-op
    leftovers = leftover_cluster_processes()
    assert leftovers == [], "\n".join(leftovers)
