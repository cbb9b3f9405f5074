// A component that cannot be loaded, carrying the ComponentLoadError code the server will report.
import type { LoadFailureCode } from '../protocol.js';

export class LoadFailure extends Error {
  override name = 'LoadFailure';
  constructor(
    readonly code: LoadFailureCode,
    message: string,
    readonly details?: { prop?: string },
  ) {
    super(message);
  }
}
