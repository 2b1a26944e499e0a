"""A command in a pseudo-terminal, read and typed into as a user does at a terminal (a terminal
console on a rank's kernel, ``mpiworkbench debug``): what the tests that follow a printed command
line run it in."""

from __future__ import annotations

import os
import pty
import select
import shlex
import subprocess
import time


class Terminal:
    """*command* (a line as printed) run in a pseudo-terminal with *env* (default: this process's)."""

    def __init__(self, command: str, env: dict[str, str] | None = None, limit_s: float = 120.0) -> None:
        self.limit_s = limit_s
        self.master, slave = pty.openpty()
        self.process = subprocess.Popen(shlex.split(command), stdin=slave, stdout=slave, stderr=slave, close_fds=True,
                                        env={**(os.environ if env is None else env), "TERM": "xterm"})
        os.close(slave)
        self.said, self.seen = "", 0

    def expect(self, text: str) -> str:
        """What the command printed from the last expectation until *text* (fails after ``limit_s``)."""
        deadline = time.monotonic() + self.limit_s
        while text not in self.said[self.seen:]:
            assert time.monotonic() < deadline, f"no {text!r} in {self.limit_s:.0f} s; the terminal showed:\n{self.said[-3000:]}"
            if select.select([self.master], [], [], 0.5)[0]:
                try:
                    self.said += os.read(self.master, 65536).decode(errors="replace").replace("\r\n", "\n")
                except OSError:  # the command ended
                    assert text in self.said[self.seen:], f"ended without {text!r}:\n{self.said[-3000:]}"
        end = self.said.index(text, self.seen) + len(text)
        shown, self.seen = self.said[self.seen:end], end
        return shown

    def type(self, line: str, enter: str = "\n") -> None:
        """Type *line* and the Enter key (``"\\r"`` for a full-screen prompt: a terminal console's)."""
        os.write(self.master, line.encode() + enter.encode())

    def close(self, end: bool = False) -> int | None:
        """Wait for the command to exit (with *end*: end it first); its exit code."""
        try:
            if end:
                self.process.terminate()
            return self.process.wait(timeout=self.limit_s)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait(timeout=60)
            os.close(self.master)
