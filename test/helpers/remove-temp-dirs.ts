// Setup file of every test file: registered before the file's own hooks, this afterAll runs after them (Vitest runs
// after-hooks in reverse), so servers are stopped before their data folders go.
import { afterAll } from 'vitest';
import { removeTempDirs } from './temp-dirs.js';

afterAll(removeTempDirs);
