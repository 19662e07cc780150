#!/usr/bin/env bash
# Builds memlog and runs it end to end on a small example workspace (a fresh git repository
# in a temporary directory): record, supersede, pin, inspect, verify, rebuild, and merge two
# branches' logs with git.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
# Cargo says where it put the binary (CARGO_TARGET_DIR, a configured target dir or triple).
memlog="$(cargo build --quiet --manifest-path "$here/Cargo.toml" --bin memlog --message-format=json |
  sed -n 's/.*"executable":"\([^"]*\/memlog\)".*/\1/p' | tail -n 1)"
if [ ! -x "$memlog" ]; then
  target="${CARGO_TARGET_DIR:-$here/target}"
  case "$target" in /*) ;; *) target="$here/$target" ;; esac
  memlog="$target/debug/memlog"
fi
[ -x "$memlog" ] || { echo "quickstart: memlog was not built ($memlog)" >&2; exit 1; }

ws="$(mktemp -d)"
trap 'rm -rf "$ws"' EXIT
cd "$ws"
git init -q -b main
git config user.name "Example"
git config user.email "example@example.com"
export MEMLOG_ACTOR=agent-7

# Shows a command, then runs it; `memlog` stands for the binary just built.
step() {
  printf '\n$ %s\n' "$*"
  if [ "$1" = memlog ]; then
    shift
    "$memlog" "$@"
  else
    "$@"
  fi
}

step memlog init auth-service
id=$("$memlog" add auth-service --section decisions --kind decision \
  --subject auth.tokens --scope service:auth \
  --summary "Use short-lived JWTs for service-to-service calls" \
  --content "Access tokens live 15 minutes; refresh tokens rotate on every use." \
  --confidence 0.9 --evidence "code:src/auth/token.rs#L10-L40:token issuing" \
  --evidence "doc:docs/adr/0007-token-lifetime.md:the decision record" --tag security)
echo "added $id"
# supersede prints "<replacement> (supersedes <old>)".
replaced=$(step memlog supersede "$id" --summary "Use 10-minute JWTs" --reason "security review")
echo "$replaced"
new=$(printf '%s\n' "$replaced" | tail -n 1 | cut -d ' ' -f 1)
step memlog pin "$new" --reason "critical path"
step memlog list
step memlog show "$id"
step memlog history "$id"
step memlog audit
step memlog stats

git add -A && git commit -qm "memory: token lifetime"
git checkout -qb agent-b
"$memlog" add --section learnings --kind incident --subject auth.refresh --scope service:auth \
  --summary "Refresh storms after deploys" --content "All clients refresh at once after a restart." \
  --confidence 0.7 --evidence "log:logs/deploy-2026-11-20.log:refresh spike after the restart" >/dev/null
git commit -qam "memory from branch b"
git checkout -q main
"$memlog" add --section observations --kind metric --subject auth.latency --scope service:auth \
  --summary "Token issuing p99 is 4 ms" --content "Measured over one day of traffic." \
  --confidence 0.8 --evidence "artifact:reports/latency.csv:daily report" >/dev/null
git commit -qam "memory from main"
step git merge -q --no-edit agent-b
step memlog verify
step memlog list
step memlog rebuild
echo
echo "example finished in $ws (removed on exit)"
