// The MPI world sidebar: every world of this host, its ranks grouped by where they are, the
// world's Interrupt, Restart and Stop, and each rank's Console and Debug.

import { Widget } from '@lumino/widgets';
import { actHint, interruptHint, WorldAction } from './actions';
import { fetchWorlds, IRank, IWorld, rankRanges } from './worlds';

/** What the sidebar asks of the lab for a rank (index.ts implements them). */
export interface IRankActions {
  /** *say*: what is under way (opening the ranks first), shown in the rank's line. */
  console(world: IWorld, rank: IRank, say: (line: string) => void): Promise<void>;
  debug(world: IWorld, rank: IRank, say: (line: string) => void): Promise<void>;
  unpin(): Promise<void>;
  /** "rank 1 of <cluster>" when the Debugger is pinned to a rank, else null. */
  pinned(): string | null;
  /** Why the Debugger last left a rank by itself (its world restarted), "" when it did not. */
  left(): string;
}

/** What the sidebar asks of the lab for a world (actions.ts's WorldActions). */
export interface IWorldActions {
  interrupt(world: IWorld): Promise<string>;
  act(world: IWorld, action: WorldAction, say: (line: string) => void): Promise<string | null>;
}

/** How often the sidebar reads the worlds while it is shown (ms). */
export const POLL_MS = 1000;

function element(tag: string, className: string, text = ''): HTMLElement {
  const node = document.createElement(tag);
  node.className = className;
  if (text) {
    node.textContent = text;
  }
  return node;
}

export function rankLabel(world: IWorld, rank: IRank): string {
  return `rank ${rank.rank} of ${world.cluster_id}`;
}

/**
 * One rank's line: its state and place (updated in place), its two buttons (kept) and what a
 * click on them is doing. A rank no notebook opened for debugging yet is opened by the click,
 * through a notebook of this lab that uses the world (WorldActions.open); with none, the
 * buttons are greyed and say how to open it.
 */
class RankRow {
  constructor(world: IWorld, rank: IRank, actions: IRankActions, report: (error: unknown) => void) {
    this.node = element('li', 'jp-mpiwb-rank');
    this.node.dataset.rank = `${rank.rank}`;
    this._text = element('span', 'jp-mpiwb-rank-text');
    this.node.appendChild(this._text);
    this._console = element('button', 'jp-mpiwb-button jp-mpiwb-console', 'Console') as HTMLButtonElement;
    this._debug = element('button', 'jp-mpiwb-button jp-mpiwb-debug', 'Debug') as HTMLButtonElement;
    this._said = element('div', 'jp-mpiwb-rank-said');
    const say = (line: string) => {
      this._said.textContent = line;
    };
    const done = (error?: unknown) => {
      say('');
      if (error !== undefined) {
        report(error);
      }
    };
    this._console.onclick = () => actions.console(this._world, this._rank, say).then(() => done(), done);
    this._debug.onclick = () => actions.debug(this._world, this._rank, say).then(() => done(), done);
    this.node.appendChild(this._console);
    this.node.appendChild(this._debug);
    this.node.appendChild(this._said);
    this._world = world;
    this._rank = rank;
    this.update(world, rank);
  }

  update(world: IWorld, rank: IRank): void {
    this._world = world;
    this._rank = rank;
    const host = rank.host ? ` on ${rank.host}` : '';
    this._text.textContent = `rank ${rank.rank}${host}: ${rank.state}${rank.where ? ` (${rank.where})` : ''}`;
    this.node.dataset.state = rank.state;
    const opened = rank.kernel !== null;
    const through = world.clients.filter(client => client.lab)[0]?.notebook;
    const hint =
      opened || through
        ? ''
        : `rank ${rank.rank} is not open for debugging yet: run wb.connection_file(${rank.rank}) or a %%px --debug ` +
          `cell in a notebook that uses this world (${actHint(world, `wb.connection_file(${rank.rank})`)})`;
    for (const button of [this._console, this._debug]) {
      button.disabled = hint !== '';
      button.title =
        hint ||
        `${button.textContent} on rank ${rank.rank}'s kernel` +
          (opened ? '' : ` (the ranks are opened for debugging first, through ${through}: wb.connection_file)`);
    }
  }

  readonly node: HTMLElement;
  private _text: HTMLElement;
  private _console: HTMLButtonElement;
  private _debug: HTMLButtonElement;
  private _said: HTMLElement;
  private _world: IWorld;
  private _rank: IRank;
}

/** A world's three buttons (kept) and the line that says what its last action did. */
class WorldButtons {
  constructor(world: IWorld, actions: IWorldActions) {
    this.node = element('div', 'jp-mpiwb-world-actions');
    this._world = world;
    this._interrupt = element('button', 'jp-mpiwb-button jp-mpiwb-interrupt', 'Interrupt') as HTMLButtonElement;
    this._restart = element('button', 'jp-mpiwb-button jp-mpiwb-restart', 'Restart') as HTMLButtonElement;
    this._stop = element('button', 'jp-mpiwb-button jp-mpiwb-stop', 'Stop') as HTMLButtonElement;
    this._said = element('div', 'jp-mpiwb-world-said');
    this._interrupt.onclick = () => {
      actions.interrupt(this._world).then(line => this.say(line), error => this.fail(error));
    };
    for (const [button, action] of [[this._restart, 'restart'], [this._stop, 'stop']] as const) {
      button.onclick = () => {
        this._pending = action;
        this.update(this._world);
        actions
          .act(this._world, action, line => this.say(line))
          .then(line => this.say(line ?? ''), error => this.fail(error))
          .finally(() => {
            this._pending = null;
            this.update(this._world);
          });
      };
    }
    this.node.append(this._interrupt, this._restart, this._stop, this._said);
    this.update(world);
  }

  update(world: IWorld): void {
    this._world = world;
    const why = interruptHint(world);
    this._interrupt.disabled = why !== '';
    this._interrupt.title = why
      ? `Interrupt: ${why}`
      : `interrupt ${world.holder_notebook ?? 'the notebook'}'s kernel, which runs ${world.busy} (as its ■ does)`;
    const hint = actHint(world);
    for (const [button, what] of [
      [this._restart, 'kill the ranks and start fresh ones: wb.restart()'],
      [this._stop, 'stop the ranks and the controller: wb.stop()']
    ] as const) {
      button.disabled = hint !== '' || this._pending !== null;
      button.title = hint
        ? `${button.textContent}: ${hint}`
        : this._pending
          ? `a ${this._pending} of this world is under way`
          : `${what}, in ${world.clients.filter(c => c.lab)[0]?.notebook}, after you confirm`;
    }
  }

  say(line: string): void {
    this._said.textContent = line;
    delete this._said.dataset.error;
  }

  fail(error: unknown): void {
    this._said.textContent = `${error instanceof Error ? error.message : error}`;
    this._said.dataset.error = 'true';
  }

  readonly node: HTMLElement;
  private _world: IWorld;
  private _interrupt: HTMLButtonElement;
  private _restart: HTMLButtonElement;
  private _stop: HTMLButtonElement;
  private _said: HTMLElement;
  private _pending: WorldAction | null = null;
}

export class WorldSidebar extends Widget {
  constructor(actions: IRankActions, worldActions: IWorldActions) {
    super();
    this._actions = actions;
    this._worldActions = worldActions;
    this.id = 'mpiworkbench-world-sidebar';
    this.addClass('jp-mpiwb-sidebar');
    this.title.caption = 'MPI world';
    this.node.appendChild(element('h2', 'jp-mpiwb-title', 'MPI world'));
    this._pin = element('div', 'jp-mpiwb-pin');
    this.node.appendChild(this._pin);
    this._status = element('div', 'jp-mpiwb-status', 'reading the worlds…');
    this.node.appendChild(this._status);
    this._worlds = element('div', 'jp-mpiwb-worlds');
    this.node.appendChild(this._worlds);
  }

  /** Show who the Debugger is on (a pinned rank, with Unpin), or that it follows the focus. */
  showPin(): void {
    const label = this._actions.pinned();
    this._pin.replaceChildren();
    if (label === null) {
      const left = this._actions.left();
      this._pin.textContent = 'Debugger: follows the focused notebook or console' + (left ? ` (it ${left})` : '');
      return;
    }
    this._pin.appendChild(element('span', 'jp-mpiwb-pin-label', `Debugger on ${label}`));
    const unpin = element('button', 'jp-mpiwb-button jp-mpiwb-unpin', 'Unpin') as HTMLButtonElement;
    unpin.title = "leave the rank (its debugger stopped, its breakpoints cleared) and let the Debugger follow the focused notebook or console again";
    unpin.onclick = () => this._actions.unpin().catch(error => this.report(error));
    this._pin.appendChild(unpin);
  }

  report(error: unknown): void {
    this._status.textContent = `${error instanceof Error ? error.message : error}`;
    this._status.dataset.error = 'true';
  }

  protected onAfterShow(): void {
    this.showPin();
    this._schedule(0);
  }

  protected onAfterHide(): void {
    if (this._timer !== null) {
      clearTimeout(this._timer);
      this._timer = null;
    }
  }

  private _schedule(delay: number): void {
    if (this._timer !== null) {
      clearTimeout(this._timer);
    }
    this._timer = window.setTimeout(() => void this._poll(), delay);
  }

  private async _poll(): Promise<void> {
    this._timer = null;
    try {
      this._render(await fetchWorlds());
      delete this._status.dataset.error;
    } catch (error) {
      this.report(error);
    }
    if (this.isVisible && !this.isDisposed) {
      this._schedule(POLL_MS);
    }
  }

  private _render(worlds: IWorld[]): void {
    this._status.textContent = worlds.length
      ? ''
      : 'No MPI world on this host yet: start one in a notebook (Workbench(n=2).start()).';
    const seen = new Set<string>();
    for (const world of worlds) {
      let block = this._blocks.get(world.cluster_id);
      if (!block) {
        block = element('section', 'jp-mpiwb-world');
        block.dataset.cluster = world.cluster_id;
        block.appendChild(element('h3', 'jp-mpiwb-world-title'));
        const buttons = new WorldButtons(world, this._worldActions);
        this._buttons.set(world.cluster_id, buttons);
        block.appendChild(buttons.node);
        block.appendChild(element('div', 'jp-mpiwb-world-note'));
        block.appendChild(element('table', 'jp-mpiwb-groups'));
        block.appendChild(element('ul', 'jp-mpiwb-ranks'));
        this._blocks.set(world.cluster_id, block);
        this._worlds.appendChild(block);
      }
      block.dataset.state = world.state;
      block.dataset.generation = `${world.generation ?? ''}`;
      this._buttons.get(world.cluster_id)?.update(world);
      const users = world.notebooks.length ? ` · ${world.notebooks.join(', ')}` : '';
      const generation = world.generation === null ? '' : ` · generation ${world.generation}`;
      block.querySelector('.jp-mpiwb-world-title')!.textContent =
        `${world.cluster_id} (profile ${world.profile}): ${world.state}${generation}${users}`;
      block.querySelector('.jp-mpiwb-world-note')!.textContent = world.note ?? '';
      const table = block.querySelector('.jp-mpiwb-groups')!;
      table.replaceChildren(
        ...world.groups.map(group => {
          const row = element('tr', 'jp-mpiwb-group');
          row.dataset.state = group.state;
          row.dataset.ranks = group.ranks.join(',');
          row.appendChild(element('td', 'jp-mpiwb-group-state', group.state));
          row.appendChild(element('td', 'jp-mpiwb-group-where', group.where));
          row.appendChild(element('td', 'jp-mpiwb-group-ranks', `rank${group.ranks.length > 1 ? 's' : ''} ${rankRanges(group.ranks)}`));
          return row;
        })
      );
      const list = block.querySelector('.jp-mpiwb-ranks')!;
      for (const rank of world.ranks) {
        const key = `${world.cluster_id}/${rank.rank}`;
        seen.add(key);
        const row = this._rows.get(key);
        if (row) {
          row.update(world, rank);
        } else {
          const made = new RankRow(world, rank, this._actions, error => this.report(error));
          this._rows.set(key, made);
          list.appendChild(made.node);
        }
      }
    }
    for (const [key, row] of this._rows) {
      if (!seen.has(key)) {
        row.node.remove();
        this._rows.delete(key);
      }
    }
    const clusters = new Set(worlds.map(world => world.cluster_id));
    for (const [cluster, block] of this._blocks) {
      if (!clusters.has(cluster)) {
        block.remove();
        this._blocks.delete(cluster);
        this._buttons.delete(cluster);
      }
    }
  }

  private _actions: IRankActions;
  private _worldActions: IWorldActions;
  private _buttons = new Map<string, WorldButtons>();
  private _pin: HTMLElement;
  private _status: HTMLElement;
  private _worlds: HTMLElement;
  private _blocks = new Map<string, HTMLElement>();
  private _rows = new Map<string, RankRow>();
  private _timer: number | null = null;
}
