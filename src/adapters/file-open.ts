// How the file stores open their data files: never waiting on what is not a regular file.
import { closeSync, constants, fstatSync, openSync } from "node:fs"

/**
 * Opens `path` for reading (or appending, created if absent) if it is a regular file, else null. A FIFO opened without
 * O_NONBLOCK waits for its other end forever, in a synchronous call no timeout reaches (the process hung at its first
 * tool call), and /dev/zero was read until memory ran out. With it the open returns at once (for writing, with
 * ENXIO when the FIFO has no reader), and fstat of what was opened (not a stat before: the path may be swapped in
 * between) refuses it. Regular files ignore the flag; Windows has none (undefined adds no bits).
 */
export function openRegular(path: string, append = false): number | null {
  const { O_APPEND, O_CREAT, O_NONBLOCK, O_RDONLY, O_WRONLY } = constants
  let fd: number
  try {
    fd = openSync(path, (append ? O_WRONLY | O_APPEND | O_CREAT : O_RDONLY) | O_NONBLOCK, 0o666)
  } catch (e) {
    if ((e as { code?: string }).code === "ENXIO") return null
    throw e
  }
  if (fstatSync(fd).isFile()) return fd
  closeSync(fd)
  return null
}
