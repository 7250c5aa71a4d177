/**
 * What the crash tests read straight from the `deliveries` table of a killed process (PostgreSQL):
 * the queued records it still held a lease on when it died, which are the only ones the delivery
 * pipeline may send twice (services/notification/delivery/README.md, "Leases and crashes"), and
 * counting helpers for what a peer received more than once.
 */
import { Client } from 'pg';

/** A queued record some process holds a lease on, with the field of its payload that names it. */
export interface LeasedDelivery {
  id: string;
  channel: string;
  /** `payload.messageId` of an email, `payload.body` of an SMS (the tests make each body unique). */
  key: string;
}

/** Queued (pending or retrying) deliveries that some process holds a lease on, on the database at `url`. */
export async function leasedDeliveries(url: string): Promise<LeasedDelivery[]> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<LeasedDelivery>(
      `SELECT id, channel,
              CASE channel WHEN 'email' THEN payload->>'messageId' ELSE payload->>'body' END AS key
       FROM deliveries
       WHERE status IN ('pending', 'retrying') AND lease_owner IS NOT NULL`,
    );
    return rows;
  } finally {
    await client.end();
  }
}

/** Message-IDs of the queued email deliveries that some process holds a lease on. */
export async function leasedMessageIds(url: string): Promise<Set<string>> {
  const leased = await leasedDeliveries(url);
  return new Set(leased.filter((d) => d.channel === 'email').map((d) => d.key));
}

/** The keys counted more than once in `counts` (e.g. a peer's Message-IDs). */
export function duplicatedKeys(counts: ReadonlyMap<string, number>): string[] {
  return [...counts].filter(([, n]) => n > 1).map(([key]) => key);
}
