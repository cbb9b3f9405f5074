// Manual runs: `POST /sources/{id}/run` queues an invocation of an active source with the given event.
import type { Dispatcher } from '../engine/dispatcher.js';
import { ServiceError } from '../model/errors.js';
import type { QuotaService } from './quotas.js';
import type { SourceService } from './sources.js';

export class RunService {
  constructor(
    private readonly sources: SourceService,
    private readonly quotas: QuotaService,
    private readonly dispatcher: Dispatcher,
  ) {}

  /** Queues a run of the account's source; 409 when it is inactive, 429 over quota. Returns the invocation id. */
  async runNow(accountId: string, sourceId: string, event: unknown): Promise<string> {
    const { source } = await this.sources.get(accountId, sourceId);
    if (source.active !== 1)
      throw new ServiceError('conflict', `source "${source.id}" is inactive; activate it with PATCH /v1/sources/${source.id} {"active": true}`);
    await this.quotas.admit(source.user_id);
    const [id] = await this.dispatcher.enqueue([{ sourceId: source.id, userId: source.user_id, trigger: 'manual', event }]);
    return id!;
  }
}
