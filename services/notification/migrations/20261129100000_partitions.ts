/**
 * Partitions for what grows with time (issue 30; delivery/README.md, "Partitions"): `deliveries`,
 * `delivery_events` and `inbox_events` become declarative range-partitioned tables, one partition per
 * UTC week (Monday to Monday), plus a DEFAULT partition so an insert never fails (a week nobody made a
 * partition for, a clock far off). Retention drops whole partitions instead of deleting row by row.
 *
 * Why a week, not a day: a lookup by id alone (get, the completion, receipts, release) cannot prune,
 * it probes every partition's primary-key index. With the default retention of 30 days, daily
 * partitions are about 40 (a completion of 10 read 830 buffers instead of about 20), weekly about 7;
 * records are kept at most a week longer than retention_days.
 *
 * - `deliveries` by `created_at` (never changes; a delivery ends within its retry window, so a week's
 *   partition is all final soon after the week). The primary key becomes (id, created_at): a unique
 *   index on a partitioned table must hold the partition key. Lookups by id alone stay correct (each
 *   partition's primary-key index is probed). Idempotency moves to `delivery_keys`, a small
 *   unpartitioned table keyed (scope, idempotency_key) written in the same statement as the row
 *   (DatabaseDeliveryStore.insertBatch), deleted with its record.
 * - `delivery_events` by `occurred_at`. A record's events occur at or after its creation, so an event
 *   partition that ends before the oldest remaining delivery was created holds only events of records
 *   already gone. `seq` stays gap-free from the sequencer; its index is no longer UNIQUE (it cannot
 *   be without the partition key): the sequencer's lock and counter keep it unique.
 * - `inbox_events` by `created_at`; the primary key becomes (seq, created_at).
 *
 * Every index, CHECK, default and the generated `recipient_keys` of the earlier migrations are made
 * again on the partitioned tables (same names; each partition's index is attached to them),
 * `fillfactor = 80` on each deliveries partition (a partitioned table has no storage of its own).
 * `notification_partitions_ensure(from, weeks)` makes the missing week partitions of the three tables
 * (the migration makes them for the weeks the existing rows fall in and two ahead; the retention job
 * keeps making them ahead). `delivery_claim` and `delivery_complete` are made again (same signatures;
 * their row type is the new table's; the claim's join is pinned to a nested loop, see CLAIM).
 *
 * It runs on PGlite (PostgreSQL 18) and PostgreSQL 15+. The rows are copied in the migration's
 * transaction: the tables are locked while it runs (deploy/capacity.md, "Partitions", for the time it
 * takes on 5,000,000 rows). Not reversible in place (down() refuses): take a backup before.
 */
import type { Knex } from 'knex';

/** The width of a partition: one UTC week, Monday to Monday. */
export const PARTITION_DAYS = 7;
/** How many weeks of partitions, from the current one, the migration and the retention job keep ready. */
export const PARTITION_WEEKS_AHEAD = 2;
/** Weeks older than this (from today) get no partition in the migration: their rows go to DEFAULT. */
const MAX_BACKFILL_DAYS = 400;

const FAILURE_KINDS = [
  'recipient_invalid',
  'recipient_unregistered',
  'recipient_unsubscribed',
  'payload_rejected',
  'provider_auth',
  'provider_rejected',
  'retries_exhausted',
  'recipient_suppressed',
  'recipient_bounced',
  'spam_complaint',
  'provider_undelivered',
  'worker_died',
];

const DELIVERIES = `
  CREATE TABLE deliveries (
    id uuid NOT NULL,
    channel text NOT NULL,
    backend text NOT NULL,
    recipient text NULL,
    masked_recipient text NOT NULL,
    scope text NOT NULL,
    idempotency_key text NULL,
    content_hash text NOT NULL,
    payload jsonb NULL,
    status text NOT NULL
      CONSTRAINT deliveries_status_check
      CHECK (status IN ('pending', 'retrying', 'sent', 'delivered', 'undelivered', 'failed')),
    attempts jsonb NOT NULL DEFAULT '[]'::jsonb,
    next_attempt_at timestamptz NULL,
    last_error text NULL,
    provider_reference text NULL,
    lease_owner text NULL,
    lease_expires_at timestamptz NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    sent_at timestamptz NULL,
    delivered_at timestamptz NULL,
    finished_at timestamptz NULL,
    content_erased_at timestamptz NULL,
    backend_pinned boolean NOT NULL DEFAULT false,
    failure text NULL
      CONSTRAINT deliveries_failure_check CHECK (failure IN (${FAILURE_KINDS.map((f) => `'${f}'`).join(', ')})),
    trace_parent text NULL,
    suppressed_recipients jsonb NULL,
    receipts jsonb NOT NULL DEFAULT '[]'::jsonb,
    attempts_started integer NOT NULL DEFAULT 0,
    user_id text NULL,
    category text NULL,
    recipient_keys text[] GENERATED ALWAYS AS (
      CASE channel
        WHEN 'email' THEN string_to_array(lower(regexp_replace(recipient, '\\s+', '', 'g')), ',')
        WHEN 'sms' THEN ARRAY[regexp_replace(recipient, '[\\s().-]', '', 'g')]
        ELSE ARRAY[btrim(recipient)]
      END) STORED,
    CONSTRAINT deliveries_pkey PRIMARY KEY (id, created_at)
  ) PARTITION BY RANGE (created_at)`;

const DELIVERY_INDEXES = [
  `CREATE INDEX deliveries_due_idx ON deliveries (channel, backend, next_attempt_at)
     WHERE status IN ('pending', 'retrying')`,
  'CREATE INDEX deliveries_finished_idx ON deliveries (finished_at) WHERE finished_at IS NOT NULL',
  `CREATE INDEX deliveries_provider_reference_idx ON deliveries (provider_reference, channel)
     WHERE provider_reference IS NOT NULL`,
  `CREATE INDEX deliveries_unerased_idx ON deliveries (finished_at)
     WHERE content_erased_at IS NULL AND finished_at IS NOT NULL`,
  'CREATE INDEX deliveries_scope_created_idx ON deliveries (scope, created_at DESC, id DESC)',
  `CREATE INDEX deliveries_scope_failure_idx ON deliveries (scope, failure, created_at DESC, id DESC)
     WHERE failure IS NOT NULL`,
  'CREATE INDEX deliveries_user_idx ON deliveries (user_id) WHERE user_id IS NOT NULL',
  `CREATE INDEX deliveries_category_created_idx ON deliveries (category, created_at DESC, id DESC)
     WHERE category IS NOT NULL`,
  `CREATE INDEX deliveries_user_created_idx ON deliveries (user_id, created_at DESC, id DESC)
     WHERE user_id IS NOT NULL`,
  'CREATE INDEX deliveries_recipient_keys_idx ON deliveries USING gin (recipient_keys)',
];

const DELIVERY_EVENTS = `
  CREATE TABLE delivery_events (
    id bigint NOT NULL DEFAULT nextval('delivery_events_id_seq'),
    seq bigint,
    delivery_id uuid NOT NULL,
    scope text NOT NULL,
    channel text NOT NULL,
    backend text NOT NULL,
    status text NOT NULL,
    failure text,
    reason text,
    provider_reference text,
    occurred_at timestamptz NOT NULL,
    CONSTRAINT delivery_events_pkey PRIMARY KEY (id, occurred_at)
  ) PARTITION BY RANGE (occurred_at)`;

const EVENT_INDEXES = [
  'CREATE INDEX delivery_events_seq_idx ON delivery_events (seq)',
  'CREATE INDEX delivery_events_scope_seq_idx ON delivery_events (scope, seq) WHERE seq IS NOT NULL',
  'CREATE INDEX delivery_events_unsequenced_idx ON delivery_events (id) WHERE seq IS NULL',
  'CREATE INDEX delivery_events_delivery_idx ON delivery_events (delivery_id)',
];

const INBOX_EVENTS = `
  CREATE TABLE inbox_events (
    seq bigint NOT NULL DEFAULT nextval('inbox_events_seq_seq'),
    user_id text NOT NULL,
    type text NOT NULL,
    message_id uuid NULL,
    unread_count integer NOT NULL,
    payload jsonb NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT inbox_events_pkey PRIMARY KEY (seq, created_at)
  ) PARTITION BY RANGE (created_at)`;

const INBOX_INDEXES = [
  'CREATE INDEX inbox_events_user_seq_idx ON inbox_events (user_id, seq)',
  'CREATE INDEX inbox_events_created_idx ON inbox_events (created_at)',
  'CREATE INDEX inbox_events_message_payload_idx ON inbox_events (message_id) WHERE payload IS NOT NULL',
];

/**
 * `notification_partitions_ensure(from, weeks)`: makes the missing week partitions (UTC, from the
 * Monday of `from`'s week) of the three tables; returns how many it made. A week whose rows already
 * sit in the DEFAULT partition is skipped (PostgreSQL refuses the partition; the rows stay where they are and
 * retention deletes them row by row).
 */
const ENSURE = `
  CREATE OR REPLACE FUNCTION notification_partitions_ensure(p_from date, p_weeks integer)
  RETURNS integer
  LANGUAGE plpgsql VOLATILE
  AS $fn$
  DECLARE
    made integer := 0;
    d date;
    t text;
    part text;
    opts text;
  BEGIN
    FOR i IN 0 .. p_weeks - 1 LOOP
      d := date_trunc('week', p_from)::date + 7 * i;
      FOREACH t IN ARRAY ARRAY['deliveries', 'delivery_events', 'inbox_events'] LOOP
        part := t || '_p' || to_char(d, 'YYYYMMDD');
        CONTINUE WHEN to_regclass(part) IS NOT NULL;
        opts := CASE WHEN t = 'deliveries' THEN ' WITH (fillfactor = 80)' ELSE '' END;
        BEGIN
          EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)%s', part, t,
            (d::timestamp AT TIME ZONE 'UTC'), ((d + 7)::timestamp AT TIME ZONE 'UTC'), opts);
          made := made + 1;
        EXCEPTION WHEN check_violation THEN
          -- The DEFAULT partition holds rows of that week already.
          NULL;
        END;
      END LOOP;
    END LOOP;
    RETURN made;
  END
  $fn$`;

// The claim's UPDATE finds the picked rows by (id, created_at): a nested loop into the partitions,
// each probe pruned at run time to the one partition the row is in. Left to itself, the generic plan
// over forty partitions hashed every row of every partition (190 ms a claim on 100,000 rows): hash
// and merge joins are off for this function only.
export const CLAIM = `
  CREATE OR REPLACE FUNCTION delivery_claim(p_channel text, p_backend text, p_owner text,
    p_now timestamptz, p_lease interval, p_limit integer)
  RETURNS SETOF deliveries
  LANGUAGE plpgsql VOLATILE
  SET plan_cache_mode = force_generic_plan
  SET enable_seqscan = off
  SET enable_hashjoin = off
  SET enable_mergejoin = off
  AS $fn$
  BEGIN
    RETURN QUERY
    UPDATE deliveries SET lease_owner = p_owner,
      lease_expires_at = COALESCE(p_now, now()) + p_lease,
      updated_at = COALESCE(p_now, now()),
      attempts_started = attempts_started + CASE WHEN lease_owner IS NOT DISTINCT FROM p_owner THEN 0 ELSE 1 END
    WHERE (id, created_at) IN (
      SELECT q.id, q.created_at FROM deliveries q
      WHERE q.backend = p_backend AND q.channel = p_channel AND q.status IN ('pending', 'retrying')
        AND q.next_attempt_at <= COALESCE(p_now, now())
        AND (q.lease_expires_at IS NULL OR q.lease_expires_at <= COALESCE(p_now, now()))
      ORDER BY q.next_attempt_at LIMIT p_limit FOR UPDATE SKIP LOCKED)
    RETURNING *;
  END
  $fn$`;

export const COMPLETE = `
  CREATE OR REPLACE FUNCTION delivery_complete(p_outcomes jsonb, p_ids uuid[])
  RETURNS SETOF deliveries
  LANGUAGE plpgsql VOLATILE
  SET plan_cache_mode = force_generic_plan
  SET enable_bitmapscan = off
  SET enable_seqscan = off
  AS $fn$
  DECLARE
    open_statuses CONSTANT text[] := ARRAY['pending', 'retrying'];
  BEGIN
    RETURN QUERY
    WITH upd AS (
      UPDATE deliveries AS d SET
        status = c.status,
        attempts = d.attempts || c.attempt::jsonb,
        next_attempt_at = COALESCE(c.next_attempt_at,
          COALESCE(c.at, now()) + c.next_delay_ms * interval '1 millisecond'),
        backend = COALESCE(c.backend, d.backend),
        failure = c.failure,
        last_error = c.last_error,
        provider_reference = COALESCE(c.provider_reference, d.provider_reference),
        lease_owner = NULL,
        lease_expires_at = NULL,
        updated_at = COALESCE(c.at, now()),
        sent_at = COALESCE(c.sent_at, CASE WHEN c.status = 'sent' THEN COALESCE(c.at, now()) END),
        finished_at = COALESCE(c.finished_at,
          CASE WHEN c.status IN ('sent', 'failed') THEN COALESCE(c.at, now()) END)
      FROM jsonb_to_recordset(p_outcomes) AS c(id uuid, owner text, status text, attempt text,
        next_attempt_at timestamptz, next_delay_ms double precision, backend text, failure text,
        last_error text, provider_reference text, at timestamptz, sent_at timestamptz,
        finished_at timestamptz)
      WHERE d.id = c.id AND d.id = ANY(p_ids) AND d.lease_owner = c.owner
        AND d.status = ANY(open_statuses)
      RETURNING d.*),
    ev AS (
      INSERT INTO delivery_events (delivery_id, scope, channel, backend, status, failure, reason,
        provider_reference, occurred_at)
      SELECT u.id, u.scope, u.channel, u.backend, u.status, u.failure, u.last_error,
        u.provider_reference, u.updated_at
      FROM upd u)
    SELECT * FROM upd;
  END
  $fn$`;

/** The columns of `table` that can be written (not generated), in order. */
async function writableColumns(knex: Knex, table: string): Promise<string[]> {
  const result = (await knex.raw(
    `SELECT column_name FROM information_schema.columns
     WHERE table_schema = current_schema() AND table_name = ? AND is_generated = 'NEVER'
     ORDER BY ordinal_position`,
    [table],
  )) as { rows: { column_name: string }[] };
  return result.rows.map((r) => `"${r.column_name}"`);
}

/** Copies every row of `from` into `to` (same writable columns), then drops `from`. */
async function copyAndDrop(knex: Knex, from: string, to: string): Promise<void> {
  const columns = (await writableColumns(knex, to)).join(', ');
  await knex.raw(`INSERT INTO ${to} (${columns}) SELECT ${columns} FROM ${from}`);
  await knex.raw(`DROP TABLE ${from}`);
}

/** The first day (UTC) the migration makes partitions for: the oldest row's, at most MAX_BACKFILL_DAYS back. */
async function firstDay(knex: Knex): Promise<string> {
  const result = (await knex.raw(
    `SELECT GREATEST(
       (current_timestamp AT TIME ZONE 'UTC')::date - ${MAX_BACKFILL_DAYS},
       LEAST((current_timestamp AT TIME ZONE 'UTC')::date,
         (SELECT (min(created_at) AT TIME ZONE 'UTC')::date FROM deliveries_unpartitioned),
         (SELECT (min(occurred_at) AT TIME ZONE 'UTC')::date FROM delivery_events_unpartitioned),
         (SELECT (min(created_at) AT TIME ZONE 'UTC')::date FROM inbox_events_unpartitioned)))::text AS day`,
  )) as { rows: { day: string }[] };
  return result.rows[0]!.day;
}

/** Turns the three tables into partitioned ones, rows and all. */
export async function up(knex: Knex): Promise<void> {
  // The functions return the old table's row type: they go first and come back at the end.
  await knex.raw('DROP FUNCTION IF EXISTS delivery_complete(jsonb, uuid[])');
  await knex.raw('DROP FUNCTION IF EXISTS delivery_claim(text, text, text, timestamptz, interval, integer)');
  for (const [table, indexes] of [
    ['deliveries', [...DELIVERY_INDEXES, 'INDEX deliveries_idempotency_idx']],
    ['delivery_events', EVENT_INDEXES],
    ['inbox_events', INBOX_INDEXES],
  ] as const) {
    await knex.raw(`ALTER TABLE ${table} RENAME TO ${table}_unpartitioned`);
    // Constraint and index names must be free for the new table.
    await knex.raw(`ALTER TABLE ${table}_unpartitioned RENAME CONSTRAINT ${table}_pkey TO ${table}_old_pkey`);
    for (const sql of indexes) {
      const name = /INDEX (\w+)/.exec(sql)?.[1] ?? sql;
      await knex.raw(`DROP INDEX IF EXISTS ${name}`);
    }
  }
  await knex.raw('ALTER TABLE deliveries_unpartitioned DROP CONSTRAINT IF EXISTS deliveries_failure_check');
  await knex.raw('ALTER TABLE deliveries_unpartitioned DROP CONSTRAINT IF EXISTS deliveries_status_check');
  // The id sequences stay (the new tables take their numbers from them; ids keep rising).
  await knex.raw('ALTER SEQUENCE delivery_events_id_seq OWNED BY NONE');
  await knex.raw('ALTER SEQUENCE inbox_events_seq_seq OWNED BY NONE');

  await knex.raw(DELIVERIES);
  await knex.raw(DELIVERY_EVENTS);
  await knex.raw(INBOX_EVENTS);
  await knex.raw('ALTER SEQUENCE delivery_events_id_seq OWNED BY delivery_events.id');
  await knex.raw('ALTER SEQUENCE inbox_events_seq_seq OWNED BY inbox_events.seq');
  await knex.raw('CREATE TABLE deliveries_default PARTITION OF deliveries DEFAULT WITH (fillfactor = 80)');
  await knex.raw('CREATE TABLE delivery_events_default PARTITION OF delivery_events DEFAULT');
  await knex.raw('CREATE TABLE inbox_events_default PARTITION OF inbox_events DEFAULT');
  await knex.raw(ENSURE);
  const from = await firstDay(knex);
  await knex.raw(
    `SELECT notification_partitions_ensure(?::date,
       ((current_timestamp AT TIME ZONE 'UTC')::date - date_trunc('week', ?::date)::date) / 7 + 1 + ?)`,
    [from, from, PARTITION_WEEKS_AHEAD],
  );

  // The idempotency keys: one per (scope, key), for as long as the record lives.
  await knex.raw(`
    CREATE TABLE delivery_keys (
      scope text NOT NULL,
      idempotency_key text NOT NULL,
      delivery_id uuid NOT NULL,
      created_at timestamptz NOT NULL,
      PRIMARY KEY (scope, idempotency_key)
    )`);
  // Retention deletes the keys of a dropped partition by the records' creation time.
  await knex.raw('CREATE INDEX delivery_keys_created_idx ON delivery_keys (created_at)');
  await knex.raw(
    `INSERT INTO delivery_keys (scope, idempotency_key, delivery_id, created_at)
     SELECT scope, idempotency_key, id, created_at FROM deliveries_unpartitioned
     WHERE idempotency_key IS NOT NULL`,
  );

  // Rows first, indexes after (one sort per index instead of row-by-row inserts).
  await copyAndDrop(knex, 'deliveries_unpartitioned', 'deliveries');
  await copyAndDrop(knex, 'delivery_events_unpartitioned', 'delivery_events');
  await copyAndDrop(knex, 'inbox_events_unpartitioned', 'inbox_events');
  for (const sql of [...DELIVERY_INDEXES, ...EVENT_INDEXES, ...INBOX_INDEXES]) await knex.raw(sql);
  await knex.raw(CLAIM);
  await knex.raw(COMPLETE);
  // Statistics for the rows copied, and only when there were rows. An empty table ANALYZEd is
  // "known empty" (reltuples 0) and every connection's first claim, completion and sequencer pass
  // would cache a plan made for empty partitions - a partition on the outer side of a join, scanned
  // whole per call until autovacuum's ANALYZE after the first rows (up to a minute; delivery/README.md,
  // "Sequencer plan"). A partition never analyzed is planned as at least ten pages, which keeps the
  // probes by key. (Changed after this migration first shipped: a deployment that ran it on empty
  // tables had that minute once, at its first traffic; its statistics have been real since.)
  for (const table of ['deliveries', 'delivery_events', 'inbox_events']) {
    const any = (await knex.raw(`SELECT EXISTS (SELECT 1 FROM ${table}) AS any`)) as {
      rows: { any: boolean }[];
    };
    if (any.rows[0]!.any) await knex.raw(`ANALYZE ${table}`);
  }
}

/** Not reversible in place: restore from a backup taken before (the rows would have to be copied back). */
export async function down(): Promise<void> {
  throw new Error('20261129100000_partitions cannot be undone; restore the backup taken before it');
}
