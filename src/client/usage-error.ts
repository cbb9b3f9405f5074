// A command given something it cannot use (an unknown kind, a bad --prop, a missing prop): exit code 2, no request made.
export class UsageError extends Error {
  override name = 'UsageError';
}
