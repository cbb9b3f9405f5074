// Retries a transaction that PostgreSQL ended as the victim of a deadlock, as its documentation advises.
import { codeOf } from '../model/outages.js';

/** Attempts in all: a deadlock needs two transactions crossing at the wrong moment, which a second try seldom meets. */
const ATTEMPTS = 3;

/**
 * Runs `transaction` again when it was rolled back as a deadlock's victim (SQLSTATE 40P01); it must hold the whole
 * of its work, since nothing of a failed attempt stays. SQLite's transactions take turns and never deadlock.
 */
export async function retryingDeadlocks<T>(transaction: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await transaction();
    } catch (error) {
      if (codeOf(error) !== '40P01' || attempt >= ATTEMPTS) throw error;
    }
  }
}
