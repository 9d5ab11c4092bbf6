/**
 * A rejection nobody handles or an exception nobody catches means a loop or a callback lost its error
 * path: the process state is unknown, so it ends at once (exit 1) with one line, its error's name and
 * code only (no message, no stack: they may carry data), and the orchestrator restarts it. Every
 * long-lived loop handles its own transient errors (with backoff) and never gets here.
 */
export function failFast(name: string): void {
  const die = (what: string) => (error: unknown) => {
    const kind = error instanceof Error ? error.name : typeof error;
    const code = (error as { code?: unknown } | undefined)?.code;
    const suffix = typeof code === 'string' || typeof code === 'number' ? ` (${code})` : '';
    process.stderr.write(`${name}: ${what}: ${kind}${suffix}; exiting\n`);
    process.exit(1);
  };
  process.on('unhandledRejection', die('unhandled rejection'));
  process.on('uncaughtException', die('uncaught exception'));
}

/** Run a service's main: configuration and dependency errors end the process with one clear line. */
export async function runMain(name: string, main: () => Promise<void>): Promise<void> {
  failFast(name);
  try {
    await main();
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`${name}: failed to start: ${message}\n`);
    process.exit(1);
  }
}
