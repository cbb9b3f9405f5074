// `tributary deploy --workflow <file>` against a real server: YAML and JSON files, step files bundled with their
// relative imports, a second deploy updating the same workflow, and clear errors for bad files.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, tempDir, type TestServer } from '../helpers/server.js';
import { client, request } from '../helpers/client.js';
import { waitFor } from '../helpers/wait.js';
import { BIN } from '../helpers/processes.js';

const run = promisify(execFile);

describe('tributary deploy --workflow', () => {
  let server: TestServer;
  let key: string;
  let dir: string;

  beforeAll(async () => {
    server = await startTestServer('sqlite');
    key = (await server.createUser()).apiKey;
    dir = tempDir('tributary-workflow-file-');
    fs.mkdirSync(path.join(dir, 'steps'));
    fs.writeFileSync(path.join(dir, 'steps', 'shout.mjs'), 'export function shout(text) { return String(text).toUpperCase() + "!"; }\n');
    fs.writeFileSync(
      path.join(dir, 'steps', 'greet.mjs'),
      'import { shout } from "./shout.mjs";\nexport default defineComponent({ async run({ steps }) { return shout("hello " + steps.trigger.event.body.who); } });\n',
    );
    fs.writeFileSync(
      path.join(dir, 'workflow.yaml'),
      [
        'name: greeter',
        'trigger:',
        '  type: http',
        'steps:',
        '  - name: greet',
        '    path: ./steps/greet.mjs',
        '  - name: echo',
        '    path: ./steps/echo.mjs',
        '    props:',
        '      label: "{{ steps.greet.$return_value }}"',
        '',
      ].join('\n'),
    );
    fs.writeFileSync(
      path.join(dir, 'steps', 'echo.mjs'),
      'export default defineComponent({ props: { label: { type: "string" } }, async run() { return this.label; } });\n',
    );
  });
  afterAll(async () => {
    await server?.destroy();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const deploy = (file: string) =>
    run(process.execPath, [BIN, 'deploy', '--workflow', file, '--url', server.url], { env: { PATH: process.env.PATH ?? '', TRIBUTARY_KEY: key } });

  it('creates the workflow from a YAML file, bundling relative imports, and updates it in place on the next deploy', async () => {
    const first = await deploy(path.join(dir, 'workflow.yaml'));
    const id = /created workflow (p_[0-9a-z]{26}) "greeter"/.exec(first.stdout)?.[1];
    expect(id).toBeDefined();
    const endpoint = /endpoint: (\S+)/.exec(first.stdout)?.[1];
    expect(endpoint).toMatch(new RegExp(`^${server.url}/e/`));
    expect(first.stderr).toContain('reading and bundling');

    await request('POST', endpoint!, { body: { who: 'world' } });
    const api = client(server.url, key);
    const runs = await waitFor(
      () => api.get(`/v1/workflows/${id}/runs?status=succeeded`),
      (r) => r.body.data.length === 1,
      { what: 'the run' },
    );
    expect(runs.body.data[0].steps.map((s: any) => s.$return_value)).toEqual(['HELLO WORLD!', 'HELLO WORLD!']);

    fs.writeFileSync(path.join(dir, 'steps', 'shout.mjs'), 'export function shout(text) { return String(text) + "?"; }\n');
    const second = await deploy(path.join(dir, 'workflow.yaml'));
    expect(second.stdout).toContain(`updated workflow ${id} "greeter"`);
    expect(second.stdout).toContain(`endpoint: ${endpoint}`);
    expect((await api.get('/v1/users/me/workflows')).body.data.filter((w: any) => w.name === 'greeter')).toHaveLength(1);

    // The trigger taken out of the file is taken off the workflow.
    const untriggered = path.join(dir, 'untriggered.yaml');
    fs.writeFileSync(untriggered, 'name: greeter\nsteps:\n  - name: echo\n    path: ./steps/echo.mjs\n    props:\n      label: x\n');
    expect((await deploy(untriggered)).stdout).toContain(`updated workflow ${id} "greeter"`);
    expect((await api.get(`/v1/workflows/${id}`)).body.data.trigger).toBeNull();

    // So is a timeout: the workflow kept 120 s after the line was gone from the file.
    const slow = path.join(dir, 'slow.yaml');
    fs.writeFileSync(slow, 'name: greeter\ntimeout_seconds: 120\nsteps:\n  - name: echo\n    path: ./steps/echo.mjs\n    props:\n      label: x\n');
    await deploy(slow);
    expect((await api.get(`/v1/workflows/${id}`)).body.data.timeout_seconds).toBe(120);
    await deploy(untriggered);
    expect((await api.get(`/v1/workflows/${id}`)).body.data.timeout_seconds).toBe(30);
  });

  it('takes JSON files too', async () => {
    const file = path.join(dir, 'other.json');
    fs.writeFileSync(file, JSON.stringify({ name: 'from json', steps: [{ name: 'echo', path: './steps/echo.mjs', props: { label: 'x' } }] }));
    const result = await deploy(file);
    expect(result.stdout).toMatch(/created workflow p_\w+ "from json"/);
    expect(result.stdout).not.toContain('endpoint:');
  });

  it('prints the workflow alone as JSON on standard output with --json', async () => {
    const file = path.join(dir, 'as-json.yaml');
    fs.writeFileSync(file, 'name: as json\nsteps:\n  - name: echo\n    path: ./steps/echo.mjs\n    props: { label: x }\n');
    const result = await run(process.execPath, [BIN, 'deploy', '--workflow', file, '--json', '--url', server.url], {
      env: { PATH: process.env.PATH ?? '', TRIBUTARY_KEY: key },
    });
    const workflow = JSON.parse(result.stdout);
    expect(workflow).toMatchObject({ id: expect.stringMatching(/^p_/), name: 'as json' });
    expect(result.stderr).toContain('reading and bundling');
  });

  it('refuses the flags of a source deploy with --workflow (exit 2) instead of dropping them', async () => {
    for (const flags of [['--name', 'other'], ['--prop', 'label=y'], ['--props-file', 'props.json'], ['--interactive']]) {
      const failed = await run(process.execPath, [BIN, 'deploy', '--workflow', path.join(dir, 'workflow.yaml'), ...flags, '--url', server.url], {
        env: { PATH: process.env.PATH ?? '', TRIBUTARY_KEY: key },
      }).then(
        () => undefined,
        (error: { code: number; stderr: string }) => error,
      );
      expect(failed?.code, flags[0]).toBe(2);
      expect(failed?.stderr, flags[0]).toContain(`error: ${flags[0]} cannot be used with --workflow`);
    }
  });

  it('exits 2 with the file, the field and the reason for a bad file or a refused workflow', async () => {
    const cases: Array<[string, string, RegExp]> = [
      ['missing.yaml', '', /cannot read .*missing\.yaml: no such file/],
      ['bad.yaml', 'name: [unclosed', /bad\.yaml is not valid YAML/],
      ['extra.yaml', 'name: x\nsteps: []\ncolour: red\n', /unknown field "colour"/],
      ['nosteps.yaml', 'name: x\nsteps: []\n', /steps must be a list of at least one step/],
      [
        'two.yaml',
        'name: x\nsteps:\n  - name: a\n    path: ./steps/echo.mjs\n    component_id: sc_x\n',
        /steps\[0\] \("a"\): give exactly one of path, component_id or component_key/,
      ],
      // A step file that is not there is named as deploy names a component file, not as esbuild's "Could not resolve".
      ['missing-step.yaml', 'name: x\nsteps:\n  - name: a\n    path: ./steps/nope.mjs\n', /steps\[0\] \("a"\): path \S*steps\/nope\.mjs: no such file$/m],
      ['broken.yaml', 'name: x\nsteps:\n  - name: a\n    path: ./steps/broken.mjs\n', /cannot bundle \.\/steps\/broken\.mjs: \S*broken\.mjs:1:\d+: /],
      [
        'refused.yaml',
        'name: x\nsteps:\n  - name: trigger\n    path: ./steps/echo.mjs\n    props: { label: y }\n',
        /may not be "trigger".*\(400 invalid_request\)/,
      ],
    ];
    fs.writeFileSync(path.join(dir, 'steps', 'broken.mjs'), 'export default defineComponent({ async run() { return ( } });\n');
    // Two workflows of the name the file gives: which one to update is the user's to say.
    const api = client(server.url, key);
    for (let i = 0; i < 2; i++)
      expect(
        (
          await api.post('/v1/workflows', {
            name: 'twice',
            steps: [{ name: 'a', component_code: 'export default defineComponent({ async run() { return 1; } });' }],
          })
        ).status,
      ).toBe(200);
    cases.push(['twice.yaml', 'name: twice\nsteps:\n  - name: a\n    path: ./steps/echo.mjs\n', /the account has 2 workflows named "twice" .*rename one/]);
    for (const [name, content, message] of cases) {
      const file = path.join(dir, name);
      if (content) fs.writeFileSync(file, content);
      const failed = await deploy(file).then(
        () => undefined,
        (error: { code: number; stderr: string }) => error,
      );
      expect(failed?.code, name).toBe(2);
      expect(failed?.stderr, name).toMatch(message);
    }
  });
});
