// A form generated from a component's props: one input per prop by its type, checked here before the server checks it.
import { useState } from 'preact/hooks';
import { describeError, post } from './api';
import { type Choice, ChoiceSelect, linesOf, toChoice } from './choice-select';
import { minTimerInterval, minTimerIntervalText, TimerField } from './timer-field';
import type { PropDescriptor } from './types';
import { useBusy } from './use-busy';

/** What the inputs hold, as text (or a checkbox's state), by prop name; a timer keeps `<name>.mode` and `<name>.timezone` beside its value. */
export type RawValues = Record<string, string | boolean>;
export type FieldErrors = Record<string, string>;

export const SECRET_PLACEHOLDER = '********';
const NO_INPUT = new Set(['$.interface.http', '$.service.db', 'alert']);
const PLACEHOLDERS: Record<string, string> = { 'object[]': 'JSON array of objects', 'boolean[]': 'true or false, one a line' };

function intervalRule(prop: PropDescriptor): string {
  return `${labelOf(prop)} needs an interval of at least ${minTimerIntervalText()}`;
}

/** What the form calls a prop: its label, else its name. */
export function labelOf(prop: PropDescriptor): string {
  return prop.label ?? prop.name;
}

/** The inputs' starting text: a source's configured values as the API returns them, else the props' defaults. */
export function initialValues(props: PropDescriptor[], configured: Record<string, unknown> = {}): RawValues {
  const raw: RawValues = {};
  for (const prop of props) {
    const value = prop.name in configured ? configured[prop.name] : prop.default;
    if (prop.type === '$.interface.timer') {
      const timer = (value ?? { intervalSeconds: prop.intervalSeconds, cron: prop.cron }) as Record<string, unknown>;
      const cron = timer.cron;
      const interval = timer.intervalSeconds ?? timer.interval_seconds;
      raw[`${prop.name}.mode`] = typeof cron === 'string' && cron ? 'cron' : 'interval';
      raw[`${prop.name}.timezone`] = typeof timer.timezone === 'string' ? timer.timezone : '';
      raw[prop.name] = typeof cron === 'string' && cron ? cron : interval === undefined || interval === null ? '' : String(interval);
    }
    // A stored boolean secret is held as its mask (the box unticked), so that it is sent back as is unless ticked.
    else if (prop.type === 'boolean') raw[prop.name] = prop.secret && value === SECRET_PLACEHOLDER ? value : value === true;
    else if (prop.type === 'app') raw[prop.name] = String((value as { authProvisionId?: string } | undefined)?.authProvisionId ?? '');
    else if (value === undefined || value === null) raw[prop.name] = '';
    // A list of objects is edited as one JSON array: a line each would show "[object Object]" and send it as text.
    else if (prop.type === 'object[]' && Array.isArray(value)) raw[prop.name] = JSON.stringify(value, null, 2);
    else if (prop.type.endsWith('[]') && Array.isArray(value)) raw[prop.name] = value.map(String).join('\n');
    // An any prop is typed as JSON, a string too: shown bare, "str" was refused as not JSON, and "5" saved as a number.
    else if (typeof value === 'object' || prop.type === 'any') raw[prop.name] = JSON.stringify(value, null, 2);
    else raw[prop.name] = String(value);
  }
  return raw;
}

function checkInteger(prop: PropDescriptor, text: string): string | number {
  if (!/^-?\d+$/.test(text.trim())) return `${labelOf(prop)} must be a whole number`;
  const n = Number(text.trim());
  if (prop.min !== undefined && n < prop.min) return `${labelOf(prop)} must be at least ${prop.min}`;
  if (prop.max !== undefined && n > prop.max) return `${labelOf(prop)} must be at most ${prop.max}`;
  // Past 2^53 a number is no longer the one typed (99999999999999999999 is sent as 100000000000000000000), and the
  // server answered "must be an integer, got 100000000000000000000" to a value typed as one.
  if (!Number.isSafeInteger(n)) return `${labelOf(prop)} must be a whole number from ${-Number.MAX_SAFE_INTEGER} to ${Number.MAX_SAFE_INTEGER}`;
  return n;
}

/** The configured_props to send, or what is wrong with the inputs, per prop. */
export function collectValues(props: PropDescriptor[], raw: RawValues): { values: Record<string, unknown>; errors: FieldErrors } {
  const values: Record<string, unknown> = {};
  const errors: FieldErrors = {};
  for (const prop of props) {
    // A hidden prop is not in the form: nothing is sent for it, so the server applies its default.
    if (NO_INPUT.has(prop.type) || prop.hidden) continue;
    const input = raw[prop.name];
    const text = typeof input === 'string' ? input.trim() : '';
    const fail = (message: string) => (errors[prop.name] = message);
    // A stored secret shows as ********, which sent back keeps it, whatever its type: a number's or JSON's check refused it.
    if (prop.secret && text === SECRET_PLACEHOLDER) {
      values[prop.name] = SECRET_PLACEHOLDER;
      continue;
    }
    if (prop.type === 'boolean') {
      values[prop.name] = input === true;
      continue;
    }
    if (prop.type === '$.interface.timer') {
      if (raw[`${prop.name}.mode`] === 'cron') {
        const timezone = String(raw[`${prop.name}.timezone`] ?? '').trim();
        if (!text) fail(`${labelOf(prop)} needs a cron expression`);
        // No time zone: the server's default, UTC.
        else values[prop.name] = timezone ? { cron: text, timezone } : { cron: text };
      } else if (!/^\d+$/.test(text) || Number(text) < minTimerInterval()) fail(intervalRule(prop));
      else values[prop.name] = { intervalSeconds: Number(text) };
      continue;
    }
    if (!text) {
      // An optional prop left empty is left out, so that the server applies its default.
      if (!prop.optional && prop.default === undefined && prop.type !== 'app') fail(`${labelOf(prop)} is required`);
      continue;
    }
    const base = prop.type.replace(/\[\]$/, '');
    if (prop.type === 'app') values[prop.name] = { authProvisionId: text };
    else if (prop.type === 'object[]') {
      const list = parseJson(text);
      if (Array.isArray(list) && list.every(isObject)) values[prop.name] = list;
      else fail(`${labelOf(prop)} must be a JSON array of objects`);
    } else if (prop.type.endsWith('[]')) {
      const lines = linesOf(text);
      if (base === 'integer') {
        const numbers = lines.map((line) => checkInteger(prop, line));
        const bad = numbers.find((n) => typeof n === 'string');
        if (bad !== undefined) fail(`${bad} (one value a line)`);
        else values[prop.name] = numbers;
      } else if (base === 'boolean') {
        // Sent as booleans: the lines' text ("true") is a string, which the server refuses for a boolean[] prop.
        if (lines.some((line) => line !== 'true' && line !== 'false')) fail(`${labelOf(prop)} takes true or false (one value a line)`);
        else values[prop.name] = lines.map((line) => line === 'true');
      } else values[prop.name] = lines;
    } else if (base === 'integer') {
      const n = checkInteger(prop, text);
      if (typeof n === 'string') fail(n);
      else values[prop.name] = n;
    } else if (base === 'object' || base === 'any') {
      const parsed = parseJson(text);
      if (parsed === undefined) fail(`${labelOf(prop)} must be valid JSON`);
      else if (base === 'object' && !isObject(parsed)) fail(`${labelOf(prop)} must be a JSON object`);
      else values[prop.name] = parsed;
    } else values[prop.name] = text;
  }
  return { values, errors };
}

/** The JSON `text` holds, or undefined when it is not JSON. */
function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

const isObject = (value: unknown) => typeof value === 'object' && value !== null && !Array.isArray(value);

export function PropFields(props: {
  componentId: string;
  props: PropDescriptor[];
  raw: RawValues;
  onChange: (raw: RawValues) => void;
  errors: FieldErrors;
  /** A field was edited: the form drops its error, which was about the value it held. */
  onEdited: (name: string) => void;
  idPrefix: string;
}) {
  // `also`: other values changed by the same input (both in one change, or the second would undo the first).
  const set = (name: string, value: string | boolean, also?: RawValues) => props.onChange({ ...props.raw, [name]: value, ...also });
  return (
    <>
      {props.props
        .filter((prop) => !prop.hidden)
        .map((prop) => (
          <PropField
            key={prop.name}
            prop={prop}
            id={`${props.idPrefix}-${prop.name}`}
            raw={props.raw}
            set={(name, value, also) => {
              set(name, value, also);
              props.onEdited(prop.name);
            }}
            error={props.errors[prop.name]}
            componentId={props.componentId}
            allProps={props.props}
          />
        ))}
    </>
  );
}

function PropField(props: {
  prop: PropDescriptor;
  id: string;
  raw: RawValues;
  set: (name: string, value: string | boolean, also?: RawValues) => void;
  error: string | undefined;
  componentId: string;
  allProps: PropDescriptor[];
}) {
  const { prop, id, raw, set, error } = props;
  const describedBy = [prop.description ? `${id}-help` : '', `${id}-error`].filter(Boolean).join(' ');
  const common = { id, 'aria-invalid': error ? ('true' as const) : undefined, 'aria-describedby': describedBy };
  const text = typeof raw[prop.name] === 'string' ? (raw[prop.name] as string) : '';
  const label = (
    <label for={id}>
      {labelOf(prop)}
      {prop.optional && <span class="muted"> (optional)</span>}
    </label>
  );
  const help = prop.description && (
    <p id={`${id}-help`} class="hint">
      {prop.description}
    </p>
  );
  // Reserved even when empty, so that a message appearing does not move the fields below.
  const errorLine = (
    <p id={`${id}-error`} class="field-error">
      {error ?? ''}
    </p>
  );

  if (prop.type === '$.interface.http') {
    return (
      <div class="field">
        <span class="label">{labelOf(prop)}</span>
        <p class="hint">An HTTP endpoint: its URL is made when the source is deployed.</p>
      </div>
    );
  }
  if (prop.type === '$.service.db') return null;
  if (prop.type === 'alert') {
    // A note from the component's author (often a step to take first): shown where the prop stands, asked nothing.
    return (
      <p class={`prop-alert ${prop.alertType ?? 'info'}`} role="note" aria-label={`${prop.alertType ?? 'info'}: ${labelOf(prop)}`}>
        {prop.content ?? prop.description ?? ''}
      </p>
    );
  }

  let input: preact.JSX.Element;
  if (prop.type === 'boolean') {
    return (
      <div class="field checkbox">
        <input type="checkbox" {...common} checked={raw[prop.name] === true} onChange={(e) => set(prop.name, e.currentTarget.checked)} />
        {label}
        {help}
        {errorLine}
      </div>
    );
  }
  if (prop.type === '$.interface.timer') {
    return (
      <TimerField label={labelOf(prop)} name={prop.name} id={id} common={common} describedBy={describedBy} raw={raw} set={set}>
        {help}
        {errorLine}
      </TimerField>
    );
  }
  if (prop.remoteOptions) {
    input = <RemoteOptions {...props} common={common} text={text} />;
  } else if (prop.options && prop.options.length > 0) {
    const empty = prop.optional || prop.default !== undefined ? '(default)' : 'Choose…';
    const choices = prop.options.map(toChoice);
    input = (
      <ChoiceSelect common={common} list={prop.type.endsWith('[]')} text={text} choices={choices} empty={empty} onPick={(value) => set(prop.name, value)} />
    );
  } else if (prop.type.endsWith('[]') || prop.type === 'object' || prop.type === 'any') {
    input = (
      <textarea
        {...common}
        class={prop.secret ? 'secret' : undefined}
        rows={prop.type.endsWith('[]') ? 3 : 4}
        spellcheck={false}
        placeholder={PLACEHOLDERS[prop.type] ?? (prop.type.endsWith('[]') ? 'one value a line' : 'JSON')}
        value={text}
        onInput={(e) => set(prop.name, e.currentTarget.value)}
      />
    );
  } else if (prop.type === 'integer' && prop.secret) {
    // A secret of any type is masked as typed (the lenient reading of `secret`, README), a number too.
    input = (
      <input {...common} type="password" inputmode="numeric" autocomplete="new-password" value={text} onInput={(e) => set(prop.name, e.currentTarget.value)} />
    );
  } else if (prop.type === 'integer') {
    input = <input {...common} type="number" step={1} min={prop.min} max={prop.max} value={text} onInput={(e) => set(prop.name, e.currentTarget.value)} />;
  } else {
    const onInput = (e: { currentTarget: HTMLInputElement }) => set(prop.name, e.currentTarget.value);
    // Secrets are masked as typed, and the browser is asked not to remember them.
    input = prop.secret ? (
      <input {...common} type="password" autocomplete="new-password" spellcheck={false} value={text} onInput={onInput} />
    ) : (
      <input
        {...common}
        type="text"
        autocomplete="off"
        spellcheck={false}
        placeholder={prop.type === 'app' ? `connected account id (apn_…) of app ${prop.app ?? ''}` : prop.type === 'data_store' ? 'data store name' : undefined}
        value={text}
        onInput={onInput}
      />
    );
  }
  return (
    <div class="field">
      {label}
      {input}
      {help}
      {errorLine}
    </div>
  );
}

/** A select filled by the prop's async options(), asked of the server with the values chosen so far. */
function RemoteOptions(props: {
  prop: PropDescriptor;
  raw: RawValues;
  set: (name: string, value: string | boolean, also?: RawValues) => void;
  componentId: string;
  allProps: PropDescriptor[];
  common: Record<string, unknown>;
  text: string;
}) {
  const { prop, raw, set, componentId, allProps, common, text } = props;
  const [choices, setChoices] = useState<Choice[] | undefined>(undefined);
  const [context, setContext] = useState<unknown>(null);
  const [page, setPage] = useState(0);
  const [problem, setProblem] = useState<string | undefined>(undefined);
  // aria-disabled while loading, not disabled: a disabled button drops the keyboard focus to the document.
  const { busy, run } = useBusy();

  const load = (more: boolean) =>
    run(async () => {
      setProblem(undefined);
      try {
        const { values } = collectValues(
          allProps.filter((p) => p.name !== prop.name),
          raw,
        );
        const next = more ? page + 1 : 0;
        const answer = await post<{ data: { options: unknown[]; context: unknown; errors: string[] } }>(
          `/components/${encodeURIComponent(componentId)}/props/${encodeURIComponent(prop.name)}/options`,
          { configured_props: values, page: next, prev_context: more ? context : {} },
        );
        const loaded = answer.data.options.map(toChoice);
        setChoices(more ? [...(choices ?? []), ...loaded] : loaded);
        setContext(answer.data.context);
        setPage(next);
        if (answer.data.errors.length) setProblem(answer.data.errors.join('; '));
      } catch (failure) {
        setProblem(describeError(failure));
      }
    });

  return (
    <div class="remote-options">
      <div class="inline">
        <ChoiceSelect
          common={common}
          list={prop.type.endsWith('[]')}
          text={text}
          choices={choices ?? []}
          empty={choices === undefined ? 'Load choices…' : 'Choose…'}
          onPick={(value) => set(prop.name, value)}
          onFocus={() => choices === undefined && !busy && load(false)}
        />
        <button type="button" onClick={() => load(false)} aria-disabled={busy ? 'true' : undefined} aria-label={`Load choices for ${labelOf(prop)}`}>
          {busy ? 'Loading…' : choices === undefined ? 'Load choices' : 'Reload'}
        </button>
        {context !== null && context !== undefined && (
          <button type="button" onClick={() => load(true)} aria-disabled={busy ? 'true' : undefined}>
            More
          </button>
        )}
      </div>
      {problem && (
        <p class="field-error" role="alert">
          Could not load choices: {problem}
        </p>
      )}
    </div>
  );
}
