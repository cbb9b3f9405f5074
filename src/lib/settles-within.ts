// Waits for work up to a deadline, without cancelling it: a graceful stop gives running work a bounded time.

/** True when `work` settles within `ms`; false when the time ran out first (the work goes on, unawaited). */
export async function settlesWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([work.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
