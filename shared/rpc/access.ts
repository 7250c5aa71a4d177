/**
 * Who may call what, decided from the request headers alone, so both ports can refuse a call before
 * they read its body (the gRPC port in a grpc-js server interceptor, the HTTP port before Connect
 * reads the request). The question is asked once per call: the port hands its verdict to the
 * handler's context (`admittedKey`), where the Connect auth interceptor reads it.
 *
 * - Our services: a valid API token whose scopes include the method's scope (each service's scope
 *   table, given at registration: every method has exactly one). Missing or unknown token:
 *   UNAUTHENTICATED; a token without the scope: PERMISSION_DENIED.
 * - Server reflection: a valid API token, any scope (it lists every method of the service).
 * - `grpc.health.v1.Health`: open, for orchestrators' probes.
 * With no API token configured everything is open (the server warns once at start).
 */
import type { DescService } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import { ALL_SCOPES, type ApiCaller, type ApiTokens } from '../auth/api-tokens';
import { HEALTH_SERVICE_NAME } from './reflection';

/** A service's scope table: every method (by its local name) to the one scope that may call it. */
export type MethodScopes<S extends DescService = DescService> = { readonly [K in keyof S['method']]: string };

const HEALTH_PATH = `/${HEALTH_SERVICE_NAME}/`;

/** What a call may do: go on (as `caller`, undefined when tokens are off), or be refused. */
export type AccessVerdict =
  { caller: ApiCaller | undefined } | { refused: ConnectError; caller?: ApiCaller | undefined };

const MISSING = new ConnectError('missing bearer token', Code.Unauthenticated);
const INVALID = new ConnectError('invalid bearer token', Code.Unauthenticated);

/** The `/package.Service/Method` path of a method, as both ports see it. */
export function rpcPath(service: string, method: string): string {
  return `/${service}/${method}`;
}

/** The access rules of one RPC server. */
export class RpcAccess {
  /** Path to scope, for our services' methods. */
  private readonly scopes = new Map<string, string>();

  constructor(private readonly tokens: ApiTokens) {}

  /**
   * Adds a service and its scope table; a method missing from a table is a wiring mistake and throws.
   * Without a table (test and bench servers), every method needs a token with every scope.
   */
  addService(service: DescService, scopes?: Readonly<Record<string, string>>): this {
    for (const method of service.methods) {
      const scope = scopes ? scopes[method.localName] : ALL_SCOPES;
      if (typeof scope !== 'string' || scope === '') {
        throw new Error(`${service.typeName}.${method.name} has no scope in its service's scope table`);
      }
      this.scopes.set(rpcPath(service.typeName, method.name), scope);
    }
    return this;
  }

  /** The scope of every method registered (for docs and tests). */
  scopeOf(service: string, method: string): string | undefined {
    return this.scopes.get(rpcPath(service, method));
  }

  /** True when API tokens are configured. */
  get enabled(): boolean {
    return this.tokens.enabled;
  }

  /**
   * The verdict on a call to `path` carrying `authorization`. A path that is neither ours, reflection
   * nor health (grpc-js answers unknown methods itself) needs a valid token, like reflection.
   */
  check(path: string, authorization: string | null | undefined): AccessVerdict {
    if (!this.tokens.enabled || path.startsWith(HEALTH_PATH)) return { caller: undefined };
    const caller = this.tokens.authenticate(authorization);
    if (caller === 'missing') return { refused: MISSING };
    if (caller === 'invalid') return { refused: INVALID };
    const scope = this.scopes.get(path);
    if (scope && !caller.allows(scope)) {
      return {
        caller,
        refused: new ConnectError(
          `the caller "${caller.name}" has no "${scope}" scope, which this method needs`,
          Code.PermissionDenied,
        ),
      };
    }
    return { caller };
  }
}
