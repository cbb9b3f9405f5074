// Closing the runtime: workers are killed, calls in progress and waiting calls reject, later calls are refused.
import { afterAll, describe, expect, it } from 'vitest';
import { RuntimeClosedError } from '../../src/runtime/index.js';
import { createRuntime, request } from './helpers.js';

const t = createRuntime({ poolSize: 1 });
afterAll(async () => {
  await t.close();
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('close()', () => {
  it('kills the workers and rejects the calls in progress and those waiting', async () => {
    // respond() tells the test the run is under way in the worker; the run then never ends.
    const prepared = await t.runtime.prepare(`module.exports = {
      name: "hang", version: "1", props: { http: { type: "$.interface.http", customResponse: true } },
      async run() { this.http.respond({ status: 200, body: String(process.pid) }); await new Promise(() => {}); },
    };`);
    let pid = 0;
    let markRunning!: () => void;
    const running = new Promise<void>((resolve) => (markRunning = resolve));
    const hanging = t.runtime.invoke(request('acct_close', prepared, { customResponse: true, timeoutMs: 60_000 }), {
      onRespond(response) {
        pid = Number(response.body);
        markRunning();
      },
    });
    await running;
    expect(alive(pid)).toBe(true);
    // With a pool of one, these wait for the hanging call.
    const waiting = t.runtime.invoke(request('acct_other', prepared));
    const inspecting = t.runtime.inspect('acct_third', prepared);

    const settled = Promise.allSettled([hanging, waiting, inspecting]);
    await t.runtime.close();
    for (const result of await settled) {
      expect(result.status).toBe('rejected');
      expect((result as PromiseRejectedResult).reason).toBeInstanceOf(RuntimeClosedError);
    }
    expect(alive(pid)).toBe(false);
    await expect(t.runtime.invoke(request('acct_close', prepared))).rejects.toBeInstanceOf(RuntimeClosedError);
  });
});
