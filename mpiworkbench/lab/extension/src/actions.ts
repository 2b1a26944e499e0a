// The world's own actions in the sidebar — Interrupt, Restart, Stop — each what the workbench
// already does, done through the lab's kernels:
// * Interrupt: the kernel of the notebook running work on the world (the turn's holder) is
//   interrupted as JupyterLab's ■ interrupts it (KernelConnection.interrupt: the server's
//   POST /api/kernels/<id>/interrupt), so the cell's own interrupt handling applies.
// * Restart / Stop: wb.restart() / wb.stop() run in a notebook kernel of this lab that is a
//   client of the world, by one silent execute request whose user expression calls
//   mpiworkbench.sidebar.actions.world_action (it finds that kernel's session of the cluster).
// * Open (a rank's Debug or Console before any notebook opened the ranks): the same request,
//   whose world_action writes every rank's connection file (wb.connection_file).

import { Dialog, Notification, showDialog } from '@jupyterlab/apputils';
import { INotebookTracker } from '@jupyterlab/notebook';
import { Kernel, ServiceManager } from '@jupyterlab/services';
import { IClient, IWorld } from './worlds';

export type WorldAction = 'restart' | 'stop' | 'open';

/** A kernel to act through; `made`: connected here for this action (disposed after it). */
interface IKernelHandle {
  kernel: Kernel.IKernelConnection;
  made: boolean;
}

/** How many times a request the kernel dropped (a failed cell before it: stop_on_error) is sent again. */
const RESENDS = 5;

/** Why Interrupt is greyed for *world*, or '' when it can be clicked. */
export function interruptHint(world: IWorld): string {
  if (!world.busy) {
    return 'nothing runs on this world';
  }
  if (!world.holder_kernel) {
    return `${world.busy} runs outside a Jupyter kernel: interrupt it where it runs`;
  }
  if (!world.holder_in_lab) {
    return `${world.busy} runs in a kernel that is not one of this lab's: interrupt it there`;
  }
  return '';
}

/**
 * Why Restart and Stop (or, with *instead* 'wb.connection_file(rank)', a rank's opening for
 * debugging) cannot be done for *world* from here, or '' when they can.
 */
export function actHint(world: IWorld, instead = 'wb.restart() or wb.stop()'): string {
  if (!world.clients.some(client => client.lab)) {
    return (
      `no notebook of this lab is a client of this world: run ${instead} where it is used ` +
      '(or attach a notebook to it: Workbench.attach(...))'
    );
  }
  return '';
}

/** A Python string literal of *text* (JSON's is one). */
function python(text: string): string {
  return JSON.stringify(text);
}

export class WorldActions {
  constructor(services: ServiceManager.IManager, notebooks: INotebookTracker | null) {
    this._services = services;
    this._notebooks = notebooks;
  }

  /** Interrupt the kernel running work on *world*; what was done, in a line. */
  async interrupt(world: IWorld): Promise<string> {
    const hint = interruptHint(world);
    if (hint) {
      throw new Error(`cannot interrupt ${world.cluster_id}: ${hint}`);
    }
    const handle = this._kernel(world.holder_kernel);
    try {
      await handle.kernel.interrupt();
    } finally {
      if (handle.made) {
        handle.kernel.dispose();
      }
    }
    return `interrupted ${world.holder_notebook ?? 'the notebook'}'s kernel, as its ■ does`;
  }

  /**
   * Restart or stop *world* through a notebook kernel of this lab that uses it, once the user
   * confirmed, or open its ranks for debugging ('open', no question asked: every rank's
   * connection file written, as wb.connection_file does); *say* shows progress. Resolves with
   * the kernel's one-line answer, or null when the user cancelled.
   */
  async act(world: IWorld, action: WorldAction, say: (line: string) => void): Promise<string | null> {
    const hint = action === 'open' ? actHint(world, 'wb.connection_file(rank)') : actHint(world);
    if (hint) {
      const what = action === 'open' ? 'open the ranks of' : action;
      throw new Error(`cannot ${what} ${world.cluster_id}: ${hint}`);
    }
    const { client, handle } = this._client(world.clients.filter(c => c.lab));
    try {
      if (action !== 'open' && !(await this._confirmed(world, action, client))) {
        return null;
      }
      return await this._request(world, action, client, handle, say);
    } catch (error) {
      Notification.error(`${error instanceof Error ? error.message : error}`, { autoClose: false });
      throw error;
    } finally {
      if (handle.made) {
        handle.kernel.dispose();
      }
    }
  }

  /** Whether the user confirms the restart or stop of *world* through *client*. */
  private async _confirmed(world: IWorld, action: WorldAction, client: IClient): Promise<boolean> {
    const verb = action === 'restart' ? 'Restart' : 'Stop';
    const what =
      action === 'restart'
        ? `Its ${world.ranks.length} rank(s) are killed and fresh ones started (wb.restart() in ${client.notebook}); ` +
          'other notebooks using it continue on the new ranks.'
        : `Its ranks and controller are stopped (wb.stop() in ${client.notebook}; a notebook attached to a ` +
          "cluster it did not start only detaches from it).";
    const answer = await showDialog({
      title: `${verb} the MPI world ${world.cluster_id}?`,
      body: `${what} Everything on the ranks is lost.`,
      buttons: [Dialog.cancelButton(), Dialog.warnButton({ label: verb })]
    });
    return answer.button.accept;
  }

  /** Run *action* of world_action in the kernel of *client*; its one-line answer. */
  private async _request(
    world: IWorld,
    action: WorldAction,
    client: IClient,
    handle: IKernelHandle,
    say: (line: string) => void
  ): Promise<string> {
    const doing = { restart: 'restarting', stop: 'stopping', open: 'opening the ranks for debugging' }[action];
    const expression =
      "__import__('mpiworkbench.sidebar.actions', fromlist=['world_action']).world_action(" +
      `${python(action)}, ${python(world.cluster_id)}, ${python(world.profile_dir)})`;
    for (let attempt = 0; ; attempt++) {
      say(
        handle.kernel.status === 'idle'
          ? `${doing} through ${client.notebook}…`
          : `waiting for ${client.notebook} to be idle; interrupt it first`
      );
      const future = handle.kernel.requestExecute({
        code: '',
        silent: true,
        store_history: false,
        allow_stdin: false,
        stop_on_error: false,
        user_expressions: { result: expression }
      });
      const reply = (await future.done).content as any;
      if (reply.status === 'aborted' && attempt < RESENDS) {
        continue; // the kernel dropped it (the cell before it failed, an interrupted one): sent again
      }
      const again = attempt ? ` (sent again: ${client.notebook}'s kernel dropped it after a failed cell)` : '';
      if (reply.status !== 'ok') {
        throw new Error(
          `${client.notebook}'s kernel did not run the ${action}: ${reply.status}` +
            (reply.ename ? ` (${reply.ename}: ${reply.evalue})` : '')
        );
      }
      const result = (reply.user_expressions ?? {}).result;
      if (!result || result.status !== 'ok') {
        throw new Error(`${action} in ${client.notebook}: ${result?.ename ?? 'no answer'}: ${result?.evalue ?? ''}`);
      }
      const line = String(result.data?.['text/plain'] ?? `${action} done`) + again;
      Notification.success(line, { autoClose: 8000 });
      return line;
    }
  }

  /** The client to act through: the first whose kernel is idle, else the first reachable. */
  private _client(clients: IClient[]): { client: IClient; handle: IKernelHandle } {
    const reachable: { client: IClient; handle: IKernelHandle }[] = [];
    const missing: string[] = [];
    for (const client of clients) {
      try {
        reachable.push({ client, handle: this._kernel(client.kernel) });
      } catch (error) {
        missing.push(`${client.notebook}: ${error instanceof Error ? error.message : error}`);
      }
    }
    const chosen = reachable.find(found => found.handle.kernel.status === 'idle') ?? reachable[0];
    for (const other of reachable) {
      if (other !== chosen && other.handle.made) {
        other.handle.kernel.dispose();
      }
    }
    if (!chosen) {
      throw new Error(`no kernel of this lab that uses this world can be reached (${missing.join('; ')})`);
    }
    return chosen;
  }

  /** The lab's connection to kernel *id*: an open notebook's own, else one made here. */
  private _kernel(id: string): IKernelHandle {
    let found: Kernel.IKernelConnection | null = null;
    this._notebooks?.forEach(panel => {
      const kernel = panel.sessionContext.session?.kernel ?? null;
      if (!found && kernel && kernel.id === id && !kernel.isDisposed) {
        found = kernel;
      }
    });
    if (found) {
      return { kernel: found, made: false };
    }
    const model = Array.from(this._services.kernels.running()).find(m => m.id === id);
    if (!model) {
      throw new Error(`kernel ${id} is not one of this lab's running kernels (it has ended?)`);
    }
    return { kernel: this._services.kernels.connectTo({ model, handleComms: false }), made: true };
  }

  private _services: ServiceManager.IManager;
  private _notebooks: INotebookTracker | null;
}
