// How deeply JSON text nests, read without parsing it: deeper data than the service handles is refused at the door.

/**
 * The deepest nesting the service takes in a body: far beyond real payloads, and well inside what the runtime
 * checks (256 levels) and what serialising needs of the stack.
 */
export const MAX_JSON_DEPTH = 128;

/** True when `text` (JSON or not) opens more than `max` arrays or objects inside each other, outside strings. */
export function jsonNestsDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: the next character is escaped
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}
