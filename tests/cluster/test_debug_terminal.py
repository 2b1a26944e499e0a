"""A ``%%px --debug`` cell in a lab without the MPI world sidebar (issue 59, item 2 and test b): the
cell names a terminal command for each stopped rank, and that command, typed into a terminal (a
pseudo-terminal here) as printed, debugs the rank: where it stopped and the line, ``p``, ``n``,
``l``, ``c`` as in pdb. ``q`` leaves the rank stopped (the command opened again finds it there);
``c`` (or ``n`` from the cell's last line) lets it run, the cell ends on every rank with its
output, and the world answers the next call. At 1, 2 and 3 ranks, the last rank debugged, in a real kernel with no lab of its user running
(its own Jupyter runtime directory: no lab part's marker there).

Before, the cell's advice was a terminal console on the stopped rank, which shows nothing: the
rank's kernel answers nothing on its shell while a breakpoint holds it.
"""

from __future__ import annotations

import re
import time

import pytest

from tests.cluster.test_debug_leaving import LIMIT_S, Kernel
from tests.terminal import Terminal

pytestmark = pytest.mark.timeout(600)

CELL = """%%px --debug {rank} --break 2
x = mpi_rank
y = x + kept
print('debugged', y)"""


def read_until(kernel: Kernel, msg_id: str, text: str) -> str:
    """The cell *msg_id*'s stream output until it shows *text* (the cell still running)."""
    said, deadline = "", time.monotonic() + LIMIT_S
    while text not in said:
        assert time.monotonic() < deadline, f"the cell did not print {text!r}: {said}"
        msg = kernel.kc.get_iopub_msg(timeout=LIMIT_S)
        if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "stream":
            said += msg["content"]["text"]
    return said


@pytest.mark.cost(45, "a notebook kernel's world per rank count; a %%px --debug cell debugged from a terminal")
@pytest.mark.parametrize("n", [1, 2, 3])
def test_a_debug_cell_without_the_sidebar_names_a_terminal_debugger_that_steps_the_rank(tmp_path, monkeypatch, n):
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))  # no lab of this user runs
    rank = n - 1
    kernel = Kernel(tmp_path)
    try:
        assert "started a cluster" in kernel.run(f"from mpiworkbench import Workbench\nwb = Workbench(n={n}, oversubscribe=True).start()\n"
                                                 "print(wb.origin)")
        kernel.run("%%px\nkept = 40 + mpi_rank")
        running = kernel.send(CELL.format(rank=rank))
        said = read_until(kernel, running, f"(rank {rank}'s debugger")
        assert "lab-part install" in said, said
        command = re.search(r"Meanwhile, in any terminal of this host: (.+?)\s{2,}\(rank " + str(rank), said).group(1)
        assert " -m mpiworkbench debug " in command, command

        # q leaves the rank where it is: the command opened again finds it stopped there
        terminal = Terminal(command, limit_s=LIMIT_S)
        terminal.expect(f"rank {rank} stopped: cell line 2")  # (maybe after "not stopped": the cell goes on)
        assert "y = x + kept" in terminal.expect(f"(rank {rank}) ")
        terminal.type("q")
        assert terminal.close() == 0
        terminal = Terminal(command, limit_s=LIMIT_S)
        try:
            terminal.expect(f"rank {rank} stopped: cell line 2")
            terminal.expect(f"(rank {rank}) ")
            terminal.type("p x + kept")
            assert f"{40 + 2 * rank}" in terminal.expect(f"(rank {rank}) ")
            terminal.type("n")
            assert "print('debugged', y)" in terminal.expect(f"rank {rank} stopped: cell line 3") + terminal.expect(f"(rank {rank}) ")
            terminal.type("l")
            assert f"y = {40 + 2 * rank}" in terminal.expect(f"(rank {rank}) ")
            # off the cell's end: "c", or "n" from its last line, which stopped in the runtime's hook
            # on the kernel's status before (publish_filtered): now the cell just ends
            terminal.type("c" if n == 2 else "n")
            assert "stopped" not in terminal.expect(f"rank {rank}'s debugging session ended")
        finally:
            assert terminal.close() == 0, terminal.said[-2000:]
        out = "".join(kernel.outputs(running))
        for each in range(n):
            assert f"debugged {40 + 2 * each}" in out, out
        assert f"ANSWER {[1] * n}" in kernel.run("wb.timeout = 15\nprint('ANSWER', wb.run(lambda: 1))")
        assert "stopped" in kernel.run("print(wb.stop())")
    finally:
        kernel.close()
