"""The code that runs inside the ranks (in their engines' kernels), shipped there by the session's
calls: rank 0's relay and what each rank runs for a call. Imports neither the cluster's room nor
the calls' (the ranks need neither)."""
