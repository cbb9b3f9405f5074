// A connected account's credentials as form rows, a field name and a value typed as a password, and what the API said of them.
import { useEffect, useRef } from 'preact/hooks';
import { ApiError, describeError } from './api';
import type { FormErrors } from './field-errors';
import type { FieldErrors } from './prop-form';

export interface CredentialRow {
  /** Stable across edits, for the row's key and its inputs' ids: a row's index moves when one above it is removed. */
  id: number;
  name: string;
  value: string;
}

let rowsMade = 0;

export function newRow(name = ''): CredentialRow {
  rowsMade += 1;
  return { id: rowsMade, name, value: '' };
}

/** The API's pattern of a credential field's name (services/connected-accounts.ts, CREDENTIAL_FIELD). */
const FIELD_NAME = /^[A-Za-z0-9_.-]{1,64}$/;
const NAME_RULE = 'A field name is 1 to 64 of A-Z a-z 0-9 _ . -';

/** The key in a form's errors (and the input's id, after the form's prefix) of a row's name or value. */
export const rowField = (row: CredentialRow, part: 'name' | 'value') => `credential-${row.id}-${part}`;

/**
 * The rows as the API's `credentials`, or the errors that keep them from being sent (by field). A row left blank, both
 * its inputs empty, is not a field: the spare row a form opens with, or one the user did not fill in.
 */
export function collectCredentials(rows: CredentialRow[]): { credentials: Record<string, string>; errors: FieldErrors } {
  const credentials = new Map<string, string>();
  const errors: FieldErrors = {};
  const filled = rows.filter((row) => row.name.trim() !== '' || row.value !== '');
  if (filled.length === 0) errors.credentials = 'Add at least one field: its name and its value.';
  for (const row of filled) {
    const name = row.name.trim();
    if (!FIELD_NAME.test(name)) errors[rowField(row, 'name')] = NAME_RULE;
    else if (credentials.has(name)) errors[rowField(row, 'name')] = `The field ${name} is named twice.`;
    else credentials.set(name, row.value);
    if (row.value === '') errors[rowField(row, 'value')] = `Type the value of ${name || 'this field'}.`;
  }
  return { credentials: Object.fromEntries(credentials), errors };
}

/**
 * A 400 on the fields its details name: `name` or `app` on that field (when the form has it), `credentials` under the
 * rows, and `credentials.<field>` (the service's reasons about a value, never the value) on that field's value, else
 * under the rows. A refusal that names none of them is the form's line above its button.
 */
export function refusalOnFields(failure: unknown, rows: CredentialRow[], fields: readonly string[]): { fields: FieldErrors; general: string | undefined } {
  if (!(failure instanceof ApiError) || failure.status !== 400) return { fields: {}, general: describeError(failure) };
  const found: FieldErrors = {};
  for (const { field, message } of failure.details) {
    if (!field) continue;
    if (fields.includes(field)) found[field] = `${field} ${message ?? 'is invalid'}`;
    else if (field === 'credentials') found.credentials = `credentials ${message ?? 'are invalid'}`;
    else if (field.startsWith('credentials.')) {
      const row = rows.find((r) => `credentials.${r.name.trim()}` === field);
      found[row ? rowField(row, 'value') : 'credentials'] = `${field} ${message ?? 'is invalid'}`;
    }
  }
  if (Object.keys(found).length) return { fields: found, general: undefined };
  return { fields: {}, general: describeError(failure) };
}

/**
 * The rows' inputs, with Add field and each row's Remove. Values are password inputs that the browser does not offer to
 * save or fill (autocomplete="new-password"); the form empties them once saved, so a value is never shown again.
 */
export function CredentialRows(props: {
  rows: CredentialRow[];
  setRows: (rows: CredentialRow[]) => void;
  errors: FormErrors;
  /** The inputs' ids start with it: two forms on a page (a new account's, a replacement) do not share ids. */
  idPrefix: string;
  hint: string;
}) {
  const { rows, errors, idPrefix } = props;
  const id = (field: string) => `${idPrefix}-${field}`;
  const addButton = useRef<HTMLButtonElement>(null);
  // Where the keyboard goes once the rows are drawn again: a new row's name, or Add field when a row went away.
  const focusNext = useRef<string | undefined>(undefined);
  useEffect(() => {
    const target = focusNext.current;
    focusNext.current = undefined;
    if (target) (document.getElementById(target) ?? addButton.current)?.focus();
  }, [rows.length]);
  const edit = (row: CredentialRow, change: Partial<CredentialRow>, part: 'name' | 'value') => {
    props.setRows(rows.map((r) => (r.id === row.id ? { ...r, ...change } : r)));
    errors.edited(rowField(row, part));
    errors.edited('credentials');
    // A duplicate is about both names: renaming either fixes it.
    if (part === 'name') for (const other of rows) errors.edited(rowField(other, 'name'));
  };
  const general = errors.fields.credentials;
  return (
    <fieldset aria-describedby={id('credentials-hint')}>
      <legend>Credentials</legend>
      <p id={id('credentials-hint')} class="hint">
        {props.hint}
      </p>
      {rows.map((row, index) => {
        const nameError = errors.fields[rowField(row, 'name')];
        const valueError = errors.fields[rowField(row, 'value')];
        const label = `Field ${index + 1}`;
        return (
          <div class="credential-row" key={row.id}>
            <div class="field">
              <label for={id(rowField(row, 'name'))}>{label} name</label>
              <input
                id={id(rowField(row, 'name'))}
                value={row.name}
                spellcheck={false}
                autocomplete="off"
                placeholder="api_key"
                // The rows' own error (none filled in) is marked on the first, where the user starts.
                aria-invalid={nameError || (general && index === 0) ? 'true' : undefined}
                aria-describedby={`${id(rowField(row, 'name'))}-error${index === 0 ? ` ${id('credentials-error')}` : ''}`}
                onInput={(e) => edit(row, { name: e.currentTarget.value }, 'name')}
              />
              <p id={`${id(rowField(row, 'name'))}-error`} class="field-error" role={nameError ? 'alert' : undefined}>
                {nameError ?? ''}
              </p>
            </div>
            <div class="field">
              <label for={id(rowField(row, 'value'))}>{label} value</label>
              <input
                id={id(rowField(row, 'value'))}
                type="password"
                value={row.value}
                autocomplete="new-password"
                spellcheck={false}
                aria-invalid={valueError ? 'true' : undefined}
                aria-describedby={`${id(rowField(row, 'value'))}-error`}
                onInput={(e) => edit(row, { value: e.currentTarget.value }, 'value')}
              />
              <p id={`${id(rowField(row, 'value'))}-error`} class="field-error" role={valueError ? 'alert' : undefined}>
                {valueError ?? ''}
              </p>
            </div>
            <button
              type="button"
              aria-label={`Remove field ${index + 1}${row.name.trim() ? ` (${row.name.trim()})` : ''}`}
              onClick={() => {
                focusNext.current = addButton.current?.id;
                props.setRows(rows.filter((r) => r.id !== row.id));
                errors.edited(rowField(row, 'name'));
                errors.edited(rowField(row, 'value'));
              }}
            >
              Remove
            </button>
          </div>
        );
      })}
      <p id={id('credentials-error')} class="field-error" role={general ? 'alert' : undefined}>
        {general ?? ''}
      </p>
      <button
        type="button"
        id={id('add-field')}
        ref={addButton}
        onClick={() => {
          const row = newRow();
          focusNext.current = id(rowField(row, 'name'));
          props.setRows([...rows, row]);
          errors.edited('credentials');
        }}
      >
        Add field
      </button>
    </fieldset>
  );
}
