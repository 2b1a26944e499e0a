// JupyterLab's Debugger held on one rank's kernel, whatever tab has the focus.
//
// JupyterLab keeps one debug session (IDebugger.session) and moves it to the focused notebook
// or console: its debugger-extension plugins call DebuggerHandler.updateWidget on every
// labShell.currentChanged, which sets `service.session.connection` to the focused widget's
// session connection and then calls `service.restoreState(...)` (packages/debugger/src/handler.ts).
// While a rank is pinned, the session's `connection` refuses every other connection: the
// handler's restoreState then reads the rank's debugger again, so the Debugger panel stays on
// the rank. Unpinning removes the guard: the session follows the focus again.

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
  }

  /** The pinned rank's label ("rank 1 of <cluster>"), or null when the Debugger follows the focus. */
  get label(): string | null {
    return this._pinned ? this._label : null;
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
    this._label = label;
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
    this._changed.emit(label);
    // what the handler does when a widget's bug button is switched on (startDebugger)
    await service.restoreState(true);
    if (service.isStarted && !service.hasStoppedThreads()) {
      await service.displayDefinedVariables();
    }
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
    // the rank's console closed: its session is gone, nothing to stop
    this._release();
    this._changed.emit(null);
  }

  private _service: IDebugger;
  private _pinned: Session.ISessionConnection | null = null;
  private _guarded: IDebugger.ISession | null = null;
  private _label = '';
  private _changed = new Signal<this, string | null>(this);
}
