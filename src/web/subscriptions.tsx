// The subscriptions page: which emitter's stream goes to which listener, by name; create and delete them.
import { useState } from 'preact/hooks';
import { ApiError, api, describeError, get, getEveryPage, query, refusedField } from './api';
import { ConfirmDialog } from './confirm-dialog';
import { useNotify } from './notices';
import type { Source, Subscription, Webhook, Workflow } from './types';
import { useLoad } from './use-load';
import { LoadError } from './load-error';
import { Table } from './table';
import { focusFirstInvalid, useFormErrors } from './field-errors';
import { useBusy } from './use-busy';

/** The form's fields as their labels name them, for the server's 400 about one. */
const FIELD_LABELS = { emitter_id: 'Emitter', listener_id: 'Listener', event_name: 'Stream' } as const;

/** What an id may name here, with the name to show (a webhook without a name shows its URL). */
interface Named {
  id: string;
  name: string;
}

/** The account's sources, workflows and webhooks by id (up to PICKER_AT_MOST each); a failed read leaves only ids shown. */
async function namedThings(): Promise<{ emitters: Named[]; webhooks: Named[] }> {
  const read = <T,>(path: string) => getEveryPage<T>(path).catch(() => [] as T[]);
  const [sources, workflows, webhooks] = await Promise.all([
    read<Source>('/users/me/sources'),
    read<Workflow>('/users/me/workflows'),
    read<Webhook>('/users/me/webhooks'),
  ]);
  return {
    emitters: [...sources.map((s) => ({ id: s.id, name: s.name })), ...workflows.map((w) => ({ id: w.id, name: w.name }))],
    webhooks: webhooks.map((w) => ({ id: w.id, name: w.name ?? w.url })),
  };
}

/** An id with the name of what it names, when known. */
function IdWithName(props: { id: string; names: Map<string, string> }) {
  const name = props.names.get(props.id);
  return name ? (
    <>
      <span class="cut" title={name}>
        {name}
      </span>{' '}
      <code class="muted">{props.id}</code>
    </>
  ) : (
    <code>{props.id}</code>
  );
}

export function SubscriptionsPage() {
  const notify = useNotify();
  const list = useLoad(() => get<{ data: Subscription[] }>('/users/me/subscriptions'), []);
  const things = useLoad(namedThings, []);
  const emitters = things.data?.emitters ?? [];
  const listeners = [...(things.data?.webhooks ?? []), ...emitters];
  const names = new Map(listeners.map((thing) => [thing.id, thing.name]));
  const [form, setForm] = useState({ emitter_id: '', listener_id: '', event_name: '' });
  const errors = useFormErrors();
  const [deleting, setDeleting] = useState<Subscription | undefined>(undefined);
  // One POST per press: a double click of Subscribe sent two, and said "Subscribed" twice.
  const subscribing = useBusy();
  // One delete at a time, its row's button saying so (a second DELETE of the same one answered 404 over "Unsubscribed").
  const removal = useBusy();
  const [removing, setRemoving] = useState<string | undefined>(undefined);

  // By name as the table shows them: two bare ids said nothing of which webhook gets which source's events.
  const called = (id: string) => (names.has(id) ? `${names.get(id)} (${id})` : id);

  const create = async (event: Event) => {
    event.preventDefault();
    // Read now: the event's currentTarget is gone once the request has been awaited.
    const formElement = event.currentTarget as HTMLFormElement;
    const missing: Record<string, string> = {};
    if (!form.emitter_id.trim()) missing.emitter_id = 'An emitter is needed: a source or workflow id, or dc_* or p_*.';
    if (!form.listener_id.trim()) missing.listener_id = 'A listener is needed: a webhook, source or workflow id.';
    errors.show(missing, undefined, '');
    if (Object.keys(missing).length) {
      focusFirstInvalid(formElement);
      return;
    }
    await subscribing.run(async () => {
      try {
        await api(
          'POST',
          `/subscriptions${query({ emitter_id: form.emitter_id.trim(), listener_id: form.listener_id.trim(), event_name: form.event_name.trim() || undefined })}`,
        );
        notify({ kind: 'ok', text: `Subscribed ${called(form.listener_id.trim())} to ${called(form.emitter_id.trim())}.` });
        setForm({ emitter_id: '', listener_id: '', event_name: '' });
        await list.reload();
      } catch (failure) {
        // An emitter or listener not found ('emitter "dc_x" not found') is shown on its field; anything else above the button.
        const said = failure instanceof ApiError ? failure.message : describeError(failure);
        const named = failure instanceof ApiError && failure.status === 404 ? /^(emitter|listener) "/.exec(said)?.[1] : undefined;
        // A 400 names the query's field (an event_name longer than 200 characters): shown on that field too.
        const refused = refusedField(failure, FIELD_LABELS);
        if (named) errors.show({ [`${named}_id`]: said }, undefined, '');
        else if (refused) errors.show({ [refused.field]: refused.said }, undefined, '');
        else errors.show({}, describeError(failure), '');
        focusFirstInvalid(formElement);
      }
    });
  };

  const remove = (subscription: Subscription) =>
    removal.run(async () => {
      setDeleting(undefined);
      setRemoving(subscription.id);
      try {
        const { emitter_id, listener_id, event_name } = subscription;
        // event_name is sent even when empty: that names the subscription made without one.
        await api('DELETE', `/subscriptions?${new URLSearchParams({ emitter_id, listener_id, event_name }).toString()}`);
        notify({ kind: 'ok', text: `Unsubscribed ${called(listener_id)} from ${called(emitter_id)}${event_name ? ` (${event_name})` : ''}.` });
        await list.reload();
      } catch (failure) {
        notify({ kind: 'error', text: describeError(failure) });
      } finally {
        setRemoving(undefined);
      }
    });

  return (
    <section aria-labelledby="subscriptions-title">
      <h1 id="subscriptions-title">Subscriptions</h1>
      <LoadError loads={[list]} />
      {list.data && (
        <Table
          columns={['Emitter', 'Stream', 'Listener', { hidden: 'Actions' }]}
          items={list.data.data}
          row={(s) => (
            <tr key={s.id}>
              <td>
                <IdWithName id={s.emitter_id} names={names} />
              </td>
              <td>
                <span class="cut" title={s.event_name || 'default'}>
                  {s.event_name || 'default'}
                </span>
              </td>
              <td>
                <IdWithName id={s.listener_id} names={names} />
              </td>
              <td>
                <button
                  type="button"
                  class="danger"
                  onClick={() => removal.busy || setDeleting(s)}
                  aria-disabled={removal.busy ? 'true' : undefined}
                  // The stream too: the same emitter and listener may be subscribed on several streams.
                  aria-label={`Delete subscription of ${s.listener_id} to ${s.emitter_id}, stream ${s.event_name || 'default'}`}
                >
                  {removing === s.id ? 'Deleting…' : 'Delete'}
                </button>
              </td>
            </tr>
          )}
          empty="No subscriptions yet."
        />
      )}
      <form class="panel" onSubmit={create} noValidate aria-labelledby="new-subscription-title">
        <h2 id="new-subscription-title">New subscription</h2>
        <div class="field">
          <label for="sub-emitter">Emitter</label>
          <input
            id="sub-emitter"
            value={form.emitter_id}
            list="sub-emitters"
            placeholder="a source or workflow (dc_…, p_…), or dc_* or p_*"
            spellcheck={false}
            onInput={(e) => {
              setForm({ ...form, emitter_id: e.currentTarget.value });
              errors.edited('emitter_id');
            }}
            aria-invalid={errors.fields.emitter_id ? 'true' : undefined}
            aria-describedby="sub-emitter-error"
          />
          <datalist id="sub-emitters">
            {emitters.map((thing) => (
              <option key={thing.id} value={thing.id} label={thing.name} />
            ))}
            <option value="dc_*" label="every source" />
            <option value="p_*" label="every workflow" />
          </datalist>
          <p id="sub-emitter-error" class="field-error" role={errors.fields.emitter_id ? 'alert' : undefined}>
            {errors.fields.emitter_id ?? ''}
          </p>
        </div>
        <div class="field">
          <label for="sub-event">Stream</label>
          <input
            id="sub-event"
            value={form.event_name}
            list="sub-streams"
            placeholder="empty: the default stream; or default, $errors, $logs, a channel"
            onInput={(e) => {
              setForm({ ...form, event_name: e.currentTarget.value });
              errors.edited('event_name');
            }}
            aria-invalid={errors.fields.event_name ? 'true' : undefined}
            aria-describedby="sub-event-error"
          />
          <datalist id="sub-streams">
            <option value="default" />
            <option value="$errors" />
            <option value="$logs" />
          </datalist>
          <p id="sub-event-error" class="field-error" role={errors.fields.event_name ? 'alert' : undefined}>
            {errors.fields.event_name ?? ''}
          </p>
        </div>
        <div class="field">
          <label for="sub-listener">Listener</label>
          <input
            id="sub-listener"
            value={form.listener_id}
            list="sub-listeners"
            placeholder="a webhook, source or workflow (wh_…, dc_… or p_…)"
            spellcheck={false}
            onInput={(e) => {
              setForm({ ...form, listener_id: e.currentTarget.value });
              errors.edited('listener_id');
            }}
            aria-invalid={errors.fields.listener_id ? 'true' : undefined}
            aria-describedby="sub-listener-error"
          />
          <datalist id="sub-listeners">
            {listeners.map((thing) => (
              <option key={thing.id} value={thing.id} label={thing.name} />
            ))}
          </datalist>
          <p id="sub-listener-error" class="field-error" role={errors.fields.listener_id ? 'alert' : undefined}>
            {errors.fields.listener_id ?? ''}
          </p>
        </div>
        <p class="field-error" role={errors.summary ? 'alert' : undefined}>
          {errors.summary ?? ''}
        </p>
        <button type="submit" aria-disabled={subscribing.busy ? 'true' : undefined}>
          {subscribing.busy ? 'Subscribing…' : 'Subscribe'}
        </button>
      </form>
      {deleting && (
        <ConfirmDialog
          title="Delete this subscription?"
          confirmLabel="Delete subscription"
          onCancel={() => setDeleting(undefined)}
          onConfirm={() => remove(deleting)}
        >
          <p>
            <code>{deleting.listener_id}</code> stops receiving {deleting.event_name || 'the events'} of <code>{deleting.emitter_id}</code>.
          </p>
        </ConfirmDialog>
      )}
    </section>
  );
}
