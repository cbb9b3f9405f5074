// The child side of a benchmark helper process: run the one job the parent sends, answer, exit.

/** Answers the parent's one message `{ mode, ... }` with `{ ok, result }` or `{ ok: false, error }`, then exits. */
export function answerOneJob(modes) {
  process.once('message', async (job) => {
    try {
      const result = await modes[job.mode](job);
      process.send({ ok: true, result }, () => process.exit(0));
    } catch (error) {
      process.send({ ok: false, error: error?.stack ?? String(error) }, () => process.exit(1));
    }
  });
}
