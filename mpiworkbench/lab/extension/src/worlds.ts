// What the server extension answers at GET /mpiworkbench/worlds (mpiworkbench/lab/server.py: each
// world as its own kernel side's reader, mpiworkbench/sidebar/worlds.py, reads it).

import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

export interface IRank {
  rank: number;
  engine: number | null;
  host: string | null;
  pid: number | null;
  state: string;
  where: string;
  kernel: string | null;
}

export interface IGroup {
  state: string;
  where: string;
  ranks: number[];
}

/** A live client of a world (its `clients/*.json`): `lab` when its kernel is one of this lab's. */
export interface IClient {
  notebook: string;
  kernel: string;
  pid: number | null;
  host: string | null;
  since: number;
  lab: boolean;
}

export interface IWorld {
  cluster_id: string;
  profile: string;
  profile_dir: string;
  state: string;
  generation: number | null;
  notebooks: string[];
  clients: IClient[];
  busy: string | null;
  /** The Jupyter kernel id of the client running work on the world ('' when none, or not a kernel). */
  holder_kernel: string;
  holder_notebook: string | null;
  holder_in_lab: boolean;
  ranks: IRank[];
  groups: IGroup[];
  /** Why this sidebar cannot read the world (a kernel side too old or too new for it), and what to upgrade. */
  note?: string;
}

/** The worlds of this host, as the lab's server reads them from their files. */
export async function fetchWorlds(
  settings: ServerConnection.ISettings = ServerConnection.makeSettings()
): Promise<IWorld[]> {
  const url = URLExt.join(settings.baseUrl, 'mpiworkbench', 'worlds');
  const response = await ServerConnection.makeRequest(url, {}, settings);
  if (!response.ok) {
    throw new ServerConnection.ResponseError(
      response,
      `GET ${url} answered ${response.status} ${response.statusText}`
    );
  }
  const data = (await response.json()) as { worlds: IWorld[] };
  return data.worlds;
}

/** "0-3, 5": a list of ranks in ranges. */
export function rankRanges(ranks: number[]): string {
  const sorted = [...ranks].sort((a, b) => a - b);
  const parts: string[] = [];
  let start = 0;
  for (let i = 1; i <= sorted.length; i++) {
    if (i === sorted.length || sorted[i] !== sorted[i - 1] + 1) {
      const first = sorted[start];
      const last = sorted[i - 1];
      parts.push(first === last ? `${first}` : `${first}-${last}`);
      start = i;
    }
  }
  return parts.join(', ');
}
