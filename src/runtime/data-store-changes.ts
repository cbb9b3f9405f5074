// Data store changes of several calls merged into one per store, and applied to contents, for the calls of a request
// that see the writes of those before them.
import type { DataStoreChange, DataStoreContents, DataStoreWrite } from './types.js';

/** Later changes win key by key; a `clear` drops what came before it; a ttl change after a set amends the set. */
export function mergeDataStoreChanges(...lists: Array<DataStoreChange[] | undefined>): DataStoreChange[] {
  const stores = new Map<string, { cleared: boolean; writes: Map<string, DataStoreWrite> }>();
  for (const changes of lists) {
    for (const change of changes ?? []) {
      let store = stores.get(change.name);
      if (!store) {
        store = { cleared: false, writes: new Map() };
        stores.set(change.name, store);
      }
      if (change.cleared) {
        store.cleared = true;
        store.writes.clear();
      }
      for (const write of change.writes) {
        const previous = store.writes.get(write.key);
        if (write.op === 'ttl' && previous?.op === 'set') {
          const amended: DataStoreWrite = { ...previous };
          if (write.ttlSeconds === undefined) delete amended.ttlSeconds;
          else amended.ttlSeconds = write.ttlSeconds;
          store.writes.set(write.key, amended);
        } else {
          // Deleted and set again, the key moves to the end: the order keys() shows.
          store.writes.delete(write.key);
          store.writes.set(write.key, write);
        }
      }
    }
  }
  return [...stores].map(([name, { cleared, writes }]) => ({ name, cleared, writes: [...writes.values()] }));
}

/** The contents as the changes leave them (times to live are the server's business: records stay until they expire). */
export function applyDataStoreChanges(contents: DataStoreContents[] | undefined, changes: DataStoreChange[] | undefined): DataStoreContents[] | undefined {
  if (!contents || !changes?.length) return contents;
  return contents.map((store) => {
    const change = changes.find((c) => c.name === store.name);
    if (!change) return store;
    const entries = new Map(change.cleared ? [] : store.entries);
    for (const write of change.writes) {
      if (write.op === 'set') entries.set(write.key, write.value);
      else if (write.op === 'delete') entries.delete(write.key);
    }
    return { name: store.name, entries: [...entries] };
  });
}
