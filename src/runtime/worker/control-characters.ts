// The one rule for what a "control character" is, in names, keys and URLs: the worker checks a component's names with
// it and the server a data store's name and a webhook's URL, so all three refuse the same characters.
import { matches } from './primordials.js';

// C1 as well as C0 and DEL: U+0085 is a line break to some readers, U+009B a terminal's escape (CSI) to others.
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what the check is for.
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f-\u009f]/;

/** Whether `text` holds a control character: C0 (U+0000–U+001F), DEL (U+007F) or C1 (U+0080–U+009F). */
export function hasControlCharacter(text: string): boolean {
  return matches(CONTROL_CHARACTER, text);
}
