// Cleanups that tests register as they open things (databases, proxies, servers), run after the block in reverse:
// the last opened is closed first, so that nothing is closed under something still using it.
import { afterAll } from 'vitest';

/** Registers an afterAll for the enclosing block; returns the function that adds a cleanup to it. */
export function cleanupsAfterAll(): (cleanup: () => Promise<void> | void) => void {
  const cleanups: Array<() => Promise<void> | void> = [];
  afterAll(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  return (cleanup) => void cleanups.push(cleanup);
}
