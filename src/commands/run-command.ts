// How the server's start and the commands beside it (`npm run migrate`, `rotate-signing-key`, `backup`, `restore`)
// end on what they did not foresee: exit code 1 and the error's message, never a stack trace.
// What they refuse ends with exit code 2 (config.ts exitRefused) before it gets here.

/** Runs `work`; a failure ends the process with exit code 1 and `<failure>: <message>` on stderr. */
export function runCommand(failure: string, work: () => Promise<void>): void {
  work().catch((err: unknown) => {
    process.stderr.write(`${failure}: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
