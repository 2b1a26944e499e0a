// JupyterLab's Debugger held on one rank's kernel, whatever tab has the focus.
//
// JupyterLab keeps one debug session (IDebugger.session) and moves it to the focused notebook
// or console: its debugger-extension plugins call DebuggerHandler.updateWidget on every
// labShell.currentChanged, which sets `service.session.connection` to the focused widget's
// session connection and then calls `service.restoreState(...)` (packages/debugger/src/handler.ts).
// While a rank is pinned, the session's `connection` refuses every other connection, so the
// Debugger panel stays on the rank; and the handler's `restoreState` on each focus change is
// held back (`_holdRestores`): it re-sends every breakpoint the Debugger remembers, from a
// snapshot taken before its own awaits, and that could land after the breakpoints a notebook's
// `%%px --debug` cell had just set on the rank and clear them (the cell then ran through without
// stopping: twice in about 150 rounds, once in the suite, once with the cores kept busy).
// Unpinning removes both: the session follows the focus again. What the skipped restores showed,
// the Breakpoints panel, is read (never sent) from the rank's kernel each time it stops
// (`_showBreakpoints`).

import { Debugger, IDebugger } from '@jupyterlab/debugger';
import { Session } from '@jupyterlab/services';
import { ISignal, Signal } from '@lumino/signaling';

/** The `connection` accessor of the session's class (DebuggerSession). */
function connectionAccessor(session: IDebugger.ISession): PropertyDescriptor {
  let proto = Object.getPrototypeOf(session);
  while (proto) {
    const found = Object.getOwnPropertyDescriptor(proto, 'connection');
    if (found && found.get && found.set) {
      return found;
    }
    proto = Object.getPrototypeOf(proto);
  }
  throw new Error(
    'the debugger session has no connection accessor: this JupyterLab debugger is not the one the world sidebar knows'
  );
}

export class DebuggerPin {
  constructor(service: IDebugger) {
    this._service = service;
    service.sessionChanged.connect(this._onSessionChanged, this);
    service.eventMessage.connect(this._onEvent, this);
    this._holdRestores(service);
  }

  /** The pinned rank's label ("rank 1 of <cluster>"), or null when the Debugger follows the focus. */
  get label(): string | null {
    return this._pinned && this._label ? this._label : null;
  }

  /** The pinned session connection (the rank's console's), or null. */
  get connection(): Session.ISessionConnection | null {
    return this._pinned;
  }

  /** Emitted when a rank is pinned or unpinned. */
  get changed(): ISignal<this, string | null> {
    return this._changed;
  }

  /** Put the Debugger on *connection*'s kernel, start its debugger there, and keep it there. */
  async pin(connection: Session.ISessionConnection, label: string): Promise<void> {
    const service = this._service;
    if (this._pinned !== connection) {
      await this._leave();
    }
    this._release();
    this._pinned = connection;
    this._kernel = connection.kernel?.id ?? '';
    this._gone = null;
    this._left = '';
    this._label = ''; // (no label shown until the rank's state is restored)
    if (!service.session) {
      service.session = new Debugger.Session({
        connection,
        config: service.config
      });
    } else {
      service.session.connection = connection;
    }
    this._guard(service.session!);
    connection.disposed.connect(this._onDisposed, this);
    try {
      // what the handler does when a widget's bug button is switched on (startDebugger): the
      // one restore while the rank is pinned (the flag is read as the call begins)
      this._restoring = true;
      const restored = service.restoreState(true);
      this._restoring = false;
      await restored;
      if (service.isStarted && !service.hasStoppedThreads()) {
        await service.displayDefinedVariables();
      }
    } finally {
      // said once the breakpoints are restored: a cell run from then on keeps its own
      this._label = label;
      this._changed.emit(label);
    }
  }

  /**
   * The pinned rank is gone (its world restarted or stopped: its kernel is no longer one of a
   * world's ranks): give the Debugger back to the focus without a word to that kernel (nothing
   * answers there any more); *why* is kept for the sidebar to say.
   */
  forget(why: string): void {
    this._left = why;
    this._release();
    this._changed.emit(null);
  }

  /**
   * The rank whose session went away while the Debugger was on it (its console closed, or its
   * kernel gone with its world, whichever JupyterLab noticed first), once: `index.ts` reads the
   * worlds to say which, and `forget` says why.
   */
  takeGone(): { kernel: string; label: string } | null {
    const gone = this._gone;
    this._gone = null;
    return gone;
  }

  /** Why the Debugger last left a rank by itself ("" when it did not). */
  get left(): string {
    return this._left;
  }

  /** Leave the rank and give the Debugger back to the focus (JupyterLab's own behaviour). */
  async unpin(): Promise<void> {
    if (this._pinned) {
      await this._leave();
      this._release();
      this._changed.emit(null);
    }
  }

  /**
   * The Debugger leaves the pinned rank as a console's bug button switched off leaves it: its
   * debugger stopped there (debugpy's disconnect: breakpoints cleared, the rank running on).
   * Otherwise the breakpoints JupyterLab keeps, which it sends again whenever it restores a
   * kernel's state, stay set in that rank and stop it in the next cell meant for another.
   */
  private async _leave(): Promise<void> {
    const service = this._service;
    if (this._pinned && service.isStarted && service.session?.connection === this._pinned) {
      await service.stop();
    }
  }

  /**
   * The service's `restoreState`, except while a rank is pinned: then only the pin's own (in
   * `pin`) runs; the handler's, on every focus change, is skipped (the session cannot move, and
   * its re-sent breakpoints raced the notebook's).
   */
  private _holdRestores(service: IDebugger): void {
    const restore = service.restoreState.bind(service);
    service.restoreState = async (autoStart: boolean): Promise<void> => {
      if (this._pinned !== null && !this._restoring) {
        return;
      }
      return restore(autoStart);
    };
  }

  private _onEvent(_: IDebugger, event: IDebugger.ISession.Event): void {
    if (this._pinned !== null && event.event === 'stopped') {
      void this._showBreakpoints().catch(error => console.warn('mpiworkbench: the rank\'s breakpoints not read', error));
    }
  }

  /** The pinned rank's breakpoints in the Debugger's Breakpoints panel, as its kernel has them
   * (its `debugInfo`: read only, nothing sent back). */
  private async _showBreakpoints(): Promise<void> {
    const session = this._service.session;
    if (!session || session.connection !== this._pinned) {
      return;
    }
    const reply = await session.restoreState();
    const found = new Map<string, IDebugger.IBreakpoint[]>();
    for (const { source, breakpoints } of reply.body.breakpoints) {
      found.set(source, breakpoints.map(point => ({ ...point, source: { path: source }, verified: true })));
    }
    this._service.model.breakpoints.restoreBreakpoints(found);
  }

  private _guard(session: IDebugger.ISession): void {
    const accessor = connectionAccessor(session);
    Object.defineProperty(session, 'connection', {
      configurable: true,
      enumerable: false,
      get: () => accessor.get!.call(session),
      set: (value: Session.ISessionConnection | null) => {
        if (this._pinned === null || value === this._pinned) {
          accessor.set!.call(session, value);
        }
        // any other connection (the focused notebook's): refused while pinned
      }
    });
    this._guarded = session;
  }

  private _release(): void {
    if (this._guarded) {
      // the own property goes: the class's accessor is seen again
      delete (this._guarded as unknown as Record<string, unknown>)['connection'];
      this._guarded = null;
    }
    if (this._pinned) {
      this._pinned.disposed.disconnect(this._onDisposed, this);
    }
    this._pinned = null;
  }

  private _onSessionChanged(_: IDebugger, session: IDebugger.ISession | null): void {
    // a new session object (JupyterLab made one): guard it too, on the pinned rank
    if (this._pinned && session && session !== this._guarded) {
      const pinned = this._pinned;
      this._guarded = null;
      session.connection = pinned;
      this._guard(session);
    }
  }

  private _onDisposed(): void {
    // the rank's console closed, or its kernel gone with its world: its session is gone,
    // nothing to stop (which of the two: see takeGone)
    const kernel = this._pinned?.kernel?.id ?? this._kernel;
    this._gone = kernel ? { kernel, label: this._label } : null;
    this._left = '';
    this._release();
    this._changed.emit(null);
  }

  private _service: IDebugger;
  private _pinned: Session.ISessionConnection | null = null;
  private _guarded: IDebugger.ISession | null = null;
  private _label = '';
  private _kernel = '';
  private _gone: { kernel: string; label: string } | null = null;
  private _left = '';
  private _restoring = false;
  private _changed = new Signal<this, string | null>(this);
}
