// The results table: one row per figure, with its baseline and the target.
// Printed as a Markdown table (readable in a terminal, pasted as is into BENCHMARKS.md).

export const COLUMNS = [
  ['bench', 'benchmark'],
  ['metric', 'metric'],
  ['value', 'Tributary'],
  ['baseline', 'baseline'],
  ['target', 'target (issue 6)'],
  ['status', 'status'],
];

export function row(bench, metric, value, baseline = '', target = '', status = '') {
  return { bench, metric, value, baseline, target, status };
}

export const met = (ok) => (ok ? 'met' : 'MISSED');

export function renderTable(rows) {
  const cells = [COLUMNS.map(([, title]) => title), ...rows.map((r) => COLUMNS.map(([key]) => String(r[key] ?? '').replaceAll('|', '\\|')))];
  const widths = COLUMNS.map((_, i) => Math.max(...cells.map((c) => c[i].length)));
  const line = (c) => `| ${c.map((v, i) => v.padEnd(widths[i])).join(' | ')} |`;
  return [line(cells[0]), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...cells.slice(1).map(line)].join('\n');
}
