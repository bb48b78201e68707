// `mycelium-runtime/state`. State flush: snapshots of agent state at checkpoints.
// Its own entry so the core entry stays small (README.md, the entry-point table); the public names only, listed by hand.

export {
  type FlushArgs,
  type FlushTrigger,
  MemoryStateFlushStore,
  type SnapshotStatus,
  StateFlush,
  StateFlushError,
  type StateFlushOptions,
  StateFlushRun,
  type StateFlushStore,
  type StateRunEnding,
  type StateRunOptions,
  type StateSnapshot,
  StateSnapshotError,
  type StateSnapshotSize,
  StateSnapshotTooLargeError,
  StateSnapshotUnstoredError,
  StateStoreUnavailableError,
} from "./core/state/index.ts"
