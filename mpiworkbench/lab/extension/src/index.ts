// The world sidebar plugin: the sidebar in the left area, the worlds' Interrupt, Restart and
// Stop, its ranks' consoles, and JupyterLab's Debugger pinned to the rank the user chose.

import { ILabShell, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { IDebugger } from '@jupyterlab/debugger';
import { INotebookTracker } from '@jupyterlab/notebook';
import { Session } from '@jupyterlab/services';
import { LabIcon } from '@jupyterlab/ui-components';
import { Widget } from '@lumino/widgets';
import { WorldActions } from './actions';
import { DebuggerPin } from './pin';
import { IRankActions, rankLabel, WorldSidebar } from './sidebar';
import { IRank, IWorld } from './worlds';

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

    const openConsole = async (world: IWorld, rank: IRank): Promise<IConsoleLike> => {
      if (!rank.kernel) {
        throw new Error(`${rankLabel(world, rank)} is not open for debugging: run wb.connection_file(${rank.rank}) in the notebook`);
      }
      let panel = consoles.get(rank.kernel);
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
        consoles.set(rank.kernel, panel);
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
      console: async (world, rank) => {
        await openConsole(world, rank);
      },
      debug: async (world, rank) => {
        if (!pin) {
          throw new Error("JupyterLab's debugger is not available in this lab");
        }
        const panel = await openConsole(world, rank);
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
      pinned: () => pin?.label ?? null
    };

    const sidebar = new WorldSidebar(actions, new WorldActions(app.serviceManager, notebooks));
    sidebar.title.icon = ICON;
    pin?.changed.connect(() => sidebar.showPin());
    shell.add(sidebar, 'left', { rank: 900 });
  }
};

export default plugin;
