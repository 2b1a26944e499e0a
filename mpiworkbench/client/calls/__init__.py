"""The session's calls: the session and its connection, running code on every rank (relayed by
rank 0), the turn every client takes, waiting and its errors, output, the magics, arrays, remote
objects, tracing and debugging from the notebook. Builds on :mod:`mpiworkbench.client.cluster`."""
