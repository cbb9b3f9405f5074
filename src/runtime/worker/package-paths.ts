// Names an npm package's files from `node_modules/` in a stack or a message, not by where the server installed them.
import { matches, RegExpPrototypeExec, StringPrototypeSlice } from './primordials.js';

/** A `node_modules` folder in a path: where the server keeps an account's npm packages. */
const NODE_MODULES = /[\\/]node_modules[\\/]/g;
/** What ends a path in a message or a stack line. */
const PATH_END = /[\s()'"]/;

/**
 * Each path up to its last `node_modules` folder as `node_modules/`. Linear in the text: the regular expression it
 * replaces (`[^\s()'"]*[\\/]node_modules[\\/]`) backtracked over every long word, so that an error message of
 * 200 KB without a slash (component code of one long identifier) kept the worker busy past its load timeout.
 */
export function withoutPackagePaths(text: string): string {
  let out = '';
  let last = 0;
  // By `exec` as taken before component code could replace it (matchAll looks it up); the pattern's `lastIndex` moves.
  NODE_MODULES.lastIndex = 0;
  for (let match = RegExpPrototypeExec(NODE_MODULES, text); match !== null; match = RegExpPrototypeExec(NODE_MODULES, text)) {
    let start = match.index;
    while (start > last && !matches(PATH_END, text[start - 1]!)) start--;
    // The same path as the previous match (a nested node_modules): that one's `node_modules/` stands for both.
    const samePath = start === last && last > 0 && !matches(PATH_END, text[last - 1]!);
    out += samePath ? '' : `${StringPrototypeSlice(text, last, start)}node_modules/`;
    last = match.index + match[0]!.length;
  }
  return out + StringPrototypeSlice(text, last);
}
