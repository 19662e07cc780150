#!/usr/bin/env python3
"""Generate an evaluation corpus (entries + questions) for memlog, seeded and reproducible.

Fictional company: Kestrel, a SaaS for home-service businesses (plumbers, HVAC, electricians).
Writes corpus.json (entries with batch week, supersede/deprecate links) and questions.json.
"""
import json, random, datetime, re, os

R = random.Random(20261201)
OUT = os.path.dirname(os.path.abspath(__file__))
START = datetime.date(2026, 8, 3)  # week 0 Monday
WEEKS = 17                          # up to end of November
NOW = "2026-12-01T09:00:00Z"        # queries are asked at this time

# ---------------------------------------------------------------- world
SERVICES = {
    # name: (team, aliases used colloquially, language, datastore, queue, purpose)
    "billing":       ("Billing",      ["payments", "charging"],          "Go",     "Postgres", "SQS",   "charges customer cards and manages subscriptions"),
    "invoicing":     ("Billing",      ["invoices", "invoice generator"], "Kotlin", "Postgres", "SQS",   "renders and emails invoices and credit notes"),
    "payouts":       ("Billing",      ["technician payouts", "contractor payments"], "Go", "Postgres", "SQS", "pays out contractors and technicians weekly"),
    "auth":          ("Identity",     ["login", "SSO"],                  "Go",     "Postgres", "none",  "handles login, SSO and API tokens"),
    "scheduler":     ("Field Ops",    ["booking", "appointments"],       "Python", "Postgres", "Celery","books appointments into technician calendars"),
    "dispatch":      ("Field Ops",    ["job assignment", "assigning technicians"], "Python", "Postgres", "Kafka", "assigns jobs to the nearest available technician"),
    "routing":       ("Field Ops",    ["route planner", "maps"],         "Rust",   "Redis",    "Kafka", "computes daily driving routes for technicians"),
    "inventory":     ("Field Ops",    ["parts stock", "van stock"],      "Kotlin", "MySQL",    "Kafka", "tracks parts on technician vans and in warehouses"),
    "notifications": ("Platform",     ["SMS and email sender", "messaging"], "TypeScript", "DynamoDB", "SQS", "sends SMS, email and push notifications"),
    "search":        ("Platform",     ["customer lookup", "search index"], "Java", "OpenSearch", "Kafka", "indexes customers, jobs and invoices for lookup"),
    "gateway":       ("Platform",     ["API gateway", "edge"],           "Go",     "Redis",    "none",  "fronts every public API and enforces rate limits"),
    "webhooks":      ("Integrations", ["outbound callbacks", "integrations"], "TypeScript", "Postgres", "SQS", "delivers event callbacks to customer systems"),
    "mobile-api":    ("Mobile",       ["technician app backend", "app API"], "TypeScript", "Postgres", "SQS", "serves the technician mobile app"),
    "web-app":       ("Web",          ["office dashboard", "frontend"],  "TypeScript", "none",   "none",  "the office staff web dashboard"),
    "reporting":     ("Data",         ["analytics dashboards", "reports"], "Python", "ClickHouse", "Kafka", "builds revenue and utilisation reports"),
    "ingest":        ("Data",         ["event pipeline", "telemetry intake"], "Rust", "S3", "Kafka", "ingests GPS pings and app events"),
}
SVC = list(SERVICES)
PEOPLE = [
    ("Priya Nair", "Billing", "tech lead"), ("Marco Bellini", "Billing", "engineer"),
    ("Hannah Okafor", "Identity", "tech lead"), ("Tomasz Wiśniewski", "Identity", "security engineer"),
    ("Dana Whitfield", "Field Ops", "engineering manager"), ("Luis Ortega", "Field Ops", "engineer"),
    ("Mei Chen", "Field Ops", "tech lead"), ("Samir Haddad", "Platform", "staff engineer"),
    ("Greta Lindqvist", "Platform", "SRE"), ("Kofi Mensah", "Platform", "engineer"),
    ("Aisha Rahman", "Integrations", "tech lead"), ("Jonas Becker", "Mobile", "tech lead"),
    ("Elena Petrova", "Web", "frontend lead"), ("Raj Iyer", "Data", "data engineer"),
    ("Noor Siddiqui", "Data", "tech lead"), ("Ben Carter", "SRE", "SRE lead"),
    ("Olivia Grant", "Product", "product manager"), ("Yuki Tanaka", "Security", "CISO"),
]
TEAM_LEAD = {}
for n, t, r in PEOPLE:
    if t not in TEAM_LEAD and ("lead" in r or "manager" in r or "staff" in r):
        TEAM_LEAD[t] = n
CUSTOMERS = ["Harbor Plumbing", "Northwind HVAC", "BrightSpark Electric", "Cedar Roofing", "BlueLine Pest Control",
             "Summit Heating", "Riverbend Landscaping", "Apex Garage Doors", "Metro Drain Pros", "Pinecrest Pools",
             "Oakridge Appliance Repair", "Clearwater Septic"]
JIRA = {"Billing": "BILL", "Identity": "IDN", "Field Ops": "FOPS", "Platform": "PLAT", "Integrations": "INT",
        "Mobile": "MOB", "Web": "WEB", "Data": "DATA", "SRE": "SRE", "Product": "PROD", "Security": "SEC"}

def team(s): return SERVICES[s][0]
def alias(s): return R.choice(SERVICES[s][1])
def ticket(s):
    t = team(s) if s in SERVICES else s
    return f"https://kestrel.atlassian.net/browse/{JIRA[t]}-{R.randint(100, 2999)}"
def code(s, f): return f"services/{s}/{f}#L{(a:=R.randint(5,300))}-L{a+R.randint(5,60)}"
def dash(s, p): return f"https://grafana.kestrel.example/d/{s}-{p}"
def date_of(week, day=None):
    return START + datetime.timedelta(days=7 * week + (R.randint(0, 4) if day is None else day))
def fmt(d): return d.strftime("%Y-%m-%d")
def pick(*xs): return R.choice(xs)

ENTRIES = []
QUEST = []     # candidate questions: dict(type, q, keys)

def E(key, week, section, kind, subject, scope, summary, content, conf, evidence, tags=(), **kw):
    e = dict(key=key, week=week, section=section, kind=kind, subject=subject, scope=scope,
             summary=summary, content=content, confidence=round(conf, 2), evidence=evidence,
             tags=list(tags))
    e.update(kw)
    ENTRIES.append(e)
    return e

def Q(kind, q, keys):
    QUEST.append(dict(type=kind, q=q, keys=list(keys) if isinstance(keys, (list, tuple)) else [keys]))

def ev(t, uri, note): return {"type": t, "uri": uri, "note": note}

# ---------------------------------------------------------------- decisions
DECISIONS = [
    # (topic, summary variants, content, tags, para question, keyword question, short kw)
    ("retry-policy",
     ["Retry failed calls to {dep} at most {n} times with exponential backoff",
      "Cap {dep} retries at {n} attempts using jittered exponential backoff"],
     "We chose capped exponential backoff (base 200 ms, factor 2, full jitter) for calls from {s} to {dep}. Fixed-interval retries caused synchronized retry storms during the {month} outage. Trade-off: a permanently failing call takes several seconds to surface.",
     ["retries"],
     ["how many times does {a} try again when {dep} is failing?", "what's the backoff strategy when {a} can't reach {dep}"],
     ["{s} {dep} retry limit", "retries {dep} {s}"]),
    ("pagination",
     ["{S} API uses cursor-based pagination instead of offsets",
      "Switch {s} list endpoints to opaque cursor pagination"],
     "Offset pagination on {s} list endpoints became slow past page 200 and returned duplicates while rows were inserted. Cursors encode the last seen (created_at, id). Clients must treat the cursor as opaque.",
     ["api"],
     ["how do clients page through results from the {a} endpoints?", "do we use offset or cursor paging in {a}"],
     ["{s} pagination", "{s} cursor paging"]),
    ("datastore",
     ["Store {s} data in {db} rather than {alt}",
      "{S} keeps its primary data in {db}; {alt} was rejected"],
     "{db} was chosen for {s} because the team already operates it and it fits the access pattern. {alt} was evaluated in a two-week spike and rejected over operational cost and missing transactional guarantees.",
     ["database", "architecture"],
     ["which database backs the {a} service and why not {alt}?", "why did we pick {db} for {a}"],
     ["{s} database choice", "{s} {db}"]),
    ("idempotency",
     ["Require an Idempotency-Key header on {s} write endpoints",
      "{S} deduplicates writes with client-supplied idempotency keys kept for 24 hours"],
     "Mobile clients on flaky networks resubmitted requests and created duplicate records in {s}. Every POST must carry an Idempotency-Key; the key and response are kept 24 hours and replayed on retry.",
     ["api", "idempotency"],
     ["how do we stop double submissions from creating duplicates in {a}?", "what protects {a} against the same request being sent twice"],
     ["{s} idempotency key", "duplicate requests {s}"]),
    ("deploy-strategy",
     ["Deploy {s} with canary releases at 5% then 50% then 100%",
      "{S} ships through a blue-green deployment behind the load balancer"],
     "Rollouts of {s} are staged so that error-rate alerts fire before all traffic is affected. The pipeline pauses 15 minutes at each step and rolls back automatically when the 5xx rate doubles.",
     ["deploy"],
     ["how are new versions of {a} rolled out to production?", "is {a} released gradually or all at once"],
     ["{s} rollout strategy", "{s} canary"]),
    ("timeouts",
     ["Set a {t} ms client timeout on {s} calls to {dep}",
      "{S} gives up on {dep} requests after {t} milliseconds"],
     "Without a timeout, slow {dep} responses held {s} worker threads until the pool was exhausted. {t} ms is roughly three times the p99 of {dep} under normal load.",
     ["timeouts", "resilience"],
     ["how long does {a} wait for {dep} before it gives up?", "what's the request deadline when {a} calls {dep}"],
     ["{s} {dep} timeout", "timeout {dep}"]),
    ("caching",
     ["Cache {thing} in Redis for {ttl} minutes in {s}",
      "{S} keeps a {ttl}-minute Redis cache of {thing}"],
     "Reads of {thing} dominated {s} database load. A read-through cache with a {ttl}-minute TTL cut primary reads by about 70%. Writes invalidate the key explicitly; stale reads up to the TTL are acceptable per product.",
     ["cache", "performance"],
     ["do we cache {thing} somewhere in {a}, and for how long?", "how stale can {thing} be when served by {a}"],
     ["{s} cache ttl", "{thing} cache"]),
    ("feature-flags",
     ["Gate {s} features behind LaunchDarkly flags, removed within 30 days of full rollout",
      "{S} uses LaunchDarkly flags with a 30-day cleanup rule"],
     "Flags let {s} decouple deploy from release. Stale flags caused two incidents in other teams, so each flag gets a ticket to remove it within 30 days after 100% rollout.",
     ["feature-flags"],
     ["how do we turn new {a} functionality on for some customers only?", "what's the policy on old toggles in {a}"],
     ["{s} feature flags", "flag cleanup {s}"]),
    ("api-versioning",
     ["Version the {s} public API in the URL path (/v1, /v2)",
      "{S} API versions live in the URL prefix, not in headers"],
     "Header-based versioning confused integrators using low-code tools. Path versions are explicit in logs. Old versions are supported for 12 months after a new one ships.",
     ["api"],
     ["how do integrators pick which version of the {a} API they call?", "how long do we keep old {a} API versions alive"],
     ["{s} api versioning", "{s} v2 path"]),
    ("migrations",
     ["Run {s} schema migrations with {tool} as a separate pre-deploy job",
      "{S} applies database migrations through {tool} before the app rolls out"],
     "Running migrations at app start raced between replicas and once locked the {s} table for minutes. Migrations now run once as a pre-deploy job and must be backward compatible with the previous release (expand and contract).",
     ["database", "migrations"],
     ["when and how do database changes for {a} get applied?", "what tool handles {a} schema changes"],
     ["{s} migrations tool", "{s} schema migration"]),
    ("logging",
     ["{S} logs structured JSON with a request_id on every line",
      "Emit JSON logs with trace and request ids from {s}"],
     "Plain-text logs from {s} could not be joined across services during incidents. Every line is JSON with request_id, trace_id and tenant_id; PII fields are dropped by the log shipper.",
     ["logging", "observability"],
     ["what format do the {a} logs use and how do I correlate them?", "can I trace a single request through the {a} logs"],
     ["{s} log format", "{s} request_id logs"]),
    ("auth-between-services",
     ["{S} authenticates to internal services with mTLS certificates from the mesh",
      "Service-to-service calls from {s} use mesh-issued mTLS identities"],
     "Shared API keys between {s} and its callers leaked into a log once. The service mesh issues short-lived certificates; authorization policies allow only named callers.",
     ["security"],
     ["how does {a} prove its identity when calling other internal services?", "do internal calls from {a} use shared secrets"],
     ["{s} mtls", "{s} internal auth"]),
]
DEPS = {"billing": ["Stripe", "invoicing"], "invoicing": ["billing", "notifications"], "payouts": ["Stripe Connect", "billing"],
        "auth": ["Okta", "Postgres"], "scheduler": ["routing", "notifications"], "dispatch": ["routing", "scheduler"],
        "routing": ["Mapbox", "ingest"], "inventory": ["dispatch", "search"], "notifications": ["Twilio", "SendGrid"],
        "search": ["OpenSearch", "ingest"], "gateway": ["auth", "Redis"], "webhooks": ["customer endpoints", "billing"],
        "mobile-api": ["scheduler", "dispatch"], "web-app": ["gateway", "search"], "reporting": ["ClickHouse", "billing"],
        "ingest": ["Kafka", "S3"]}
ALTS = {"Postgres": "MongoDB", "MySQL": "Postgres", "Redis": "Memcached", "DynamoDB": "Postgres", "OpenSearch": "Elasticsearch Cloud",
        "ClickHouse": "BigQuery", "S3": "HDFS", "none": "IndexedDB"}
THINGS = {"billing": "plan prices", "invoicing": "tax rates", "payouts": "bank account metadata", "auth": "session lookups",
          "scheduler": "technician availability", "dispatch": "technician locations", "routing": "travel-time matrices",
          "inventory": "part catalog entries", "notifications": "message templates", "search": "tenant settings",
          "gateway": "rate-limit counters", "webhooks": "endpoint configurations", "mobile-api": "job summaries",
          "web-app": "feature flag values", "reporting": "dashboard query results", "ingest": "device registrations"}
TOOLS = ["Flyway", "Atlas", "Alembic", "golang-migrate", "Liquibase"]
MONTHS = ["August", "September", "October", "November"]

def fill(_tpl, **k):
    return _tpl.format(**k)

def gen_decisions():
    for s in SVC:
        tops = R.sample(DECISIONS, 9)
        for i, (topic, sums, content, tags, paras, kws) in enumerate(tops):
            dep = R.choice(DEPS[s]); db = SERVICES[s][3]
            k = dict(s=s, S=s.capitalize() if s != "mobile-api" else "Mobile API", dep=dep, n=R.choice([3, 4, 5]),
                     db=db, alt=ALTS.get(db, "MongoDB"), t=R.choice([800, 1500, 2000, 3000, 5000]),
                     thing=THINGS[s], ttl=R.choice([5, 10, 15, 30, 60]), tool=R.choice(TOOLS), month=R.choice(MONTHS))
            week = R.randint(0, 9)
            summ = fill(R.choice(sums), **k)
            decider = R.choice([p for p in PEOPLE if p[1] == team(s)] or PEOPLE)
            cont = fill(content, **k) + f" Decided by {decider[0]} ({team(s)})."
            key = f"dec.{s}.{topic}"
            e = E(key, week, "decisions", "decision", f"{s}.{topic}", f"service:{s}", summ, cont,
                  R.uniform(0.8, 0.95), [ev("doc", f"docs/adr/{R.randint(1,120):04d}-{s}-{topic}.md", "ADR"),
                                         ev("code", code(s, "config/" + topic + ".yaml"), "implementation")],
                  tags)
            e["_k"] = k; e["_decider"] = decider[0]
            ka = dict(k, a=alias(s))
            # (a) keyword question: reuse entry's words
            Q("a", fill(pick("what did we decide about {topic} for {s}?", "{s} {topic} decision"), topic=topic.replace("-", " "), s=s), key)
            Q("b", fill(R.choice(paras), **ka), key)
            Q("f", fill(R.choice(kws), **k), key)
            Q("d", f"what did {decider[0].split()[0]} decide about {topic.replace('-', ' ')} in {s}?", key)
            # later change for some decisions: superseded (type c)
            if topic in ("retry-policy", "timeouts", "caching", "datastore", "deploy-strategy", "migrations") and R.random() < 0.55:
                k2 = dict(k)
                if topic == "retry-policy": k2["n"] = k["n"] + R.choice([-1, 2]); new = "Retry {dep} calls up to {n} times, backoff now capped at 10 seconds"
                elif topic == "timeouts": k2["t"] = k["t"] * 2 if k["t"] < 3000 else k["t"] // 2; new = "Raise the {s} timeout for {dep} calls to {t} ms" if k2["t"] > k["t"] else "Lower the {s} timeout for {dep} calls to {t} ms"
                elif topic == "caching": k2["ttl"] = k["ttl"] * 2 if k["ttl"] < 60 else 20; new = "{S} now caches {thing} for {ttl} minutes"
                elif topic == "datastore": k2["db"] = "Aurora Postgres" if db == "Postgres" else ("Postgres" if db != "Postgres" else db); new = "Move {s} primary storage to {db}"
                elif topic == "deploy-strategy": new = "{S} deploys switched to Argo Rollouts progressive delivery with automated analysis"
                else: k2["tool"] = R.choice([t for t in TOOLS if t != k["tool"]]); new = "{S} migrations moved from the old tool to {tool}"
                wk2 = R.randint(week + 2, WEEKS - 1)
                nk = key + ".v2"
                n = E(nk, wk2, "decisions", "decision", f"{s}.{topic}", f"service:{s}", fill(new, **k2),
                      fill(content, **k2) + f" Revisited in {MONTHS[min(3, wk2 // 4)]}: the earlier setting caused problems under peak load. Decided by {decider[0]}.",
                      R.uniform(0.85, 0.95), [ev("ticket", ticket(s), "change request"), ev("code", code(s, "config/" + topic + ".yaml"), "new setting")],
                      tags, supersedes=key)
                cq = {"retry-policy": "how many retries does {a} currently do against {dep}?",
                      "timeouts": "what is the current timeout for {dep} calls from {a}?",
                      "caching": "current cache TTL for {thing} in {a}",
                      "datastore": "where does {a} store its data now?",
                      "deploy-strategy": "how is {a} deployed these days?",
                      "migrations": "which migration tool does {a} use now?"}[topic]
                Q("c", fill(cq, **dict(k, a=pick(s, alias(s)))), nk)

# ---------------------------------------------------------------- incidents + learnings
INCIDENTS = [
    ("conn-pool", "{S} ran out of database connections during the {when} peak",
     "Connection pool (max {n}) exhausted after a slow query held connections; requests queued and timed out for {dur} minutes. {impact}",
     "Size the {s} connection pool from measured concurrency and put a statement timeout on every query",
     "A single unindexed query held connections long enough to starve the pool. We added statement_timeout=5s and alert on pool wait time above 100 ms.",
     ["what caused the {a} outage where the database connections ran out?", "why did {a} stop answering requests on {date}?"],
     "{s} connection pool exhausted", ["database", "postgres"]),
    ("cert-expiry", "TLS certificate for {s} expired and clients failed handshakes",
     "The certificate on the {s} load balancer expired at 03:12 UTC; renewal had been failing silently for three weeks. {impact} Outage lasted {dur} minutes.",
     "Alert on {s} certificates 21 days before expiry and fail loudly when renewal fails",
     "cert-manager renewal errors were only logged. We now export days-to-expiry as a metric with alerts at 21 and 7 days.",
     ["did {a} ever go down because a cert lapsed?", "what happened with the expired certificate on {a}"],
     "{s} certificate expired", ["tls"]),
    ("disk-full", "{S} nodes ran out of disk from unrotated logs",
     "Debug logging left on after an investigation filled /var on all {s} nodes within {dur} minutes of a traffic spike. {impact}",
     "Never leave debug logging on in {s}; log rotation caps each file at 500 MB",
     "Debug level was enabled by hand and never reverted. Log level changes now expire after 2 hours and logrotate is enforced by the base image.",
     ["{a} hosts filled up their disks, what happened?", "why did {a} crash with no space left on device"],
     "{s} disk full", ["disk", "logging"]),
    ("oom", "{S} pods were OOMKilled after the {ver} release",
     "Memory grew steadily after {ver} until pods hit the {mem} limit and were OOMKilled in a loop for {dur} minutes. {impact}",
     "Load-test {s} releases for memory growth over 30 minutes before promoting",
     "The leak came from an unbounded in-process map introduced in {ver}. A 30-minute soak test now runs in staging and compares RSS slope with the previous build.",
     ["why did {a} keep restarting after the {ver} deploy?", "memory blowup in {a} containers"],
     "{s} OOMKilled", ["memory", "kubernetes"]),
    ("dns", "Internal DNS failures made {s} lose its connection to {dep}",
     "CoreDNS was overloaded by a misconfigured job and {s} could not resolve {dep} for {dur} minutes. {impact}",
     "Cache DNS in {s} with a node-local resolver and keep connections to {dep} alive",
     "Short-lived connections meant every request resolved DNS again. NodeLocal DNSCache is now enabled and HTTP keep-alive is on for {dep}.",
     ["{a} couldn't resolve hostnames for {dep}, what was the cause?", "name resolution errors between {a} and {dep}"],
     "{s} dns failure {dep}", ["dns", "networking"]),
    ("provider-outage", "{dep} outage degraded {s} for {dur} minutes",
     "{dep} returned 5xx errors from 14:05 to 14:{dur2:02d} UTC. {S} retried aggressively and amplified the load. {impact}",
     "When {dep} is down, {s} should shed load with a circuit breaker instead of retrying",
     "Retries tripled traffic to an already failing {dep}. A circuit breaker opens after 50% errors over 30 seconds and {s} serves a degraded response meanwhile.",
     ["what happened when {dep} went down and {a} got dragged with it?", "how did the {dep} outage affect {a}"],
     "{dep} outage {s}", ["third-party"]),
    ("bad-migration", "A {s} migration locked the {table} table during business hours",
     "An ALTER TABLE that rewrote {table} took an exclusive lock for {dur} minutes. {impact}",
     "Run {s} migrations that rewrite large tables with online schema change tooling, off-peak",
     "The migration looked harmless in review. Migrations touching tables above 1 GB now need pt-online-schema-change or a batched backfill and must be scheduled off-peak.",
     ["why was the {table} table locked in {a}?", "a schema change blocked {a} writes, what went wrong"],
     "{s} migration lock {table}", ["database", "migrations"]),
    ("cache-stampede", "Cache stampede on {s} after Redis was flushed",
     "An operator flushed the {s} Redis cache during maintenance; every request missed at once and the database hit 100% CPU for {dur} minutes. {impact}",
     "Protect {s} against cache stampedes with request coalescing and staggered TTLs",
     "All keys expired simultaneously and thousands of requests recomputed the same values. We added single-flight request coalescing and 10% TTL jitter.",
     ["the database melted after the {a} cache was cleared, why?", "thundering herd on {a} after redis flush"],
     "{s} cache stampede", ["cache", "redis"]),
    ("clock-skew", "Clock skew on a {s} node produced tokens rejected as not yet valid",
     "One {s} node drifted 90 seconds because chrony was disabled by a base image change. {impact} Affected requests for {dur} minutes.",
     "Monitor clock drift on {s} hosts and allow 30 seconds of leeway in time checks",
     "The base image dropped chrony. We alert on clock offset above 1 second and allow 30 seconds of leeway on nbf/exp checks.",
     ["why were some {a} requests failing with time-related validation errors?", "{a} node had the wrong system time"],
     "{s} clock skew", ["time", "ntp"]),
    ("kafka-lag", "{S} consumer lag reached {lag} messages after a rebalance loop",
     "Consumers of {s} kept rebalancing because processing exceeded max.poll.interval.ms; lag grew to {lag} messages over {dur} minutes. {impact}",
     "Keep {s} message handlers under the poll interval and move slow work to a separate queue",
     "A slow downstream call inside the consumer loop triggered rebalances. Handlers now hand off slow work and max.poll.records was lowered to 100.",
     ["why did the {a} consumers fall so far behind?", "{a} queue backlog kept growing after consumers restarted"],
     "{s} consumer lag", ["kafka", "queues"]),
    ("config-typo", "A typo in the {s} config pushed the wrong {dep} endpoint to production",
     "A config change pointed {s} at the staging {dep} endpoint; production traffic failed for {dur} minutes before rollback. {impact}",
     "Validate {s} configuration against a schema in CI and diff prod config changes in review",
     "The change passed review because the YAML was valid. Config now has a JSON Schema with allowed hostnames per environment, checked in CI.",
     ["how did {a} end up talking to the staging {dep} in prod?", "wrong environment URL deployed for {a}"],
     "{s} config typo {dep}", ["config"]),
    ("rate-limited", "{dep} rate-limited {s} during the {when} batch run",
     "The {when} batch sent requests to {dep} without pacing and got HTTP 429 responses for {dur} minutes. {impact}",
     "Pace {s} batch traffic to {dep} with a token bucket below the published limit",
     "Batch jobs ignored the {dep} quota. A shared token bucket now keeps {s} at 80% of the published limit and honours Retry-After.",
     ["why did {dep} start throttling {a}?", "we got 429s from {dep} during the nightly job in {a}"],
     "{s} 429 {dep}", ["rate-limit", "third-party"]),
]
TABLES = {"billing": "subscriptions", "invoicing": "invoices", "payouts": "payout_batches", "auth": "sessions",
          "scheduler": "appointments", "dispatch": "assignments", "routing": "route_plans", "inventory": "stock_levels",
          "notifications": "deliveries", "search": "index_jobs", "gateway": "api_keys", "webhooks": "delivery_attempts",
          "mobile-api": "device_tokens", "web-app": "user_prefs", "reporting": "daily_rollups", "ingest": "gps_pings"}
IMPACTS = ["About {pct}% of requests failed.", "{cust} and roughly {m} other tenants opened support tickets.",
           "No data was lost, but {pct}% of requests timed out.", "Technicians could not open job details in the field.",
           "Customer-facing latency tripled.", "Roughly {m} tenants saw errors in the dashboard."]

def gen_incidents():
    for s in SVC:
        pool = R.sample(INCIDENTS, 9)
        for j, (ik, isum, icont, lsum, lcont, qs, kw, tags) in enumerate(pool):
            dep = R.choice(DEPS[s])
            week = R.randint(0, WEEKS - 1)
            d = date_of(week)
            k = dict(s=s, S=s.capitalize() if s != "mobile-api" else "Mobile API", dep=dep, n=R.choice([20, 40, 50, 100]),
                     dur=R.choice([12, 18, 25, 40, 55, 70, 95]), when=pick("Monday morning", "month-end", "nightly", "Black Friday", "first-of-month"),
                     ver=f"v{R.randint(1,4)}.{R.randint(0,30)}.{R.randint(0,9)}", mem=pick("512Mi", "1Gi", "2Gi"),
                     table=TABLES[s], lag=f"{R.randint(40,900)},{R.randint(100,999)}", date=fmt(d))
            k["dur2"] = min(59, 5 + k["dur"])
            imp = fill(R.choice(IMPACTS), pct=R.choice([3, 8, 15, 30, 60]), cust=R.choice(CUSTOMERS), m=R.randint(3, 40))
            key = f"inc.{s}.{ik}"
            summ = fill(isum, **k) + f" on {fmt(d)}"
            sev = R.choice(["SEV1", "SEV2", "SEV2", "SEV3"])
            ic = E(key, week, "observations", "incident", f"{s}.incidents", f"service:{s}", summ,
                   fill(icont, impact=imp, **k) + f" Severity {sev}.", R.uniform(0.8, 0.95),
                   [ev("ticket", ticket(s), "incident ticket"), ev("log", f"logs/{s}/{fmt(d)}.log", "error spike")], tags + ["incident"])
            lk = f"learn.{s}.{ik}"
            le = E(lk, week + (1 if week < WEEKS - 1 else 0), "learnings", pick("other", "invariant", "runbook_step") if False else "other",
                   f"{s}.{ik}", f"service:{s}", fill(lsum, **k), fill(lcont, **k) + f" Postmortem of the {fmt(d)} incident.",
                   R.uniform(0.75, 0.92), [ev("doc", f"docs/postmortems/{fmt(d)}-{s}-{ik}.md", "postmortem")], tags + ["postmortem"])
            ka = dict(k, a=alias(s))
            Q("b", fill(R.choice(qs), **ka), [key, lk])
            Q("a", fill(pick("{s} incident {date} {kw}", "what was the {kw} incident on {s}?"), s=s, date=k["date"], kw=ik.replace("-", " ")), key)
            Q("b", fill(pick("lessons from the {a} {kw} incident", "what should we do differently to avoid another {kw} problem on {a}?"),
                        a=ka["a"], kw=pick(*{"conn-pool": ["connection pool"], "cert-expiry": ["TLS expiry"], "disk-full": ["out of disk"],
                                             "oom": ["out of memory"], "dns": ["DNS"], "provider-outage": [dep + " downtime"],
                                             "bad-migration": ["table lock"], "cache-stampede": ["thundering herd"], "clock-skew": ["time drift"],
                                             "kafka-lag": ["consumer backlog"], "config-typo": ["bad config"], "rate-limited": ["throttling"]}[ik])), lk)
            Q("f", fill(kw, **k), key)
            if j < 3 and week < WEEKS - 3:
                w2 = R.randint(week + 2, WEEKS - 1); d2 = date_of(w2)
                k2 = dict(k, date=fmt(d2), dur=R.choice([8, 15, 30, 45]))
                k2["dur2"] = min(59, 5 + k2["dur"])
                rk = key + ".again"
                E(rk, w2, "observations", "incident", f"{s}.incidents", f"service:{s}", fill(isum, **k2) + f" again on {fmt(d2)}",
                  fill(icont, impact=fill(R.choice(IMPACTS), pct=R.choice([2, 5, 10]), cust=R.choice(CUSTOMERS), m=R.randint(2, 20)), **k2)
                  + " Recurrence: the follow-up action from the previous postmortem had not shipped yet.", R.uniform(0.8, 0.95),
                  [ev("ticket", ticket(s), "incident ticket")], tags + ["incident", "recurrence"])
                Q("a", fill("did the {kw} problem on {s} happen again after {date}?", kw=ik.replace("-", " "), s=s, date=k["date"]), rk)


# ---------------------------------------------------------------- test observations, config state, contracts
FLAKY = [
    ("{S} integration test {t} is flaky because it depends on wall-clock time", "Fails about 1 in 30 runs around midnight UTC; freeze time with a fake clock.", "why does {t} fail randomly in {a} CI?", "{s} flaky test"),
    ("{S} end-to-end suite takes {m} minutes; the contract tests are the slowest part", "Contract tests spin up Pact brokers per test; sharing one broker would save about 40%.", "why is the {a} test run so slow?", "{s} slow tests"),
    ("{S} load test showed saturation at {n} concurrent users", "k6 run against staging with production-like data; CPU bound in JSON serialisation.", "at what concurrency does {a} fall over under load?", "{s} load test"),
    ("{S} unit test coverage is {c}% with gaps in error handling paths", "Coverage report from CI; error branches for {dep} failures are mostly untested.", "how well tested is {a}?", "{s} coverage"),
    ("{S} static analysis flags {n} high-severity findings, mostly SQL string building", "Semgrep run in CI; findings triaged by the team, two real injection risks fixed.", "did the security scanner find anything in {a}?", "{s} semgrep findings"),
    ("{S} cold start takes {m} seconds because of eager cache warming", "Measured on staging pods; readiness probe initial delay raised accordingly.", "why does a new {a} pod take so long to become ready?", "{s} startup time"),
]
def gen_tests():
    for s in SVC:
        for i, (sm, ct, q, kw) in enumerate(R.sample(FLAKY, 5)):
            S = s.capitalize() if s != "mobile-api" else "Mobile API"
            k = dict(s=s, S=S, t=R.choice(["TestRefundFlow", "test_reschedule_overlap", "TestTokenRefresh", "SyncRetrySpec", "test_route_eta"]),
                     m=R.choice([6, 11, 18, 25, 40]), n=R.choice([200, 500, 1200, 4000]), c=R.choice([54, 61, 72, 83]), dep=R.choice(DEPS[s]), a=alias(s))
            key = f"test.{s}.{i}"
            E(key, R.randint(0, WEEKS - 1), "observations", pick("metric", "other"), f"{s}.testing", f"service:{s}", fill(sm, **k), fill(ct, **k),
              R.uniform(0.65, 0.9), [ev("artifact", f"https://ci.kestrel.example/{s}/runs/{R.randint(1000,9999)}", "CI run")], ["testing"])
            Q("b", fill(q, **k), key); Q("f", fill(kw, **k), key)

CONFIG = [
    ("replicas", "{S} runs {v} replicas in production", "Set in the GitOps repo; HPA min {v}, max {w}.", "how many {a} instances are running in prod?", "{s} replicas"),
    ("version", "{S} production is on release {v}", "Deployed by the pipeline; changelog in the release notes.", "which version of {a} is deployed right now?", "{s} prod version"),
    ("flag-rollout", "The new {s} pricing engine flag is at {v}% rollout", "LaunchDarkly flag {s}-new-engine; ramp paused if error rate rises.", "how far along is the {a} new engine rollout?", "{s} rollout percent"),
]
def gen_config():
    for s in SVC:
        for ck, sm, ct, q, kw in R.sample(CONFIG, 2):
            S = s.capitalize() if s != "mobile-api" else "Mobile API"
            n = R.choice([1, 2, 3]); prev = None; wk = R.randint(0, 6); used = set()
            for vi in range(n):
                v = {"replicas": R.choice([3, 4, 6, 8, 12]), "version": f"{R.randint(2,5)}.{R.randint(0,20)}.{R.randint(0,9)}", "flag-rollout": R.choice([5, 10, 25, 50, 100])}[ck]
                summ = fill(sm, S=S, s=s, v=v)
                while summ in used:
                    v = (v + 1) if isinstance(v, int) else v + ".1"; summ = fill(sm, S=S, s=s, v=v)
                used.add(summ)
                last = vi == n - 1
                vf = date_of(wk, 0)
                vt = datetime.date(2027, 1, 31) if last else vf + datetime.timedelta(days=35)
                key = f"cfg.{s}.{ck}" + ("" if last else f".old{vi}")
                e = E(key, wk, "state", "other", f"{s}.{ck}", f"service:{s}", summ, fill(ct, v=v, w=(v * 2 if isinstance(v, int) else 0), s=s) + f" As of {fmt(vf)}.",
                      R.uniform(0.8, 0.95), [ev("artifact", f"https://argocd.kestrel.example/applications/{s}", "live state")], ["config"],
                      valid_from=fmt(vf) + "T00:00:00Z", valid_to=fmt(vt) + "T00:00:00Z")
                if prev: e["supersedes"] = prev["key"]
                prev = e; wk = min(WEEKS - 1, wk + R.randint(3, 5))
            Q("c" if n > 1 else "b", fill(q, a=alias(s)), prev["key"]); Q("f", fill(kw, s=s), prev["key"])

CONTRACTS = [
    ("{S} publishes {ev} events to the Kafka topic {s}.events.v1", "Schema in the registry as Avro; consumers must tolerate unknown fields.", "which topic do I subscribe to for {ev} events from {a}?", "{s} events topic"),
    ("{S} exposes gRPC on port 50051 and REST on 8080", "REST is generated from the proto with grpc-gateway; internal callers should use gRPC.", "what ports does {a} listen on?", "{s} ports"),
    ("{S} webhook payloads are signed with HMAC-SHA256 in the X-Kestrel-Signature header", "Receivers verify with the per-endpoint signing secret stored as [WEBHOOK_SECRET].", "how can a receiver check that a callback from {a} is genuine?", "{s} signature header"),
    ("{S} returns errors as RFC 7807 problem+json", "type, title, status, detail and a Kestrel error code; clients switch on the code, not the message.", "what does an error response from {a} look like?", "{s} error format"),
    ("{S} depends on {dep} for {why}", "A {dep} outage degrades {s}; see the dependency map in the service catalog.", "what breaks in {a} if {dep} is down?", "{s} dependencies {dep}"),
]
EVS = {"billing": "payment.succeeded", "invoicing": "invoice.issued", "payouts": "payout.sent", "auth": "user.signed_in", "scheduler": "appointment.booked",
       "dispatch": "job.assigned", "routing": "route.planned", "inventory": "stock.low", "notifications": "message.delivered", "search": "index.updated",
       "gateway": "key.revoked", "webhooks": "delivery.failed", "mobile-api": "device.registered", "web-app": "session.started", "reporting": "report.ready", "ingest": "ping.received"}
def gen_contracts():
    for s in SVC:
        for i, (sm, ct, q, kw) in enumerate(R.sample(CONTRACTS, 4)):
            S = s.capitalize() if s != "mobile-api" else "Mobile API"
            dep = R.choice(DEPS[s])
            k = dict(s=s, S=S, ev=EVS[s], dep=dep, why=pick("authentication", "price lookups", "address geocoding", "delivery", "job data"), a=alias(s))
            key = f"api.{s}.{i}"
            E(key, R.randint(0, WEEKS - 1), "decisions", "invariant", f"{s}.api-contract", f"service:{s}", fill(sm, **k), fill(ct, **k),
              R.uniform(0.8, 0.95), [ev("code", code(s, "api/contract.proto"), "contract definition")], ["api"])
            Q("b", fill(q, **k), key); Q("f", fill(kw, **k), key)

# ---------------------------------------------------------------- runbooks
RUNBOOKS = [
    ("rollback", ["Roll back a bad {s} release with `deployctl revert {s}` to the previous image tag",
                  "Revert {s} to the last good build by redeploying the prior image"],
     "Run `deployctl revert {s} --to previous`; it redeploys the previous image tag and keeps the database as is. If the release ran a migration, check the expand/contract notes before reverting. Announce in #{s}-deploys.",
     ["how do I undo a broken {a} deploy?", "steps to go back to the previous version of {a}"], ["{s} rollback", "revert {s}"]),
    ("rotate-credentials", ["Rotate the {s} {dep} API credentials through Vault",
                            "Cycle {s}'s {dep} secret in Vault and restart the pods"],
     "Create the new credential in the {dep} console, write it to Vault at secret/{s}/{depslug} as [API_KEY], then run `kubectl rollout restart deploy/{s}`. Revoke the old credential after 30 minutes once no 401s appear.",
     ["how do I change the key {a} uses for {dep}?", "procedure to replace leaked {dep} secrets for {a}"], ["{s} rotate {dep} key", "{s} secret rotation"]),
    ("scale-up", ["Scale {s} horizontally by raising the HPA max replicas",
                  "Add {s} capacity by bumping the autoscaler ceiling"],
     "Edit deploy/{s}/hpa.yaml and raise maxReplicas (currently {n}); the database connection budget allows at most {m} replicas. Apply via the GitOps repo, never with kubectl edit.",
     ["{a} is overloaded, how do we add more instances?", "how far can we scale out {a} before the DB chokes"], ["{s} scaling", "{s} hpa replicas"]),
    ("drain-queue", ["Drain the {s} queue before maintenance with `opsctl drain {s}`",
                     "Stop {s} consumers and wait for queue depth 0 before maintenance"],
     "Pause producers with the feature flag {s}-intake-paused, run `opsctl drain {s}` and wait until depth reaches 0. Skipping this replays messages after restart.",
     ["what do I do with in-flight {a} messages before taking it down?", "how to empty the {a} backlog safely"], ["{s} drain queue", "drain {s}"]),
    ("replay-dlq", ["Replay the {s} dead-letter queue with `opsctl dlq replay {s}` after fixing the cause",
                    "Re-drive {s} dead letters once the bug is fixed"],
     "List failures with `opsctl dlq ls {s}`, fix the cause first, then `opsctl dlq replay {s} --rate 50`. Replaying without a fix just refills the DLQ.",
     ["how do I reprocess failed {a} messages?", "retry the poison messages stuck for {a}"], ["{s} dlq replay", "dead letter {s}"]),
    ("failover-db", ["Fail over the {s} database to the standby with `dbctl promote {s}-replica`",
                     "Promote the {s} replica when the primary database is unhealthy"],
     "Confirm replication lag is under 5 seconds, run `dbctl promote {s}-replica`, then update the {s}-db DNS record. Expect about 60 seconds of write errors.",
     ["the {a} primary DB is dead, how do we switch to the replica?", "database failover steps for {a}"], ["{s} db failover", "{s} promote replica"]),
    ("clear-cache", ["Purge a single tenant's {s} cache with `opsctl cache purge {s} --tenant ID`",
                     "Invalidate {s} cached entries for one tenant, never flush all"],
     "Flushing the whole {s} Redis caused a stampede before. Purge per tenant with `opsctl cache purge {s} --tenant ID` and watch database CPU.",
     ["a customer sees stale data in {a}, how do I clear it for just them?", "how to invalidate the {a} cache for one account"], ["{s} cache purge", "purge cache tenant {s}"]),
    ("reindex", ["Rebuild the {s} search index with a blue-green alias swap",
                 "Reindex {s} into a new index and flip the alias"],
     "Create {s}-v{{n+1}}, run `opsctl reindex {s} --target new`, compare document counts, then swap the alias. Keep the old index 48 hours for rollback.",
     ["how do we rebuild the {a} index without downtime?", "search results for {a} are missing docs, how to reindex"], ["{s} reindex", "{s} index rebuild"]),
    ("restart-workers", ["Restart stuck {s} workers with a rolling restart, not a delete",
                         "Do a rolling restart of {s} workers when they stop processing"],
     "`kubectl rollout restart deploy/{s}-worker` respects the PodDisruptionBudget; deleting pods at once dropped in-flight jobs. Check the heartbeat dashboard afterwards.",
     ["{a} workers are hung, how should I bounce them?", "safe way to restart the {a} background processors"], ["{s} restart workers", "{s} worker hung"]),
    ("access-logs", ["Find {s} production logs in Loki with the query {{app=\"{s}\"}}",
                     "{S} production logs live in Loki under app={s}"],
     "Use Grafana Explore with the Loki source and {{app=\"{s}\", env=\"prod\"}}; logs are kept 14 days. Older logs are in S3 under logs-archive/{s}/.",
     ["where can I read what {a} printed in production?", "how do I search the {a} prod logs from last month"], ["{s} logs loki", "{s} prod logs"]),
    ("local-dev", ["Run {s} locally with `make dev` against the docker-compose stack",
                   "Start {s} on a laptop with make dev and seeded test data"],
     "`make dev` starts {s} with docker-compose dependencies and seeds tenant demo-001. Set KESTREL_ENV=local; never point local runs at staging databases.",
     ["how do I get {a} running on my machine?", "local development setup for {a}"], ["{s} local setup", "{s} make dev"]),
    ("hotfix", ["Ship a {s} hotfix from a release branch with two approvals",
                "{S} hotfixes branch off the release tag and need two reviewers"],
     "Branch hotfix/{s}-X from the deployed tag, get two approvals including one from {team}, and deploy with the expedite label, which skips the canary pause but not the tests.",
     ["what's the process for an urgent fix to {a} in prod?", "how do we push an emergency patch for {a}"], ["{s} hotfix process", "hotfix {s}"]),
]

def gen_runbooks():
    for s in SVC:
        for rk, sums, cont, qs, kws in R.sample(RUNBOOKS, 10):
            dep = R.choice([d for d in DEPS[s]])
            k = dict(s=s, S=s.capitalize() if s != "mobile-api" else "Mobile API", dep=dep, depslug=re.sub(r"\W+", "-", dep.lower()),
                     n=R.choice([6, 8, 12, 20]), m=R.choice([16, 24, 30, 40]), team=team(s))
            key = f"rb.{s}.{rk}"
            week = R.randint(0, WEEKS - 1)
            E(key, week, "learnings", "runbook_step", f"{s}.ops.{rk}", f"service:{s}", fill(R.choice(sums), **k), fill(cont, **k),
              R.uniform(0.8, 0.95), [ev("doc", f"docs/runbooks/{s}/{rk}.md", "runbook")], ["runbook"])
            ka = dict(k, a=alias(s))
            Q("b", fill(R.choice(qs), **ka), key)
            Q("a", fill(pick("{s} runbook {rk}", "runbook for {rk} on {s}"), s=s, rk=rk.replace("-", " ")), key)
            Q("f", fill(R.choice(kws), **k), key)

# ---------------------------------------------------------------- metrics / state (with history)
METRICS = [
    ("p95-latency", "{S} p95 latency is {v} ms", "Measured at the gateway over 7 days of production traffic; target is {t} ms.", "ms",
     ["how fast does {a} respond at the 95th percentile right now?", "current response time of {a}"], ["{s} p95 latency", "{s} latency"]),
    ("error-rate", "{S} 5xx error rate is {v}%", "Rolling 7-day ratio of 5xx responses; the SLO allows {t}%.", "%",
     ["what fraction of {a} requests are failing at the moment?", "how many server errors is {a} returning lately"], ["{s} error rate", "{s} 5xx"]),
    ("throughput", "{S} handles about {v} requests per second at peak", "Peak between 08:00 and 09:00 local time when technicians start their day.", "rps",
     ["how much traffic does {a} take at its busiest?", "peak load on {a}"], ["{s} peak rps", "{s} throughput"]),
    ("db-size", "The {s} database is {v} GB and grows about {t} GB a month", "From the RDS storage metric; the volume autoscales up to 2 TB.", "GB",
     ["how big is the {a} DB now?", "storage growth rate for {a}"], ["{s} db size", "{s} storage"]),
    ("monthly-cost", "{S} costs about ${v} a month in AWS", "From Cost Explorer tagged by service={s}; compute is about {t}% of it.", "$",
     ["what are we spending on infrastructure for {a}?", "cloud bill for {a}"], ["{s} aws cost", "{s} monthly spend"]),
    ("slo", "{S} availability SLO is {v}% over 30 days", "Agreed with product; error budget policy freezes feature work when {t}% of the budget is burnt.", "%",
     ["what uptime target have we committed to for {a}?", "reliability objective of {a}"], ["{s} slo", "{s} availability target"]),
    ("queue-depth", "{S} queue depth peaks at about {v} messages", "Daily peak after the 06:00 batch; alert threshold is {t}.", "msgs",
     ["how many messages pile up in the {a} queue at peak?", "normal backlog size for {a}"], ["{s} queue depth", "{s} backlog"]),
]
def mval(mk):
    return {"p95-latency": R.choice([120, 180, 240, 310, 420, 650]), "error-rate": R.choice([0.1, 0.2, 0.4, 0.8, 1.3]),
            "throughput": R.choice([150, 400, 900, 1800, 3200]), "db-size": R.choice([40, 120, 380, 640, 900]),
            "monthly-cost": R.choice([1200, 3400, 8800, 15500]), "slo": R.choice([99.5, 99.9, 99.95]),
            "queue-depth": R.choice([300, 1200, 5000, 20000])}[mk]
def mtarget(mk):
    return {"p95-latency": R.choice([300, 500, 800]), "error-rate": R.choice([0.5, 1.0]), "throughput": 0, "db-size": R.choice([5, 12, 30]),
            "monthly-cost": R.choice([40, 60, 70]), "slo": R.choice([50, 75]), "queue-depth": R.choice([10000, 50000])}[mk]

def gen_metrics():
    for s in SVC:
        for mk, sm, ct, unit, qs, kws in R.sample(METRICS, 6):
            S = s.capitalize() if s != "mobile-api" else "Mobile API"
            versions = R.choice([1, 2, 2, 3])
            prev = None; used_s = set()
            wk = R.randint(0, 5)
            for vi in range(versions):
                v = mval(mk); t = mtarget(mk)
                summ = fill(sm, s=s, S=S, v=v, t=t)
                while summ in used_s:
                    v = round(v * 1.3, 2) if isinstance(v, float) else int(v * 1.3) + 1; summ = fill(sm, s=s, S=S, v=v, t=t)
                used_s.add(summ)
                vf = date_of(wk, 0)
                last = vi == versions - 1
                vt = datetime.date(2027, 1, R.choice([5, 12, 20, 31])) if last else vf + datetime.timedelta(days=42)
                if last and R.random() < 0.12:
                    vt = datetime.date(2026, 12, 5)  # approaching expiry at query time
                key = f"met.{s}.{mk}" + ("" if last else f".old{vi}")
                e = E(key, wk, "state", "metric", f"{s}.{mk}", f"service:{s}", summ,
                      fill(ct, s=s, v=v, t=t) + f" Snapshot taken {fmt(vf)}.", R.uniform(0.75, 0.92),
                      [ev("artifact", dash(s, mk), "dashboard panel")], ["metrics"],
                      valid_from=fmt(vf) + "T00:00:00Z", valid_to=fmt(vt) + "T00:00:00Z")
                if prev is not None:
                    e["supersedes"] = prev["key"]
                prev = e
                wk = min(WEEKS - 1, wk + R.randint(3, 6))
            ka = dict(s=s, a=alias(s))
            if versions > 1:
                Q("c", fill(R.choice(qs), **ka), prev["key"])
            else:
                Q("b", fill(R.choice(qs), **ka), prev["key"])
            Q("f", fill(R.choice(kws), s=s), prev["key"])

# ---------------------------------------------------------------- requirements, invariants
REQS = [
    ("gdpr-delete", "requirement", "{S} must erase a customer's personal data within 30 days of a deletion request",
     "GDPR and CCPA: deletion requests arrive through the privacy portal; {s} must delete or anonymise personal fields and confirm to the privacy queue.",
     "how quickly do we have to remove someone's personal info from {a}?", "{s} gdpr deletion"),
    ("audit-log", "requirement", "Every admin action in {s} must be written to the audit log with actor and tenant",
     "SOC 2 control CC7.2: admin actions in {s} are appended to the audit stream with actor, tenant, action and timestamp; retention 1 year.",
     "do we need to record who did what in {a} for compliance?", "{s} audit log"),
    ("pci", "requirement", "{S} must never store full card numbers; only Stripe tokens",
     "PCI DSS scope reduction: card data goes straight from the client to Stripe Elements; {s} keeps only the token and last four digits.",
     "can {a} keep credit card numbers in its database?", "{s} card data pci"),
    ("tenant-isolation", "invariant", "{S} queries always filter by tenant_id",
     "Row-level security is enabled on {s} tables and every repository method takes a tenant id; a cross-tenant read is a SEV1.",
     "is there any way one customer can see another customer's records in {a}?", "{s} tenant isolation"),
    ("money-minor-units", "invariant", "{S} stores money as integer minor units with an ISO 4217 currency code",
     "Floating point amounts caused rounding differences of one cent in {s} totals. Amounts are int64 cents plus currency.",
     "how are amounts represented in {a}, floats or cents?", "{s} money representation"),
    ("utc-times", "invariant", "{S} stores timestamps in UTC and converts to the tenant time zone only for display",
     "Daylight-saving bugs shifted appointments by an hour in {s}. All stored times are UTC; the tenant's IANA zone is applied at render time.",
     "what timezone are dates saved in by {a}?", "{s} timestamps utc"),
    ("accessibility", "requirement", "{S} screens must meet WCAG 2.1 AA",
     "Several municipal customers require WCAG 2.1 AA conformance in contracts; {s} runs axe checks in CI.",
     "what accessibility standard does {a} need to meet?", "{s} wcag"),
    ("data-residency", "requirement", "Canadian tenants' data in {s} must stay in ca-central-1",
     "Contractual requirement from Canadian customers: {s} data for tenants flagged region=CA is stored and processed only in ca-central-1.",
     "where must we keep data for customers in Canada in {a}?", "{s} data residency canada"),
    ("offline", "requirement", "{S} must keep working offline for 8 hours and sync when reconnected",
     "Technicians work in basements without signal; {s} queues changes locally and resolves conflicts last-writer-wins per field.",
     "what happens in {a} when a technician has no signal?", "{s} offline mode"),
]
def gen_reqs():
    for s in SVC:
        for rk, kind, sm, ct, q, kw in R.sample(REQS, 4):
            S = s.capitalize() if s != "mobile-api" else "Mobile API"
            key = f"req.{s}.{rk}"
            E(key, R.randint(0, WEEKS - 1), "decisions", kind, f"{s}.{rk}", f"service:{s}", fill(sm, S=S, s=s), fill(ct, s=s),
              R.uniform(0.85, 0.98), [ev("ticket", ticket(s), "compliance ticket"), ev("doc", f"docs/compliance/{rk}.md", "policy")], ["compliance"])
            Q("b", fill(q, a=alias(s)), key)
            Q("f", fill(kw, s=s), key)

# ---------------------------------------------------------------- hypotheses (low confidence distractors)
HYPS = [
    "{S} latency spikes on Mondays may come from the weekly cron that rebuilds caches",
    "The {s} memory growth might be caused by the HTTP client not closing idle connections",
    "Maybe {dep} throttles {s} more aggressively at month end",
    "{S} error bursts could correlate with Kubernetes node autoscaling events",
    "Possibly the {s} database slows down because autovacuum falls behind",
    "The {s} retry storms might be triggered by the load balancer idle timeout",
    "{S} consumer lag could be due to a hot partition keyed by tenant",
    "I suspect the {s} cache hit rate dropped after the key format change",
]
def gen_hyps():
    for s in SVC:
        for h in R.sample(HYPS, 7):
            S = s.capitalize() if s != "mobile-api" else "Mobile API"
            dep = R.choice(DEPS[s])
            summ = fill(h, S=S, s=s, dep=dep)
            key = f"hyp.{s}.{HYPS.index(h)}"
            draft = R.random() < 0.3
            e = E(key, R.randint(0, WEEKS - 1), "observations", "hypothesis", f"{s}.investigation", f"service:{s}", summ,
                  "Unconfirmed; seen twice in dashboards but no controlled test yet. " + pick("Needs a load test.", "Check again after the next release.", "Compare with staging."),
                  R.uniform(0.25, 0.55), [] if draft else [ev("assumption", "none", "pattern seen in dashboards")], ["hypothesis"])
            if draft: e["status"] = "draft"

# ---------------------------------------------------------------- people: ownership, preferences, who decided
PREFS = [
    ("prefers squash merges and a linear history on {s}", "squash merges", "how does {fn} like PRs merged on {s}?"),
    ("wants every {s} PR to include a rollback note", "rollback note in PRs", "what does {fn} expect in {s} pull request descriptions?"),
    ("asks to be paged only for SEV1 and SEV2 on {s}", "paging preferences", "when is it ok to page {fn} about {s}?"),
    ("prefers design discussions for {s} in RFC docs rather than Slack threads", "RFCs over Slack", "where does {fn} want {s} design proposals written?"),
    ("dislikes ORMs and wants raw SQL with sqlc in {s}", "no ORM", "what's {fn}'s stance on ORMs in {s}?"),
    ("wants load tests attached to any {s} performance change", "load tests", "what evidence does {fn} want for {s} perf changes?"),
    ("prefers feature flags over long-lived branches for {s}", "flags over branches", "does {fn} like long-running feature branches for {s}?"),
    ("reviews {s} database migrations personally before merge", "migration reviews", "who has to look at {s} schema changes before they merge?"),
]
def gen_people():
    # ownership (with changes over time: superseded)
    owners = {}
    for s in SVC:
        cands = [p for p in PEOPLE if p[1] == team(s)] or [p for p in PEOPLE if p[1] == "Platform"]
        o = R.choice(cands)
        key = f"own.{s}"
        wk = R.randint(0, 4)
        E(key, wk, "observations", "other", f"{team(s).lower().replace(' ', '-')}.ownership.{s}", f"service:{s}",
          f"{o[0]} ({team(s)}) owns the {s} service and approves its production changes",
          f"Confirmed by {o[0]} in the {team(s)} planning meeting. Escalations for {s} go to {o[0]} first, then {TEAM_LEAD.get(team(s), 'Ben Carter')}.",
          0.85, [ev("doc", f"docs/ownership/{s}.md", "CODEOWNERS and service catalog")], ["ownership"])
        owners[s] = o
        if R.random() < 0.35:
            o2 = R.choice([p for p in PEOPLE if p != o and p[1] in (team(s), "Platform", "SRE")])
            nk = key + ".v2"
            E(nk, R.randint(wk + 3, WEEKS - 1), "observations", "other", f"{team(s).lower().replace(' ', '-')}.ownership.{s}", f"service:{s}",
              f"Ownership of {s} moved to {o2[0]} after the {team(s)} reorg",
              f"{o[0]} handed {s} over to {o2[0]} ({o2[1]}); {o2[0]} now approves production changes and is first escalation.",
              0.9, [ev("doc", f"docs/ownership/{s}.md", "updated service catalog")], ["ownership"], supersedes=key)
            Q("c", pick(f"who owns {s} now?", f"who should approve a production change to {alias(s)}?", f"current owner of the {s} service"), nk)
            Q("d", f"is {o2[0].split()[0]} responsible for {s}?", nk)
        else:
            Q("d", pick(f"who owns {s}?", f"who do I escalate {alias(s)} problems to?", f"which person is in charge of the {alias(s)} service"), key)
            Q("f", f"{s} owner", key)
    # on-call rotations (state)
    for t in sorted(set(team(s) for s in SVC)):
        members = [p[0] for p in PEOPLE if p[1] == t] or ["Ben Carter", "Greta Lindqvist"]
        for wi, wk in enumerate(range(0, WEEKS, 6)):
            who = members[wi % len(members)]
            last = wk + 6 >= WEEKS
            vf = date_of(wk, 0)
            vt = datetime.date(2027, 1, 15) if last else vf + datetime.timedelta(days=42)
            key = f"oncall.{t}.{wi}"
            e = E(key, wk, "state", "other", f"{t.lower().replace(' ', '-')}.on-call", "repo",
                  f"{who} is the {t} primary on-call from {fmt(vf)}",
                  f"PagerDuty schedule {t.lower().replace(' ', '-')}-primary; secondary is {TEAM_LEAD.get(t, 'Ben Carter')}. Handover happens Mondays at 10:00.",
                  0.9, [ev("artifact", f"https://kestrel.pagerduty.example/schedules/{t.lower().replace(' ', '-')}", "schedule")], ["on-call"],
                  valid_from=fmt(vf) + "T00:00:00Z", valid_to=fmt(vt) + "T00:00:00Z")
            if wi > 0: e["supersedes"] = f"oncall.{t}.{wi-1}"
            if last:
                Q("c", pick(f"who is on call for {t} right now?", f"current {t} on-call engineer"), key)
    # preferences
    for n, t, r in PEOPLE:
        svcs = [s for s in SVC if team(s) == t] or R.sample(SVC, 2)
        for s in R.sample(svcs, min(2, len(svcs))):
            sm, short, q = R.choice(PREFS)
            fn = n.split()[0]
            key = f"pref.{n}.{s}.{short}"
            if any(x["key"] == key for x in ENTRIES): continue
            E(key, R.randint(0, WEEKS - 1), "observations", "other", f"people.{fn.lower()}.preferences", "repo",
              f"{n} " + fill(sm, s=s), f"{n} ({r}, {t}) said this in a code review on {s}; follow it when working on {s}.",
              R.uniform(0.65, 0.85), [ev("ticket", f"https://github.com/kestrel/{s}/pull/{R.randint(100,2000)}", "review comment")], ["people", "preferences"])
            Q("d", fill(q, fn=fn, s=s), key)
    # who decided (product)
    for i in range(30):
        s = R.choice(SVC); c = R.choice(CUSTOMERS); p = R.choice(PEOPLE)
        feat = R.choice(["bulk job import", "recurring appointments", "multi-currency invoices", "technician skills matching",
                         "customer portal", "SMS reminders", "two-factor login", "route re-optimisation mid-day", "CSV exports",
                         "QuickBooks sync", "parts reorder alerts", "partial payments"])
        key = f"prod.{i}"
        E(key, R.randint(0, WEEKS - 1), "decisions", "decision", f"product.roadmap.{feat.replace(' ', '-')}", "org",
          f"{p[0]} decided to prioritise {feat} for Q1 after requests from {c}",
          f"Raised in the roadmap review; {c} and other tenants asked for {feat}. {p[0]} ({p[2]}) made the call over the competing item. Owner service: {s}.",
          R.uniform(0.7, 0.9), [ev("doc", f"docs/roadmap/q1-{i}.md", "roadmap review notes")], ["roadmap"])
        Q("d", pick(f"who pushed for {feat} on the roadmap?", f"why is {feat} prioritised next quarter and who decided?"), key)

# ---------------------------------------------------------------- customers
CUST_FACTS = [
    ("invoice-format", "{c} wants invoices exported as CSV with their cost-centre codes",
     "{c}'s finance team imports invoices into their ERP; CSV with a cost_centre column, delivered on the 1st of each month.",
     "what file format does {c} need for their invoices?", "{c} invoice csv"),
    ("sso", "{c} requires SAML SSO through Azure AD for all office users",
     "Security questionnaire from {c}: all dashboard users sign in via their Azure AD tenant; password logins must be disabled for their tenant.",
     "how do {c} staff log in?", "{c} sso"),
    ("contract-sla", "{c}'s contract guarantees 99.9% monthly uptime with service credits",
     "Enterprise contract signed with {c}: 10% credit per 0.1% below 99.9%, measured on the public API.",
     "what uptime did we promise {c}?", "{c} sla"),
    ("api-limit", "{c} has a raised API rate limit of {n} requests per minute",
     "Granted by sales for their nightly sync; configured as a tenant override in the gateway.",
     "why is {c} allowed to make more API calls than others?", "{c} rate limit"),
    ("contact", "{c}'s technical contact is their IT manager, reachable via the shared Slack channel",
     "Use #ext-{slug} for {c}; do not email individual staff. Escalations go through their account manager at Kestrel.",
     "how do I reach someone technical at {c}?", "{c} contact"),
    ("churn-risk", "{c} is a churn risk because of repeated SMS delivery delays",
     "Account review: {c} complained three times about late appointment reminders; renewal is in Q1.",
     "is {c} unhappy about anything?", "{c} churn"),
    ("data-retention", "{c} requires job records to be kept for seven years",
     "Their insurer requires seven-year retention of job photos and signatures; excluded from the default 3-year purge.",
     "how long must we retain {c}'s job history?", "{c} retention"),
]
def gen_customers():
    for c in CUSTOMERS:
        for fk, sm, ct, q, kw in R.sample(CUST_FACTS, 6):
            key = f"cust.{c}.{fk}"
            slug = c.lower().replace(" ", "-")
            n = R.choice([600, 1200, 3000])
            E(key, R.randint(0, WEEKS - 1), "observations", "requirement" if fk in ("sso", "data-retention", "invoice-format") else "other",
              f"customers.{slug}.{fk}", "customer", fill(sm, c=c, n=n), fill(ct, c=c, slug=slug),
              R.uniform(0.7, 0.9), [ev("doc", f"docs/customers/{slug}.md", "account notes"), ev("ticket", ticket("Product"), "account ticket")], ["customer"])
            Q("b", fill(q, c=c), key)
            Q("f", fill(kw, c=c), key)

# ---------------------------------------------------------------- repo/org conventions and misc (with deprecations)
MISC = [
    ("ci.runner", "CI runs on GitHub Actions with self-hosted runners in eks-ci", "Moved off CircleCI in August to cut cost; runners autoscale with actions-runner-controller.",
     "what do we use for continuous integration?", "ci runners"),
    ("release.freeze", "Production deploy freeze from Dec 18 to Jan 4", "Holiday change freeze; only SEV1 fixes with SRE lead approval.",
     "are we allowed to ship over the holidays?", "deploy freeze"),
    ("org.deploy-days", "No production deploys after 15:00 on Fridays", "Friday afternoon deploys caused two weekend incidents; exceptions need the on-call's OK.",
     "can I push to prod late on a Friday?", "friday deploys"),
    ("repo.monorepo", "Backend services live in the kestrel/platform monorepo with Bazel", "Each service under services/<name>; shared libs under libs/. Bazel remote cache in S3.",
     "where's the code for the backend services and what builds it?", "monorepo bazel"),
    ("org.incident-process", "Declare incidents in #incidents with /incident and name an incident commander",
     "Severity SEV1 pages the SRE lead; a postmortem is due within 5 business days for SEV1 and SEV2.", "how do I open an incident?", "incident process"),
    ("org.code-review", "Pull requests need one approval from a code owner and green CI", "Enforced by branch protection; two approvals for services handling money.",
     "how many reviewers does a PR need?", "pr approvals"),
    ("org.secrets", "Secrets live in Vault; never in environment files committed to git", "Use vault-agent sidecars; the secrets scanner blocks commits containing credentials.",
     "where should I put a new API key?", "secrets storage"),
    ("org.k8s-version", "Production EKS clusters run Kubernetes 1.29", "Upgrade to 1.30 scheduled for January; check deprecated APIs with pluto.",
     "what kubernetes version is prod on?", "eks version"),
    ("org.observability", "Metrics go to Prometheus and dashboards live in Grafana; traces in Tempo",
     "OpenTelemetry SDKs export traces to Tempo via the collector; sampling 10% plus all errors.", "where do I look at traces?", "tracing tempo"),
    ("org.languages", "New backend services should be written in Go or Kotlin", "Architecture council decision: Python only for data jobs, Rust only where latency demands it.",
     "what language should a new service use?", "language choice new service"),
    ("org.staging-refresh", "Staging database is refreshed from an anonymised prod snapshot every Sunday",
     "The anonymiser scrubs names, phone numbers and addresses; refresh takes about 3 hours and staging is read-only meanwhile.", "why is staging data different on Monday?", "staging refresh"),
    ("org.dependency-updates", "Renovate opens dependency PRs weekly; security patches are merged within 7 days",
     "Grouped minor updates on Mondays; critical CVEs page the owning team.", "how do library upgrades get handled?", "renovate updates"),
]
def gen_misc():
    for i, (subj, sm, ct, q, kw) in enumerate(MISC):
        key = f"misc.{subj}"
        scope = "org" if subj.startswith("org") else "repo"
        if subj == "ci.runner":
            # old fact, superseded later
            E(key + ".old", 0, "decisions", "decision", subj, scope, "CI runs on CircleCI with the performance plan",
              "CircleCI with docker executors; parallelism 8 for the monorepo.", 0.9, [ev("doc", "docs/adr/0003-ci.md", "ADR 3")], ["ci"])
            E(key, 4, "decisions", "decision", subj, scope, sm, ct, 0.92, [ev("doc", "docs/adr/0041-ci-migration.md", "ADR 41")], ["ci"], supersedes=key + ".old")
            Q("c", q, key)
        elif subj == "org.k8s-version":
            E(key + ".old", 1, "state", "other", subj, scope, "Production EKS clusters run Kubernetes 1.27",
              "Upgrade to 1.28 planned.", 0.9, [ev("artifact", "https://console.aws.example/eks/prod", "cluster version")], ["kubernetes"],
              valid_from="2026-08-04T00:00:00Z", valid_to="2026-12-31T00:00:00Z")
            E(key, 10, "state", "other", subj, scope, sm, ct, 0.9, [ev("artifact", "https://console.aws.example/eks/prod", "cluster version")], ["kubernetes"],
              valid_from="2026-10-12T00:00:00Z", valid_to="2027-02-28T00:00:00Z", supersedes=key + ".old")
            Q("c", q, key)
        else:
            E(key, R.randint(0, WEEKS - 1), "decisions" if "decision" in ct or subj.startswith("org") else "learnings",
              "decision" if subj.startswith("org") else "other", subj, scope, sm, ct, R.uniform(0.85, 0.95),
              [ev("doc", f"docs/handbook/{subj}.md", "engineering handbook")], ["handbook"])
            Q("b", q, key)
        Q("f", kw, key)
    # generic deprecated facts per service (old endpoints)
    for s in R.sample(SVC, 12):
        key = f"depr.{s}"
        E(key, R.randint(0, 6), "observations", "other", f"{s}.endpoints", f"service:{s}",
          f"{s.capitalize()} exposes its health check on /healthz on port 8081",
          "Used by the old ELB health checks; kept for backwards compatibility.", 0.8,
          [ev("code", code(s, "cmd/server/main.go"), "health handler")], ["health"], deprecate_week=R.randint(8, 14))
        key2 = f"health.{s}"
        E(key2, R.randint(9, WEEKS - 1), "observations", "other", f"{s}.health", f"service:{s}",
          f"{s.capitalize()} readiness and liveness probes are /ready and /live on port 9090",
          "The /healthz endpoint on 8081 was removed when the service moved to the mesh; probes use the admin port 9090.", 0.9,
          [ev("code", code(s, "deploy/probes.yaml"), "probe config")], ["health"])
        Q("c", pick(f"what is the health check endpoint for {s}?", f"which port does {alias(s)} expose health probes on?"), key2)


# ---------------------------------------------------------------- run
gen_decisions(); gen_incidents(); gen_runbooks(); gen_metrics(); gen_reqs(); gen_hyps(); gen_people(); gen_customers(); gen_misc(); gen_tests(); gen_config(); gen_contracts()

# uniqueness of (subject, summary) and summary
seen = {}
for e in ENTRIES:
    k = (e["subject"], e["summary"])
    assert k not in seen, k
    seen[k] = e["key"]
keys = [e["key"] for e in ENTRIES]
assert len(keys) == len(set(keys)), [k for k in keys if keys.count(k) > 1][:5]
byk = {e["key"]: e for e in ENTRIES}

def retrievable(e):
    if e.get("status") == "draft" or e["confidence"] < 0.6: return False
    if any(x.get("supersedes") == e["key"] for x in ENTRIES): return False
    if e.get("deprecate_week") is not None: return False
    return True

# typo questions (e): derive from a/b/f questions with realistic typos
def typo(word):
    i = R.randint(1, len(word) - 3)
    op = R.choice(["swap", "drop", "double", "neighbor"])
    if op == "swap": return word[:i] + word[i + 1] + word[i] + word[i + 2:]
    if op == "drop": return word[:i] + word[i + 1:]
    if op == "double": return word[:i] + word[i] + word[i:]
    nb = {"a": "s", "e": "r", "i": "o", "o": "p", "u": "y", "s": "d", "t": "r", "n": "m", "r": "t", "l": "k", "c": "v", "d": "s", "m": "n", "p": "o", "g": "h", "h": "j", "k": "l", "y": "t", "b": "v", "f": "g", "v": "c", "w": "e", "x": "c", "z": "x", "j": "k", "q": "w"}
    ch = word[i]
    return word[:i] + nb.get(ch, ch) + word[i + 1:]

for qd in list(QUEST):
    pass

# keep only questions whose expected entries are retrievable under defaults; choose a balanced sample
cands = {t: [] for t in "abcdef"}
for qd in QUEST:
    exp = [k for k in qd["keys"] if k in byk and retrievable(byk[k])]
    if not exp: continue
    qd = dict(qd, keys=exp)
    cands[qd["type"]].append(qd)
target = {"a": 60, "b": 75, "c": 50, "d": 50, "e": 55, "f": 60}
final = []
for t in "abcdf":
    pool = cands[t]
    R.shuffle(pool)
    final.extend(pool[:target[t]])
# typos from a fresh sample of b/a/f questions not already used
used = set(q["q"] for q in final)
src = [q for q in cands["a"] + cands["b"] + cands["f"] if q["q"] not in used]
R.shuffle(src)
for qd in src[:target["e"]]:
    words = qd["q"].split()
    idx = [i for i, w in enumerate(words) if len(re.sub(r"\W", "", w)) >= 6 and re.fullmatch(r"[a-zA-Z]+[?,]?", w)]
    if not idx: continue
    for i in R.sample(idx, min(len(idx), R.choice([1, 1, 2]))):
        w = words[i]; tail = w[-1] if w[-1] in "?," else ""; core = w[:-1] if tail else w
        words[i] = typo(core) + tail
    final.append(dict(type="e", q=" ".join(words), keys=qd["keys"], source=qd["q"]))
# dedupe question text
out, qs = [], set()
for i, qd in enumerate(final):
    if qd["q"] in qs: continue
    qs.add(qd["q"]); qd["id"] = f"q{len(out)+1:03d}"; out.append(qd)

json.dump([{k: v for k, v in e.items() if not k.startswith("_")} for e in ENTRIES], open(os.path.join(OUT, "corpus.json"), "w"), indent=1, ensure_ascii=False)
json.dump(out, open(os.path.join(OUT, "questions.json"), "w"), indent=1, ensure_ascii=False)
from collections import Counter
print("entries", len(ENTRIES), Counter(e["section"] for e in ENTRIES))
print("superseded", sum(1 for e in ENTRIES if e.get("supersedes")), "deprecated", sum(1 for e in ENTRIES if e.get("deprecate_week") is not None),
      "low-conf/draft", sum(1 for e in ENTRIES if e["confidence"] < 0.6))
print("questions", len(out), Counter(q["type"] for q in out))
