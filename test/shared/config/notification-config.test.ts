import { ConfigError } from '../../../shared/config';
import {
  type NotificationConfigInput,
  loadNotificationConfig,
  primaryBackend,
} from '../../../services/notification/config';

const noSources = { file: null, env: {} } as const;

function issuesOf(overrides: Partial<NotificationConfigInput>, env: Record<string, string> = {}): string[] {
  try {
    loadNotificationConfig(overrides, { file: null, env });
  } catch (err) {
    if (err instanceof ConfigError) return err.issues.map((i) => `${i.key}: ${i.message}`);
    throw err;
  }
  return [];
}

const smsGateway = { account_sid: 'AC123', auth_token: '<AUTH_TOKEN>', from_number: '+15551234567' };

describe('NotificationConfig', () => {
  it('a number over its maximum says the maximum, not "expected a positive integer"', () => {
    const issues = issuesOf({}, { SVC_NOTIFICATION__DELIVERY__MAX_ATTEMPTS: '200' });
    expect(issues).toHaveLength(1);
    expect(issues[0]).toMatch(/^notification\.delivery\.max_attempts: expected at most 100, got 200$/);
  });

  it('configure with nothing gives all defaults', () => {
    const config = loadNotificationConfig(undefined, noSources);
    expect(config).toEqual({
      environment: 'development',
      server: {
        host: '0.0.0.0',
        grpc_port: 50051,
        http_port: 8080,
        api_tokens: [],
        max_request_bytes: 4 * 1024 * 1024,
        max_in_flight_request_bytes: 128 * 1024 * 1024,
        shutdown_drain_ms: 500,
        shutdown_timeout_ms: 10000,
        allow_unauthenticated: false,
        max_concurrent_streams: 10000,
        http_max_connections: 10000,
        http_headers_timeout_ms: 10000,
        http_request_timeout_ms: 30000,
      },
      log: { level: 'info', format: 'auto' },
      database: {
        url: '',
        data_dir: './data/notification',
        pool_max: 10,
        statement_timeout_ms: 60_000,
        idle_in_transaction_timeout_ms: 60_000,
      },
      health: { enabled: true, path: '/health', include_details: true, timeout: 5, checks: [] },
      metrics: {
        enabled: true,
        prefix: '',
        default_labels: {},
        max_metric_names: 1000,
        max_series_per_metric: 1000,
        histogram_buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      },
      tracing: {
        enabled: true,
        service_name: 'notification',
        exporter: 'none',
        sampler_type: 'probability',
        sample_rate: 1,
        max_traces_per_second: 100,
        propagation_formats: ['tracecontext', 'baggage'],
        max_attributes: 128,
        max_events: 128,
        max_links: 128,
        max_spans: 10000,
      },
      opentelemetry: {
        endpoint: 'http://localhost:4318',
        headers: {},
        insecure: false,
        timeout: 10,
        compression: 'none',
        batch_size: 512,
        export_interval: 5,
      },
      // Error tracking is off by default: no DSN, nothing leaves the process.
      error_tracking: { dsn: '', environment: '', traces_sample_rate: 0, send_default_pii: false },
      sms_backends: [],
      push_backends: [],
      mailer: {
        backends: [],
        max_attachment_bytes: 10485760,
        max_message_bytes: 26214400,
        max_recipients: 100,
      },
      inbox: {
        store_backend: 'database',
        retention_days: 30,
        max_page_size: 50,
        purge_interval_seconds: 3600,
        purge_batch_size: 1000,
        max_title_length: 200,
        max_body_length: 10000,
        max_metadata_bytes: 16384,
        watch_buffer_size: 256,
        watch_stall_seconds: 10,
        max_watchers_per_user: 16,
        max_watchers: 10000,
      },
      webhooks: {
        max_age_seconds: 300,
        max_body_bytes: 1024 * 1024,
        replay_retention_hours: 168,
        replay_memory_max_entries: 100_000,
        inbound_sms_retention_hours: 72,
        inbound_sms_max_messages: 100_000,
        inbound_sms_watch: {
          buffer_size: 256,
          max_watchers: 64,
          max_watchers_per_caller: 8,
          stall_seconds: 30,
        },
      },
      delivery: {
        store_backend: 'database',
        max_attempts: 5,
        base_delay_ms: 500,
        max_delay_ms: 60000,
        lease_seconds: 60,
        poll_interval_ms: 1000,
        concurrency: 8,
        backend_concurrency: {},
        attempt_timeout_ms: 30000,
        max_payload_bytes: 41943040,
        max_batch_size: 10000,
        max_pending_submits: 10000,
        queue_stats_max_age_seconds: 5,
        content_retention_hours: 24,
        retention_days: 30,
        purge_interval_seconds: 3600,
        purge_batch_size: 1000,
        routing: { email: 'primary', sms: 'primary', push: 'primary' },
        circuit_breaker: { failure_threshold: 5, cooldown_seconds: 30 },
        suppression: { memory_max_entries: 100000, lookup_timeout_ms: 2000 },
        watch: {
          buffer_size: 256,
          read_page_size: 500,
          max_watchers: 10000,
          max_watchers_per_caller: 16,
          stall_seconds: 10,
          sequencer_batch_size: 1000,
          sweep_interval_seconds: 5,
        },
      },
      notify: {
        default_locale: 'en',
        categories: [],
        topic_page_size: 500,
        max_schedule_ahead: 2592000,
        caps: [],
        max_topic_batch: 1000,
        retention_days: 30,
        unsubscribe: { signing_key: '', token_ttl_days: 60, public_base_url: '' },
      },
      // store_backend is unset: the users follow delivery.store_backend.
      users: {
        max_user_id_length: 128,
        max_emails: 10,
        max_phones: 10,
        max_devices: 50,
        max_attributes_bytes: 16384,
        default_page_size: 100,
        max_page_size: 1000,
        memory_max_users: 100000,
        memory_max_memberships: 1000000,
      },
      admin: {
        auth: {
          clock_skew_seconds: 30,
          max_token_lifetime: 86400,
          demo_user: 'demo',
          operator_claim: 'roles',
          operator_roles: ['notification:operator'],
        },
      },
      monitor: {
        tls: false,
        timeout_ms: 2000,
        flush_interval_ms: 1000,
        max_buffered: 10000,
        source_service: 'notification',
        slos: [],
        default_slos: {
          enabled: true,
          name_prefix: 'notification-',
          period: 2_592_000,
          delivery_target: 0.99,
          latency_target: 0.95,
          latency_objectives: { email: 60, sms: 30, push: 10 },
          inbox_send_target: 0.999,
          receipts_target: 0.99,
          min_events: 100,
          tier: 'P0_PAGE',
        },
      },
      // templates/config.ts (store_backend unset: as delivery.store_backend).
      templates: {
        max_source_bytes: 65536,
        max_templates: 10000,
        max_page_size: 100,
        parse_cache_size: 1000,
        max_render_bytes: 262144,
        render_time_limit_ms: 1000,
        render_memory_limit: 10000000,
      },
    });
  });

  it('fills driver defaults inside a backend', () => {
    const config = loadNotificationConfig(
      {
        mailer: {
          backends: [{ name: 'smtp', driver: 'smtp', from_email: 'a@example.com', smtp: { host: 'mx' } }],
        },
      },
      noSources,
    );
    expect(config.mailer.backends[0]?.smtp).toEqual({
      host: 'mx',
      port: 587,
      secure: false,
      user: '',
      password: '',
      pool: true,
      max_connections: 5,
      require_tls: false,
      tls_reject_unauthorized: true,
      connection_timeout_ms: 10000,
      greeting_timeout_ms: 10000,
      socket_timeout_ms: 60000,
      health_cache_ms: 30000,
    });
  });

  it('rejects duplicate backend names in one list', () => {
    const issues = issuesOf({
      sms_backends: [
        { name: 'sms', sms_gateway: smsGateway },
        { name: 'sms', sms_gateway: smsGateway },
      ],
    });
    expect(issues).toEqual([
      'notification.sms_backends[1].name: duplicate SMS backend name "sms" (already used by entry [0])',
    ]);
  });

  it('rejects two primary backends in one list', () => {
    const issues = issuesOf({
      sms_backends: [
        { name: 'a', primary: true, sms_gateway: smsGateway },
        { name: 'b', primary: true, sms_gateway: smsGateway },
      ],
    });
    expect(issues).toEqual([
      'notification.sms_backends[1].primary: only one SMS backend may be primary; entry [0] is primary already',
    ]);
  });

  it('requires the section of the chosen driver', () => {
    const issues = issuesOf({
      push_backends: [{ name: 'p', driver: 'push_driver_b', push_driver_a: { server_key: 'k' } }],
    });
    expect(issues).toEqual([
      'notification.push_backends[0].push_driver_b: settings are required when driver is "push_driver_b"',
    ]);
  });

  it('rejects a sender number not in international format', () => {
    const issues = issuesOf({
      sms_backends: [{ name: 's', sms_gateway: { ...smsGateway, from_number: '555 1234' } }],
    });
    expect(issues[0]).toMatch(
      /^notification\.sms_backends\[0\]\.sms_gateway\.from_number: expected a telephone number/,
    );
  });

  it('database.session_url needs a PostgreSQL url beside it, and must itself be one', () => {
    expect(issuesOf({ database: { session_url: 'postgres://u@db:5432/n' } })[0]).toMatch(
      /^notification\.database\.session_url: session_url needs url/,
    );
    expect(
      issuesOf({ database: { url: 'postgres://u@bouncer:6432/n', session_url: 'mysql://x' } })[0],
    ).toMatch(/^notification\.database\.session_url: expected a postgres:\/\/ or postgresql:\/\/ URL/);
    expect(
      issuesOf({ database: { url: 'postgres://u@bouncer:6432/n', session_url: 'postgres://u@db:5432/n' } }),
    ).toEqual([]);
  });

  it('rejects a sender address that is not an e-mail address', () => {
    const issues = issuesOf({
      mailer: {
        backends: [{ name: 'm', driver: 'smtp', from_email: 'not-an-address', smtp: { host: 'mx' } }],
      },
    });
    expect(issues[0]).toMatch(/^notification\.mailer\.backends\[0\]\.from_email: expected an e-mail address/);
  });

  it('in production, admin auth needs a jwt_secret or a jwks_url', () => {
    const server = { api_tokens: ['<API_TOKEN>'] };
    expect(issuesOf({ environment: 'production', server })).toEqual([
      'notification.admin.auth.jwt_secret: in production the admin endpoints need auth: set admin.auth.jwt_secret or admin.auth.jwks_url',
    ]);
    expect(
      issuesOf({
        environment: 'production',
        server,
        admin: { auth: { jwks_url: 'https://idp.example.com/jwks' } },
      }),
    ).toEqual([]);
  });

  it('the backend marked primary receives unnamed sends; with none marked, the first does', () => {
    expect(
      primaryBackend([
        { name: 'a', primary: false },
        { name: 'b', primary: true },
      ])?.name,
    ).toBe('b');
    expect(
      primaryBackend([
        { name: 'a', primary: false },
        { name: 'b', primary: false },
      ])?.name,
    ).toBe('a');
    expect(primaryBackend([])).toBeUndefined();
  });
});

describe('server.api_tokens', () => {
  it('takes plain tokens from a comma-separated variable, and named tokens with scopes as JSON', () => {
    const plain = loadNotificationConfig(undefined, {
      file: null,
      env: { SVC_NOTIFICATION__SERVER__API_TOKENS: 'tok-a, tok-b' },
    });
    expect(plain.server.api_tokens).toEqual(['tok-a', 'tok-b']);
    const named = loadNotificationConfig(undefined, {
      file: null,
      env: {
        SVC_NOTIFICATION__SERVER__API_TOKENS: JSON.stringify([
          'tok-plain',
          { name: 'orders', token: 'tok-orders', scopes: ['inbox:write', 'delivery:send'] },
        ]),
      },
    });
    expect(named.server.api_tokens).toEqual([
      'tok-plain',
      { name: 'orders', token: 'tok-orders', scopes: ['inbox:write', 'delivery:send'] },
    ]);
  });

  it('refuses a scope the service does not have, a bad name and an empty scope list, naming the key and never the token', () => {
    const issues = issuesOf({
      server: {
        api_tokens: [
          { name: 'orders', token: 'secret-token-1', scopes: ['inbox:reads'] },
          { name: 'has space', token: 'secret-token-2', scopes: ['*'] },
          { name: 'empty', token: 'secret-token-3', scopes: [] },
        ],
      },
    });
    expect(issues.length).toBeGreaterThanOrEqual(3);
    for (const issue of issues) expect(issue).toMatch(/^notification\.server\.api_tokens\[\d\]/);
    expect(issues.join('\n')).toMatch(/expected one of the service's scopes: \*, inbox:read, inbox:write/);
    expect(issues.join('\n')).not.toMatch(/secret-token/);
  });
});
