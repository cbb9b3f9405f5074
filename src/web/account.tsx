// The account page: who is signed in, the plan and its quotas as bars, and rotation of the API key.
import { useState } from 'preact/hooks';
import { describeError, get, post } from './api';
import { ConfirmDialog } from './confirm-dialog';
import { CopyButton } from './copy-button';
import { formatDuration, formatTime } from './format';
import { useNotify } from './notices';
import { storeKey } from './session';
import type { User } from './types';
import { useBusy } from './use-busy';
import { useLoad } from './use-load';
import { LoadError } from './load-error';

export function AccountPage() {
  const notify = useNotify();
  const user = useLoad(() => get<{ data: User }>('/users/me'), []);
  const [confirming, setConfirming] = useState(false);
  const [newKey, setNewKey] = useState<string | undefined>(undefined);
  // The rotation said nothing until the new key appeared, and a second press while it ran rotated twice.
  const rotation = useBusy();

  const rotate = () => {
    setConfirming(false);
    return rotation.run(async () => {
      try {
        const answer = await post<{ data: { api_key: string } }>('/users/me/api_key');
        // The old key no longer works: this tab goes on with the new one.
        storeKey(answer.data.api_key);
        setNewKey(answer.data.api_key);
        notify({ kind: 'ok', text: 'Rotated the API key: the old key no longer works.' });
        await user.reload();
      } catch (failure) {
        notify({ kind: 'error', text: `Could not rotate the API key: ${describeError(failure)}` });
      }
    });
  };

  const me = user.data?.data;
  const free = me?.daily_invocations_quota !== undefined;
  return (
    <section aria-labelledby="account-title">
      <h1 id="account-title">Account</h1>
      <LoadError loads={[user]} />
      {me && (
        <>
          <dl class="facts">
            <dt>User</dt>
            <dd>{me.username}</dd>
            <dt>Email</dt>
            <dd>{me.email}</dd>
            <dt>Id</dt>
            <dd>
              <code>{me.id}</code>
            </dd>
            <dt>Plan</dt>
            <dd id="plan">{free ? 'Free' : 'Paid'}</dd>
          </dl>
          {free ? (
            <div class="quotas">
              <h2>Today's quotas</h2>
              <p class="hint">Reset at 00:00 UTC.</p>
              <Quota id="quota-invocations" label="Invocations" used={me.daily_invocations_used ?? 0} quota={me.daily_invocations_quota ?? 0} />
              <Quota
                id="quota-compute"
                label="Compute time"
                used={me.daily_compute_time_used ?? 0}
                quota={me.daily_compute_time_quota ?? 0}
                format={(ms) => formatDuration(ms)}
              />
            </div>
          ) : (
            <div class="quotas">
              <h2>Billing period</h2>
              <p>
                {formatTime((me.billing_period_start_ts ?? 0) * 1000)} to {formatTime((me.billing_period_end_ts ?? 0) * 1000)}:{' '}
                <strong id="billing-invocations">{me.billing_period_invocations ?? 0}</strong> invocations, not limited.
              </p>
            </div>
          )}
          <div class="panel">
            <h2>API key</h2>
            <p class="hint">A new key replaces the current one at once: every client using the old key gets 401 from then on.</p>
            {/* aria-disabled rather than disabled while busy, as elsewhere: a disabled button loses the keyboard focus. */}
            <button
              type="button"
              class="danger"
              onClick={() => !rotation.busy && setConfirming(true)}
              aria-disabled={rotation.busy ? 'true' : undefined}
              aria-busy={rotation.busy ? 'true' : undefined}
            >
              {rotation.busy ? 'Rotating…' : 'Rotate API key'}
            </button>
            {newKey && (
              <div class="secret" aria-live="polite">
                <p>The new key, shown this once (this tab already uses it):</p>
                <p>
                  <code id="new-api-key">{newKey}</code> <CopyButton value={newKey} label="Copy new API key" />
                </p>
              </div>
            )}
          </div>
        </>
      )}
      {confirming && (
        <ConfirmDialog title="Rotate the API key?" confirmLabel="Rotate key" onCancel={() => setConfirming(false)} onConfirm={rotate}>
          <p>The current key stops working immediately, for every client that uses it.</p>
        </ConfirmDialog>
      )}
    </section>
  );
}

function Quota(props: { id: string; label: string; used: number; quota: number; format?: (value: number) => string }) {
  const format = props.format ?? ((value: number) => value.toLocaleString());
  const text = `${format(props.used)} of ${format(props.quota)}`;
  return (
    <div class="quota">
      <label for={props.id}>
        {props.label}: <span id={`${props.id}-text`}>{text}</span>
      </label>
      {/* A <meter> reads out its value to assistive technology; low and high thresholds colour it as it fills. */}
      <meter
        id={props.id}
        min={0}
        max={props.quota || 1}
        value={Math.min(props.used, props.quota)}
        low={props.quota * 0.7}
        high={props.quota * 0.9}
        optimum={0}
      >
        {text}
      </meter>
    </div>
  );
}
