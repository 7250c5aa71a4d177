/** Waiting for a delivery to end, as the RPC tests read it back (GetDelivery over the wire). */
import { DeliveryStatus } from '../../shared/gen/svc/notification/v1/notification_pb';

/**
 * Calls `read` (a GetDelivery) until the delivery is final (SENT or FAILED) and returns it: `tries`
 * reads `stepMs` apart are a bound against hangs, not a timing assertion.
 */
export async function finalDelivery<D extends { status: DeliveryStatus; attempts?: unknown }>(
  read: () => Promise<D>,
  id: string,
  opts: { tries?: number; stepMs?: number } = {},
): Promise<D> {
  let d: D | undefined;
  for (let i = 0; i < (opts.tries ?? 1500); i++) {
    d = await read();
    if (d.status === DeliveryStatus.SENT || d.status === DeliveryStatus.FAILED) return d;
    await new Promise((resolve) => setTimeout(resolve, opts.stepMs ?? 10));
  }
  throw new Error(
    `delivery ${id} did not end (status ${d ? DeliveryStatus[d.status] : 'unread'}, attempts ${JSON.stringify(d?.attempts)})`,
  );
}
