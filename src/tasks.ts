// `mycelium-runtime/tasks`. The task ledger: exactly-once tasks with leases.
// Its own entry so the core entry stays small (README.md, the entry-point table); the public names only, listed by hand.

export {
  deriveTaskRequestId,
  MemoryTaskStore,
  type StoredTask,
  type TaskBody,
  type TaskCallMeta,
  type TaskContext,
  type TaskFunction,
  type TaskIdentityInput,
  type TaskLease,
  TaskLeaseLostError,
  TaskLedger,
  TaskLedgerError,
  type TaskLedgerOptions,
  TaskLedgerPendingError,
  type TaskOptions,
  type TaskRecord,
  type TaskReleaseOptions,
  TaskReleaseRefusedError,
  TaskResultUnstorableError,
  type TaskRow,
  TaskRowError,
  type TaskState,
  type TaskStatus,
  type TaskStore,
} from "./core/tasks/index.ts"
