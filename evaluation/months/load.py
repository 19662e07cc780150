#!/usr/bin/env python3
"""Load corpus.json into a fresh git repo + memlog project, week by week (with --now), and write idmap.json."""
import json, os, subprocess, shutil, datetime, sys
D = os.path.dirname(os.path.abspath(__file__))
BIN = os.environ.get("BIN", os.path.join(D, "..", "..", "target", "release", "memlog"))
WS = os.path.join(D, "ws"); PROJ = "kestrel"
START = datetime.date(2026, 8, 3)
ents = json.load(open(os.path.join(D, "corpus.json")))
if os.path.exists(WS): shutil.rmtree(WS)
os.makedirs(WS)
subprocess.run(["git", "init", "-q", WS], check=True)
def ml(*a, now=None):
    cmd = [BIN, "--workspace", WS] + (["--now", now] if now else []) + list(a)
    return subprocess.run(cmd, cwd=WS, capture_output=True, text=True)
r = ml("init", PROJ, now="2026-08-01T09:00:00Z"); assert r.returncode == 0, r.stderr
FIELDS = ["section", "kind", "subject", "scope", "summary", "content", "confidence", "evidence", "tags", "status", "valid_from", "valid_to"]
ids = {}
weeks = sorted(set(e["week"] for e in ents) | set(e.get("deprecate_week") for e in ents if e.get("deprecate_week") is not None))
skipped_total = 0
for w in weeks:
    now = (START + datetime.timedelta(days=7 * w + 2)).isoformat() + "T10:00:00Z"
    todo = [e for e in ents if e["week"] == w]
    deps = [e for e in ents if e.get("deprecate_week") == w]
    rnd = 0
    while todo or deps:
        batch, rest = [], []
        for e in todo:
            if e.get("supersedes") and e["supersedes"] not in ids: rest.append(e); continue
            batch.append(e)
        ops = []
        for e in batch:
            entry = {f: e[f] for f in FIELDS if f in e}
            if e.get("supersedes"):
                ops.append((e["key"], {"operation": "supersede", "target_id": ids[e["supersedes"]], "entry": entry, "reason": "newer information"}))
            else:
                ops.append((e["key"], {"operation": "create", "entry": entry}))
        if not rest:
            for e in deps:
                ops.append((None, {"operation": "deprecate", "target_id": ids[e["key"]], "reason": "endpoint removed when the service moved to the mesh"}))
            deps = []
        if not ops: raise SystemExit(f"stuck in week {w}: {[e['key'] for e in rest]}")
        fn = os.path.join(D, "batches", f"w{w:02d}_{rnd}.jsonl"); os.makedirs(os.path.dirname(fn), exist_ok=True)
        with open(fn, "w") as f:
            for _, o in ops: f.write(json.dumps(o, ensure_ascii=False) + "\n")
        r = ml("--json", "apply", PROJ, fn, now=now)
        out = json.loads(r.stdout)
        assert out["success"], r.stdout[:2000]
        for a in out["results"]["applied"]:
            k = ops[a["index"] - 1][0]
            if k: ids[k] = a["id"]
        for s in out["results"]["skipped"]:
            skipped_total += 1
            print("SKIPPED", ops[s["index"] - 1][0], s["code"], s["message"][:300], file=sys.stderr)
        todo = rest; rnd += 1
json.dump(ids, open(os.path.join(D, "idmap.json"), "w"), indent=1)
subprocess.run(["git", "-C", WS, "add", "-A"], check=True)
subprocess.run(["git", "-C", WS, "-c", "user.name=eval", "-c", "user.email=eval@example.com", "commit", "-qm", "memory corpus"], check=True)
print("loaded", len(ids), "of", len(ents), "skipped", skipped_total)
