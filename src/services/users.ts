// Accounts and their API keys: creation, look-up by key, rotation, and the `GET /users/me` shape.
import type { Clock } from '../lib/clock.js';
import { createHash, randomBytes } from 'node:crypto';
import type { Store } from '../store/database.js';
import { newId, nowSeconds } from '../model/ids.js';
import * as users from '../store/users.js';
import { readUsage } from '../store/usage.js';
import { billingPeriod, dayPeriod } from '../model/periods.js';
import { ServiceError, invalid, notFound } from '../model/errors.js';
import { quote } from '../runtime/worker/quote.js';

export type Plan = 'free' | 'paid';

export interface Account {
  id: string;
  username: string;
  email: string;
  plan: Plan;
  createdAt: number;
}

export interface NewAccount extends Account {
  /** Shown once; only its hash is stored. */
  apiKey: string;
}

const USERNAME = /^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,63}$/;
const EMAIL = /^[^\s@]+@[^\s@]+$/;

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

function generateApiKey(): string {
  return `trb_${randomBytes(24).toString('base64url')}`;
}

function toAccount(row: users.UserRow): Account {
  return { id: row.id, username: row.username, email: row.email, plan: row.plan, createdAt: row.created_at };
}

/** The `GET /users/me` body: free-plan and paid-plan shapes differ, as the spec's User table says. */
export type UserView =
  | {
      id: string;
      username: string;
      email: string;
      api_key: string;
      daily_compute_time_quota: number;
      daily_compute_time_used: number;
      daily_invocations_quota: number;
      daily_invocations_used: number;
    }
  | {
      id: string;
      username: string;
      email: string;
      billing_period_start_ts: number;
      billing_period_end_ts: number;
      billing_period_invocations: number;
    };

export interface PlanQuotas {
  freeDailyInvocations: number;
  freeDailyComputeMs: number;
}

export class UserService {
  private readonly keyRotated: Array<(accountId: string) => void> = [];

  constructor(
    private readonly store: Store,
    private readonly quotas: PlanQuotas,
    private readonly clock: Clock,
  ) {}

  /** The spec's User for this account; free-plan accounts see the key this request presented. */
  async describe(account: Account, presentedKey: string, nowMs = this.clock.now()): Promise<UserView> {
    const base = { id: account.id, username: account.username, email: account.email };
    if (account.plan === 'paid') {
      const period = billingPeriod(account.createdAt, nowMs);
      const usage = await readUsage(this.store.db, account.id, period.key);
      return { ...base, billing_period_start_ts: period.start, billing_period_end_ts: period.end, billing_period_invocations: usage.invocations };
    }
    const usage = await readUsage(this.store.db, account.id, dayPeriod(nowMs));
    return {
      ...base,
      api_key: presentedKey,
      daily_compute_time_quota: this.quotas.freeDailyComputeMs,
      daily_compute_time_used: usage.computeMs,
      daily_invocations_quota: this.quotas.freeDailyInvocations,
      daily_invocations_used: usage.invocations,
    };
  }

  async create(input: { username: string; email: string; plan?: Plan }): Promise<NewAccount> {
    const plan = input.plan ?? 'free';
    if (!USERNAME.test(input.username)) {
      throw invalid(`username ${quote(input.username)} must be 1-64 letters, digits, "_", "." or "-", starting with a letter or digit`);
    }
    if (!EMAIL.test(input.email)) throw invalid(`email ${quote(input.email)} is not an email address`);
    if (plan !== 'free' && plan !== 'paid') throw invalid(`plan must be "free" or "paid", got ${quote(plan)}`);
    const taken = () => new ServiceError('conflict', `username ${quote(input.username)} is taken`);
    if (await users.findUserByIdOrUsername(this.store.db, input.username)) throw taken();
    const apiKey = generateApiKey();
    const now = nowSeconds();
    const row: users.UserRow = {
      id: newId('u'),
      username: input.username,
      email: input.email,
      plan,
      api_key_hash: hashApiKey(apiKey),
      created_at: now,
      updated_at: now,
    };
    // Checked again by the insert: another process (a cluster node starting beside this one) may have taken it since.
    if (!(await users.insertUser(this.store.db, row))) throw taken();
    return { ...toAccount(row), apiKey };
  }

  /**
   * The first account (`admin`, paid), when there is none yet. Undefined when one exists, or when another node of a
   * cluster starting at the same time on a fresh database created it first.
   */
  async createFirstAccount(): Promise<NewAccount | undefined> {
    if ((await this.count()) > 0) return undefined;
    try {
      return await this.create({ username: 'admin', email: 'admin@localhost', plan: 'paid' });
    } catch (error) {
      if (error instanceof ServiceError && error.code === 'conflict') return undefined;
      throw error;
    }
  }

  async authenticate(apiKey: string): Promise<Account | undefined> {
    const row = await users.findUserByKeyHash(this.store.db, hashApiKey(apiKey));
    return row && toAccount(row);
  }

  async list(): Promise<Account[]> {
    return (await users.listAllUsers(this.store.db)).map(toAccount);
  }

  async count(): Promise<number> {
    return users.countUsers(this.store.db);
  }

  /** Replaces the account's key; the old key stops working at once. */
  async rotateKey(idOrUsername: string): Promise<NewAccount> {
    const row = await users.findUserByIdOrUsername(this.store.db, idOrUsername);
    if (!row) throw notFound(`user ${quote(idOrUsername)}`);
    const apiKey = generateApiKey();
    await users.setUserKeyHash(this.store.db, row.id, hashApiKey(apiKey), nowSeconds());
    for (const listener of this.keyRotated) listener(row.id);
    return { ...toAccount(row), apiKey };
  }

  /** Told after a key was replaced: what was opened with the old key (live streams) ends. */
  onKeyRotated(listener: (accountId: string) => void): void {
    this.keyRotated.push(listener);
  }
}
