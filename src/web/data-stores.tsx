// The data stores pages: the account's key-value stores, and one store's keys, each opening its value or deleted.
import { useEffect, useRef, useState } from 'preact/hooks';
import { del, describeError, get } from './api';
import { ConfirmDialog } from './confirm-dialog';
import { useNotify } from './notices';
import { formatTime } from './format';
import { href, navigate } from './router';
import type { DataStore, DataStoreKeys } from './types';
import { useLoad } from './use-load';
import { usePages } from './use-pages';
import { useBusy } from './use-busy';
import { LoadMore } from './load-more';
import { LoadError } from './load-error';
import { RecordRow } from './data-store-record';
import { NameCell, PagedTable, Table } from './table';

const PAGE = 50;
/** A store may hold tens of thousands of keys, which the API gives at once: drawn this many at a time. */
const KEYS_SHOWN = 200;

export function DataStoresList() {
  const pages = usePages<DataStore>('/data_stores', PAGE);
  return (
    <section aria-labelledby="data-stores-title">
      <h1 id="data-stores-title">Data stores</h1>
      <p class="hint">Key-value stores that the account's sources and workflow steps share by name, newest first.</p>
      <PagedTable
        pages={pages}
        columns={['Name', 'Id', 'Keys', 'Updated']}
        row={(store) => (
          <tr key={store.id}>
            <NameCell href={href('data-stores', store.id)} name={store.name} />
            <td>
              <code>{store.id}</code>
            </td>
            <td>{store.key_count}</td>
            <td>{formatTime(store.updated_at * 1000)}</td>
          </tr>
        )}
        // Nothing here makes a store: the empty page says what does.
        empty={
          <>
            No data stores yet. A store is made by the first write to its name from a component's <code>data_store</code> prop: a source or workflow step with{' '}
            <code>props: {'{ store: { type: "data_store" } }'}</code>, configured as <code>{'{ "store": "orders" }'}</code>, that runs{' '}
            <code>await this.store.set(key, value)</code>; or by a record written to it by hand, with{' '}
            <code>{`tributary data-stores set orders key '"value"'`}</code> or <code>PUT /v1/data_stores/orders/records?key=…</code>.
          </>
        }
      />
    </section>
  );
}

/** One store, by the id (or the name: the API takes either) in the address. */
export function DataStorePage(props: { id: string }) {
  const store = useLoad(() => get<{ data: DataStoreKeys }>(`/data_stores/${encodeURIComponent(props.id)}/keys`), [props.id]);
  const [shown, setShown] = useState(KEYS_SHOWN);
  const rows = useRef<HTMLDivElement>(null);
  const refresh = useRef<HTMLButtonElement>(null);
  // Reloads of the keys, which open values follow; and the row whose key was deleted, where the keyboard goes next.
  const [refreshed, setRefreshed] = useState(0);
  const [refocus, setRefocus] = useState<number | undefined>(undefined);
  const data = store.data?.data;
  useEffect(() => {
    if (refocus === undefined || store.loading) return;
    setRefocus(undefined);
    // The row that took the deleted one's place, else the one before it, else Refresh: not the top of the page.
    const keys = rows.current?.querySelectorAll<HTMLElement>('tbody th button');
    (keys?.[refocus] ?? keys?.[refocus - 1] ?? refresh.current)?.focus();
  }, [store.loading, refocus]);

  // No such store (never written, another account's, a mistyped address): its 404 and nothing else, no empty keys table.
  if (store.missing || !data) {
    return (
      <section aria-labelledby="data-store-title">
        <p class="crumbs">
          <a href={href('data-stores')}>Data stores</a> /
        </p>
        <h1 id="data-store-title" class="wrap">
          Data store {props.id}
        </h1>
        <LoadError loads={[store]} />
      </section>
    );
  }
  const keys = data.keys;
  // The keys came in one answer: the rows past those drawn are a Load more away, as a paged list's are.
  const pages = {
    items: keys.slice(0, shown),
    more: shown < keys.length,
    loadMore: () => setShown(shown + KEYS_SHOWN),
    page: { error: store.error },
  };
  return (
    <section aria-labelledby="data-store-title">
      <p class="crumbs">
        <a href={href('data-stores')}>Data stores</a> /
      </p>
      <h1 id="data-store-title" class="wrap">
        {data.name}
      </h1>
      <dl class="facts">
        <dt>Id</dt>
        <dd>
          <code>{data.id}</code>
        </dd>
        <dt>Keys</dt>
        <dd>{keys.length}</dd>
      </dl>
      <p class="hint">
        Select a key to see its value as a component stored it. Deleting one is what a component's <code>await this.store.delete(key)</code> does.
      </p>
      <LoadError loads={[store]} />
      <div class="toolbar">
        <button
          type="button"
          ref={refresh}
          onClick={() => {
            setRefreshed(refreshed + 1);
            return store.reload();
          }}
        >
          Refresh
        </button>
        <DeleteStore id={data.id} name={data.name} keyCount={keys.length} />
      </div>
      {keys.length === 0 ? (
        <p class="muted">This store holds no keys: its records were deleted, cleared or expired.</p>
      ) : (
        <Table
          wrap={rows}
          class="keys"
          caption="Keys, in key order"
          columns={['Key', { hidden: 'Actions' }]}
          items={pages.items}
          row={(key, index) => (
            <RecordRow
              key={key}
              storeId={data.id}
              storeName={data.name}
              recordKey={key}
              index={index}
              refreshed={refreshed}
              onDeleted={() => {
                setRefocus(index);
                return store.reload();
              }}
            />
          )}
        />
      )}
      <LoadMore pages={pages} rows={rows} />
    </section>
  );
}

/** The whole store and its records, after a confirmation; a data_store prop naming it starts a new, empty one. */
function DeleteStore(props: { id: string; name: string; keyCount: number }) {
  const notify = useNotify();
  const [confirming, setConfirming] = useState(false);
  const deleting = useBusy();
  const noun = props.keyCount === 1 ? 'key' : 'keys';
  const remove = () =>
    deleting.run(async () => {
      setConfirming(false);
      try {
        await del(`/data_stores/${encodeURIComponent(props.id)}`);
        notify({ kind: 'ok', text: `Deleted data store ${props.name} and its ${noun}.` });
        navigate('data-stores');
      } catch (failure) {
        notify({ kind: 'error', text: `Data store ${props.name} was not deleted: ${describeError(failure)}` });
      }
    });
  return (
    <>
      <button type="button" class="danger" aria-disabled={deleting.busy ? 'true' : undefined} onClick={() => deleting.busy || setConfirming(true)}>
        {deleting.busy ? 'Deleting…' : 'Delete store'}
      </button>
      {confirming && (
        <ConfirmDialog title={`Delete data store ${props.name}?`} confirmLabel="Delete store" onCancel={() => setConfirming(false)} onConfirm={remove}>
          <p class="wrap">
            The store and its {props.keyCount} {noun} are removed. A source or workflow step whose <code>data_store</code> prop names{' '}
            <strong>{props.name}</strong> keeps running, and its next write starts a new, empty store of that name.
          </p>
        </ConfirmDialog>
      )}
    </>
  );
}
