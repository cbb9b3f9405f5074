// Inserts the workflow runs queued in one turn of the event loop together, in one transaction.
import type { DialectName } from '../store/database.js';
import type { TransactionGroup } from '../store/group-commit.js';
import * as workflows from '../store/workflows.js';

export class RunInserts {
  /** The rows of this turn's insert, and the insert; closed once its transaction starts. */
  private pending: { rows: workflows.WorkflowRunRow[]; done: Promise<workflows.WorkflowRunRow[]> } | undefined;

  constructor(
    private readonly transactions: TransactionGroup,
    private readonly dialect: DialectName,
  ) {}

  /** Adds `rows` to this turn's insert; resolves with those of them inserted (a run of a workflow deleted meanwhile is not). */
  async insert(rows: workflows.WorkflowRunRow[]): Promise<workflows.WorkflowRunRow[]> {
    if (!this.pending) {
      const pending: workflows.WorkflowRunRow[] = [];
      const done = this.transactions.run((trx) => {
        // Closed once its transaction starts; later rows go to the next insert.
        if (this.pending?.rows === pending) this.pending = undefined;
        return workflows.insertRuns(trx, this.dialect, pending);
      });
      this.pending = { rows: pending, done };
      // A transaction that never started (the database unreachable) must not keep later runs waiting on its failure.
      done.catch(() => {
        if (this.pending?.rows === pending) this.pending = undefined;
      });
    }
    this.pending.rows.push(...rows);
    const inserted = new Set((await this.pending.done).map((r) => r.id));
    return rows.filter((r) => inserted.has(r.id));
  }
}
