// What `$` does for a workflow step (its checks of sends and delays, $.flow.exit(), $.export(), the StepOutcome it
// reports) uses the built-ins as they were before component code loaded: a step that replaced one gets the same
// checks and the same outcome as with the originals, and the account's next step finds the same worker.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InvocationOutcome } from '../../src/runtime/index.js';
import { MAX_CHANNEL_NAME_CHARS } from '../../src/runtime/worker/limits.js';
import { createRuntime, request, type TestRuntime } from './helpers.js';

let t: TestRuntime;
beforeAll(() => {
  t = createRuntime({ poolSize: 2 });
});
afterAll(async () => {
  await t.close();
});

/** `target` replaced by a function that throws an error naming it. */
const replaced = (target: string) => `${target} = function () { throw new Error(${JSON.stringify(`replaced ${target}`)}); };`;

let accounts = 0;

/**
 * Runs a step whose run body is `body` in a fresh account, then a bystander step of the same account: the step's
 * outcome, and whether the bystander ran in the same worker.
 */
async function hostileStep(body: string): Promise<{ outcome: InvocationOutcome; sameWorker: boolean }> {
  const account = `acct_replaced_steps_${++accounts}`;
  const run = async (code: string) => {
    const component = await t.runtime.prepare(code);
    const result = await t.runtime.invoke(request(account, component, { method: 'step', events: [{ steps: { trigger: { event: {} } }, props: {} }] }));
    return result.outcomes[0]!;
  };
  const before = await run('export default defineComponent({ async run() { return process.pid; } });');
  const outcome = await run(`export default defineComponent({ async run({ steps, $ }) { ${body} } });`);
  const after = await run('export default defineComponent({ async run() { return process.pid; } });');
  return { outcome, sameWorker: before.step?.returnValue === after.step?.returnValue && after.error === undefined };
}

describe('a step that replaced built-ins', () => {
  it.each([
    ['Number.isFinite', 'Number.isFinite = () => true;', '$.flow.delay(NaN);', '$.flow.delay() takes a number of milliseconds (finite, at least 0), not NaN'],
    [
      'RegExp.prototype.test',
      'RegExp.prototype.test = () => true;',
      '$.send.http({ url: "ftp://example.com/x" });',
      '$.send.http(): config.url must be an http or https URL, got "ftp://example.com/x"',
    ],
    [
      'URL.canParse',
      'URL.canParse = () => true;',
      '$.send.http({ url: "https://" });',
      '$.send.http(): config.url must be an http or https URL, got "https://"',
    ],
    [
      'String.prototype.toUpperCase',
      'String.prototype.toUpperCase = () => "GET";',
      '$.send.http({ url: "https://example.com", method: "fetch" });',
      '$.send.http(): config.method must be one of GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS, got "fetch"',
    ],
    [
      'String.prototype.split',
      'String.prototype.split = () => [];',
      '$.send.s3({ bucket: "b", prefix: "a/../b", payload: 1 });',
      '$.send.s3(): prefix may not hold "." or ".." segments',
    ],
    [
      'String.prototype[Symbol.iterator]',
      'String.prototype[Symbol.iterator] = function* () {};',
      `$.send.sse({ channel: "c".repeat(${MAX_CHANNEL_NAME_CHARS + 1}), payload: 1 });`,
      `$.send.sse(): channel may be at most ${MAX_CHANNEL_NAME_CHARS} characters`,
    ],
  ])('still refuses what it must after %s was replaced to let it through', async (_target, prelude, call, message) => {
    const { outcome, sameWorker } = await hostileStep(`${prelude} ${call} return "sent";`);
    expect({ error: outcome.error && { name: outcome.error.name, message: outcome.error.message }, step: outcome.step, sameWorker }).toEqual({
      error: { name: 'TypeError', message },
      step: undefined,
      sameWorker: true,
    });
  });

  it.each([
    ['JSON.stringify', replaced('JSON.stringify'), '$.flow.exit("done");', { exports: {}, sends: [], exit: { reason: 'done' } }, true],
    [
      'Map.prototype.delete',
      replaced('Map.prototype.delete'),
      '$.export("a", 1); $.export("a", undefined); $.export("b", 2);',
      { exports: { b: 2 }, sends: [] },
      true,
    ],
    ['Math.min', 'Math.min = () => NaN;', '$.flow.delay(5);', { exports: {}, sends: [], delayMs: 5 }, true],
    // Keys added to Object.prototype retire the worker after the call (worker/pristine.ts); the call itself still reports right.
    [
      'setters on Object.prototype',
      'for (const name of ["returnValue", "exit", "delayMs"]) Object.defineProperty(Object.prototype, name, { __proto__: null, set() {}, configurable: true });',
      '$.flow.delay(5); return { r: 1 };',
      { exports: {}, sends: [], delayMs: 5, returnValue: { r: 1 } },
      false,
    ],
  ])('reports what it did as with the originals after %s was replaced', async (_target, prelude, body, step, kept) => {
    const { outcome, sameWorker } = await hostileStep(`${prelude} ${body}`);
    expect({ error: outcome.error, step: outcome.step, sameWorker }).toEqual({ error: undefined, step, sameWorker: kept });
  });
});
