#!/usr/bin/env bash
# The examples of docs/RETRIEVAL.md, in a new directory: `bash examples/retrieval.sh DIR`.
set -euo pipefail
memlog=${MEMLOG:-memlog}
dir=${1:?usage: retrieval.sh DIR}
mkdir -p "$dir" && cd "$dir" && git init -q
export MEMLOG_ACTOR=agent-7 MEMLOG_NOW=2026-11-22T10:00:00Z
$memlog init payments >/dev/null
$memlog add payments --section decisions --kind decision --subject payments.deploy \
  --scope service:payments --summary "Deployments of payments go through the blue-green pipeline" \
  --content "Both colours run; traffic moves after health checks pass." --confidence 0.9 \
  --evidence "code:deploy/pipeline.yml#L1-L40:the pipeline" --tag deploy
$memlog add payments --section learnings --kind runbook_step --subject payments.deploy \
  --scope repo --summary "Drain the payment queue before deploying" \
  --content "Stop the consumers, wait for the queue to empty, then deploy." --confidence 0.85 \
  --evidence "doc:docs/runbooks/payments.md:runbook" --tag deploy
$memlog add payments --section state --kind other --subject release.freeze --scope repo \
  --summary "Deploy freeze until the quarterly release" --content "Only hotfixes ship." \
  --confidence 0.9 --evidence "ticket:https://github.com/acme/payments/issues/12:freeze" \
  --valid-from 2026-11-01T00:00:00Z --valid-to 2026-11-25T00:00:00Z
$memlog add payments --section observations --kind hypothesis --subject payments.deploy \
  --scope repo --summary "Deploys may be slow because of cold caches" --content "A guess." \
  --confidence 0.4 --evidence "assumption:-:guess" 2>/dev/null
$memlog add global --section learnings --kind other --subject org.deploys --scope org \
  --summary "Never deploy on Fridays" --content "Organization-wide rule." --confidence 0.95 \
  --evidence "doc:https://wiki.example.com/deploys:policy"
