// The error a database written by a newer Tributary is refused with; its own file so the CLI can name it without loading the store.
export class NewerDatabaseError extends Error {
  override name = 'NewerDatabaseError';
}
