"""The control panel: who is who in the MPI world, and start / restart / stop buttons."""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as widgets


def status_html(state: str, ranks: list[dict[str, Any]], env: dict[str, Any] | None, engine_of: dict[int, int],
                origin: str = "") -> str:
    """The panel's table as HTML (a pure function of the facts, so it is testable).

    *origin* says where the cluster came from (which launcher, started here or attached).
    """
    rows = "".join(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>".format(
            engine_of.get(r["rank"], "?"), r["rank"], html.escape(r["host"]), r["pid"], r["thread_level"]
        )
        for r in ranks
    )
    facts = ""
    if env:
        packages = env.get("packages", {})
        facts = (
            f"<b>MPI library</b>: {html.escape(env.get('library', '?'))} (MPI {env.get('mpi_standard', '?')})<br>"
            f"<b>mpi4py</b>: {packages.get('mpi4py')} &nbsp; <b>thread level</b>: {env.get('thread_level')}"
            f" &nbsp; <b>cores</b>: {env.get('cores')} &nbsp; <b>ranks</b>: {env.get('np')}"
            + (" <b style='color:#b35900'>(oversubscribed)</b>" if env.get("oversubscribed") else "")
        )
    table = (
        "<table class='mpiwb-ranks'><tr><th>engine</th><th>rank</th><th>host</th><th>pid</th>"
        f"<th>thread level</th></tr>{rows}</table>"
        if ranks
        else ""
    )
    advice = " — the MPI world has died: <b>Restart</b> gives a fresh one" if state == "dead" else ""
    where = f" &nbsp; {html.escape(origin)}" if origin else ""
    return (f"<div class='mpiwb-panel'><b>state</b>: <span class='mpiwb-state'>{state}</span>{advice}{where}<br>"
            f"{facts}{table}</div>")


class ControlPanel:
    """Widgets over a :class:`~mpiworkbench.client.Workbench`; buttons only call its methods."""

    def __init__(self, wb):
        self.wb = wb
        self.status = widgets.HTML()
        self.start_button = widgets.Button(description="Start", icon="play", tooltip="start the MPI cluster")
        self.restart_button = widgets.Button(description="Restart", icon="refresh", tooltip="a fresh MPI world")
        self.stop_button = widgets.Button(description="Stop", icon="stop", tooltip="stop engines and controller")
        self.message = widgets.HTML()
        for button, action in (
            (self.start_button, wb.start),
            (self.restart_button, wb.restart),
            (self.stop_button, wb.stop),
        ):
            button.on_click(lambda _b, action=action: self._do(action))
        buttons = widgets.HBox([self.start_button, self.restart_button, self.stop_button])
        self.widget = widgets.VBox([buttons, self.status, self.message])
        self.widget.add_class("mpiwb-control-panel")
        self.refresh()

    def _do(self, action) -> None:
        self.message.value = "<i>working…</i>"
        try:
            action()
            self.message.value = ""
        except Exception as exc:  # noqa: BLE001 - shown to the user in the panel
            self.message.value = f"<pre>{html.escape(str(exc))}</pre>"
        self.refresh()

    def refresh(self) -> None:
        wb = self.wb
        ranks: list[dict[str, Any]] = []
        env = None
        if wb.state == "running":
            ranks = wb.info()
            env = wb.environment()
        engine_of = {rank: eid for eid, rank in wb.ranks.items()}
        state = wb.state
        origin = ""
        if state != "stopped":
            owner = "started here" if wb.owns_cluster else f"attached (profile {wb.profile!r})"
            origin = f"launcher: {wb.launcher}, {owner}"
        self.status.value = status_html(state, ranks, env, engine_of, origin)
        self.start_button.disabled = state in ("running", "dead")
        self.restart_button.disabled = state not in ("running", "dead")
        self.stop_button.disabled = state == "stopped"
        self.stop_button.description = "Stop" if wb.owns_cluster else "Detach"
        self.stop_button.tooltip = ("stop engines and controller" if wb.owns_cluster
                                    else "detach; the cluster keeps running for whoever started it")
