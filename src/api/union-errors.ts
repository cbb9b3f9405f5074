// A value that matches no branch of a union is told by the branch it was meant for, not by every branch at once.
//
// With allErrors, the validator reports each branch's complaints plus "must match a schema in anyOf": a timer trigger
// with `interval_seconds: 0` read "trigger.type must be "http"; trigger.interval_seconds must be >= 1; trigger must
// have required property 'cron'; … trigger must be null", ten messages of which one was meant.

/** The fields of a validator error this reads (Ajv's ErrorObject). */
export interface ValidationItem {
  instancePath: string;
  schemaPath: string;
  keyword: string;
  params: Record<string, unknown>;
  message?: string | undefined;
}

const depth = (instancePath: string) => (instancePath ? instancePath.split('/').length - 1 : 0);

/**
 * A branch is not the one meant when the value is of another JSON type than it takes, or its tag (a `const` or `enum`
 * at the value or one of its fields, such as `type: "http"`) differs.
 */
function ruledOut(errors: ValidationItem[], unionPath: string): boolean {
  return errors.some(
    (e) =>
      (e.keyword === 'type' && e.instancePath === unionPath) ||
      ((e.keyword === 'const' || e.keyword === 'enum') && e.instancePath.startsWith(unionPath) && depth(e.instancePath) <= depth(unionPath) + 1),
  );
}

/** What a value none of the branches takes is told: the tags they take (`must be one of …`), else the types. */
function noBranchFits(branches: ValidationItem[][], unionPath: string, schemaPath: string): ValidationItem[] {
  const all = branches.flat();
  const tags = all.filter((e) => e.keyword === 'const' || e.keyword === 'enum');
  if (tags.length) {
    // The tag nearest the union's value: its own (a union of literals), else its fields' (`trigger.type`).
    const at = tags.reduce((a, b) => (depth(b.instancePath) < depth(a.instancePath) ? b : a)).instancePath;
    const values = tags
      .filter((e) => e.instancePath === at)
      .flatMap((e) => (e.keyword === 'const' ? [e.params.allowedValue] : ((e.params.allowedValues as unknown[]) ?? [])));
    const allowedValues = [...new Map(values.map((v) => [JSON.stringify(v), v])).values()];
    return [{ instancePath: at, schemaPath, keyword: 'enum', params: { allowedValues } }];
  }
  const types = [...new Set(all.filter((e) => e.keyword === 'type' && e.instancePath === unionPath).map((e) => String(e.params.type)))];
  return [{ instancePath: unionPath, schemaPath, keyword: 'type', params: { type: types }, message: `must be ${types.join(' or ')}` }];
}

/**
 * Forms of one tag told apart by their fields (a timer's `interval_seconds` or `cron`), each missing only its own,
 * or each refusing only another's: one complaint naming the choice, not one per form ("must have required property
 * 'interval_seconds'; … 'cron'" read as if both were needed, "must not have the field "cron"; … "interval_seconds""
 * as if neither were allowed).
 */
function formsTied(branches: ValidationItem[][]): ValidationItem[] | undefined {
  if (branches.length < 2 || branches.some((errs) => errs.length !== 1)) return undefined;
  const errors = branches.map((errs) => errs[0]!);
  const { instancePath, schemaPath, keyword } = errors[0]!;
  if (errors.some((e) => e.instancePath !== instancePath || e.keyword !== keyword)) return undefined;
  const field = keyword === 'required' ? 'missingProperty' : keyword === 'additionalProperties' ? 'additionalProperty' : undefined;
  if (!field) return undefined;
  const names = [...new Set(errors.map((e) => JSON.stringify(String(e.params[field]))))];
  const message = keyword === 'required' ? `must have one of the fields ${names.join(', ')}` : `may have only one of the fields ${names.sort().join(', ')}`;
  return [{ instancePath, schemaPath, keyword: 'oneOfFields', params: {}, message }];
}

/** The errors with each failed union's reduced to those of the branch (or branches) the value was most likely meant for. */
export function simplifyUnionErrors<T extends ValidationItem>(errors: readonly T[]): ValidationItem[] {
  let items: ValidationItem[] = [...errors];
  // Innermost unions first: a union's branch may hold another union, already reduced to what it meant by then.
  const unions = items.filter((e) => e.keyword === 'anyOf').sort((a, b) => b.schemaPath.length - a.schemaPath.length);
  for (const union of unions) {
    const prefix = `${union.schemaPath}/`;
    const byBranch = new Map<string, ValidationItem[]>();
    for (const e of items) {
      if (!e.schemaPath.startsWith(prefix)) continue;
      const branch = e.schemaPath.slice(prefix.length).split('/')[0]!;
      byBranch.set(branch, [...(byBranch.get(branch) ?? []), e]);
    }
    if (!byBranch.size) continue;
    const branches = [...byBranch.values()];
    const candidates = branches.filter((errs) => !ruledOut(errs, union.instancePath));
    let kept: ValidationItem[];
    if (candidates.length) {
      // Of the branches that could be meant, the nearest misses: the fewest complaints.
      const fewest = Math.min(...candidates.map((errs) => errs.length));
      const nearest = candidates.filter((errs) => errs.length === fewest);
      kept = formsTied(nearest) ?? nearest.flat();
    } else kept = noBranchFits(branches, union.instancePath, union.schemaPath);
    const replaced = new Set<ValidationItem>([union, ...branches.flat()]);
    const at = items.indexOf(union);
    items = [...items.slice(0, at).filter((e) => !replaced.has(e)), ...kept, ...items.slice(at + 1).filter((e) => !replaced.has(e))];
  }
  // One complaint said twice (two timer branches both refusing the same field) is said once.
  return [...new Map(items.map((e) => [`${e.instancePath}|${e.keyword}|${JSON.stringify(e.params)}|${e.message}`, e])).values()];
}
