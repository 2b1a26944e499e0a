"""A world comes up while other programs on the host take the free ports the system hands them.

ipyparallel picked the controller's ports as free ports, wrote them into the connection files,
and bound them later: another program handed one of them in between left a queue of the
controller unbound, and every engine waiting for it ("0 of the 2 engines registered with the
controller within 60 s": two CI runs). The controller now claims its ports
(:func:`mpiworkbench.client.cluster.controller.claim_ports`).

The other programs are a thread that takes free ports as fast as the system hands them and holds
each for a moment. It runs with the worlds in a network namespace of their own (``unshare
--net``), so the ports it takes are that namespace's: nothing else on the machine (the suite's
other tests) loses a port to it. Before the claims, most starts failed so; now every start must
come up and answer.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.cluster.slurm import _which

pytestmark = pytest.mark.timeout(900)

#: Worlds started one after another, and their ranks.
ROUNDS, N = 3, 2
#: Wall-clock limit (seconds) of the whole script: a world that does not come up fails in 60 s.
LIMIT_S = 600

SCRIPT = """
import collections, json, os, resource, socket, sys, threading, time
from mpiworkbench import Workbench

rounds, n = int(sys.argv[1]), int(sys.argv[2])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
keep = max(200, min(3000, hard - 500))  # ports held at once (each for a moment: ~1-2 s)
stop = threading.Event()

def take_free_ports():
    held = collections.deque()
    while not stop.is_set():
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))  # the system's choice, as any program asking for a free port
        sock.listen(1)
        held.append(sock)
        if len(held) > keep:
            held.popleft().close()
        time.sleep(0.0005)
    for sock in held:
        sock.close()

thief = threading.Thread(target=take_free_ports, daemon=True)
thief.start()
results = []
for _ in range(rounds):
    wb = Workbench(n=n, oversubscribe=n > os.cpu_count())
    try:
        wb.start()
        results.append(len(wb.run(os.getpid)))
    except Exception as exc:
        results.append(f"{type(exc).__name__}: {exc}")
    finally:
        wb.stop()
stop.set()
thief.join()
print("RESULTS", json.dumps(results))
"""


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None,
                    reason="needs root and unshare (util-linux) for a network namespace of its own")
def test_worlds_come_up_while_other_programs_take_the_free_ports():
    command = [_which("unshare"), "--net", "--", "sh", "-c",
               f'{_which("ip")} link set lo up && exec "$0" -c "$1" "$2" "$3"',
               sys.executable, SCRIPT, str(ROUNDS), str(N)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=LIMIT_S)
    found = [line for line in done.stdout.splitlines() if line.startswith("RESULTS ")]
    assert done.returncode == 0 and found, f"exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    results = json.loads(found[0].split(" ", 1)[1])
    assert results == [N] * ROUNDS, "\n\n".join(str(result) for result in results)
