// A server's refusal of a form's props read for that form: each message on the field it is about, the rest for the line
// above the button.
import { ApiError, describeError, hookLogText } from './api';
import { type FieldErrors, labelOf } from './prop-form';
import type { PropDescriptor } from './types';

/**
 * How the server's messages quote a value the request sent (runtime/worker/quote.ts): as JSON, its first 100 characters and
 * `…` when longer.
 */
function quoted(value: string): string {
  const points = Array.from(value);
  return points.length <= 100 ? JSON.stringify(value) : `${JSON.stringify(points.slice(0, 100).join(''))}…`;
}

/**
 * The app prop whose connected account `message` says is not found (`connected account "apn_…" not found`, a 404's or
 * a reload's): the server says only the id it did not find, and `sent` (the configured_props sent) says which field held it.
 */
function missingAccountProp(message: string, props: PropDescriptor[], sent: Record<string, unknown>): PropDescriptor | undefined {
  return props.find((prop) => {
    const id = prop.type === 'app' ? (sent[prop.name] as { authProvisionId?: unknown } | undefined)?.authProvisionId : undefined;
    return typeof id === 'string' && message.includes(`connected account ${quoted(id)}`);
  });
}

/** How the server begins its list of configured values a deploy refuses (model/props.ts propsInvalid). */
const INVALID = 'invalid configured_props: ';

/** A reload's `errors` read for the form: the values a deploy would refuse, by the prop they are about, and the rest. */
export interface ReloadErrors {
  /** By prop name, as the form shows it on the field. */
  fields: FieldErrors;
  /** Values refused that no field of the form holds (`and 3 more`, say). */
  unplaced: string[];
  /** The others: why the props could not be listed (additionalProps() threw, say). */
  rest: string[];
}

/**
 * Splits a reload's `errors`: its `invalid configured_props: a …; b …` entry lists the values the form holds that a
 * deploy would refuse, each begun by its prop's name (a message may hold "; " itself: what follows belongs to it until
 * the next name), and a connected account not found is about the app prop that named it (`sent`: the values sent).
 */
export function readReloadErrors(errors: string[], props: PropDescriptor[], sent: Record<string, unknown>): ReloadErrors {
  const read: ReloadErrors = { fields: {}, unplaced: [], rest: [] };
  for (const entry of errors) {
    const missing = missingAccountProp(entry, props, sent);
    if (missing) read.fields[missing.name] = `${labelOf(missing)}: ${entry}`;
    else if (!entry.startsWith(INVALID)) read.rest.push(entry);
    else {
      let current: PropDescriptor | undefined;
      for (const piece of entry.slice(INVALID.length).split('; ')) {
        const prop = props.find((p) => piece.startsWith(`${p.name} `));
        if (prop) {
          current = prop;
          read.fields[prop.name] = `${labelOf(prop)} ${piece.slice(prop.name.length + 1)}`;
        } else if (current && !/^and \d+ more$/.test(piece)) read.fields[current.name] += `; ${piece}`;
        else {
          current = undefined;
          read.unplaced.push(piece);
        }
      }
    }
  }
  return read;
}

/**
 * A 422's details on the fields they name, and a 404 naming a connected account on the app prop that held it (`sent`:
 * the configured_props sent); what names no field is returned for the form's own message.
 */
export function errorsFromServer(
  error: unknown,
  props: PropDescriptor[],
  sent: Record<string, unknown> = {},
): { fields: FieldErrors; general: string | undefined } {
  if (!(error instanceof ApiError)) return { fields: {}, general: describeError(error) };
  // A wrong app's account is a 422 on its field; an unknown one, a 404, was only said above the button.
  const missing = error.status === 404 ? missingAccountProp(error.message, props, sent) : undefined;
  if (missing) return { fields: { [missing.name]: `${labelOf(missing)}: ${error.message}` }, general: undefined };
  const fields: FieldErrors = {};
  const rest: string[] = [];
  for (const detail of error.details) {
    const prop = props.find((p) => p.name === detail.prop);
    if (prop) fields[prop.name] = `${labelOf(prop)} ${detail.message ?? 'is invalid'}`;
    // A hook's console lines are said by describeError; a 400's details repeat what its message says already; a bare
    // reason is a code.
    else if (!detail.hook && detail.message && !error.message.includes(detail.message)) rest.push([detail.prop, detail.message].filter(Boolean).join(' '));
  }
  const marked = Object.keys(fields).length > 0;
  // A hook's lines are not about a field: said with its error, though other details are on their fields.
  const hookLines = error.details.some((detail) => hookLogText(detail) !== undefined);
  return { fields, general: rest.length || hookLines || !marked ? describeError(error, rest) : undefined };
}
