// Tests start real servers, worker processes and databases; two files at a time fit this 2-core machine.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Each file's temp folders are removed after its own hooks, and any database it left is dropped and fails it (test/helpers/remove-temp-dirs.ts).
    setupFiles: ['test/helpers/remove-temp-dirs.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    fileParallelism: true,
    maxWorkers: 2,
    reporters: ['default'],
  },
});
