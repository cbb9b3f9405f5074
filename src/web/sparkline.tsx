// A small bar chart of events per minute, with its numbers in words for those who cannot see it.

export const SPARK_MINUTES = 30;

/** Counts per minute over the last `minutes` minutes, oldest first, from event times in epoch milliseconds. */
export function perMinute(times: number[], now = Date.now(), minutes = SPARK_MINUTES): number[] {
  const counts = new Array<number>(minutes).fill(0);
  const end = Math.floor(now / 60_000);
  for (const time of times) {
    const slot = minutes - 1 - (end - Math.floor(time / 60_000));
    if (slot >= 0 && slot < minutes) counts[slot] = (counts[slot] ?? 0) + 1;
  }
  return counts;
}

export function Sparkline(props: { counts: number[]; capped?: boolean }) {
  const { counts } = props;
  const max = Math.max(1, ...counts);
  const total = counts.reduce((a, b) => a + b, 0);
  const width = counts.length * 3;
  const label = `${total}${props.capped ? ' or more' : ''} ${total === 1 && !props.capped ? 'event' : 'events'} in the last ${counts.length} minutes`;
  return (
    <svg class="sparkline" viewBox={`0 0 ${width} 20`} width={width * 2} height={24} role="img" aria-label={label} preserveAspectRatio="none">
      <title>{label}</title>
      {counts.map((count, i) => (
        <rect key={i} x={i * 3} y={20 - (count / max) * 20} width={2} height={Math.max((count / max) * 20, count ? 1 : 0.5)} class={count ? 'on' : 'off'} />
      ))}
    </svg>
  );
}
