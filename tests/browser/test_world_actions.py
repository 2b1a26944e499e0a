"""The world's own actions in the MPI world sidebar (``mpiworkbench/lab``): Interrupt, Restart and
Stop, driven as a user drives them — clicks and key presses only (no ``window.jupyterapp``, no app
commands from the page).

A notebook starts a 2-rank world and runs a ``%%px`` cell that sleeps for ten minutes on every
rank; the sidebar's *Interrupt* (live while the notebook's kernel holds the world's turn) ends the
cell as JupyterLab's ■ would, and the world answers the next ``%%px`` cell. *Restart*, clicked
while the sleeping cell runs again and confirmed in its dialog, waits in the notebook's kernel
(the row says so) until *Interrupt* ends the cell; then ``wb.restart()`` runs there: the sidebar
shows the world's generation grown and the next cell answers on the fresh ranks. *Stop*, clicked
while the notebook sleeps in a plain cell and confirmed, waits too; the notebook's own ■ ends that
cell with an error, which makes the kernel drop the queued request (``stop_on_error``): the sidebar
sends it again, ``wb.stop()`` runs, the world leaves the sidebar, and the notification says so.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from tests.browser.conftest import screenshot, write_notebook
from tests.browser.widgets_support import LIMIT_MS, cell_output, kernel_session, open_fresh, wait_kernel_idle

pytestmark = pytest.mark.cost(60, "a 2-rank world interrupted, restarted and stopped from the sidebar")

CELLS = [
    "from mpiworkbench import Workbench\nwb = Workbench(n=2).start()\nprint('world:', wb.cluster.cluster_id)",
    # (the ranks end the cell cleanly when interrupted: a cell whose ranks raise KeyboardInterrupt
    # can see the next cell's task aborted on a rank, ipykernel's stop_on_error racing with it)
    "%%px\nimport time\ntry:\n    time.sleep(600)\nexcept KeyboardInterrupt:\n    print('interrupted on the rank')",
    "%%px\nfrom mpi4py import MPI\nprint('answer', MPI.COMM_WORLD.allreduce(MPI.COMM_WORLD.rank + 1))",
    "import time\ntime.sleep(600)",  # the notebook's kernel busy, the world free
]
BLOCKED, ANSWER, SLEEPING = 1, 2, 3

#: The execution count of a cell, or null while it runs or never ran.
_PROMPT = """([index]) => {
    const cell = document.querySelectorAll('.jp-NotebookPanel .jp-Cell')[index];
    const m = cell && /\\[(\\d+)\\]/.exec(cell.querySelector('.jp-InputPrompt').textContent);
    return m ? Number(m[1]) : null;
}"""


def _run_cell(page, index: int) -> int | None:
    """Click cell *index* and press Shift+Enter; its execution count before."""
    before = page.evaluate(_PROMPT, [index])
    page.locator(".jp-NotebookPanel .jp-Cell").nth(index).locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")
    return before


def _wait_ran(page, index: int, before: int | None) -> None:
    """Wait until cell *index* has a new execution count (it ended)."""
    page.wait_for_function(f"([index, before]) => {{ const n = ({_PROMPT})([index]); return n !== null && n !== before; }}",
                           arg=[index, before], timeout=LIMIT_MS)


def _answers(page) -> None:
    """Run the answering cell and wait for its ranks' sum."""
    before = _run_cell(page, ANSWER)
    _wait_ran(page, ANSWER, before)
    output = cell_output(page, ANSWER)
    try:
        output.get_by_text("answer 3").first.wait_for(timeout=60_000)  # (its output came before its prompt)
    except PlaywrightTimeout:
        raise AssertionError(f"the world did not answer: {output.inner_text()}") from None


def _confirm(page, label: str) -> None:
    """Click the dialog's warning button *label* (JupyterLab's showDialog)."""
    page.locator(".jp-Dialog .jp-Dialog-button.jp-mod-warn", has_text=label).click()
    page.locator(".jp-Dialog").wait_for(state="detached", timeout=LIMIT_MS)


def test_interrupt_restart_and_stop_a_world_from_the_sidebar(page, lab_server):
    name = write_notebook(lab_server, "browser_world_actions.ipynb", CELLS)
    with kernel_session(page, lab_server, "world-actions"):
        open_fresh(page, lab_server, name, workspace="mpiwb-world-actions")
        page.keyboard.press("Shift+Enter")  # the world
        cell_output(page, 0).get_by_text("world:").wait_for(timeout=LIMIT_MS)
        cluster = cell_output(page, 0).inner_text().split("world:")[1].split()[0]
        wait_kernel_idle(page)

        # the sidebar, by its icon: nothing runs (Interrupt greyed, saying so); Restart and Stop
        # live (the notebook's kernel is a client of the world)
        page.locator('.jp-SideBar .lm-TabBar-tab[data-id="mpiworkbench-world-sidebar"]').click()
        world = page.locator(f'#mpiworkbench-world-sidebar section[data-cluster="{cluster}"]')
        world.wait_for(timeout=LIMIT_MS)
        world.locator('.jp-mpiwb-interrupt[disabled][title*="nothing runs"]').wait_for(timeout=LIMIT_MS)
        world.locator(".jp-mpiwb-restart:not([disabled])").wait_for(timeout=LIMIT_MS)
        world.locator(".jp-mpiwb-stop:not([disabled])").wait_for(timeout=LIMIT_MS)
        generation = world.get_attribute("data-generation")
        assert generation, f"the sidebar shows no generation of {cluster}"

        # a cell that sleeps ten minutes on every rank: Interrupt comes alive, naming the notebook
        before = _run_cell(page, BLOCKED)
        world.locator(f'.jp-mpiwb-interrupt:not([disabled])[title*="{name}"]').wait_for(timeout=LIMIT_MS)
        screenshot(page, "world_actions_busy.png")
        world.locator(".jp-mpiwb-interrupt").click()
        _wait_ran(page, BLOCKED, before)  # the cell ended, as after JupyterLab's ■
        world.locator(".jp-mpiwb-world-said", has_text="interrupted").wait_for(timeout=LIMIT_MS)
        _answers(page)  # and the world answers the next cell
        wait_kernel_idle(page)
        # the sidebar has seen the world free (Interrupt greyed again) before the cell runs again
        world.locator('.jp-mpiwb-interrupt[disabled][title*="nothing runs"]').wait_for(timeout=LIMIT_MS)

        # Restart while the notebook's kernel is busy with the sleeping cell, confirmed: the request
        # waits in the kernel's queue and the row says so; Interrupt lets it run: a new generation
        # in the sidebar, and the next cell answers
        before = _run_cell(page, BLOCKED)
        world.locator(f'.jp-mpiwb-interrupt:not([disabled])[title*="{name}"]').wait_for(timeout=LIMIT_MS)
        world.locator(".jp-mpiwb-restart").click()
        _confirm(page, "Restart")
        world.locator(".jp-mpiwb-world-said", has_text=f"waiting for {name} to be idle; interrupt it first") \
            .wait_for(timeout=LIMIT_MS)
        world.locator(".jp-mpiwb-restart[disabled]").wait_for(timeout=LIMIT_MS)  # one at a time
        screenshot(page, "world_actions_restart_waiting.png")
        world.locator(".jp-mpiwb-interrupt").click()
        _wait_ran(page, BLOCKED, before)
        page.locator(f'#mpiworkbench-world-sidebar section[data-cluster="{cluster}"]'
                     f':not([data-generation="{generation}"]):not([data-generation=""])').wait_for(timeout=LIMIT_MS)
        world.locator(".jp-mpiwb-world-said", has_text="restarted").wait_for(timeout=LIMIT_MS)
        new_generation = world.get_attribute("data-generation")
        assert int(new_generation) > int(generation), (generation, new_generation)
        # the killed ranks' processes are not shown as the new ranks' (dead) before their first call
        assert not world.locator('.jp-mpiwb-rank[data-state="dead"]').count(), world.inner_text()
        world.locator(".jp-mpiwb-world-title", has_text=f"generation {new_generation}").wait_for(timeout=LIMIT_MS)
        screenshot(page, "world_actions_restarted.png")
        _answers(page)
        wait_kernel_idle(page)

        # Stop while the notebook's kernel sleeps in a cell of its own, confirmed: it waits; the
        # notebook's ■ ends the cell with an error, and the kernel drops what was queued behind it
        # (stop_on_error): the sidebar sends the stop again, and the world leaves the sidebar
        before = _run_cell(page, SLEEPING)
        page.get_by_text("Python 3 (ipykernel) | Busy").wait_for(timeout=LIMIT_MS)
        world.locator(".jp-mpiwb-stop").click()
        _confirm(page, "Stop")
        world.locator(".jp-mpiwb-world-said", has_text=f"waiting for {name} to be idle").wait_for(timeout=LIMIT_MS)
        page.locator('.jp-NotebookPanel-toolbar [data-jp-item-name="interrupt"]').click()
        _wait_ran(page, SLEEPING, before)
        cell_output(page, SLEEPING).get_by_text("KeyboardInterrupt").first.wait_for(timeout=LIMIT_MS)
        world.wait_for(state="detached", timeout=LIMIT_MS)
        page.locator(".jp-toast-message, .Toastify__toast", has_text="stopped the engines and the controller (sent again") \
            .first.wait_for(timeout=LIMIT_MS)
        screenshot(page, "world_actions_stopped.png")
