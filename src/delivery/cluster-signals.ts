// Tells the other nodes of a cluster what this one queued or changed, over PostgreSQL NOTIFY, so that they wake or
// drop cached rows at once instead of at their next poll; a single node (SQLite) has no one to tell.
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { PollCadence } from '../lib/poll-cadence.js';
import type { Store } from '../store/database.js';
import { listen, type Listener, notify } from '../store/live.js';
import type { DatabaseOutageLog } from '../store/outage-log.js';
import { forgetAnswers, saveAndNotifyAnswer, storedAnswers } from '../store/relayed-answers.js';
import type { HttpResponse } from '../runtime/types.js';
import type { ListenLosses } from './listen-losses.js';

/**
 * What a signal says: work queued (`invocations` by source id, `workflow_runs` by run id, `deliveries` and `sends`
 * pending, `timers` written) or rows changed (`sources`, `workflows`: evict what is cached of them; `accounts`: a key
 * was replaced, so live streams opened with the old one end; `webhooks`: deleted or retired, so their deliveries held
 * in memory are dropped).
 */
export type SignalKind = 'invocations' | 'workflow_runs' | 'deliveries' | 'sends' | 'timers' | 'sources' | 'workflows' | 'accounts' | 'webhooks';

/** Called with the ids a signal names, or with none after a lost connection: then everything may have changed. */
export type SignalHandler = (ids: string[] | undefined) => void;

/** A custom-response run's answer, sent to the node whose HTTP request waits for it: the response, or why none came. */
export interface RelayedAnswer {
  response?: HttpResponse | undefined;
  error?: { name: string; message: string } | undefined;
}

export type AnswerHandler = (id: string, answer: RelayedAnswer) => void;

/** The ids (invocations, workflow runs) whose HTTP requests wait on this node for an answer. */
export type WaitingAnswers = () => string[];

export interface ClusterSignals {
  /** Coalesced: signals of one turn of the event loop go out together, after it. */
  signal(kind: SignalKind, ids?: readonly string[]): void;
  on(kind: SignalKind, handler: SignalHandler): void;
  /** Sends a run's answer (by invocation or workflow run id) to every node; the one waiting for it takes it. */
  relayAnswer(id: string, answer: RelayedAnswer): void;
  /** `waiting`: what is read again from the stored answers after the answer connection was lost. */
  onAnswer(handler: AnswerHandler, waiting: WaitingAnswers): void;
  start(): Promise<void>;
  close(): Promise<void>;
}

/** How often a single node looks whether a key of an account with live streams was replaced by another process. */
export const KEY_LOOK_MS = 15_000;

/**
 * One node: nothing to tell. But `tributary users rotate-key` run beside it is another process, which cannot tell it
 * either: so the `accounts` handlers are called every `KEY_LOOK_MS` for every account, and a stream opened with a key
 * replaced that way (a leaked one) ends within that time instead of reading the account's events until it disconnects.
 */
export class LocalSignals implements ClusterSignals {
  private readonly looks: NodeJS.Timeout[] = [];

  signal(): void {}
  on(kind: SignalKind, handler: SignalHandler): void {
    if (kind !== 'accounts') return;
    const look = setInterval(() => handler(undefined), KEY_LOOK_MS);
    look.unref();
    this.looks.push(look);
  }
  relayAnswer(): void {}
  onAnswer(): void {}
  async start(): Promise<void> {}
  async close(): Promise<void> {
    for (const look of this.looks.splice(0)) clearInterval(look);
  }
}

const CHANNEL = 'tributary_signals';
const ANSWERS = 'tributary_answers';
/** NOTIFY payloads stop at 8,000 bytes; ids beyond this go in further notifications. */
const MAX_PAYLOAD = 7000;
/** How long a relayed answer is kept: longer than any request waits on one (a run's timeout, at most an hour, and 5 s). */
const ANSWER_KEPT_MS = 2 * 60 * 60_000;
/** How often a node deletes the answers past that age, as it relays one. */
const ANSWER_SWEEP_MS = 10 * 60_000;

interface Message {
  /** The sending node, which acted on its own signals already. */
  n: string;
  k: SignalKind;
  /** Ids; absent: look at everything of this kind. */
  i?: string[];
}

/** A signal from a process that is not a node (the `users` commands of the CLI): every node of the cluster acts on it. */
export async function signalCluster(store: Store, kind: SignalKind, ids: string[]): Promise<void> {
  if (store.dialect === 'postgres') await notify(store.db, CHANNEL, JSON.stringify({ n: 'cli', k: kind, i: ids } satisfies Message));
}

export class PostgresSignals implements ClusterSignals {
  private readonly node = randomUUID();
  private readonly handlers = new Map<SignalKind, SignalHandler[]>();
  /** Signals of this turn: per kind, the ids named (null: all). */
  private pending = new Map<SignalKind, Set<string> | null>();
  private scheduled = false;
  private listener: Listener | undefined;
  private answers: Listener | undefined;
  private answerHandler: AnswerHandler | undefined;
  private waitingAnswers: WaitingAnswers = () => [];
  private lastSweep = 0;
  private sending: Promise<void> = Promise.resolve();

  constructor(
    private readonly store: Store,
    private readonly databaseUrl: string,
    private readonly logger: Logger,
    /** Told whether signals arrive, so that the work loops poll every second only while they may not. */
    private readonly cadence: PollCadence,
    /** Where failures that are a database outage are said, once for the whole outage. */
    private readonly outages: DatabaseOutageLog,
    /** Where a lost LISTEN connection is said when the database itself stays up. */
    private readonly losses: ListenLosses,
    /** How often its LISTEN connections are asked whether they still answer (LISTEN_CHECK_MS by default). */
    private readonly listenCheckMs?: number,
  ) {}

  on(kind: SignalKind, handler: SignalHandler): void {
    this.handlers.set(kind, [...(this.handlers.get(kind) ?? []), handler]);
  }

  async start(): Promise<void> {
    this.listener = listen(this.databaseUrl, CHANNEL, (payload) => this.receive(payload), {
      onError: (error) => {
        if (!this.losses.failed(CHANNEL, error)) this.logger.warn({ err: error }, 'cluster signal connection failed; polling until it is back');
      },
      // Signals sent while the connection was down are lost: look at everything once.
      onReconnect: () => {
        this.outages.reached('read');
        this.logger.debug('cluster signal connection back; looking for work and changes missed meanwhile');
        for (const [, handlers] of this.handlers) for (const handler of handlers) handler(undefined);
      },
      onConnected: (connected) => {
        if (connected) this.losses.listening(CHANNEL);
        this.cadence.setSignalled(connected);
      },
      ...(this.listenCheckMs !== undefined && { checkEveryMs: this.listenCheckMs }),
    });
    this.answers = listen(this.databaseUrl, ANSWERS, (payload) => this.receiveAnswer(payload), {
      onError: (error) => {
        if (!this.losses.failed(ANSWERS, error)) this.logger.warn({ err: error }, 'cluster answer connection failed; reconnecting');
      },
      // Answers relayed while the connection was down reached no one here: the requests waiting read theirs back.
      onReconnect: () => void this.replayAnswers(),
      onConnected: (connected) => {
        if (connected) this.losses.listening(ANSWERS);
      },
      ...(this.listenCheckMs !== undefined && { checkEveryMs: this.listenCheckMs }),
    });
    await Promise.all([this.listener.ready, this.answers.ready]);
  }

  onAnswer(handler: AnswerHandler, waiting: WaitingAnswers): void {
    this.answerHandler = handler;
    this.waitingAnswers = waiting;
  }

  /** Hands the waiting requests the answers stored for them (one already had is ignored by its request). */
  private async replayAnswers(): Promise<void> {
    const ids = this.waitingAnswers();
    if (!ids.length) return;
    try {
      for (const row of await storedAnswers(this.store.db, ids)) this.answerHandler?.(row.id, JSON.parse(row.answer) as RelayedAnswer);
    } catch (error) {
      if (!this.outages.absorb(error))
        this.logger.warn({ err: error, ids }, 'could not read the custom responses relayed while the answer connection was down');
    }
  }

  /**
   * Sent at once (a client waits). A payload stops at 8,000 bytes: an answer too large to cross nodes becomes an
   * error saying so, so that the client hears at once rather than at its timeout.
   */
  relayAnswer(id: string, answer: RelayedAnswer): void {
    let relayed = answer;
    let payload = JSON.stringify({ n: this.node, i: id, a: relayed });
    if (Buffer.byteLength(payload) > MAX_PAYLOAD) {
      const bytes = Buffer.byteLength(JSON.stringify(answer.response ?? {}));
      const error = {
        name: 'ResponseTooLarge',
        message: `its respond() (${bytes} bytes) is larger than the ${MAX_PAYLOAD} bytes an answer may carry between nodes`,
      };
      relayed = { error };
      payload = JSON.stringify({ n: this.node, i: id, a: relayed });
    }
    const now = Date.now();
    // Stored with its notification, for a node whose answer connection is down as it goes out (see replayAnswers).
    saveAndNotifyAnswer(this.store.db, ANSWERS, id, JSON.stringify(relayed), payload, now).catch((error: unknown) => {
      if (!this.outages.absorb(error)) this.logger.warn({ err: error, id }, 'could not relay a custom response; its client gets no_response at its timeout');
    });
    if (now - this.lastSweep >= ANSWER_SWEEP_MS) {
      this.lastSweep = now;
      forgetAnswers(this.store.db, now - ANSWER_KEPT_MS).catch((error: unknown) => {
        if (!this.outages.absorb(error))
          this.logger.warn({ err: error }, 'could not delete old relayed custom responses; a relay 10 minutes later tries again');
      });
    }
  }

  private receiveAnswer(payload: string): void {
    let message: { n: string; i: string; a: RelayedAnswer };
    try {
      message = JSON.parse(payload) as typeof message;
    } catch {
      return;
    }
    if (message.n !== this.node) this.answerHandler?.(message.i, message.a);
  }

  signal(kind: SignalKind, ids?: readonly string[]): void {
    const known = this.pending.get(kind);
    if (ids === undefined) this.pending.set(kind, null);
    else if (known !== null) {
      const set = known ?? new Set<string>();
      for (const id of ids) set.add(id);
      this.pending.set(kind, set);
    }
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.flush();
    });
  }

  /** Sends the signals gathered so far, after those already on their way. */
  private flush(): void {
    if (!this.pending.size) return;
    const batch = this.pending;
    this.pending = new Map();
    this.sending = this.sending.then(() => this.send(batch));
  }

  private async send(batch: Map<SignalKind, Set<string> | null>): Promise<void> {
    for (const [kind, ids] of batch) {
      for (const message of this.messages(kind, ids)) {
        await notify(this.store.db, CHANNEL, JSON.stringify(message)).then(
          () => this.outages.reached('read'),
          (error: unknown) => {
            // The others find the work at their next poll; nothing is lost.
            if (!this.outages.absorb(error))
              this.logger.warn({ err: error, kind }, 'could not signal the cluster; other nodes find the work at their next poll');
          },
        );
      }
    }
  }

  /** The notifications for one kind: ids split so that each payload stays under the limit. */
  private messages(kind: SignalKind, ids: Set<string> | null): Message[] {
    if (ids === null) return [{ n: this.node, k: kind }];
    const out: Message[] = [];
    let current: string[] = [];
    let size = 0;
    for (const id of ids) {
      if (size + id.length + 3 > MAX_PAYLOAD && current.length) {
        out.push({ n: this.node, k: kind, i: current });
        current = [];
        size = 0;
      }
      current.push(id);
      size += id.length + 3;
    }
    if (current.length) out.push({ n: this.node, k: kind, i: current });
    return out;
  }

  private receive(payload: string): void {
    let message: Message;
    try {
      message = JSON.parse(payload) as Message;
    } catch {
      return;
    }
    if (message.n === this.node) return;
    for (const handler of this.handlers.get(message.k) ?? []) {
      try {
        handler(message.i);
      } catch (error) {
        this.logger.error({ err: error, kind: message.k }, 'a cluster signal handler failed');
      }
    }
  }

  async close(): Promise<void> {
    // What the last work of a stopping node signalled (the deliveries it gave back) still goes out.
    this.flush();
    await this.listener?.close();
    await this.answers?.close();
    await this.sending;
  }
}
