#!/usr/bin/env node
// Entry point of the `tributary` command; the code lives in dist/ (built by `npm ci` or `npm run build`).
import { main } from '../dist/cli/main.js';

main(process.argv).catch((error) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
