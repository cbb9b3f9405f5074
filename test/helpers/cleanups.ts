// Cleanups that tests register as they open things (databases, proxies, servers), run after the block in reverse:
// the last opened is closed first, so that nothing is closed under something still using it.
import type { ChildProcess } from 'node:child_process';
import { afterAll } from 'vitest';

/** Registers an afterAll for the enclosing block; returns the function that adds a cleanup to it. */
export function cleanupsAfterAll(): (cleanup: () => Promise<void> | void) => void {
  const cleanups: Array<() => Promise<void> | void> = [];
  afterAll(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  return (cleanup) => void cleanups.push(cleanup);
}

/**
 * The child processes a block starts, pushed as it starts them; each still running is SIGKILLed after the block.
 * Called after cleanupsAfterAll, its afterAll runs before the cleanups (Vitest runs after-hooks in reverse), so the
 * processes go before the storage they use.
 */
export function killedAfterAll(): ChildProcess[] {
  const children: ChildProcess[] = [];
  afterAll(() => {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  });
  return children;
}
