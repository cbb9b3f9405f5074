// npm imports: installed once per exact version into the data folder's cache, and loadable by the sandboxed worker.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ComponentLoadError, type InstallProgress } from '../../src/runtime/index.js';
import { createRuntime, reopenRuntime, request, type TestRuntime } from './helpers.js';

let t: TestRuntime;
beforeAll(() => {
  t = createRuntime({ poolSize: 1 });
});
afterAll(async () => {
  await t.close();
});

function npmRuns(): string[][] {
  return t.logs.filter((l) => l.msg === 'running npm').map((l) => l.obj.npm as string[]);
}

const code = (extra = '') => `
  import isNumber from "is-number";
  const isOdd = require("is-odd@3.0.1");
  ${extra}
  export default {
    name: "uses packages", version: "1",
    run(event) { this.$emit({ odd: isOdd(event.n), number: isNumber(String(event.n)) }); },
  };`;

describe('npm packages', () => {
  it('installs each import into the cache and the worker loads it', async () => {
    const prepared = await t.runtime.prepare(code());
    const version = prepared.packages['is-number'];
    expect(version).toMatch(/^\d+\.\d+\.\d+$/);
    expect(prepared.packages['is-odd']).toBe('3.0.1');
    const root = path.join(fs.realpathSync(t.dataDir), 'packages');
    expect(prepared.readPaths).toEqual(expect.arrayContaining([path.join(root, 'is-odd@3.0.1'), path.join(root, `is-number@${version}`)]));
    expect(fs.existsSync(path.join(root, 'is-odd@3.0.1', '.tributary-installed'))).toBe(true);
    const bundle = fs.readFileSync(prepared.artifactPath, 'utf8');
    expect(bundle).toContain(`require("${path.join(root, 'is-odd@3.0.1', 'node_modules', 'is-odd', 'index.js')}")`);

    const installs = npmRuns().filter((args) => args[0] === 'install');
    expect(installs.map((args) => args.at(-1)).sort()).toEqual([`is-number@${version}`, 'is-odd@3.0.1']);

    const result = await t.runtime.invoke(request('acct_pkg', prepared, { events: [{ n: 3 }, { n: 4 }] }));
    expect(result.outcomes.map((o) => o.error ?? o.emits[0]!.event)).toEqual([
      { odd: true, number: true },
      { odd: false, number: true },
    ]);
  });

  it('does not run npm again for packages already installed', async () => {
    const marker = path.join(fs.realpathSync(t.dataDir), 'packages', 'is-odd@3.0.1', '.tributary-installed');
    const mtime = fs.statSync(marker).mtimeMs;
    const before = npmRuns().length;
    const other = await t.runtime.prepare(code('const unused = 1;'));
    expect(other.packages['is-odd']).toBe('3.0.1');
    expect(npmRuns().length).toBe(before);
    expect(fs.statSync(marker).mtimeMs).toBe(mtime);
  });

  it('does not run npm for an installed pinned version after a restart', async () => {
    const { runtime: restarted, logs } = reopenRuntime(t);
    try {
      const prepared = await restarted.prepare(
        'const isOdd = require("is-odd@3.0.1/index.js"); module.exports = { name: "x", version: "1", run() { this.$emit(isOdd(1)); } };',
      );
      expect(logs.map((l) => l.msg)).not.toContain('running npm');
      const result = await restarted.invoke(request('acct_pkg', prepared));
      expect(result.outcomes[0]!.emits).toEqual([{ event: true }]);
    } finally {
      await restarted.close();
    }
  });

  it('checks a package installed before the check for links leaving its folder when it is next used, and installs it again if it fails', async () => {
    const root = path.join(fs.realpathSync(t.dataDir), 'packages');
    await t.runtime.prepare(code());
    // As an earlier version left the cache: markers without the checks passed, and one package with a link to a server folder.
    const outside = fs.mkdtempSync(path.join(fs.realpathSync(t.dataDir), '..', 'tributary-outside-'));
    fs.writeFileSync(path.join(outside, 'secret.txt'), 'server secret');
    const planted = path.join(root, 'is-odd@3.0.1', 'node_modules', 'is-odd', 'outside');
    fs.symlinkSync(outside, planted);
    const isNumber = fs.readdirSync(root).find((entry) => entry.startsWith('is-number@'))!;
    for (const entry of ['is-odd@3.0.1', isNumber]) {
      const marker = path.join(root, entry, '.tributary-installed');
      const { checks: _, ...older } = JSON.parse(fs.readFileSync(marker, 'utf8'));
      fs.writeFileSync(marker, JSON.stringify(older));
    }
    const { runtime: restarted, logs } = reopenRuntime(t);
    try {
      const reader = code(`const fs = require("node:fs");
        let seen; try { seen = fs.readFileSync(${JSON.stringify(path.join(planted, 'secret.txt'))}, "utf8"); } catch (e) { seen = e.code; }`).replace(
        'this.$emit({',
        'this.$emit({ seen, ',
      );
      const prepared = await restarted.prepare(reader);
      const npm = logs.filter((l) => l.msg === 'running npm').map((l) => (l.obj as { npm: string[] }).npm);
      const installs = npm.filter((args) => args[0] === 'install').map((args) => args.at(-1));
      // The clean package is kept as it was; the other is installed again, without the link.
      expect(installs).toEqual(['is-odd@3.0.1']);
      expect(fs.existsSync(planted)).toBe(false);
      for (const entry of ['is-odd@3.0.1', isNumber]) {
        expect(JSON.parse(fs.readFileSync(path.join(root, entry, '.tributary-installed'), 'utf8')).checks).toBe(4);
      }
      const result = await restarted.invoke(request('acct_pkg', prepared, { events: [{ n: 3 }] }));
      expect(result.outcomes[0]!.emits).toEqual([{ event: { seen: 'ENOENT', odd: true, number: true } }]);
      expect(fs.readFileSync(path.join(outside, 'secret.txt'), 'utf8')).toBe('server secret');
    } finally {
      await restarted.close();
      fs.rmSync(outside, { recursive: true, force: true });
    }
  });

  it('installs a package once when several saves need it at the same time, and each hears it installed', async () => {
    const heard: InstallProgress[][] = [[], [], [], []];
    const evenCode = (n: number) =>
      `const isEven = require("is-even@1.0.0"); module.exports = { name: "even ${n}", version: "1", run() { this.$emit(isEven(${n})); } };`;
    // The fourth save is the third's code again: it joins that preparation and hears what it said so far.
    const saves = [1, 2, 3, 3].map((n, i) => t.runtime.prepare(evenCode(n), (p) => heard[i]!.push(p)));
    const prepared = await Promise.all(saves);
    expect(prepared.map((p) => p.packages)).toEqual([1, 2, 3, 3].map(() => ({ 'is-even': '1.0.0' })));
    expect(npmRuns().filter((args) => args.at(-1) === 'is-even@1.0.0')).toHaveLength(1);
    const even = (step: InstallProgress['step']) => ({ step, name: 'is-even', version: '1.0.0', index: 1, total: 1 });
    for (const said of heard) expect(said).toEqual([even('installing'), even('installed')]);
    const result = await t.runtime.invoke(request('acct_pkg', prepared[1]!));
    expect(result.outcomes[0]!.emits).toEqual([{ event: true }]);
  });

  it('counts, in TypeScript, only the packages the bundle keeps: imports used as types alone are dropped', async () => {
    const typed = `import type { Options } from "kind-of@6.0.3";
      import unused from "is-buffer@2.0.5";
      import isOdd from "is-odd@3.0.1";
      const options: Options | undefined = undefined;
      export default { name: "typed progress", version: "1", run(): void { this.$emit([isOdd(3), options ?? null]); } };`;
    const heard: InstallProgress[] = [];
    const prepared = await t.runtime.prepare(typed, (p) => heard.push(p));
    expect(Object.keys(prepared.packages)).toEqual(['is-odd']);
    expect(heard.map((p) => [p.name, p.index, p.total])).toEqual(heard.map(() => ['is-odd', 1, 1]));
    expect((await t.runtime.invoke(request('acct_pkg', prepared))).outcomes[0]!.emits).toEqual([{ event: [true, null] }]);
  });

  it('reports each package as it is resolved and installed, or found in the cache, in the order esbuild meets them', async () => {
    const progressCode = `
      import isObject from "isobject";
      import isOdd from "is-odd@3.0.1";
      const isBuffer = require("is-buffer@2.0.5");
      const again = require("isobject/index.js");
      import fs from "node:fs";
      import { axios } from "@pipedream/platform";
      module.exports = { name: "progress", version: "1", run() { this.$emit([isObject({}), isOdd(1), isBuffer(fs), typeof again, typeof axios]); } };`;
    const heard: InstallProgress[] = [];
    const prepared = await t.runtime.prepare(progressCode, (p) => heard.push(p));
    const version = prepared.packages.isobject!;
    expect(version).toMatch(/^\d+\.\d+\.\d+$/);
    const at = (index: number, step: InstallProgress['step'], name: string, v: string) => ({ step, name, version: v, index, total: 3 });
    // esbuild resolves a file's imports one after the other: import statements first, then require calls. The second
    // specifier of isobject is the same import (name and range): one install, one place.
    expect(heard).toEqual([
      at(1, 'resolving', 'isobject', 'latest'),
      at(1, 'installing', 'isobject', version),
      at(1, 'installed', 'isobject', version),
      at(2, 'cached', 'is-odd', '3.0.1'),
      at(3, 'installing', 'is-buffer', '2.0.5'),
      at(3, 'installed', 'is-buffer', '2.0.5'),
    ]);

    // The same code again is prepared already; other code with the same imports finds them in the cache.
    const cached = [at(1, 'cached', 'isobject', version), at(2, 'cached', 'is-odd', '3.0.1'), at(3, 'cached', 'is-buffer', '2.0.5')];
    const again: InstallProgress[] = [];
    await t.runtime.prepare(progressCode, (p) => again.push(p));
    expect(again).toEqual(cached);
    const other: InstallProgress[] = [];
    await t.runtime.prepare(`${progressCode}\nconst other = 1;`, (p) => other.push(p));
    expect(other).toEqual(cached);
    const result = await t.runtime.invoke(request('acct_pkg', prepared));
    expect(result.outcomes[0]!.emits).toEqual([{ event: [true, true, false, 'object', 'function'] }]);
  });

  it('quotes a long subpath of an installed package in its error, cut as every value a component gives', async () => {
    const wanted = `is-odd/${'x'.repeat(300)}`;
    const failed = await t.runtime
      .prepare(`require("is-odd@3.0.1/${'x'.repeat(300)}");\nmodule.exports = { name: "x", version: "1" };`)
      .catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(ComponentLoadError);
    expect([(failed as ComponentLoadError).code, (failed as Error).message]).toEqual([
      'package_install_failed',
      `could not install npm package "is-odd@3.0.1": ${JSON.stringify(wanted.slice(0, 100))}… (${wanted.length} characters) is not a module of the installed package`,
    ]);
  });

  it("takes the operator's registry settings from npm_config_* variables", async () => {
    const saved = { ...process.env };
    const code = 'import kindOf from "kind-of@6.0.3"; export default { name: "x", version: "1", run() { this.$emit(kindOf(1)); } };';
    // A registry nobody answers on, without retries: the install fails at once.
    process.env.npm_config_registry = 'http://127.0.0.1:9/';
    process.env.npm_config_fetch_retries = '0';
    try {
      const failed = await t.runtime.prepare(code).catch((e: unknown) => e);
      expect(failed).toMatchObject({ code: 'package_install_failed' });
      expect((failed as Error).message).toBe(
        'could not install npm package "kind-of@6.0.3": 502 registry 127.0.0.1:9 unreachable (ECONNREFUSED) - GET http://127.0.0.1:9/kind-of',
      );
    } finally {
      for (const key of Object.keys(process.env)) if (!(key in saved)) delete process.env[key];
      Object.assign(process.env, saved);
    }
    // With the variables gone, the same package installs from the usual registry.
    expect((await t.runtime.prepare(code)).packages['kind-of']).toBe('6.0.3');
  });

  it("reads a default import of a CommonJS package as Node does, though the package sets __esModule (Notion's sources)", async () => {
    // notion.app.mjs of the reference registry: `import notion from "@notionhq/client"; new notion.Client({ auth })`. The
    // package is compiled TypeScript (`exports.__esModule = true`, no `exports.default`): in Node's ES modules the default
    // import is `module.exports`; the bundle read it as `exports.default`, undefined, and every Notion source failed.
    const esm =
      'import notion from "@notionhq/client@5.26.0";\nimport * as all from "@notionhq/client@5.26.0";\nexport default {\n  name: "notion", version: "1",\n  run() { this.$emit({ client: typeof notion.Client, same: notion.Client === all.Client }); throw new Error("after"); },\n};';
    const result = await t.runtime.invoke(request('acct_pkg', await t.runtime.prepare(esm)));
    expect(result.outcomes[0]!.error!.message).toBe('after');
    // The source map still names the code component.js.
    expect(result.outcomes[0]!.error!.stack).toContain('at Object.run (component.js:5:');
    const cjs = await t.runtime.prepare(
      'const notion = require("@notionhq/client@5.26.0"); module.exports = { name: "n", version: "1", run() { this.$emit(typeof notion.Client); } };',
    );
    expect((await t.runtime.invoke(request('acct_pkg', cjs))).outcomes[0]!.emits).toEqual([{ event: 'function' }]);
    const emitted = await t.runtime.invoke(request('acct_pkg', await t.runtime.prepare(esm.replace('throw new Error("after");', ''))));
    expect(emitted.outcomes[0]!.emits).toEqual([{ event: { client: 'function', same: true } }]);
  });

  it("keeps a CommonJS bundle made before ES modules got Node's interop, and makes an ES module's again, once", async () => {
    const cjs = 'module.exports = { name: "old cjs", version: "1", run() { this.$emit(1); } };';
    const esm = 'export default { name: "old esm", version: "1", run() { this.$emit(2); } };';
    const [cjsPrepared, esmPrepared] = [await t.runtime.prepare(cjs), await t.runtime.prepare(esm)];
    // As an earlier version left them: manifests without `interop`, bundles marked so that a rebuild shows.
    for (const prepared of [cjsPrepared, esmPrepared]) {
      const manifestPath = prepared.artifactPath.replace(/\.cjs$/, '.json');
      const { interop: _, ...older } = JSON.parse(fs.readFileSync(manifestPath, 'utf8'));
      fs.writeFileSync(manifestPath, JSON.stringify(older));
      fs.appendFileSync(prepared.artifactPath, '\n// made before\n');
    }
    // A fresh runtime on the same data directory, as after an upgrade (this one remembers what it prepared).
    const { runtime: restarted } = reopenRuntime(t);
    try {
      await restarted.prepare(cjs);
      await restarted.prepare(esm);
      expect(fs.readFileSync(cjsPrepared.artifactPath, 'utf8')).toContain('// made before');
      expect(fs.readFileSync(esmPrepared.artifactPath, 'utf8')).not.toContain('// made before');
      for (const prepared of [cjsPrepared, esmPrepared]) {
        expect(JSON.parse(fs.readFileSync(prepared.artifactPath.replace(/\.cjs$/, '.json'), 'utf8')).interop).toBe('node');
      }
    } finally {
      await restarted.close();
    }
  });

  it('fails the save with package_install_failed, naming the package', async () => {
    const missing = await t.runtime
      .prepare('import x from "tributary-no-such-package-a1b2c3"; export default { name: "x", version: "1" };')
      .catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(ComponentLoadError);
    expect(missing).toMatchObject({ code: 'package_install_failed', details: { import: 'tributary-no-such-package-a1b2c3' } });
    expect((missing as Error).message).toContain('"tributary-no-such-package-a1b2c3"');

    const badVersion = await t.runtime.prepare('import x from "is-odd@99.99.99"; export default { name: "x", version: "1" };').catch((e: unknown) => e);
    expect(badVersion).toMatchObject({ code: 'package_install_failed' });
    expect((badVersion as Error).message).toContain('"is-odd@99.99.99"');

    const notAName = await t.runtime.prepare('import x from "Not A Package!"; export default { name: "x", version: "1" };').catch((e: unknown) => e);
    expect(notAName).toMatchObject({ code: 'package_install_failed' });
  });
});
