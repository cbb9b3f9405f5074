// Waits for a condition instead of sleeping: polls `probe` until it returns a value that passes `until`.

export async function waitFor<T>(
  probe: () => Promise<T>,
  until: (value: T) => boolean,
  options: { timeoutMs?: number; intervalMs?: number; what?: string } = {},
): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 20_000);
  let last: T | undefined;
  for (;;) {
    last = await probe();
    if (until(last)) return last;
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${options.what ?? 'condition'}; last value: ${JSON.stringify(last)?.slice(0, 2000)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 50));
  }
}
