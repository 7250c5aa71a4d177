/**
 * Local servers speaking the push providers' protocols, for the push tests and the bench: an HTTP/2
 * (h2c) APNs server that verifies the ES256 provider token with the public key and counts sessions,
 * and an FCM server (HTTP/2 for HTTP v1 and legacy sends, plus its HTTP/1.1 OAuth token endpoint that
 * verifies the RS256 JWT-bearer assertion with the service account's public key).
 */
import { generateKeyPairSync, randomUUID, type KeyObject } from 'node:crypto';
import { createServer as createHttp1Server, type Server as Http1Server } from 'node:http';
import * as http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { loadJose } from '../../../../shared/auth/jose';

/** A P-256 key pair: the PKCS#8 PEM the driver signs with and the public key the peer verifies with. */
export function ecKeys(): { privatePem: string; publicKey: KeyObject } {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return { privatePem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), publicKey };
}

/** An RSA key pair for a service account. */
export function rsaKeys(): { privatePem: string; publicKey: KeyObject } {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { privatePem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), publicKey };
}

/** One request the APNs peer received. */
export interface ApnsRequest {
  token: string;
  headers: http2.IncomingHttpHeaders;
  body: Record<string, unknown>;
}

/** Answer of the APNs peer for one request; undefined = the default (410 for unregistered, else 200). */
export type ApnsResponder = (req: ApnsRequest) => { status: number; reason?: string } | undefined;

/** The local APNs server. */
export interface ApnsPeer {
  baseUrl: string;
  /** HTTP/2 sessions accepted so far. */
  sessions: number;
  /** Most streams open at once so far. */
  maxActive: number;
  /** Notifications answered (recorded or not). */
  answered: number;
  /** Delay before answering, in ms (lets streams overlap). */
  delayMs: number;
  requests: ApnsRequest[];
  /** Provider tokens seen (distinct). */
  providerTokens: Set<string>;
  /** Tokens answered 410 Unregistered. */
  unregistered: Set<string>;
  respond: ApnsResponder | undefined;
  /** Keep the request log (off in the bench). */
  record: boolean;
  /** Sends GOAWAY on every open session. */
  goaway(): void;
  close(): Promise<void>;
}

/** Starts the APNs peer; tokens are verified with `publicKey` (kid `keyId`, iss `teamId`). */
export async function startApnsPeer(opts: {
  publicKey: KeyObject;
  keyId: string;
  teamId: string;
  topic: string;
}): Promise<ApnsPeer> {
  const jose = await loadJose();
  const server = http2.createServer();
  const open = new Set<http2.ServerHttp2Session>();
  const verified = new Map<string, boolean>();
  const peer: ApnsPeer = {
    baseUrl: '',
    sessions: 0,
    maxActive: 0,
    answered: 0,
    delayMs: 0,
    requests: [],
    providerTokens: new Set(),
    unregistered: new Set(),
    respond: undefined,
    record: true,
    goaway: () => {
      for (const s of open) s.goaway();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of open) s.destroy();
        server.close(() => resolve());
      }),
  };
  server.on('session', (s) => {
    peer.sessions++;
    open.add(s);
    s.on('close', () => open.delete(s));
  });
  let active = 0;
  server.on('stream', (stream, headers) => {
    active++;
    peer.maxActive = Math.max(peer.maxActive, active);
    stream.on('close', () => active--);
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => {
      void (async () => {
        if (peer.delayMs > 0) await new Promise((r) => setTimeout(r, peer.delayMs));
        const answer = (status: number, reason?: string) => {
          const h: http2.OutgoingHttpHeaders = { ':status': status };
          if (status === 200) h['apns-id'] = randomUUID();
          peer.answered++;
          stream.respond(h);
          stream.end(reason ? JSON.stringify({ reason }) : undefined);
        };
        const path = String(headers[':path']);
        const m = /^\/3\/device\/([^/]+)$/.exec(path);
        if (headers[':method'] !== 'POST' || !m) return answer(404, 'BadPath');
        const auth = String(headers.authorization ?? '');
        const jwt = auth.startsWith('bearer ') ? auth.slice(7) : '';
        let ok = verified.get(jwt);
        if (ok === undefined) {
          try {
            const { payload, protectedHeader } = await jose.jwtVerify(jwt, opts.publicKey, {
              algorithms: ['ES256'],
              issuer: opts.teamId,
            });
            ok = protectedHeader.kid === opts.keyId && typeof payload.iat === 'number';
          } catch {
            ok = false;
          }
          verified.set(jwt, ok);
        }
        if (!ok) return answer(403, 'InvalidProviderToken');
        peer.providerTokens.add(jwt);
        if (headers['apns-topic'] !== opts.topic) return answer(400, 'TopicDisallowed');
        const token = decodeURIComponent(m[1]!);
        const req: ApnsRequest = {
          token,
          headers,
          body: JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>,
        };
        if (peer.record) peer.requests.push(req);
        const custom = peer.respond?.(req);
        if (custom) return answer(custom.status, custom.reason);
        if (peer.unregistered.has(token)) return answer(410, 'Unregistered');
        return answer(200);
      })();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  peer.baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return peer;
}

/** One send the FCM peer received. */
export interface FcmRequest {
  path: string;
  authorization: string;
  body: Record<string, unknown>;
}

/** The local FCM server and its token endpoint. */
export interface FcmPeer {
  /** base_url of the HTTP/2 send API. */
  baseUrl: string;
  /** token_uri of the OAuth endpoint (HTTP/1.1). */
  tokenUri: string;
  sessions: number;
  /** Access tokens issued. */
  issued: string[];
  /** Assertions refused. */
  refusedAssertions: number;
  requests: FcmRequest[];
  /** Device tokens answered UNREGISTERED (v1) / NotRegistered (legacy). */
  unregistered: Set<string>;
  /** Custom v1 answer: status, body and extra headers (Retry-After). */
  respond:
    | ((req: FcmRequest) => { status: number; body: unknown; headers?: Record<string, string> } | undefined)
    | undefined;
  close(): Promise<void>;
}

/** Starts the FCM peer for `projectId`, verifying assertions with `publicKey` issued by `clientEmail`. */
export async function startFcmPeer(opts: {
  publicKey: KeyObject;
  clientEmail: string;
  projectId: string;
  serverKey?: string;
  expiresIn?: number;
}): Promise<FcmPeer> {
  const jose = await loadJose();
  const api = http2.createServer();
  const sessions = new Set<http2.ServerHttp2Session>();
  const tokenServer: Http1Server = createHttp1Server();
  const peer: FcmPeer = {
    baseUrl: '',
    tokenUri: '',
    sessions: 0,
    issued: [],
    refusedAssertions: 0,
    requests: [],
    unregistered: new Set(),
    respond: undefined,
    close: async () => {
      for (const s of sessions) s.destroy();
      await Promise.all([
        new Promise<void>((r) => api.close(() => r())),
        new Promise<void>((r) => tokenServer.close(() => r())),
      ]);
    },
  };
  tokenServer.on('request', (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
        try {
          if (form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:jwt-bearer')
            throw new Error('grant');
          const { payload } = await jose.jwtVerify(form.get('assertion') ?? '', opts.publicKey, {
            algorithms: ['RS256'],
            issuer: opts.clientEmail,
            audience: peer.tokenUri,
          });
          if (payload.scope !== 'https://www.googleapis.com/auth/firebase.messaging')
            throw new Error('scope');
        } catch {
          peer.refusedAssertions++;
          res.writeHead(400, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ error: 'invalid_grant', error_description: 'Invalid JWT Signature.' }));
          return;
        }
        const token = `ya29.${randomUUID()}`;
        peer.issued.push(token);
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({ access_token: token, expires_in: opts.expiresIn ?? 3599, token_type: 'Bearer' }),
        );
      })();
    });
  });
  api.on('session', (s) => {
    peer.sessions++;
    sessions.add(s);
    s.on('close', () => sessions.delete(s));
  });
  api.on('stream', (stream, headers) => {
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => {
      const json = (status: number, body: unknown, headers: Record<string, string> = {}) => {
        stream.respond({ ':status': status, 'content-type': 'application/json', ...headers });
        stream.end(JSON.stringify(body));
      };
      const req: FcmRequest = {
        path: String(headers[':path']),
        authorization: String(headers.authorization ?? ''),
        body: JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>,
      };
      peer.requests.push(req);
      if (req.path === '/fcm/send') {
        if (!opts.serverKey || req.authorization !== `key=${opts.serverKey}`) return json(401, {});
        const ids = req.body.registration_ids as string[];
        return json(200, {
          multicast_id: 1,
          results: ids.map((t) =>
            peer.unregistered.has(t) ? { error: 'NotRegistered' } : { message_id: `0:${randomUUID()}` },
          ),
        });
      }
      if (req.path !== `/v1/projects/${opts.projectId}/messages:send`) return json(404, {});
      const bearer = req.authorization.replace(/^Bearer /, '');
      if (!peer.issued.includes(bearer)) {
        return json(401, {
          error: {
            code: 401,
            status: 'UNAUTHENTICATED',
            message: 'Request had invalid authentication credentials.',
          },
        });
      }
      const custom = peer.respond?.(req);
      if (custom) return json(custom.status, custom.body, custom.headers);
      const token = (req.body.message as { token: string }).token;
      if (peer.unregistered.has(token)) {
        return json(404, {
          error: {
            code: 404,
            message: 'Requested entity was not found.',
            status: 'NOT_FOUND',
            details: [
              { '@type': 'type.googleapis.com/google.firebase.fcm.v1.FcmError', errorCode: 'UNREGISTERED' },
            ],
          },
        });
      }
      return json(200, { name: `projects/${opts.projectId}/messages/${randomUUID()}` });
    });
  });
  await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', resolve));
  await new Promise<void>((resolve) => tokenServer.listen(0, '127.0.0.1', resolve));
  peer.baseUrl = `http://127.0.0.1:${(api.address() as AddressInfo).port}`;
  peer.tokenUri = `http://127.0.0.1:${(tokenServer.address() as AddressInfo).port}/token`;
  return peer;
}
