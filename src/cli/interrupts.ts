import { killAllProcessGroups } from "../process/process.js";

/**
 * SIGINT and SIGTERM for a command that stops cleanly: the first calls `first` (cancel, then write what there is to
 * write); a second kills every process group handoff started and exits 130 at once. On exit, whatever way it comes,
 * those process groups are killed too. Returns the function that removes the handlers.
 */
export function onInterrupt(first: () => void): () => void {
  let interrupts = 0;
  const onSignal = () => {
    interrupts++;
    if (interrupts === 1) first();
    else {
      killAllProcessGroups();
      process.exit(130);
    }
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  process.on("exit", killAllProcessGroups);
  return () => {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  };
}
