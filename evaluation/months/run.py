#!/usr/bin/env python3
"""Rerun the evaluation: (re)load corpus.json into a fresh workspace with $BIN, then ask every question
of questions.json to memlog and to three SQLite FTS5 BM25 baselines. Writes results.json and results.md.
Usage: python3 evaluation/months/run.py [--no-load to reuse ws/]  (BIN=/path/to/memlog; default target/release/memlog)"""
import json, os, re, sqlite3, statistics, subprocess, sys, time
D = os.path.dirname(os.path.abspath(__file__))
BIN = os.environ.get("BIN", os.path.join(D, "..", "..", "target", "release", "memlog"))
NOW = "2026-12-01T09:00:00Z"
WS = os.environ.get("WS", os.path.join(D, "ws")); PROJ = "kestrel"
TAG = os.environ.get("TAG", "")
if not os.path.exists(os.path.join(D, "corpus.json")):
    subprocess.run([sys.executable, os.path.join(D, "gen_corpus.py")], check=True)
if "--no-load" not in sys.argv:
    subprocess.run([sys.executable, os.path.join(D, "load.py")], check=True, env=dict(os.environ, BIN=BIN))
ents = json.load(open(os.path.join(D, "corpus.json")))
qs = json.load(open(os.path.join(D, "questions.json")))
ids = json.load(open(os.path.join(D, "idmap.json")))
key_of = {v: k for k, v in ids.items()}
byk = {e["key"]: e for e in ents}
superseded = {e["supersedes"] for e in ents if e.get("supersedes")}
def status(e):
    if e["key"] in superseded: return "superseded"
    if e.get("deprecate_week") is not None: return "deprecated"
    return e.get("status", "active")

# ---- FTS5 baselines
def build(tok):
    db = sqlite3.connect(":memory:")
    db.execute(f"create virtual table t using fts5(summary, content, subject, tags, key unindexed, tokenize='{tok}')")
    for e in ents:
        db.execute("insert into t values (?,?,?,?,?)", (e["summary"], e["content"], e["subject"], " ".join(e["tags"]), e["key"]))
    return db
def fts_query(q):
    words = re.findall(r"[^\W_]+", q.lower())
    return " OR ".join('"%s"' % w for w in words)
DBS = {"fts5_unicode61": build("unicode61"), "fts5_porter": build("porter unicode61")}
def fts(db, q, filt):
    m = fts_query(q)
    if not m: return []
    rows = db.execute("select key from t where t match ? order by bm25(t)", (m,)).fetchall()
    out = []
    for (k,) in rows:
        e = byk[k]
        if filt and (status(e) != "active" or e["confidence"] < 0.6): continue
        out.append(k)
        if len(out) == 10: break
    return out

def ml_query(q):
    cmd = [BIN, "--workspace", WS, "--now", NOW, "query", q, PROJ, "--json", "--limit", "10"]
    t0 = time.perf_counter()
    r = subprocess.run(cmd, cwd=WS, capture_output=True, text=True)
    dt = (time.perf_counter() - t0) * 1000
    out = json.loads(r.stdout)
    if not out.get("success"): return [], dt, out
    return [key_of.get(x["id"], x["id"]) for x in out["results"]], dt, out

def rank(lst, exp):
    for i, k in enumerate(lst[:10]):
        if k in exp: return i + 1
    return None

SYS = ["memlog", "fts5_unicode61", "fts5_porter", "fts5_porter_filtered"]
res = []; times = []
ml_query("warm up")
for q in qs:
    exp = set(q["keys"])
    ml, dt, raw = ml_query(q["q"]); times.append(dt)
    lists = {"memlog": ml, "fts5_unicode61": fts(DBS["fts5_unicode61"], q["q"], False),
             "fts5_porter": fts(DBS["fts5_porter"], q["q"], False),
             "fts5_porter_filtered": fts(DBS["fts5_porter"], q["q"], True)}
    res.append(dict(q, ranks={s: rank(lists[s], exp) for s in SYS}, top={s: lists[s][:5] for s in SYS},
                    memlog_warnings=[w.get("message") for w in raw.get("warnings", [])], ms=round(dt, 1)))

def metrics(rows, s):
    n = len(rows)
    if not n: return (0, 0, 0, 0)
    r1 = sum(1 for r in rows if r["ranks"][s] == 1) / n
    r5 = sum(1 for r in rows if r["ranks"][s] and r["ranks"][s] <= 5) / n
    mrr = sum(1 / r["ranks"][s] for r in rows if r["ranks"][s]) / n
    return n, r1, r5, mrr
TYPES = {"a": "(a) answer's key words", "b": "(b) paraphrase", "c": "(c) current vs superseded", "d": "(d) person/team",
         "e": "(e) typos", "f": "(f) short keywords"}
lines = [f"# Retrieval evaluation ({len(qs)} questions, {len(ents)} entries, memlog {BIN}, --now {NOW})", "",
         "| question set | n | system | recall@1 | recall@5 | MRR@10 |", "|---|---|---|---|---|---|"]
summary = {}
for label, rows in [("all", res)] + [(TYPES[t], [r for r in res if r["type"] == t]) for t in "abcdef"]:
    for s in SYS:
        n, r1, r5, mrr = metrics(rows, s)
        summary.setdefault(label, {})[s] = dict(n=n, r1=round(r1, 3), r5=round(r5, 3), mrr=round(mrr, 3))
        lines.append(f"| {label} | {n} | {s} | {r1:.3f} | {r5:.3f} | {mrr:.3f} |")
lines += ["", f"memlog query time (whole process, sequential): median {statistics.median(times):.1f} ms, "
          f"p90 {sorted(times)[int(0.9*len(times))]:.1f} ms, max {max(times):.1f} ms"]
json.dump(dict(summary=summary, median_ms=statistics.median(times), results=res), open(os.path.join(D, f"results{TAG}.json"), "w"), indent=1, ensure_ascii=False)
open(os.path.join(D, f"results{TAG}.md"), "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
