// One key of a store's page: its row, whose key opens the record's value below it, and its Delete (after a confirm).
import { useEffect, useState } from 'preact/hooks';
import { ApiError, del, describeError, get, query } from './api';
import { ConfirmDialog } from './confirm-dialog';
import { formatTime } from './format';
import { JsonView } from './json-view';
import { useNotify } from './notices';
import type { DataStoreRecord } from './types';
import { useBusy } from './use-busy';

/** The record's address: the key goes in the query, where any text is carried (a path segment `..` is resolved away). */
export function recordPath(storeId: string, key: string): string {
  return `/data_stores/${encodeURIComponent(storeId)}/records${query({ key })}`;
}

type Shown = { record: DataStoreRecord } | { error: string; gone: boolean } | undefined;

/**
 * `index` tells the row's elements apart (a key may be any text, not an id); `refreshed` counts the page's reloads, so
 * that an open value is read again with the keys. `onDeleted` reloads the keys once one is gone (or found gone).
 */
export function RecordRow(props: { storeId: string; storeName: string; recordKey: string; index: number; refreshed: number; onDeleted: () => Promise<void> }) {
  const { storeId, storeName, recordKey: key, index } = props;
  const notify = useNotify();
  const [open, setOpen] = useState(false);
  const [shown, setShown] = useState<Shown>(undefined);
  const [confirming, setConfirming] = useState(false);
  const deleting = useBusy();

  useEffect(() => {
    if (!open) return;
    let current = true;
    setShown(undefined);
    get<{ data: DataStoreRecord }>(recordPath(storeId, key)).then(
      (answer) => current && setShown({ record: answer.data }),
      (failure) => current && setShown({ error: describeError(failure), gone: failure instanceof ApiError && failure.status === 404 }),
    );
    return () => {
      current = false;
    };
  }, [open, storeId, key, props.refreshed]);

  const remove = () =>
    deleting.run(async () => {
      setConfirming(false);
      try {
        await del(recordPath(storeId, key));
        notify({ kind: 'ok', text: `Deleted key ${JSON.stringify(key)} from data store ${storeName}.` });
      } catch (failure) {
        notify({ kind: 'error', text: `Key ${JSON.stringify(key)} was not deleted: ${describeError(failure)}` });
        // Gone already (another delete, a component, its ttl): the keys are read again to show it.
        if (!(failure instanceof ApiError && failure.status === 404)) return;
      }
      await props.onDeleted();
    });

  const detail = `record-${index}`;
  return (
    <>
      <tr>
        <th scope="row">
          {/* The key is the toggle, as an event's time is: one tab stop a row before its Delete. */}
          <button type="button" class="link" aria-expanded={open} aria-controls={detail} onClick={() => setOpen(!open)}>
            <code>{key}</code>
          </button>
        </th>
        <td class="record-actions">
          <button type="button" class="danger" aria-disabled={deleting.busy ? 'true' : undefined} onClick={() => deleting.busy || setConfirming(true)}>
            {deleting.busy ? 'Deleting…' : 'Delete'}
          </button>
          {/* In the cell, not the table body, which holds only rows. */}
          {confirming && (
            <ConfirmDialog title="Delete this key?" confirmLabel="Delete key" onCancel={() => setConfirming(false)} onConfirm={remove}>
              <p class="wrap">
                <code>{key}</code> and its value are removed from data store <strong>{storeName}</strong>, as a component's <code>delete(key)</code> would.
                Sources and workflow steps that read it find it missing from then on.
              </p>
            </ConfirmDialog>
          )}
        </td>
      </tr>
      {open && (
        <tr class="row-detail" id={detail}>
          <td colSpan={2}>
            {!shown && <p class="muted">Loading…</p>}
            {shown && 'error' in shown && (
              <p class="error" role="alert">
                {shown.gone ? `This key is no longer there (deleted or expired since the keys were read): ${shown.error}` : shown.error}
              </p>
            )}
            {shown && 'record' in shown && (
              <>
                <p class="muted">{shown.record.expires_at_ms === undefined ? 'No expiry.' : `Expires ${formatTime(shown.record.expires_at_ms)}.`}</p>
                <JsonView value={shown.record.value} label={`Value of ${key}`} />
              </>
            )}
          </td>
        </tr>
      )}
    </>
  );
}
