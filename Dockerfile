# syntax=docker/dockerfile:1
# One image for both services; the command chooses which one runs:
#   docker build -t svc .
#   docker run svc                                              # notification (the default command)
#   docker run -e HEALTH_PROBE_ADDRESS=127.0.0.1:50052 svc node dist/services/monitor/main.js
# docker-compose.yml builds it for both. Versions come from the env file (.env) through build args.
ARG NODE_VERSION=20-bookworm-slim

# ---- build: every dependency (TypeScript, swc, buf are dev tools), compile to dist/ ----
FROM node:${NODE_VERSION} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts ./scripts
COPY shared ./shared
COPY services ./services
RUN npm run build

# ---- runtime: production dependencies only, the compiled services, a non-root user ----
FROM node:${NODE_VERSION} AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
# No package install script is needed at run time (PGlite is WebAssembly; protobufjs' postinstall only
# checks its CLI's version), so none runs; the lock pins the exact production tree.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force
# Only what the processes load: the services, the shared runtime (and the admin page's assets that
# `npm run build` copied beside their code). Not dist/scripts or dist/test: dev tools.
COPY --from=build /app/dist/services ./dist/services
COPY --from=build /app/dist/shared ./dist/shared
# ./data holds the embedded database when no database.url is set; ./config may be mounted with an
# application.yaml. The image's own user `node` (uid 1000) owns what the process writes.
RUN mkdir -p data config && chown node:node data
USER node
# notification gRPC, HTTP; monitor gRPC, HTTP (the defaults of server.grpc_port / server.http_port).
EXPOSE 50051 8080 50052 8081
# The gRPC health protocol on the gRPC port (grpc-health-check's client): exit 0 only when SERVING.
# HEALTH_PROBE_ADDRESS is read by the shell, not by the services: set it when the gRPC port is not
# the notification's default (the monitor: 127.0.0.1:50052).
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
  CMD node dist/shared/runtime/health-probe.js "${HEALTH_PROBE_ADDRESS:-127.0.0.1:50051}"
CMD ["node", "dist/services/notification/main.js"]
