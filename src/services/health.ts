// Whether the service can do its job: the database answers.
import { isReachable, type Store } from '../store/database.js';

export class HealthService {
  constructor(private readonly store: Store) {}

  databaseReachable(): Promise<boolean> {
    return isReachable(this.store);
  }
}
