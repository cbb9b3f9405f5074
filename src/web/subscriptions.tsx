// The subscriptions page: which emitter's stream goes to which listener; create and delete them.
import { useState } from 'preact/hooks';
import { ApiError, api, describeError, get, query } from './api';
import { ConfirmDialog } from './confirm-dialog';
import { useNotify } from './notices';
import type { Subscription } from './types';
import { useLoad } from './use-load';
import { LoadError } from './load-error';

export function SubscriptionsPage() {
  const notify = useNotify();
  const list = useLoad(() => get<{ data: Subscription[] }>('/users/me/subscriptions'), []);
  const [form, setForm] = useState({ emitter_id: '', listener_id: '', event_name: '' });
  const [error, setError] = useState<string | undefined>(undefined);
  const [deleting, setDeleting] = useState<Subscription | undefined>(undefined);

  const create = async (event: Event) => {
    event.preventDefault();
    if (!form.emitter_id.trim() || !form.listener_id.trim()) {
      setError('Both an emitter and a listener are needed.');
      return;
    }
    setError(undefined);
    try {
      await api(
        'POST',
        `/subscriptions${query({ emitter_id: form.emitter_id.trim(), listener_id: form.listener_id.trim(), event_name: form.event_name.trim() || undefined })}`,
      );
      notify({ kind: 'ok', text: `Subscribed ${form.listener_id.trim()} to ${form.emitter_id.trim()}.` });
      setForm({ emitter_id: '', listener_id: '', event_name: '' });
      await list.reload();
    } catch (failure) {
      setError(failure instanceof ApiError ? failure.message : describeError(failure));
    }
  };

  const remove = async (subscription: Subscription) => {
    setDeleting(undefined);
    try {
      const { emitter_id, listener_id, event_name } = subscription;
      // event_name is sent even when empty: that names the subscription made without one.
      await api('DELETE', `/subscriptions?${new URLSearchParams({ emitter_id, listener_id, event_name }).toString()}`);
      notify({ kind: 'ok', text: 'Subscription deleted.' });
      await list.reload();
    } catch (failure) {
      notify({ kind: 'error', text: describeError(failure) });
    }
  };

  return (
    <section aria-labelledby="subscriptions-title">
      <h1 id="subscriptions-title">Subscriptions</h1>
      <LoadError loads={[list]} />
      {list.data && (
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Emitter</th>
                <th scope="col">Stream</th>
                <th scope="col">Listener</th>
                <th scope="col">
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {list.data.data.map((s) => (
                <tr key={s.id}>
                  <td>
                    <code>{s.emitter_id}</code>
                  </td>
                  <td>{s.event_name || 'default'}</td>
                  <td>
                    <code>{s.listener_id}</code>
                  </td>
                  <td>
                    <button
                      type="button"
                      class="danger"
                      onClick={() => setDeleting(s)}
                      aria-label={`Delete subscription of ${s.listener_id} to ${s.emitter_id}`}
                    >
                      Delete
                    </button>
                  </td>
                </tr>
              ))}
              {list.data.data.length === 0 && (
                <tr>
                  <td colSpan={4} class="muted">
                    No subscriptions yet.
                  </td>
                </tr>
              )}
            </tbody>
          </table>
        </div>
      )}
      <form class="panel" onSubmit={create} noValidate aria-labelledby="new-subscription-title">
        <h2 id="new-subscription-title">New subscription</h2>
        <div class="field">
          <label for="sub-emitter">Emitter</label>
          <input
            id="sub-emitter"
            value={form.emitter_id}
            placeholder="dc_…, p_…, dc_* or p_*"
            spellcheck={false}
            onInput={(e) => setForm({ ...form, emitter_id: e.currentTarget.value })}
          />
        </div>
        <div class="field">
          <label for="sub-event">Stream</label>
          <input
            id="sub-event"
            value={form.event_name}
            list="sub-streams"
            placeholder="empty: the default stream; or default, $errors, $logs, a channel"
            onInput={(e) => setForm({ ...form, event_name: e.currentTarget.value })}
          />
          <datalist id="sub-streams">
            <option value="default" />
            <option value="$errors" />
            <option value="$logs" />
          </datalist>
        </div>
        <div class="field">
          <label for="sub-listener">Listener</label>
          <input
            id="sub-listener"
            value={form.listener_id}
            placeholder="wh_…, dc_… or p_…"
            spellcheck={false}
            onInput={(e) => setForm({ ...form, listener_id: e.currentTarget.value })}
          />
        </div>
        <p class="field-error" role={error ? 'alert' : undefined}>
          {error ?? ''}
        </p>
        <button type="submit">Subscribe</button>
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
