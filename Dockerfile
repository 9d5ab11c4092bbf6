# syntax=docker/dockerfile:1
# One image for every role of dnc-scrub. The command selects the role:
#   docker run IMAGE gateway | admission | quota | job-scheduler | job-worker | registry-adapter | migrate
# Node 22 is the supported LTS line shipped in production (CI also runs on Node 20, which the code supports).
# Pin by digest in the release pipeline (node:22.23.3-bookworm-slim@sha256:...) once it can reach the registry.
ARG NODE_IMAGE=node:22.23.3-bookworm-slim

# ---- build: all dependencies, compile every workspace to its dist/, then keep production deps only ----
FROM ${NODE_IMAGE} AS build
WORKDIR /app
ENV npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false
# Manifests first so the dependency layer is cached until a manifest or the lockfile changes.
COPY package.json package-lock.json ./
COPY packages/proto/package.json packages/proto/
COPY packages/kit/package.json packages/kit/
COPY packages/api-contract/package.json packages/api-contract/
COPY packages/admin-cli/package.json packages/admin-cli/
COPY packages/sdk/package.json packages/sdk/
COPY packages/cli/package.json packages/cli/
COPY services/registry-adapter/package.json services/registry-adapter/
COPY services/quota/package.json services/quota/
COPY services/admission/package.json services/admission/
COPY services/job-scheduler/package.json services/job-scheduler/
COPY services/gateway/package.json services/gateway/
RUN --mount=type=cache,target=/root/.npm npm ci --ignore-scripts
COPY tsconfig.base.json tsconfig.json ./
COPY protos ./protos
COPY packages ./packages
COPY services ./services
COPY scripts ./scripts
RUN npm run build \
 && find . -name '*.tsbuildinfo' -not -path './node_modules/*' -delete \
 && find . -name node_modules -type d -prune -exec rm -rf {} + \
 && npm ci --omit=dev --ignore-scripts \
 && npm cache clean --force

# ---- runtime: production dependencies and compiled output, non-root, read-only root fs friendly ----
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    npm_config_update_notifier=false \
    DNC_METRICS_PORT=9464
WORKDIR /app
# Nothing at runtime writes under /app; /tmp is the only writable path (an emptyDir in Kubernetes).
COPY --from=build --chown=root:root /app /app
# The image's `node` user (uid/gid 1000), numeric so Kubernetes can verify runAsNonRoot.
USER 1000:1000
EXPOSE 8080 9464 50051
STOPSIGNAL SIGTERM
ENTRYPOINT ["node", "scripts/run.js"]
CMD ["gateway"]
