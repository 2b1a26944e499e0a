"""A JupyterLab server process of a test, stopped by its pid (the browser tier's ``lab_server``
and the unit tier's test of the world sidebar's endpoint, ``tests/unit/test_lab_server.py``)."""

from __future__ import annotations

import signal
import subprocess


def stop_lab(process: subprocess.Popen, grace: float = 30) -> None:
    """Jupyter's clean shutdown (SIGINT: kernels first); a second SIGINT confirms it, a kill ends
    a lab that still has not left."""
    for _attempt in range(2):  # jupyter asks to confirm; a second ^C forces it
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue
    process.kill()
    process.wait()
