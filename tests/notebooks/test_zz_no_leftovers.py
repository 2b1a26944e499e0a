"""Runs last in the notebook tier: the notebooks' own clusters and the attached tier's
ipcluster are all stopped, nothing of them is left."""

from tests.process_tree import leftover_cluster_processes


def test_notebooks_left_nothing_running():
    leftovers = leftover_cluster_processes()
    assert leftovers == [], "\n".join(leftovers)
