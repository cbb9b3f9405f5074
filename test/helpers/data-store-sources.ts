// A source that reads and writes a data store, deployed and run over the API, for tests of data store records.
import { expect } from 'vitest';
import type { client } from './client.js';
import { waitFor } from './wait.js';

type Api = ReturnType<typeof client>;

/** The path of one record of `store` (a name or an id): the key travels in the query, where any string fits. */
export const recordPath = (store: string, key: string): string => `/v1/data_stores/${encodeURIComponent(store)}/records?key=${encodeURIComponent(key)}`;

/** Deploys `code` (a component with a `store` data_store prop) with `store` as that prop; the new source's id. */
export async function deployStoreSource(api: Api, code: string, store: string): Promise<string> {
  const res = await api.post('/v1/sources', { component_code: code, configured_props: { store } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data.id;
}

/**
 * Runs the source with `event` and waits for it to end: the event it emitted, or `{ error: "<name>: <message>" }` of
 * the error that failed it.
 */
export async function runStoreSource<Emitted extends object>(api: Api, sourceId: string, event: object): Promise<Emitted & { error?: string }> {
  const read = async (stream: string) => (await api.get(`/v1/sources/${sourceId}${stream}/event_summaries?limit=100&expand=event`)).body.data;
  const [before, errorsBefore] = [(await read('')).length, (await read('/$errors')).length];
  expect((await api.post(`/v1/sources/${sourceId}/run`, event)).status).toBe(202);
  const [emits, errors] = await waitFor(
    () => Promise.all([read(''), read('/$errors')]),
    ([e, r]) => e.length > before || r.length > errorsBefore,
    { what: 'the run to finish' },
  );
  if (emits.length > before) return emits[0].event;
  const { name, message } = errors[0].event.error;
  return { error: `${name}: ${message}` } as Emitted & { error?: string };
}
