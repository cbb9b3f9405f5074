// Setup file of every test file: registered before the file's own hooks, this afterAll runs after them (Vitest runs
// after-hooks in reverse), so servers are stopped before their data folders go. A PostgreSQL database the file
// created and did not drop by then is dropped here too, and fails the file: it would outlive the run.
import { afterAll } from 'vitest';
import { dropLeftoverDatabases } from './databases.js';
import { removeTempDirs } from './temp-dirs.js';

afterAll(async () => {
  removeTempDirs();
  const left = await dropLeftoverDatabases();
  if (left.length > 0) throw new Error(`the test file left ${left.length} database(s) undropped: ${left.join(', ')}`);
});
