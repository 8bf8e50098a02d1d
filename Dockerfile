# syntax=docker/dockerfile:1
# Multi-stage: bundle the sources and their dependencies to JavaScript in one stage (Node could run
# the TypeScript, but its type stripper costs every process about 17 MB and a third of its start,
# and its module loader more memory per file; see scripts/build.ts), install production
# dependencies in another (the packages the bundle leaves out load from there), and copy only what
# runs into the final image.

FROM node:24-slim AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json ./
# Every dependency, TypeScript included; no install scripts (the build below is the one needed).
RUN npm ci --ignore-scripts
COPY scripts/build.ts ./scripts/build.ts
COPY src ./src
COPY gen ./gen
RUN node scripts/build.ts

FROM node:24-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# Production dependencies only; none of them needs an install script. @solana/kit names TypeScript
# as an optional peer (for its types), so npm keeps it even without dev dependencies: nothing at
# run time loads it, and it is 23 MB, so it goes.
RUN npm ci --omit=dev --ignore-scripts && rm -rf node_modules/typescript && npm cache clean --force

FROM node:24-slim
# MALLOC_ARENA_MAX as `npm start` sets it: two malloc arenas instead of one per thread (V8's
# garbage collection helpers allocate too), about 5 MB less RSS at peak under load.
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    MALLOC_ARENA_MAX=2
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
COPY --from=build /app/dist ./dist
# The sources stay for the keys command, which Node runs as TypeScript:
# `node scripts/keys.ts create --owner NAME` makes API keys in the configured MongoDB.
COPY gen ./gen
COPY src ./src
COPY scripts/keys.ts ./scripts/keys.ts
# The embedded local chain's genesis (used when SOLANA_RPC_URL is unset), built once into the
# image so a container starts in well under a second instead of building it (about 3 s).
RUN node dist/src/prepare-genesis.js
# The image's unprivileged user; nothing in /app needs to be writable (LOCAL_SOLANA_STATE, if set,
# should name a file on a mounted volume).
USER node
EXPOSE 8080
# Liveness over plain HTTP with Node's own fetch: slim images have no curl.
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# Exec form: node runs as PID 1 and receives SIGTERM itself, so shutdown is graceful.
CMD ["node", "--max-semi-space-size=4", "--max-old-space-size=512", "--expose-gc", "dist/src/main.js"]
