// Processes the tests start, seen from outside.

/** Whether a process with this pid is running (or a zombie not yet reaped). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
