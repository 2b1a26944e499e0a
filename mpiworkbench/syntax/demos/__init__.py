"""Runnable demonstrations for notebook 01 (deadlock, persistent requests, pickle vs buffer).

Each module is engine-side code taking a communicator; the notebook shows the file and
runs it on the cluster, so what is shown is what runs.
"""
