// The report of a worker that died unexpectedly names no folder of the server's: not its install, not the account's code.
import { describe, expect, it } from 'vitest';
import { crashMessage } from '../../src/runtime/crash-message.js';

const ROOT = '/opt/tributary';
const ACCOUNT = '/var/lib/tributary/code/accounts/3f9a';

describe('crashMessage', () => {
  it("names the server's files from its package root, the account's bundles by name and npm packages from node_modules/", () => {
    const stderr = [
      'tributary worker fault: Error: no json',
      `    at JSON.stringify (${ACCOUNT}/component.js:1:94)`,
      `    at flush (file://${ROOT}/dist/runtime/worker/invoke.js:188:24)`,
      '    at get (/var/lib/tributary/packages/store/ab12/node_modules/axios/lib/core.js:7:3)',
    ].join('\n');
    expect(crashMessage('exit code 70', `${stderr}\n`, [ROOT, ACCOUNT])).toBe(
      'the worker exited unexpectedly (exit code 70):     at JSON.stringify (component.js:1:94) |     at flush (dist/runtime/worker/invoke.js:188:24) |     at get (node_modules/axios/lib/core.js:7:3)',
    );
  });

  it('leaves a folder inside another out whole, and a tail without paths as it is', () => {
    expect(crashMessage('signal SIGSEGV', `at x (${ROOT}/data/code/y.js:1:1)`, [ROOT, `${ROOT}/data/code`])).toBe(
      'the worker exited unexpectedly (signal SIGSEGV): at x (y.js:1:1)',
    );
    expect(crashMessage('exit code 1', 'Segmentation fault', ['/'])).toBe('the worker exited unexpectedly (exit code 1): Segmentation fault');
    expect(crashMessage('exit code 1', '  \n', [ROOT])).toBe('the worker exited unexpectedly (exit code 1)');
  });
});
