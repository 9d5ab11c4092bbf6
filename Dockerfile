# syntax=docker/dockerfile:1
# One image for every role of dnc-scrub. The command selects the role:
#   docker run IMAGE gateway | admission | quota | job-scheduler | job-worker | registry-adapter | dashboard | migrate
# Node 22 is the supported LTS line shipped in production (CI also runs on Node 20, which the code supports).
# Pin by digest in the release pipeline (node:22.23.3-bookworm-slim@sha256:...) once it can reach the registry.
ARG NODE_IMAGE=node:22.23.3-bookworm-slim

# ---- manifests: only the npm manifests of the root and every workspace ----
# The dependency layer below is then rebuilt only when a manifest or the lockfile changes, and a new
# workspace needs no edit here.
FROM ${NODE_IMAGE} AS manifests
WORKDIR /src
COPY . .
RUN find . -type f ! -name package.json ! -name package-lock.json -delete \
 && find . -depth -type d -empty -delete

# ---- build: all dependencies, compile every workspace to its dist/ (and the dashboard's front end to
# services/dashboard/dist/ui), then keep production deps only ----
FROM ${NODE_IMAGE} AS build
WORKDIR /app
ENV npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false
COPY --from=manifests /src/ ./
RUN --mount=type=cache,target=/root/.npm npm ci --ignore-scripts
COPY . .
RUN --mount=type=cache,target=/root/.npm npm run build \
 && find . -name '*.tsbuildinfo' -not -path './node_modules/*' -delete \
 && find . -name node_modules -type d -prune -exec rm -rf {} + \
 && npm ci --omit=dev --ignore-scripts

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
EXPOSE 8080 8090 9464 50051
STOPSIGNAL SIGTERM
ENTRYPOINT ["node", "scripts/run.js"]
CMD ["gateway"]
