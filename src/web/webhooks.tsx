// The webhooks page: list, create (the signing secret is shown once), turn back on after a 410, and delete the account's webhooks.
import { useState } from 'preact/hooks';
import { ApiError, del, describeError, getEveryPage, patch, post, query, refusedField } from './api';
import { ConfirmDialog } from './confirm-dialog';
import { CopyButton } from './copy-button';
import { formatTime } from './format';
import { useNotify } from './notices';
import { href } from './router';
import type { Webhook } from './types';
import { useLoad } from './use-load';
import { LoadError } from './load-error';
import { Table } from './table';
import { type FormErrors, focusFirstInvalid, useFormErrors } from './field-errors';
import { useBusy } from './use-busy';

/** The form's fields, as the API names them in a 400's `details`. */
const FIELDS = ['url', 'name', 'description'] as const;
type Field = (typeof FIELDS)[number];
const FIELD_LABELS: Record<Field, string> = { url: 'URL', name: 'Name', description: 'Description' };

export function WebhooksPage() {
  const notify = useNotify();
  // Every page: an account may hold more than one page's 100 (1,000 by default), and each is listed.
  const list = useLoad(() => getEveryPage<Webhook>('/users/me/webhooks', Number.POSITIVE_INFINITY), []);
  const [form, setForm] = useState({ url: '', name: '', description: '' });
  const errors = useFormErrors();
  const [created, setCreated] = useState<Webhook | undefined>(undefined);
  const [deleting, setDeleting] = useState<Webhook | undefined>(undefined);
  // One create at a time: a second press (a double click) would make a second webhook, whose secret replaces the first's
  // on the page, so that the first's is never seen.
  const creating = useBusy();
  // One delete at a time, its row's button saying so: on a slow server a second Delete of the same webhook, confirmed,
  // sent another DELETE, whose 404 replaced the first's "Deleted".
  const removal = useBusy();
  const [removing, setRemoving] = useState<string | undefined>(undefined);

  const create = (event: Event) => {
    event.preventDefault();
    // Read now: the event's currentTarget is gone once the request has been awaited.
    const formElement = event.currentTarget as HTMLFormElement;
    return creating.run(async () => {
      if (!/^https?:\/\/[^/\s]+/i.test(form.url.trim())) {
        errors.show({ url: 'The URL must start with http:// or https:// and name a host.' }, undefined, '');
        focusFirstInvalid(formElement);
        return;
      }
      errors.show({}, undefined, '');
      try {
        const answer = await post<{ data: Webhook }>(
          `/webhooks${query({ url: form.url.trim(), name: form.name.trim() || undefined, description: form.description.trim() || undefined })}`,
        );
        setCreated(answer.data);
        setForm({ url: '', name: '', description: '' });
        await list.reload();
      } catch (failure) {
        if (failure instanceof ApiError && failure.status === 400) {
          // On the field the refusal names (a name or description too long); one naming none is about the URL.
          const refused = refusedField(failure, FIELD_LABELS);
          errors.show({ [refused?.field ?? 'url']: refused?.said ?? failure.message }, undefined, '');
          focusFirstInvalid(formElement);
        } else notify({ kind: 'error', text: describeError(failure) });
      }
    });
  };

  // One at a time, as a delete: the row's button says so until the server has answered.
  const enabling = useBusy();
  const [turningOn, setTurningOn] = useState<string | undefined>(undefined);
  const turnOn = (webhook: Webhook) =>
    enabling.run(async () => {
      setTurningOn(webhook.id);
      try {
        await patch(`/webhooks/${encodeURIComponent(webhook.id)}`, { active: true });
        notify({ kind: 'ok', text: `Turned webhook ${webhook.name || webhook.id} back on: the events stored from now on are delivered.` });
        await list.reload();
      } catch (failure) {
        notify({ kind: 'error', text: describeError(failure) });
      } finally {
        setTurningOn(undefined);
      }
    });

  const remove = (webhook: Webhook) =>
    removal.run(async () => {
      setDeleting(undefined);
      setRemoving(webhook.id);
      try {
        await del(`/webhooks/${encodeURIComponent(webhook.id)}`);
        notify({ kind: 'ok', text: `Deleted webhook ${webhook.name ?? webhook.id}.` });
        await list.reload();
      } catch (failure) {
        notify({ kind: 'error', text: describeError(failure) });
      } finally {
        setRemoving(undefined);
      }
    });

  return (
    <section aria-labelledby="webhooks-title">
      <h1 id="webhooks-title">Webhooks</h1>
      <p class="hint">
        A webhook receives the events of the emitters it is subscribed to (see <a href={href('subscriptions')}>Subscriptions</a>), signed with its secret.
      </p>
      <LoadError loads={[list]} />
      {list.data && (
        <Table
          columns={['Name', 'URL', 'Active', 'Created', { hidden: 'Actions' }]}
          items={list.data}
          row={(webhook) => (
            <tr key={webhook.id}>
              <th scope="row">
                <a href={href('webhooks', webhook.id)}>{webhook.name || webhook.id}</a>
              </th>
              <td class="url" title={webhook.url}>
                {webhook.url}
              </td>
              <td>
                {webhook.active ? (
                  'Active'
                ) : (
                  <>
                    <span class="muted">Inactive (410 Gone)</span>{' '}
                    <button
                      type="button"
                      onClick={() => enabling.busy || turnOn(webhook)}
                      aria-disabled={enabling.busy ? 'true' : undefined}
                      aria-label={`Turn webhook ${webhook.name || webhook.id} back on`}
                    >
                      {turningOn === webhook.id ? 'Turning on…' : 'Turn on'}
                    </button>
                  </>
                )}
              </td>
              <td>{formatTime(webhook.created_at * 1000)}</td>
              <td>
                <button
                  type="button"
                  class="danger"
                  onClick={() => removal.busy || setDeleting(webhook)}
                  aria-disabled={removal.busy ? 'true' : undefined}
                  aria-label={`Delete webhook ${webhook.name || webhook.id}`}
                >
                  {removing === webhook.id ? 'Deleting…' : 'Delete'}
                </button>
              </td>
            </tr>
          )}
          empty="No webhooks yet."
        />
      )}

      {created?.secret && (
        <div class="panel secret" aria-live="polite">
          <p>
            Webhook <code>{created.id}</code> created. Its signing secret is shown this once:
          </p>
          <p>
            <code id="webhook-secret">{created.secret}</code> <CopyButton value={created.secret} label="Copy signing secret" />
          </p>
          <button type="button" onClick={() => setCreated(undefined)}>
            Done
          </button>
        </div>
      )}

      <form class="panel" onSubmit={create} noValidate aria-labelledby="new-webhook-title">
        <h2 id="new-webhook-title">New webhook</h2>
        <WebhookField field="url" label="URL" type="url" placeholder="https://example.com/hook" form={form} setForm={setForm} errors={errors} />
        <WebhookField field="name" label="Name" form={form} setForm={setForm} errors={errors} />
        <WebhookField field="description" label="Description" form={form} setForm={setForm} errors={errors} />
        {/* Focusable while it works (aria-disabled, not disabled), so that the keyboard stays where it was. */}
        <button type="submit" aria-disabled={creating.busy ? 'true' : undefined}>
          {creating.busy ? 'Creating…' : 'Create webhook'}
        </button>
      </form>

      {deleting && (
        <ConfirmDialog
          title={`Delete webhook ${deleting.name || deleting.id}?`}
          confirmLabel="Delete webhook"
          onCancel={() => setDeleting(undefined)}
          onConfirm={() => remove(deleting)}
        >
          <p>Its pending deliveries, its delivery log and the subscriptions naming it are deleted too.</p>
        </ConfirmDialog>
      )}
    </section>
  );
}

/** One field of the new webhook's form, with the line of its error, which goes as soon as the field is edited. */
function WebhookField(props: {
  field: Field;
  label: string;
  type?: 'url';
  placeholder?: string;
  form: Record<Field, string>;
  setForm: (form: Record<Field, string>) => void;
  errors: FormErrors;
}) {
  const { field, form, errors } = props;
  const error = errors.fields[field];
  const common = {
    id: `webhook-${field}`,
    value: form[field],
    placeholder: props.placeholder,
    onInput: (e: { currentTarget: HTMLInputElement }) => {
      props.setForm({ ...form, [field]: e.currentTarget.value });
      errors.edited(field);
    },
    'aria-invalid': error ? ('true' as const) : undefined,
    'aria-describedby': `webhook-${field}-error`,
  };
  return (
    <div class="field">
      <label for={`webhook-${field}`}>{props.label}</label>
      {props.type === 'url' ? <input type="url" {...common} /> : <input {...common} />}
      <p id={`webhook-${field}-error`} class="field-error" role={error ? 'alert' : undefined}>
        {error ?? ''}
      </p>
    </div>
  );
}
