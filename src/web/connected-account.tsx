// One connected account's page: its facts, a rename, a replacement of its credentials, and its deletion after a confirm.
import { useState } from 'preact/hooks';
import { ApiError, del, describeError, get, put } from './api';
import { AccountField, Health } from './connected-accounts-list';
import { ConfirmDialog } from './confirm-dialog';
import { CredentialRows, type CredentialRow, collectCredentials, newRow, refusalOnFields } from './credential-rows';
import { sendChecked, useFormErrors } from './field-errors';
import { formatTime } from './format';
import { LoadError } from './load-error';
import { useNotify } from './notices';
import { href, navigate } from './router';
import type { ConnectedAccount } from './types';
import { useBusy } from './use-busy';
import { useLoad } from './use-load';
import type { FieldErrors } from './prop-form';

export function ConnectedAccountPage(props: { id: string }) {
  const notify = useNotify();
  const loaded = useLoad(() => get<{ data: ConnectedAccount }>(`/accounts/${encodeURIComponent(props.id)}`), [props.id]);
  const account = loaded.data?.data;
  // The confirm, and after a 409 the same question again with the sources and workflows that use it named.
  const [deleting, setDeleting] = useState<{ conflict?: string } | undefined>(undefined);
  // One DELETE per confirmation, and no second question while it runs (a second one's 404 replaced "Deleted").
  const removal = useBusy();
  const crumbs = (
    <p class="crumbs">
      <a href={href('connected-accounts')}>Connected accounts</a> /
    </p>
  );
  // No such account (deleted, another account's, a mistyped address): its 404 and nothing else, no forms.
  if (loaded.missing || !account) {
    return (
      <section aria-labelledby="connected-account-title">
        {crumbs}
        <h1 id="connected-account-title" class="wrap">
          Connected account {props.id}
        </h1>
        <LoadError loads={[loaded]} />
      </section>
    );
  }

  const remove = (force: boolean) =>
    removal.run(async () => {
      setDeleting(undefined);
      try {
        await del(`/accounts/${encodeURIComponent(account.id)}${force ? '?force=true' : ''}`);
        notify({ kind: 'ok', text: `Deleted connected account ${account.name}.` });
        navigate('connected-accounts');
      } catch (failure) {
        // In use: the server names who uses it. Deleting it anyway deactivates them first, which the question says.
        if (failure instanceof ApiError && failure.status === 409 && !force)
          setDeleting({ conflict: failure.message.replace(/; delete with force=true.*$/, '.') });
        else notify({ kind: 'error', text: describeError(failure) });
      }
    });

  return (
    <section aria-labelledby="connected-account-title">
      {crumbs}
      <h1 id="connected-account-title" class="wrap">
        {account.name}
      </h1>
      <dl class="facts">
        <dt>Id</dt>
        <dd>
          <code>{account.id}</code>
        </dd>
        <dt>App</dt>
        <dd>
          <code>{account.app}</code>
        </dd>
        <dt>Fields</dt>
        <dd>{account.fields.join(', ')}</dd>
        <dt>Health</dt>
        <dd>
          <Health account={account} />
        </dd>
        <dt>Created</dt>
        <dd>{formatTime(account.created_at * 1000)}</dd>
        <dt>Updated</dt>
        <dd>{formatTime(account.updated_at * 1000)}</dd>
      </dl>
      <LoadError loads={[loaded]} />
      <div class="toolbar">
        <button type="button" class="danger" onClick={() => removal.busy || setDeleting({})} aria-disabled={removal.busy ? 'true' : undefined}>
          {removal.busy ? 'Deleting…' : 'Delete'}
        </button>
      </div>
      {/* Keyed by the id: a reload after saving does not empty what is being typed into the other form. */}
      <RenameForm account={account} onSaved={loaded.reload} key={`rename-${account.id}`} />
      <ReplaceForm account={account} onSaved={loaded.reload} key={`replace-${account.id}`} />

      {deleting && (
        <ConfirmDialog
          title={`Delete connected account ${account.name}?`}
          confirmLabel={deleting.conflict ? 'Deactivate them and delete' : 'Delete connected account'}
          onCancel={() => setDeleting(undefined)}
          onConfirm={() => remove(deleting.conflict !== undefined)}
        >
          {deleting.conflict ? (
            <p>
              {deleting.conflict} Deleting it anyway deactivates them first (their <code>deactivate()</code> hooks still see the credentials), and they stay,
              inactive.
            </p>
          ) : (
            <p>Its credentials are deleted. While a source or workflow uses it, it is not deleted: you are asked again, with their names.</p>
          )}
        </ConfirmDialog>
      )}
    </section>
  );
}

function RenameForm(props: { account: ConnectedAccount; onSaved: () => Promise<void> }) {
  const notify = useNotify();
  const [name, setName] = useState(props.account.name);
  const errors = useFormErrors();
  const saving = useBusy();
  const rename = (event: Event) => {
    event.preventDefault();
    const formElement = event.currentTarget as HTMLFormElement;
    const found: FieldErrors = name.trim() ? {} : { name: 'Name the account, to tell it apart from the same app’s others.' };
    return saving.run(() =>
      sendChecked(
        formElement,
        errors,
        found,
        async () => {
          const answer = await put<{ data: ConnectedAccount }>(`/accounts/${encodeURIComponent(props.account.id)}`, { name: name.trim() });
          notify({ kind: 'ok', text: `Renamed to ${answer.data.name}.` });
          await props.onSaved();
        },
        (failure) => refusalOnFields(failure, [], ['name']),
      ),
    );
  };
  return (
    <form class="panel" onSubmit={rename} noValidate aria-labelledby="rename-account-title">
      <h2 id="rename-account-title">Rename</h2>
      <AccountField field="name" label="Name" value={name} onInput={setName} errors={errors} idPrefix="rename" />
      <p class="field-error" role={errors.summary ? 'alert' : undefined}>
        {errors.summary ?? ''}
      </p>
      <button type="submit" aria-disabled={saving.busy ? 'true' : undefined}>
        {saving.busy ? 'Renaming…' : 'Rename'}
      </button>
    </form>
  );
}

/** The credentials as a whole, as the API's PUT takes them: a field left out is removed, so every value is typed again. */
function ReplaceForm(props: { account: ConnectedAccount; onSaved: () => Promise<void> }) {
  const notify = useNotify();
  const fresh = () => (props.account.fields.length ? props.account.fields.map((field) => newRow(field)) : [newRow()]);
  const [rows, setRows] = useState<CredentialRow[]>(fresh);
  const errors = useFormErrors();
  const saving = useBusy();
  const replace = (event: Event) => {
    event.preventDefault();
    const formElement = event.currentTarget as HTMLFormElement;
    const { credentials, errors: found } = collectCredentials(rows);
    return saving.run(() =>
      sendChecked(
        formElement,
        errors,
        found,
        async () => {
          const answer = await put<{ data: ConnectedAccount }>(`/accounts/${encodeURIComponent(props.account.id)}`, { credentials });
          // The typed values leave the page: the rows start again from the saved fields' names, values empty.
          setRows(answer.data.fields.map((field) => newRow(field)));
          notify({ kind: 'ok', text: `Replaced the credentials of ${answer.data.name}: ${answer.data.fields.join(', ')}.` });
          await props.onSaved();
        },
        (failure) => refusalOnFields(failure, rows, []),
      ),
    );
  };
  return (
    <form class="panel" onSubmit={replace} noValidate aria-labelledby="replace-credentials-title">
      <h2 id="replace-credentials-title">Replace credentials</h2>
      <CredentialRows
        rows={rows}
        setRows={setRows}
        errors={errors}
        idPrefix="replace"
        hint="The saved values are never shown: type each one again. The fields saved are these rows; a row removed is a field removed. Sources and workflows that use the account see the new values at their next run, and an unhealthy account is healthy again."
      />
      <p class="field-error" role={errors.summary ? 'alert' : undefined}>
        {errors.summary ?? ''}
      </p>
      <button type="submit" aria-disabled={saving.busy ? 'true' : undefined}>
        {saving.busy ? 'Replacing…' : 'Replace credentials'}
      </button>
    </form>
  );
}
