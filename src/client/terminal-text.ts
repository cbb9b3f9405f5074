// Text from the server as a terminal shows it: a control character in a name, a key or a value would break its line
// or reach the terminal as a command (ESC, or a C1 control such as U+009B, CSI), so it is written as its \u escape.

import { Document, Scalar, visit } from 'yaml';

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what would break a line or the terminal.
const CONTROLS = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;
/** The same, to test with: a global pattern's test() moves on from its last match. */
const CONTROL = new RegExp(CONTROLS.source);
/** What JSON.stringify leaves as it is: DEL, the C1 controls, and U+2028/9 (it escapes the C0 ones itself). */
const LEFT_BY_JSON = /[\u007f-\u009f\u2028\u2029]/g;

const unicodeEscape = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;

/** Text as a JSON string with every control character escaped: JSON.stringify leaves DEL, C1 and U+2028/9 as they are. */
export function quoted(text: string): string {
  return JSON.stringify(text).replace(LEFT_BY_JSON, unicodeEscape);
}

/** Whether `text` holds a character JSON.stringify (and so the yaml package's double quotes) leaves as it is. */
const LEFT_RAW = new RegExp(LEFT_BY_JSON.source);

/**
 * A value as YAML, still YAML that reads back as the value, with every control character escaped. The yaml package
 * escapes in double quotes only what JSON.stringify does, and writes U+2028/9 in a plain or block scalar as they are:
 * a string (or key) holding DEL, a C1 control or U+2028/9 is put in double quotes, where `\uXXXX` is YAML's escape
 * too, and each such character written so. The package writes no such character of its own, so each one in its text
 * is one of those strings'.
 */
export function yamlText(value: unknown): string {
  const document = new Document(value);
  visit(document, {
    Scalar(_key, node) {
      if (typeof node.value === 'string' && LEFT_RAW.test(node.value)) node.type = Scalar.QUOTE_DOUBLE;
    },
  });
  return document.toString().replace(LEFT_BY_JSON, unicodeEscape);
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
