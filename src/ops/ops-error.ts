// The error an operations command (backup, restore, migrate, migrate-store) refuses bad input or an unsafe state with.
export class OpsError extends Error {
  override name = 'OpsError';
}
