// `tributary data-stores`: the account's data stores (list), a store's keys, and one record read, written or deleted.
import type { Command } from 'commander';
import { deleteRecord, jsonValue, readRecord, storeKeys, ttlSeconds, writeRecord } from '../client/data-stores.js';
import { jsonText, lineText, quoted } from '../client/terminal-text.js';
import { kindNamed } from '../client/resources.js';
import { apiFor, out, printList, say, type ServerFlags, serverOptions } from './client-common.js';

const EXAMPLES = `
A store is named by its name or its id (ds_…). A key is any text; quote it for the shell, and put -- before
arguments that begin with a dash (a key, or a negative number as the value). A value is JSON, a string in its quotes:
  tributary data-stores list
  tributary data-stores keys orders
  tributary data-stores get orders 'customer 42' | jq .total
  tributary data-stores set orders 'customer 42' '{"total": 3}'
  tributary data-stores set --ttl 3600 sessions token '"abc"'
  tributary data-stores set orders -- -draft -1
  tributary data-stores delete orders -- -draft`;

export function addDataStoreCommands(program: Command): void {
  const group = program
    .command('data-stores')
    .description("the account's data stores (the key-value stores data_store props share): list them, their keys, read, write or delete a record")
    .addHelpText('after', EXAMPLES);

  serverOptions(group.command('list'))
    .description('list the data stores with their key counts, newest first (the same as tributary list data-stores)')
    .option('--json', 'one JSON object per line')
    .action((flags: ServerFlags) => printList(kindNamed('data-stores'), flags));

  serverOptions(group.command('keys <store>'))
    .description("a store's keys in key order, one a line (a key holding a line break or control character as its JSON string)")
    .option('--json', 'each key as a JSON string, one a line')
    .action(async (store: string, flags: ServerFlags) => {
      const keys = await storeKeys(apiFor(flags), store);
      if (flags.json) for (const key of keys) out(JSON.stringify(key));
      else if (keys.length === 0) say(`no keys in data store ${quoted(store)}`);
      else for (const key of keys) out(lineText(key));
    });

  serverOptions(group.command('get <store> <key>'))
    .description("a record's value as JSON (indented); when it has a ttl, standard error says when it expires")
    .option('--json', 'the record on one line: {"key","value","expires_at"?,"expires_at_ms"?}')
    .action(async (store: string, key: string, flags: ServerFlags) => {
      const record = await readRecord(apiFor(flags), store, key);
      if (flags.json) {
        out(JSON.stringify(record));
        return;
      }
      out(jsonText(record.value, 2));
      if (record.expires_at_ms !== undefined) say(`expires at ${new Date(record.expires_at_ms).toISOString()}`);
    });

  serverOptions(group.command('set <store> <key> <json-value>'))
    .description("write a record, as a component's set(key, value, { ttl }) would (a store named for the first time is made)")
    .option('--ttl <seconds>', 'expire the record this many seconds after the write (default: never, as set() without a ttl)')
    .action(async (store: string, key: string, text: string, flags: ServerFlags & { ttl?: string }) => {
      const record = await writeRecord(apiFor(flags), store, key, jsonValue(text), ttlSeconds(flags.ttl));
      const expiry = record.expires_at_ms === undefined ? '' : `, expiring at ${new Date(record.expires_at_ms).toISOString()}`;
      out(`set key ${quoted(key)} of data store ${quoted(store)}${expiry}`);
    });

  serverOptions(group.command('delete <store> <key>'))
    .description("delete a record, as a component's delete(key) would")
    .action(async (store: string, key: string, flags: ServerFlags) => {
      await deleteRecord(apiFor(flags), store, key);
      out(`deleted key ${quoted(key)} from data store ${quoted(store)}`);
    });
}
