"""The cluster's lifecycle: starting and attaching, the launch recipe, profiles, the controller,
the engines' start, the watchdog, cleaning up after ranks, health, a Slurm allocation, its time
limit, who owns a cluster. Imports nothing of the session's calls (:mod:`mpiworkbench.client.calls`)."""
