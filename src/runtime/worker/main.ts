// Entry of a worker process: answers the server's load, invoke and configure requests, one at a time, by running component code.
import fs from 'node:fs';
import type { InitMessage, ToWorker } from '../protocol.js';
import type { EgressPolicy } from './egress-rules.js';
import { captureConsole } from './console.js';
import { configure } from './configure.js';
import { installEgressGuard } from './egress-guard.js';
import { LoadFailure } from './failure.js';
import { harden, type Send } from './harden.js';
import { checkAfterLeftoverTimer, failCurrentCall, invoke, logToCurrentCall } from './invoke.js';
import { MAX_PENDING_TIMERS } from './limits.js';
import { refuseListening } from './listen-guard.js';
import { installDefineComponent, loadComponent } from './load.js';
import { ArrayPrototypePush, ArrayPrototypeShift, firstLine, JSONParse } from './primordials.js';
import { recordPristineBuiltins, reportIfSpoiled } from './pristine.js';
import { capPendingTimers } from './timer-cap.js';

// Source maps from here on: component bundles carry theirs inline, and the worker's own files (loaded above) need none,
// which keeps about 0.9 MB of parsed maps out of every worker (BENCHMARKS.md, session 16).
process.setSourceMapsEnabled(true);
const channel = harden();
const { exit } = channel;
// The server passes the egress policy as the first argument (JSON); a worker started without one allows nothing internal.
const egress: EgressPolicy = process.argv[2] ? (JSONParse(process.argv[2]) as EgressPolicy) : { allowPrivateNetwork: false, allow: [] };
// Before the egress guard: both find the handle classes through the original net.Socket.prototype.connect.
refuseListening((message) => logToCurrentCall('error', message));
installEgressGuard(egress, (message) => logToCurrentCall('error', message));
captureConsole(logToCurrentCall);
capPendingTimers(MAX_PENDING_TIMERS, checkAfterLeftoverTimer);
installDefineComponent();
process.on('uncaughtException', failCurrentCall);
process.on('unhandledRejection', failCurrentCall);
// Without the server there is no one to answer to.
process.on('disconnect', () => exit(0));

const writeSync = fs.writeSync;

/**
 * Internal faults (not the component's) end the worker; the server reports the exit with the last lines written here.
 * The fault comes last, on one line: the lines above it (the stack) locate it, and it says what broke. Read defensively:
 * what was thrown may be the component's, from a built-in it replaced.
 */
function die(error: unknown): void {
  let text: string;
  let headline: string;
  try {
    text = error instanceof Error && typeof error.stack === 'string' ? error.stack : String(error);
    headline = firstLine(text);
  } catch {
    text = headline = 'a value that cannot be shown';
  }
  try {
    writeSync(2, `${text}\ntributary worker fault (the worker's own code failed; component code may have replaced a built-in it relies on): ${headline}\n`);
  } catch {
    // stderr closed: the exit alone is reported.
  }
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

/** Sends the one message that ends a load or configure request, after saying whether its code spoiled the worker. */
function lastMessage(send: Send): Send {
  return (message) => {
    reportIfSpoiled(send);
    send(message);
  };
}

function handle(message: ToWorker, send: Send): void | Promise<void> {
  switch (message.t) {
    case 'load':
      return load(message, lastMessage(send));
    case 'invoke':
      return invoke(message, send);
    case 'configure':
      return configure(message, lastMessage(send));
  }
}

/** Requests not yet handled, oldest first. The server sends one at a time; the queue keeps the order even if it did not. */
const pending: ToWorker[] = [];
let draining = false;

/**
 * Handles the pending requests one after the other. Awaiting the worker's own (native) promises looks nothing up
 * that component code could replace, where chaining them with `then` and `catch` would call whatever it put there.
 */
async function drain(send: Send): Promise<void> {
  draining = true;
  try {
    for (let message = ArrayPrototypeShift(pending); message !== undefined; message = ArrayPrototypeShift(pending)) await handle(message, send);
  } catch (error) {
    die(error);
  }
  draining = false;
}

// The server's first message gives the token every message of ours carries; no component code has run yet.
process.once('message', (init: InitMessage) => {
  if (init?.t !== 'init' || typeof init.token !== 'string') return die(new Error('the first message from the server was not init'));
  recordPristineBuiltins();
  const send: Send = (message) => channel.send([init.token, message]);
  process.on('message', (message: ToWorker) => {
    ArrayPrototypePush(pending, message);
    if (!draining) void drain(send);
  });
  send({ t: 'ready' });
});
