#!/usr/bin/env bash
# Regenerate every generated artifact and fail when the committed copy differs.
set -euo pipefail
cd "$(dirname "$0")/../.."
npm run generate --silent
if ! git diff --exit-code --stat -- packages/proto/src/gen; then
  echo "generated protobuf code is stale: run 'npm run generate' and commit" >&2
  exit 1
fi
if [ -n "$(git status --porcelain -- packages/proto/src/gen)" ]; then
  echo "generated protobuf code has uncommitted files: run 'npm run generate' and commit" >&2
  git status --porcelain -- packages/proto/src/gen >&2
  exit 1
fi
