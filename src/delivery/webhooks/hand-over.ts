// How the commit path hands new webhook deliveries to the sender without a claim.
import type { ClaimedDelivery } from '../../store/deliveries.js';

/**
 * Where new webhook deliveries go: the sender. Deliveries it can take soon are inserted already leased to it and
 * handed over in memory after the commit, so that sending them costs no claim; the rest it claims from the table.
 */
export interface DeliveryQueue {
  /** A lease for at most `count` of the deliveries of account `userId` inserted now (fewer when the sender already holds much), or undefined. */
  leaseForNew(nowMs: number, userId: string, count: number): { owner: string; untilMs: number; count: number } | undefined;
  /** After the commit: sends deliveries inserted with a lease from leaseForNew. */
  handOver(deliveries: ClaimedDelivery[]): void;
  /** After the commit: deliveries were inserted without a lease; claim them. */
  wake(): void;
}
