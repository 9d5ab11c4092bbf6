#!/usr/bin/env bash
# Regenerate every generated artifact and fail when the committed copy differs: the protobuf code
# (buf + protoc-gen-es), the OpenAPI document (from @dnc/api-contract) and the SDK's types
# (openapi-typescript). Run after `npm run build` (the OpenAPI generator reads the compiled contract).
set -euo pipefail
cd "$(dirname "$0")/../.."
npm run generate --silent
paths=(packages/proto/src/gen packages/api-contract/openapi.json packages/sdk/src/gen)
# Numbering tables generated from libphonenumber-js metadata (one command: npm run generate:numbering).
npm run check:numbering --silent
if [ -n "$(git status --porcelain -- "${paths[@]}")" ]; then
  echo "generated code is stale; run 'npm run generate' and commit:" >&2
  git status --porcelain -- "${paths[@]}" >&2
  git diff --stat -- "${paths[@]}" >&2
  exit 1
fi
echo "generated code is up to date"
