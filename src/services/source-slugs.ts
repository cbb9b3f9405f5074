// A source's name slug: made from its name, unique in its account, and found anew when a concurrent deploy took it.
import { randomInt } from 'node:crypto';
import type { Store } from '../store/database.js';
import * as sources from '../store/sources.js';

export function slugify(name: string): string {
  const slug = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    // Cut before trimming: a cut that lands on a word break would otherwise leave a trailing hyphen.
    .slice(0, 64)
    .replace(/^-+|-+$/g, '');
  return slug || 'source';
}

export class SourceSlugs {
  constructor(private readonly store: Store) {}

  /** `base`, else the next free `base-N`; a few indexed look-ups however many sources share the name. */
  async unique(accountId: string, name: string, ownSlug?: string): Promise<string> {
    const base = slugify(name);
    if (base === ownSlug || !(await sources.slugTaken(this.store.db, accountId, base))) return base;
    let n = (await sources.countSuffixedSlugs(this.store.db, accountId, base)) + 1;
    // Gaps left by deleted sources mean the count may land on a taken slug; step down to the first free one.
    while (n > 1 && !(await sources.slugTaken(this.store.db, accountId, `${base}-${n - 1}`))) n--;
    while (`${base}-${n}` !== ownSlug && (await sources.slugTaken(this.store.db, accountId, `${base}-${n}`))) n++;
    return `${base}-${n}`;
  }

  /**
   * Retries a write that lost a race for a slug (deploys with one name at once) with a fresh slug. Contenders that
   * keep colliding on the next free number (each sees only what is committed) spread out over random numbers
   * after a few rounds, so that many at once all succeed without taking turns.
   */
  async withFresh<T>(row: sources.SourceRow, name: string, write: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await write();
      } catch (error) {
        if (!sources.isSlugConflict(error) || attempt >= 10) throw error;
        row.name_slug = attempt < 2 ? await this.unique(row.user_id, name) : await this.randomFree(row.user_id, name);
      }
    }
  }

  private async randomFree(accountId: string, name: string): Promise<string> {
    for (;;) {
      const slug = `${slugify(name)}-${randomInt(2, 1_000_000)}`;
      if (!(await sources.slugTaken(this.store.db, accountId, slug))) return slug;
    }
  }
}
