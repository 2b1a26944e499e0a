// The MPI world sidebar: every world of this host, its ranks grouped by where they are, and
// each rank's Console and Debug.

import { Widget } from '@lumino/widgets';
import { fetchWorlds, IRank, IWorld, rankRanges } from './worlds';

/** What the sidebar asks of the lab for a rank (index.ts implements them). */
export interface IRankActions {
  console(world: IWorld, rank: IRank): Promise<void>;
  debug(world: IWorld, rank: IRank): Promise<void>;
  unpin(): Promise<void>;
  /** "rank 1 of <cluster>" when the Debugger is pinned to a rank, else null. */
  pinned(): string | null;
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

/** One rank's line: its state and place (updated in place) and its two buttons (kept). */
class RankRow {
  constructor(world: IWorld, rank: IRank, actions: IRankActions, report: (error: unknown) => void) {
    this.node = element('li', 'jp-mpiwb-rank');
    this.node.dataset.rank = `${rank.rank}`;
    this._text = element('span', 'jp-mpiwb-rank-text');
    this.node.appendChild(this._text);
    this._console = element('button', 'jp-mpiwb-button jp-mpiwb-console', 'Console') as HTMLButtonElement;
    this._debug = element('button', 'jp-mpiwb-button jp-mpiwb-debug', 'Debug') as HTMLButtonElement;
    this._console.onclick = () => actions.console(this._world, this._rank).catch(report);
    this._debug.onclick = () => actions.debug(this._world, this._rank).catch(report);
    this.node.appendChild(this._console);
    this.node.appendChild(this._debug);
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
    const hint = opened
      ? ''
      : `rank ${rank.rank} is not open for debugging yet: run wb.connection_file(${rank.rank}) or a %%px --debug cell in the notebook`;
    for (const button of [this._console, this._debug]) {
      button.disabled = !opened;
      button.title = hint || `${button.textContent} on rank ${rank.rank}'s kernel`;
    }
  }

  readonly node: HTMLElement;
  private _text: HTMLElement;
  private _console: HTMLButtonElement;
  private _debug: HTMLButtonElement;
  private _world: IWorld;
  private _rank: IRank;
}

export class WorldSidebar extends Widget {
  constructor(actions: IRankActions) {
    super();
    this._actions = actions;
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
      this._pin.textContent = 'Debugger: follows the focused notebook or console';
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
        block.appendChild(element('table', 'jp-mpiwb-groups'));
        block.appendChild(element('ul', 'jp-mpiwb-ranks'));
        this._blocks.set(world.cluster_id, block);
        this._worlds.appendChild(block);
      }
      block.dataset.state = world.state;
      const users = world.notebooks.length ? ` · ${world.notebooks.join(', ')}` : '';
      block.querySelector('.jp-mpiwb-world-title')!.textContent =
        `${world.cluster_id} (profile ${world.profile}): ${world.state}${users}`;
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
      }
    }
  }

  private _actions: IRankActions;
  private _pin: HTMLElement;
  private _status: HTMLElement;
  private _worlds: HTMLElement;
  private _blocks = new Map<string, HTMLElement>();
  private _rows = new Map<string, RankRow>();
  private _timer: number | null = null;
}
