// The connected accounts page: the account's apps' credentials (their field names, never their values) and a form to connect one.
import { useState } from 'preact/hooks';
import { post } from './api';
import { CredentialRows, type CredentialRow, collectCredentials, newRow, refusalOnFields } from './credential-rows';
import { type FormErrors, sendChecked, useFormErrors } from './field-errors';
import { formatTime } from './format';
import { useNotify } from './notices';
import { href } from './router';
import type { ConnectedAccount } from './types';
import { useBusy } from './use-busy';
import { usePages } from './use-pages';
import { NameCell, PagedTable } from './table';

const PAGE = 50;
/** The API's pattern of an app's name slug (services/connected-accounts.ts, APP_SLUG). */
const APP_SLUG = /^[a-z0-9_]{1,64}$/;
/** The form's own fields, as the API names them in a 400's `details`. */
const FIELDS = ['app', 'name'] as const;

export function ConnectedAccountsList() {
  const pages = usePages<ConnectedAccount>('/users/me/accounts', PAGE);
  return (
    <section aria-labelledby="connected-accounts-title">
      <h1 id="connected-accounts-title">Connected accounts</h1>
      <p class="hint">
        The credentials of apps (an API key, OAuth tokens) that components read as <code>this.&lt;app&gt;.$auth</code>, newest first. A source or workflow step
        names one in its app prop, as <code>{'{ "authProvisionId": "apn_…" }'}</code>. Their values are never shown: only the names of their fields.
      </p>
      <PagedTable
        pages={pages}
        columns={['Name', 'App', 'Fields', 'Health', 'Created', 'Updated']}
        row={(account) => (
          <tr key={account.id}>
            <NameCell href={href('connected-accounts', account.id)} name={account.name} />
            <td>
              <code>{account.app}</code>
            </td>
            <td class="fields">{account.fields.join(', ')}</td>
            <td>
              <Health account={account} />
            </td>
            <td>{formatTime(account.created_at * 1000)}</td>
            <td>{formatTime(account.updated_at * 1000)}</td>
          </tr>
        )}
        empty="No connected accounts yet. Connect one below with the app's name and its credentials."
      />
      <NewConnectedAccount onCreated={pages.page.reload} />
    </section>
  );
}

/** Healthy, or why not: the server marks an account whose OAuth token refresh failed. */
export function Health(props: { account: ConnectedAccount }) {
  return props.account.healthy ? <>Healthy</> : <span class="error">Unhealthy: a token refresh failed</span>;
}

function NewConnectedAccount(props: { onCreated: () => Promise<void> }) {
  const notify = useNotify();
  const [form, setForm] = useState({ app: '', name: '' });
  const [rows, setRows] = useState<CredentialRow[]>(() => [newRow()]);
  const errors = useFormErrors();
  // One create at a time: a double click would connect the account twice.
  const creating = useBusy();

  const create = (event: Event) => {
    event.preventDefault();
    // Read now: the event's currentTarget is gone once the request has been awaited.
    const formElement = event.currentTarget as HTMLFormElement;
    return creating.run(async () => {
      const app = form.app.trim();
      const name = form.name.trim();
      const { credentials, errors: found } = collectCredentials(rows);
      if (!APP_SLUG.test(app)) found.app = 'The app is its name slug, as app props declare it: 1 to 64 of a-z 0-9 _ (github, google_sheets).';
      if (!name) found.name = 'Name the account, to tell it apart from the same app’s others.';
      await sendChecked(
        formElement,
        errors,
        found,
        async () => {
          const answer = await post<{ data: ConnectedAccount }>('/accounts', { app, name, credentials });
          // The values go from the page with the form's state: nothing typed stays in an input once saved.
          setForm({ app: '', name: '' });
          setRows([newRow()]);
          notify({ kind: 'ok', text: `Connected ${answer.data.name} (${answer.data.app}, ${answer.data.id}).` });
          await props.onCreated();
        },
        (failure) => refusalOnFields(failure, rows, FIELDS),
      );
    });
  };

  return (
    <form class="panel" onSubmit={create} noValidate aria-labelledby="new-account-title">
      <h2 id="new-account-title">Connect an account</h2>
      <AccountField field="app" label="App" placeholder="github" value={form.app} onInput={(app) => setForm({ ...form, app })} errors={errors} />
      <AccountField field="name" label="Name" placeholder="Work GitHub" value={form.name} onInput={(name) => setForm({ ...form, name })} errors={errors} />
      <CredentialRows
        rows={rows}
        setRows={setRows}
        errors={errors}
        idPrefix="new-account"
        hint="Each field as the app's components read it: api_key, or oauth_access_token, oauth_refresh_token, expires_at and oauth_token_url. The values are typed hidden, and are never shown again once saved."
      />
      <p class="field-error" role={errors.summary ? 'alert' : undefined}>
        {errors.summary ?? ''}
      </p>
      {/* Focusable while it works (aria-disabled, not disabled), so that the keyboard stays where it was. */}
      <button type="submit" aria-disabled={creating.busy ? 'true' : undefined}>
        {creating.busy ? 'Connecting…' : 'Connect account'}
      </button>
    </form>
  );
}

/** A text field of an account's form (`field` as the API names it), with the line of its error. */
export function AccountField(props: {
  field: 'app' | 'name';
  label: string;
  placeholder?: string;
  value: string;
  onInput: (value: string) => void;
  errors: FormErrors;
  idPrefix?: string;
}) {
  const { field, errors } = props;
  const id = `${props.idPrefix ?? 'account'}-${field}`;
  const error = errors.fields[field];
  return (
    <div class="field">
      <label for={id}>{props.label}</label>
      <input
        id={id}
        value={props.value}
        placeholder={props.placeholder}
        spellcheck={false}
        autocomplete="off"
        aria-invalid={error ? 'true' : undefined}
        aria-describedby={`${id}-error`}
        onInput={(e) => {
          props.onInput(e.currentTarget.value);
          errors.edited(field);
        }}
      />
      <p id={`${id}-error`} class="field-error" role={error ? 'alert' : undefined}>
        {error ?? ''}
      </p>
    </div>
  );
}
