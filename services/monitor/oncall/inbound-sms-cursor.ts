/**
 * Where the inbound SMS consumer (inbound-sms.ts) keeps the id of the last message it handled: the
 * monitor's database (table `oncall_inbound_sms_cursor`, migration 20261128800100_oncall_inbound_sms),
 * shared by the replicas, or this process's memory with `database.store_backend: memory`. A save never
 * moves the cursor back (`GREATEST`): two replicas both consume, and the one further on wins.
 */
import type { Knex } from 'knex';
import { toNumber } from '../../../shared/storage/database';
import type { InboundSmsCursor } from './inbound-sms';

/** The cursor's row name: one stream, one consumer group (every replica of the monitor). */
export const INBOUND_SMS_CURSOR_NAME = 'notification.inbound_sms';

/** The cursor of one process (memory store). */
export class MemoryInboundSmsCursor implements InboundSmsCursor {
  private id: number | null = null;

  async load(): Promise<number | null> {
    return this.id;
  }

  async save(id: number): Promise<void> {
    this.id = this.id === null ? id : Math.max(this.id, id);
  }
}

/** The cursor in the monitor's database. */
export class DatabaseInboundSmsCursor implements InboundSmsCursor {
  constructor(
    private readonly knex: Knex,
    private readonly name = INBOUND_SMS_CURSOR_NAME,
  ) {}

  async load(): Promise<number | null> {
    const { rows } = (await this.knex.raw(
      'SELECT after_id FROM oncall_inbound_sms_cursor WHERE consumer = ?',
      [this.name],
    )) as { rows: { after_id: string | number }[] };
    return rows[0] ? toNumber(rows[0].after_id) : null;
  }

  async save(id: number): Promise<void> {
    await this.knex.raw(
      `INSERT INTO oncall_inbound_sms_cursor (consumer, after_id, updated_at) VALUES (?, ?, now())
       ON CONFLICT (consumer) DO UPDATE
         SET after_id = GREATEST(oncall_inbound_sms_cursor.after_id, EXCLUDED.after_id), updated_at = now()`,
      [this.name, id],
    );
  }
}
