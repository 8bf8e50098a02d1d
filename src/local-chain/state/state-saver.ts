import { type ChainState, writeChainState } from "./chain-state.ts";

/** How one save went: what an operator graphs (and a test counts). */
export interface SaveOutcome {
  readonly ok: boolean;
  readonly seconds: number;
  /** Bytes of the file written (0 when it failed). */
  readonly bytes: number;
}

export interface StateSaver {
  /** Something changed: a save follows within `delayMs`, one for the whole burst. */
  changed(): void;
  /** Saves now if anything changed (after the write in flight, if any); resolves when written. */
  save(): Promise<void>;
  /** Saves a last time, and schedules nothing more. */
  close(): Promise<void>;
}

/**
 * When the local chain's state is written: a change schedules a write `delayMs` later, and
 * changes meanwhile ride on it (a burst of transactions is one write). One write at a time: a
 * change while one is in flight is not written beside it (two writers would double the memory and
 * the disk traffic, and race to rename) but by the next, scheduled when it ends. The snapshot is
 * taken as a write starts, so what one write holds is one moment of the chain.
 */
export function createStateSaver(options: {
  readonly path: string;
  /** The chain as it is now. */
  readonly snapshot: () => ChainState;
  readonly delayMs: number;
  /** True when the state in `path` is not the chain's yet (a fresh chain): the first save writes. */
  readonly dirty?: boolean;
  readonly onSaved?: (outcome: SaveOutcome) => void;
  readonly onError?: (error: unknown) => void;
}): StateSaver {
  let dirty = options.dirty ?? false;
  let closed = false;
  let timer: NodeJS.Timeout | undefined;
  let writing: Promise<void> | undefined;

  const schedule = () => {
    if (closed || timer !== undefined) return;
    timer = setTimeout(() => {
      timer = undefined;
      // A write in flight schedules the next one when it ends.
      if (dirty && writing === undefined) void write();
    }, options.delayMs);
    timer.unref();
  };

  const write = (): Promise<void> => {
    dirty = false;
    const started = performance.now();
    const seconds = () => (performance.now() - started) / 1000;
    writing = (async () => {
      try {
        const bytes = await writeChainState(options.path, options.snapshot());
        options.onSaved?.({ ok: true, seconds: seconds(), bytes });
      } catch (error) {
        dirty = true;
        options.onSaved?.({ ok: false, seconds: seconds(), bytes: 0 });
        options.onError?.(error);
      }
    })().finally(() => {
      writing = undefined;
      if (dirty) schedule();
    });
    return writing;
  };

  const save = async (): Promise<void> => {
    clearTimeout(timer);
    timer = undefined;
    while (writing !== undefined) await writing;
    if (dirty) await write();
  };

  return {
    changed() {
      dirty = true;
      schedule();
    },
    save,
    async close() {
      closed = true;
      await save();
    },
  };
}
