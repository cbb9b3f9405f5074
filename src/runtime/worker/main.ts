// Entry of a worker process: answers the server's load, invoke and configure requests, one at a time, by running component code.
import type { InitMessage, ToWorker } from '../protocol.js';
import type { EgressPolicy } from './egress-rules.js';
import { captureConsole } from './console.js';
import { configure } from './configure.js';
import { installEgressGuard } from './egress-guard.js';
import { LoadFailure } from './failure.js';
import { harden, type Send } from './harden.js';
import { failCurrentCall, invoke, logToCurrentCall } from './invoke.js';
import { MAX_PENDING_TIMERS } from './limits.js';
import { refuseListening } from './listen-guard.js';
import { installDefineComponent, loadComponent } from './load.js';
import { capPendingTimers } from './timer-cap.js';

// Source maps from here on: component bundles carry theirs inline, and the worker's own files (loaded above) need none,
// which keeps about 0.9 MB of parsed maps out of every worker (BENCHMARKS.md, session 16).
process.setSourceMapsEnabled(true);
const channel = harden();
const { exit } = channel;
// The server passes the egress policy as the first argument (JSON); a worker started without one allows nothing internal.
const egress: EgressPolicy = process.argv[2] ? (JSON.parse(process.argv[2]) as EgressPolicy) : { allowPrivateNetwork: false, allow: [] };
// Before the egress guard: both find the handle classes through the original net.Socket.prototype.connect.
refuseListening((message) => logToCurrentCall('error', message));
installEgressGuard(egress, (message) => logToCurrentCall('error', message));
captureConsole(logToCurrentCall);
capPendingTimers(MAX_PENDING_TIMERS);
installDefineComponent();
process.on('uncaughtException', failCurrentCall);
process.on('unhandledRejection', failCurrentCall);
// Without the server there is no one to answer to.
process.on('disconnect', () => exit(0));

/** Internal faults (not the component's) end the worker; the server reports the exit. */
function die(error: unknown): void {
  process.stderr.write(`tributary worker fault: ${error instanceof Error ? error.stack : String(error)}\n`);
  exit(70);
}

function load(request: Extract<ToWorker, { t: 'load' }>, send: Send): void {
  try {
    const { info } = loadComponent(request.artifactPath, request.asStep === true);
    send({ t: 'loaded', id: request.id, info });
  } catch (error) {
    if (!(error instanceof LoadFailure)) throw error;
    send({ t: 'load_failed', id: request.id, code: error.code, message: error.message, details: error.details });
  }
}

function handle(message: ToWorker, send: Send): void | Promise<void> {
  switch (message.t) {
    case 'load':
      return load(message, send);
    case 'invoke':
      return invoke(message, send);
    case 'configure':
      return configure(message, send);
  }
}

let queue: Promise<void> = Promise.resolve();

// The server's first message gives the token every message of ours carries; no component code has run yet.
process.once('message', (init: InitMessage) => {
  if (init?.t !== 'init' || typeof init.token !== 'string') return die(new Error('the first message from the server was not init'));
  const send: Send = (message) => channel.send([init.token, message]);
  process.on('message', (message: ToWorker) => {
    // The server sends one request at a time; chaining keeps the order even if it did not.
    queue = queue.then(() => handle(message, send)).catch(die);
  });
  send({ t: 'ready' });
});
