"""The control panel: which profile's cluster runs, who is who in the MPI world, which notebooks
share it (who runs now, who waits), and attach / start / restart / stop (or detach) buttons that
call the session's methods."""

from __future__ import annotations

import html
import time
from typing import Any

import ipywidgets as widgets

from mpiworkbench.client.calls import lab_advice
from mpiworkbench.client.cluster import attach, engines
from mpiworkbench.core import machine, usable


def clients_html(clients: list[dict[str, Any]], now: float | None = None) -> str:
    """Who shares the MPI world (``wb.clients()``): notebook, kernel, since when, and what each
    runs or waits to run; this session's row is marked."""
    if not clients:
        return ""
    now = time.time() if now is None else now
    colour = {"running": "#2a7ab0", "blocked": "#b00020", "waiting": "#b35900", "idle": "#666"}
    rows = "".join(
        "<tr{}><td>{}</td><td>{}</td><td>{}</td><td>{} s</td><td style='color:{}'>{}</td><td>{}</td></tr>".format(
            " class='mpiwb-me'" if c.get("me") else "",
            html.escape(str(c.get("notebook"))) + (" <i>(this notebook)</i>" if c.get("me") else ""),
            html.escape(str(c.get("kernel") or "")[:8]), html.escape(f"{c.get('host')}:{c.get('pid')}"),
            int(now - (c.get("since") or now)), colour.get(c.get("state"), "#666"),
            html.escape(str(c.get("state"))), html.escape(str(c.get("label") or "")))
        for c in clients)
    return ("<table class='mpiwb-clients'><tr><th>attached</th><th>kernel</th><th>host:pid</th>"
            f"<th>for</th><th>state</th><th>running / waiting for</th></tr>{rows}</table>")


def status_html(state: str, ranks: list[dict[str, Any]], env: dict[str, Any] | None, engine_of: dict[int, int],
                origin: str = "", clients: list[dict[str, Any]] | None = None) -> str:
    """The panel's table as HTML (a pure function of the facts, so it is testable).

    *origin* says where the cluster came from (which launcher, started here or attached);
    *clients* who shares its MPI world (:func:`clients_html`).
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
            f"<b>MPI library</b>: {html.escape(env.get('library', '?'))} (MPI {env.get('mpi_standard', '?')}; "
            f"implementation <code>{html.escape(str(env.get('mpi', '?')))}</code>; every rank maps "
            f"<code>{html.escape(', '.join(env.get('mpi_library_files') or ['?']))}</code>)<br>"
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
    advice = {
        "dead": " — the MPI world has died: <b>Restart</b> gives a fresh one",
        "busy": " — the ranks run work (see below): calls wait their turn",
        "blocked": " — work outlived its timeout and holds the ranks: <b>Restart</b> ends it",
    }.get(state, "")
    where = f" &nbsp; {html.escape(origin)}" if origin else ""
    return (f"<div class='mpiwb-panel'><b>state</b>: <span class='mpiwb-state'>{state}</span>{advice}{where}<br>"
            f"{facts}{table}{clients_html(clients or [])}</div>")


def profile_status(profile: str | None) -> str:
    """One line on *profile*'s cluster: running (how many engines, which launcher) or not; with no
    profile to pick, how to make one (a new user has none: the session's own world needs none)."""
    if not profile:
        return "no ipcluster profile to attach to (<code>mpiworkbench profile create</code> makes one)"
    cluster = attach.running_cluster(profile)
    if cluster is None:
        return f"profile <b>{html.escape(profile)}</b>: no cluster running"
    return (f"profile <b>{html.escape(profile)}</b>: running, {engines.engine_count(cluster)} engine(s), "
            f"launcher {html.escape(engines.launcher_name(cluster))}")


#: The style of the panel's labelled controls: each label as wide as its text (ipywidgets' fixed
#: label width cuts "Thread level" short).
WHOLE_LABEL = {"description_width": "initial"}


def sidebar_note() -> widgets.HTML:
    """One line when this user's lab lacks the MPI world sidebar: that it is missing, and the
    command that adds it (:mod:`mpiworkbench.client.calls.lab_advice`); empty otherwise."""
    note = widgets.HTML()
    note.add_class("mpiwb-sidebar-note")
    if lab_advice.in_a_kernel() and not lab_advice.sidebar_shown():
        note.value = (f"<small>No MPI world sidebar in this lab (its environment lacks the lab part): add it with "
                      f"<code>{html.escape(lab_advice.install_line())}</code>, then restart the lab.</small>")
    return note


class ControlPanel:
    """The cluster's home: pick a profile and attach to its running cluster, or start one of the
    session's own (rank count, thread level); restart; stop or detach. Buttons only call the
    session's methods.

    Control ``description``s: ``Profile``, ``Attach``, ``Ranks``, ``Thread level``, ``Start``,
    ``Restart``, ``Stop`` (``Detach`` when attached), ``Job`` and ``Save as job`` (the session's
    work as a batch job: :meth:`~mpiworkbench.Workbench.export_job`).
    """

    def __init__(self, wb):
        self.wb = wb
        self.status = widgets.HTML()
        names = attach.profiles()
        self.profile = widgets.Dropdown(options=names, value=wb.profile if wb.profile in names else (names[0] if names else None),
                                        description="Profile", style=WHOLE_LABEL)
        self.profile_info = widgets.HTML()
        self.attach_button = widgets.Button(description="Attach", icon="link",
                                            tooltip="attach to the running cluster of this profile")
        self.ranks = widgets.BoundedIntText(value=wb.n, min=1, max=256, description="Ranks", style=WHOLE_LABEL)
        self.level = widgets.Dropdown(options=[("mpi4py's default", None), *((lv, lv) for lv in machine.THREAD_LEVELS)],
                                      value=wb.thread_level if wb.owns_cluster else None, description="Thread level",
                                      style=WHOLE_LABEL)
        installed, missing = usable.choices()
        self.mpi = widgets.Dropdown(options=[(impl.title, impl.name) for impl in installed] or [(wb.mpi, wb.mpi)],
                                    value=wb.mpi, description="MPI", style=WHOLE_LABEL,
                                    tooltip="\n".join(["MPI implementation of the ranks", *missing]))
        self.start_button = widgets.Button(description="Start", icon="play", tooltip="start an MPI cluster of this session's own")
        self.restart_button = widgets.Button(description="Restart", icon="refresh", tooltip="a fresh MPI world")
        self.stop_button = widgets.Button(description="Stop", icon="stop", tooltip="stop engines and controller")
        self.refresh_button = widgets.Button(description="Refresh", icon="sync",
                                             tooltip="read the state and who shares the world again")
        self.refresh_button.on_click(lambda _b: self.refresh())
        self.message = widgets.HTML()
        # sent once the field is left (continuous_update=False): typed key by key, each key's
        # update waits for the kernel's answer to the one before, while a click goes at once, and a
        # quick Save as job saved to the path's first letter (a CI run: "j" for "jobs/hello")
        self.job_path = widgets.Text(value="", placeholder="a new directory: job.py, run.sh, job.sbatch…",
                                     description="Job", style=WHOLE_LABEL, continuous_update=False)
        self.save_button = widgets.Button(description="Save as job", icon="save",
                                          tooltip="save this world's cells and calls as a batch job (wb.export_job)")
        self.save_button.on_click(lambda _b: self._do(lambda: wb.export_job(self._job_directory()), said=repr))
        for button, action in (
            (self.attach_button, lambda: wb.attach_to(self.profile.value)),
            (self.start_button, lambda: wb.start(self.ranks.value, self.level.value, own=True, mpi=self.mpi.value)),
            (self.restart_button, wb.restart),
            (self.stop_button, wb.stop),
        ):
            button.on_click(lambda _b, action=action: self._do(action))
        self.profile.observe(lambda _change: self.refresh(), names="value")
        buttons = widgets.HBox([self.start_button, self.restart_button, self.stop_button, self.refresh_button])
        self.widget = widgets.VBox([
            widgets.HBox([self.profile, self.attach_button, self.profile_info]),
            widgets.HBox([self.ranks, self.level, self.mpi]),
            buttons, widgets.HBox([self.job_path, self.save_button]), self.status, self.message, sidebar_note(),
        ])
        self.widget.add_class("mpiwb-control-panel")
        self.refresh()

    def _job_directory(self) -> str:
        path = self.job_path.value.strip()
        if not path:
            raise ValueError("name a new directory for the job in the Job field first (e.g. jobs/wave-run)")
        return path

    def _do(self, action, said=None) -> None:
        """Run *action*; show what *said* makes of its result (nothing by default), or its error."""
        self.message.value = "<i>working…</i>"
        try:
            result = action()
            self.message.value = f"<pre>{html.escape(said(result))}</pre>" if said else ""
        except Exception as exc:  # noqa: BLE001 - shown to the user in the panel
            self.message.value = f"<pre>{html.escape(str(exc))}</pre>"
        self.refresh()

    def refresh(self) -> None:
        """Read the session again (state, engines ↔ ranks ↔ hosts, clients, MPI library) and redraw."""
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
        self.status.value = status_html(state, ranks, env, engine_of, origin, wb.clients())
        self.profile_info.value = profile_status(self.profile.value)
        self.attach_button.disabled = state != "stopped" or self.profile.value is None
        self.ranks.disabled = self.level.disabled = self.mpi.disabled = state != "stopped"
        if state != "stopped" and wb.mpi in dict(self.mpi.options).values():
            self.mpi.value = wb.mpi  # an attached cluster's, or a restarted one's
        self.start_button.disabled = state not in ("stopped", "starting")
        self.restart_button.disabled = state in ("stopped", "starting")
        self.stop_button.disabled = state == "stopped"
        self.save_button.disabled = state != "running"
        self.stop_button.description = "Stop" if wb.owns_cluster else "Detach"
        self.stop_button.tooltip = ("stop engines and controller" if wb.owns_cluster
                                    else "detach; the cluster keeps running for whoever started it")
