// The world sidebar plugin: the sidebar in the left area, the worlds' Interrupt, Restart and
// Stop, its ranks' consoles, and JupyterLab's Debugger pinned to the rank the user chose.

import { ILabShell, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { Notification } from '@jupyterlab/apputils';
import { IDebugger } from '@jupyterlab/debugger';
import { INotebookTracker } from '@jupyterlab/notebook';
import { Session } from '@jupyterlab/services';
import { LabIcon } from '@jupyterlab/ui-components';
import { Widget } from '@lumino/widgets';
import { WorldActions } from './actions';
import { DebuggerPin } from './pin';
import { IRankActions, POLL_MS, rankLabel, WorldSidebar } from './sidebar';
import { fetchWorlds, IRank, IWorld } from './worlds';

/** Looks at the worlds (one each POLL_MS) after the pinned rank's session went away. */
const GONE_LOOKS = 10;

const ICON = new LabIcon({
  name: 'mpiworkbench:world',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" width="16" viewBox="0 0 24 24">' +
    '<g class="jp-icon3" fill="#616161">' +
    '<circle cx="5" cy="5" r="3"/><circle cx="19" cy="5" r="3"/><circle cx="5" cy="19" r="3"/><circle cx="19" cy="19" r="3"/>' +
    '<rect x="4" y="11" width="16" height="2"/><rect x="11" y="4" width="2" height="16"/></g></svg>'
});

/** A console panel as `console:create` returns it (the parts used here). */
interface IConsoleLike extends Widget {
  sessionContext: { ready: Promise<void>; session: Session.ISessionConnection | null };
}

/** The id of JupyterLab's Debugger sidebar (@jupyterlab/debugger-extension). */
const DEBUGGER_SIDEBAR = 'jp-debugger-sidebar';

/** How long the lab may take to list a rank's kernel once its connection file is written (ms). */
const OPEN_WAIT_MS = 120_000;

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'mpiworkbench-world-sidebar:plugin',
  description: "The MPI world sidebar: every rank, where it is, a console and JupyterLab's Debugger on any rank.",
  autoStart: true,
  requires: [ILabShell],
  optional: [IDebugger, INotebookTracker],
  activate: (
    app: JupyterFrontEnd,
    shell: ILabShell,
    service: IDebugger | null,
    notebooks: INotebookTracker | null
  ) => {
    const pin = service ? new DebuggerPin(service) : null;
    const consoles = new Map<string, IConsoleLike>();
    const worldActions = new WorldActions(app.serviceManager, notebooks);

    // A rank no notebook opened for debugging: the ranks are opened through a notebook of this
    // lab that uses the world, then the lab's list of kernels is read until it has the rank's.
    const opened = async (world: IWorld, rank: IRank, say: (line: string) => void): Promise<IRank> => {
      if (rank.kernel) {
        return rank;
      }
      await worldActions.act(world, 'open', say);
      const label = rankLabel(world, rank);
      say(`waiting for the lab to list ${label}'s kernel…`);
      const deadline = Date.now() + OPEN_WAIT_MS;
      for (;;) {
        const found = (await fetchWorlds())
          .find(w => w.cluster_id === world.cluster_id && w.profile_dir === world.profile_dir)
          ?.ranks.find(r => r.rank === rank.rank);
        if (found?.kernel) {
          return found;
        }
        if (Date.now() > deadline) {
          throw new Error(`the lab did not list ${label}'s kernel within ${OPEN_WAIT_MS / 1000} s of its opening`);
        }
        await new Promise(resolve => setTimeout(resolve, POLL_MS)); // the lab's list read again
      }
    };

    const openConsole = async (world: IWorld, rank: IRank, say: (line: string) => void): Promise<IConsoleLike> => {
      rank = await opened(world, rank, say);
      let panel = consoles.get(rank.kernel!);
      if (!panel || panel.isDisposed) {
        // docked split-right of the notebook the user works in, without taking the focus
        const ref = notebooks?.currentWidget?.id ?? null;
        panel = (await app.commands.execute('console:create', {
          kernelPreference: { id: rank.kernel },
          name: `MPI ${rankLabel(world, rank)}`, // the console's tab
          insertMode: 'split-right',
          ref,
          activate: false
        })) as IConsoleLike;
        consoles.set(rank.kernel!, panel);
        watchConsoles();
      }
      await panel.sessionContext.ready;
      return panel;
    };

    // Closing the console of the rank the Debugger is on leaves that rank first (its debugger
    // stopped: breakpoints cleared, a stopped rank continued), while the console's session can
    // still send it; a console closed after its session is gone could not. The panel's own close
    // (its tab's x, File > Close Tab) runs once that is done.
    const leaving = new WeakSet<IConsoleLike>();
    const leaveOnClose = (panel: IConsoleLike, connection: Session.ISessionConnection): void => {
      if (leaving.has(panel)) {
        return;
      }
      leaving.add(panel);
      const close = panel.close.bind(panel);
      panel.close = () => {
        if (pin && pin.connection === connection) {
          void pin.unpin().catch(error => sidebar.report(error)).finally(close);
        } else {
          close();
        }
      };
    };

    const actions: IRankActions = {
      console: async (world, rank, say) => {
        await openConsole(world, rank, say);
      },
      debug: async (world, rank, say) => {
        if (!pin) {
          throw new Error("JupyterLab's debugger is not available in this lab");
        }
        const panel = await openConsole(world, rank, say);
        say(`putting the Debugger on ${rankLabel(world, rank)}…`);
        const connection = panel.sessionContext.session;
        if (!connection) {
          throw new Error(`the console on ${rankLabel(world, rank)} has no kernel session`);
        }
        await pin.pin(connection, rankLabel(world, rank));
        leaveOnClose(panel, connection);
        shell.activateById(DEBUGGER_SIDEBAR);
      },
      unpin: async () => {
        await pin?.unpin();
      },
      pinned: () => pin?.label ?? null,
      left: () => pin?.left ?? ''
    };

    const sidebar = new WorldSidebar(actions, worldActions);
    sidebar.title.icon = ICON;

    // The Debugger follows the world's life: while it is on a rank, the worlds are read (also
    // while the sidebar is hidden), and once that rank's kernel is no rank of any world
    // (restarted from the sidebar, wb.restart(), another notebook; stopped) it leaves it, says
    // so, and closes the consoles it opened on ranks that are gone: Debug on a rank of the new
    // world puts it there.
    let watch: number | null = null;
    const followWorld = (): void => {
      if (watch !== null) {
        clearTimeout(watch);
        watch = null;
      }
      const connection = pin?.connection;
      const label = pin?.label;
      const kernelId = connection?.kernel?.id;
      if (!pin || !connection || !kernelId) {
        return;
      }
      const look = async (): Promise<void> => {
        watch = null;
        if (pin.connection !== connection) {
          return; // moved or left meanwhile: its own watch follows
        }
        if (!(await leftIfGone(kernelId, label ?? ''))) {
          watch = window.setTimeout(() => void look(), POLL_MS);
        }
      };
      watch = window.setTimeout(() => void look(), POLL_MS);
    };
    // Whether the rank of kernel *kernelId* is gone with its world; if so the Debugger leaves it
    // (when still on it), says so, and the consoles opened on ranks that are gone are closed.
    const leftIfGone = async (kernelId: string, label: string): Promise<boolean> => {
      try {
        const worlds = await fetchWorlds();
        const live = new Set(worlds.flatMap(world => world.ranks.map(rank => rank.kernel)));
        if (live.has(kernelId)) {
          return false;
        }
        const why = `left ${label}: that world was restarted or stopped`;
        pin?.forget(why);
        closeGone(live);
        Notification.info(`The Debugger ${why}. Debug a rank of the new world from the MPI world sidebar.`,
          { autoClose: 8000 });
        return true;
      } catch (error) {
        console.warn('mpiworkbench: the worlds not read', error);
        return false;
      }
    };
    // The consoles opened on ranks that are gone (their world restarted or stopped) are closed:
    // a console with no kernel to reach is of no use. Read while any console is open.
    const closeGone = (live: Set<string | null>): void => {
      for (const [id, panel] of consoles) {
        if (panel.isDisposed || !live.has(id)) {
          consoles.delete(id);
          panel.close();
        }
      }
    };
    let consoleWatch: number | null = null;
    const watchConsoles = (): void => {
      if (consoleWatch !== null || consoles.size === 0) {
        return;
      }
      consoleWatch = window.setTimeout(async () => {
        try {
          const worlds = await fetchWorlds();
          const live = new Set(worlds.flatMap(world => world.ranks.map(rank => rank.kernel)));
          const pinned = pin?.connection?.kernel?.id;
          if (pinned && !live.has(pinned) && consoles.has(pinned)) {
            await leftIfGone(pinned, pin?.label ?? ''); // the Debugger leaves it first, then closes
          } else {
            closeGone(live);
          }
        } catch (error) {
          console.warn('mpiworkbench: the worlds not read', error);
        } finally {
          consoleWatch = null;
          watchConsoles();
        }
      }, POLL_MS);
    };
    // The pinned rank's session went away (JupyterLab may notice a restart that way first, or
    // the user closed its console): a few looks at the worlds say which.
    const followGone = (gone: { kernel: string; label: string }, looks: number): void => {
      if (looks > 0 && !pin?.connection) {
        void leftIfGone(gone.kernel, gone.label).then(left => {
          if (!left) {
            window.setTimeout(() => followGone(gone, looks - 1), POLL_MS);
          }
        });
      }
    };
    pin?.changed.connect(() => {
      sidebar.showPin();
      const gone = pin.takeGone();
      if (gone) {
        followGone(gone, GONE_LOOKS);
      }
      followWorld();
    });
    shell.add(sidebar, 'left', { rank: 900 });
  }
};

export default plugin;
