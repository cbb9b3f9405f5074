// Text from the server as a terminal shows it: a control character in a name, a key or a value would break its line
// or reach the terminal as a command (ESC, or a C1 control such as U+009B, CSI), so it is written as its \u escape.

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what would break a line or the terminal.
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;
// biome-ignore lint/suspicious/noControlCharactersInRegex: as above, each one found.
const CONTROLS = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;
/** What JSON.stringify leaves as it is: DEL, the C1 controls, and U+2028/9 (it escapes the C0 ones itself). */
const LEFT_BY_JSON = /[\u007f-\u009f\u2028\u2029]/g;

const unicodeEscape = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;

/** Text as a JSON string with every control character escaped: JSON.stringify leaves DEL, C1 and U+2028/9 as they are. */
export function quoted(text: string): string {
  return JSON.stringify(text).replace(LEFT_BY_JSON, unicodeEscape);
}

/** A value as JSON (indented by `indent`), still JSON, with every control character in it escaped. */
export function jsonText(value: unknown, indent?: number): string {
  return JSON.stringify(value, null, indent).replace(LEFT_BY_JSON, unicodeEscape);
}

/**
 * Text as one cell or line: as it is, unless it holds a line break or another control character, which would split
 * it across lines or reach the terminal as a command; such text is shown as its JSON string (`"line\nbreak"`).
 */
export function lineText(text: string): string {
  return CONTROL.test(text) ? quoted(text) : text;
}

/** A message line with each control character in it written as its \u escape, the rest as it is. */
export function escapedControls(text: string): string {
  return text.replace(CONTROLS, unicodeEscape);
}
