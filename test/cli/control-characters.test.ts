// Names and values holding control characters, as the client prints them: a name is any text (a line break, an ESC, a
// C1 control such as U+009B, CSI), and a table row, an error's detail or a record's value printed as it is would break
// its line or send the terminal a command. Each is printed with the character escaped, on its one line.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { type CliResult, runCli } from '../helpers/cli.js';
import { client } from '../helpers/client.js';
import { startTestServer, tempDir, type TestServer } from '../helpers/server.js';

/** Any control character but the line feeds that end lines. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what the output may not hold.
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029]/;

describe('control characters in what the client prints', () => {
  let server: TestServer;
  let key: string;
  let dir: string;
  let api: ReturnType<typeof client>;

  beforeAll(async () => {
    server = await startTestServer('sqlite');
    key = (await server.createUser({ plan: 'paid' })).apiKey;
    api = client(server.url, key);
    dir = tempDir('tributary-control-');
  });
  afterAll(async () => {
    await server?.destroy();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const tributary = async (args: string[]): Promise<CliResult> => {
    const result = await runCli(args, {
      env: { PATH: process.env.PATH ?? '', HOME: dir, XDG_CONFIG_HOME: path.join(dir, 'config'), TRIBUTARY_URL: server.url, TRIBUTARY_KEY: key },
      cwd: dir,
    });
    expect(RAW_CONTROL.test(result.stdout) || RAW_CONTROL.test(result.stderr), JSON.stringify(result)).toBe(false);
    return result;
  };

  it('lists a connected account and a source named with a line break, an ESC or a C1 control as their JSON strings, one row each', async () => {
    const account = await api.post('/v1/accounts', { app: 'mastodon', name: 'evil\u001b[2J\nsecond', credentials: { access_token: 'x' } });
    expect(account.status).toBe(200);
    const accountId: string = account.body.data.id;
    const source = await api.post('/v1/sources', {
      name: 'red\u001b[31m\u009b2J',
      component_code: 'export default { name: "uses", version: "0.1.0", props: { mastodon: { type: "app", app: "mastodon" } }, async run() {} };',
      configured_props: { mastodon: { authProvisionId: accountId } },
    });
    expect(source.status, JSON.stringify(source.body)).toBe(200);
    const sourceId: string = source.body.data.id;

    const accounts = await tributary(['list', 'accounts']);
    const name = '"evil\\u001b[2J\\nsecond"';
    expect([accounts.code, accounts.stdout.split('\n')]).toEqual([
      0,
      [`${'ID'.padEnd(accountId.length)}  APP       ${'NAME'.padEnd(name.length)}  HEALTHY`, `${accountId}  mastodon  ${name}  yes`, ''],
    ]);
    const sources = await tributary(['list']);
    expect([sources.code, sources.stdout.split('\n')[1]]).toEqual([0, expect.stringMatching(new RegExp(`^${sourceId}  "red\\\\u001b\\[31m\\\\u009b2J"  `))]);

    // The 409 of a delete names the source in its message (quoted by the server) and in its details (as it is).
    const refused = await tributary(['delete', accountId]);
    expect([refused.code, refused.stdout, refused.stderr.split('\n').slice(0, 2)]).toEqual([
      2,
      '',
      [
        `error: connected account "${accountId}" is used by source "red\\u001b[31m\\u009b2J" (${sourceId}); delete with force=true to deactivate them and delete it (409 conflict)`,
        `  type: source, id: ${sourceId}, name: red\\u001b[31m\\u009b2J, active: true`,
      ],
    ]);
  });

  it('describes an item named with C1 controls, DEL and U+2028 escaped, as YAML and as JSON that read back as the item', async () => {
    const name = 'nel\u0085csi\u009b2J del\u007f ls\u2028end';
    const account = await api.post('/v1/accounts', { app: 'mastodon', name, credentials: { access_token: 'x' } });
    expect(account.status, JSON.stringify(account.body)).toBe(200);
    const id: string = account.body.data.id;
    const item = (await api.get(`/v1/accounts/${id}`)).body.data;
    expect(item.name).toBe(name);

    const yaml = await tributary(['describe', id]);
    expect([yaml.code, yaml.stderr]).toEqual([0, '']);
    expect(yaml.stdout).toContain('name: "nel\\u0085csi\\u009b2J del\\u007f ls\\u2028end"\n');
    expect(parseYaml(yaml.stdout)).toEqual(item);

    const json = await tributary(['describe', id, '--json']);
    expect([json.code, json.stderr]).toEqual([0, '']);
    expect(json.stdout).toContain('"name": "nel\\u0085csi\\u009b2J del\\u007f ls\\u2028end"');
    expect(JSON.parse(json.stdout)).toEqual(item);
  });

  it('lists a data store named with a C1 control as its JSON string, and prints a value holding one escaped, still JSON', async () => {
    const value = { text: 'a\u009b2Jb\u2028c\u007f', esc: '\u001b[31m' };
    const put = await api.put('/v1/data_stores/csi/records?key=k', { value });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    // A name the server now refuses, as an earlier version let one be made.
    await server.running.services.store.db.updateTable('data_stores').set({ name: 'csi\u009b2J' }).where('name', '=', 'csi').execute();
    const stores = await tributary(['data-stores', 'list']);
    expect([stores.code, stores.stdout.split('\n')[1]]).toEqual([0, expect.stringMatching(/^ds_\w+ {2}"csi\\u009b2J" {2}1 {4}/)]);

    const got = await tributary(['data-stores', 'get', 'csi\u009b2J', 'k']);
    const printed = '{\n  "text": "a\\u009b2Jb\\u2028c\\u007f",\n  "esc": "\\u001b[31m"\n}\n';
    expect([got.code, got.stdout, got.stderr]).toEqual([0, printed, '']);
    expect(JSON.parse(got.stdout)).toEqual(value);
  });
});
