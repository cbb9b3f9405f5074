// Words the report of a worker that died unexpectedly from the last lines it wrote to stderr, without the server's paths.
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { withoutPackagePaths } from './worker/package-paths.js';

/** The stderr lines and characters a crash report shows: where it broke, not the whole stack. */
const SHOWN_LINES = 3;
const SHOWN_CHARS = 500;

/**
 * `how` the worker ended and the tail of its stderr, shown to the component's author: the folders in `hidden` (the
 * server's package root, the account's code) are left out of the paths it names, and an npm package's files are named
 * from its `node_modules/`, as the worker names them in a component's own stacks (`component.js:3:9`).
 */
export function crashMessage(how: string, stderrTail: string, hidden: string[]): string {
  // The worker's own (linear) renaming: a lazy pattern from every slash took 0.75 s of the server's thread on 16 KB of them.
  let text = withoutPackagePaths(stderrTail);
  // Longest first: a folder inside another is left out whole, not cut at the outer one's end.
  const prefixes = hidden
    .filter((dir) => dir.length > 1)
    .map((dir) => (dir.endsWith(path.sep) ? dir : dir + path.sep))
    .sort((a, b) => b.length - a.length);
  for (const prefix of prefixes) text = text.replaceAll(pathToFileURL(prefix).href, '').replaceAll(prefix, '');
  const tail = text.trim().split('\n').slice(-SHOWN_LINES).join(' | ');
  return `the worker exited unexpectedly (${how})${tail ? `: ${tail.slice(0, SHOWN_CHARS)}` : ''}`;
}
