#!/usr/bin/env python3
"""Writes heldout.tsv: synthetic credentials of every provider family, in prose and assignments.

    python3 src/policy/secret_scan/corpus/make_heldout.py <trufflehog checkout> <gitleaks.toml> > src/policy/secret_scan/corpus/heldout.tsv

The rules come from gitleaks; this corpus must not. Each family's token format is taken from a
different source: the detector patterns of trufflehog (pkg/detectors/*/*.go), or, for families
it has no detector for, the token format the provider documents (FORMATS below). Tokens are
random strings generated to that format from a fixed seed: format-correct and never a real
credential. gitleaks' rule list is read only for the family names, so every family is counted.

Columns: family, source of the format, template, text.
"""

import random
import re
import subprocess
import sys
import tomllib

try:
    import re._parser as sre_parse
    from re._constants import (ANY, AT, BRANCH, CATEGORY, CATEGORY_DIGIT, CATEGORY_NOT_DIGIT,
                               CATEGORY_NOT_SPACE, CATEGORY_NOT_WORD, CATEGORY_SPACE,
                               CATEGORY_WORD, IN, LITERAL, MAX_REPEAT, MIN_REPEAT, NEGATE,
                               NOT_LITERAL, RANGE, SUBPATTERN, GROUPREF, ASSERT, ASSERT_NOT)
except ImportError:  # Python < 3.11
    import sre_parse
    from sre_constants import *  # noqa: F403

RNG = random.Random(20261122)

# Token formats as the providers document them, for the families trufflehog has no detector
# for, and for the families the defect report names (so their format is the provider's own).
FORMATS = {
    "1password-secret-key": r"A3-[A-Z0-9]{6}-[A-Z0-9]{6}-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}",
    "1password-service-account-token": r"ops_eyJ[a-zA-Z0-9]{260}",
    "age-secret-key": r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}",
    "clojars-api-token": r"CLOJARS_[a-z0-9]{60}",
    "cloudflare-origin-ca-key": r"v1\.0-[a-f0-9]{24}-[a-f0-9]{146}",
    "databricks-api-token": r"dapi[a-f0-9]{32}",
    "digitalocean-access-token": r"doo_v1_[a-f0-9]{64}",
    "digitalocean-pat": r"dop_v1_[a-f0-9]{64}",
    "digitalocean-refresh-token": r"dor_v1_[a-f0-9]{64}",
    "dynatrace-api-token": r"dt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64}",
    "easypost-api-token": r"EZAK[a-zA-Z0-9]{54}",
    "easypost-test-api-token": r"EZTK[a-zA-Z0-9]{54}",
    "facebook-page-access-token": r"EAAC[a-zA-Z0-9]{120}",
    "hashicorp-tf-api-token": r"[a-zA-Z0-9]{14}\.atlasv1\.[a-zA-Z0-9]{67}",
    "infracost-api-token": r"ico-[a-zA-Z0-9]{32}",
    "npm-access-token": r"npm_[a-zA-Z0-9]{36}",
    "openshift-user-token": r"sha256~[a-zA-Z0-9_-]{43}",
    "perplexity-api-key": r"pplx-[a-zA-Z0-9]{48}",
    "scalingo-api-token": r"tk-us-[a-zA-Z0-9_-]{48}",
    "sendinblue-api-token": r"xkeysib-[a-f0-9]{64}-[a-zA-Z0-9]{16}",
    "sentry-user-token": r"sntryu_[a-f0-9]{64}",
    "settlemint-application-access-token": r"sm_aat_[a-zA-Z0-9]{16}",
    "settlemint-personal-access-token": r"sm_pat_[a-zA-Z0-9]{16}",
    "settlemint-service-access-token": r"sm_sat_[a-zA-Z0-9]{16}",
    "shopify-access-token": r"shpat_[a-f0-9]{32}",
    "shopify-custom-access-token": r"shpca_[a-f0-9]{32}",
    "shopify-private-app-access-token": r"shppa_[a-f0-9]{32}",
    "shopify-shared-secret": r"shpss_[a-f0-9]{32}",
    "telegram-bot-api-token": r"[0-9]{9}:AA[a-zA-Z0-9_-]{33}",
    "twilio-api-key": r"SK[0-9a-f]{32}",
    "airtable-personnal-access-token": r"pat[a-zA-Z0-9]{14}\.[a-f0-9]{64}",
    "flyio-access-token": r"fo1_[a-zA-Z0-9_-]{43}",
    "twitter-api-key": r"[a-zA-Z0-9]{25}",
    "twitter-api-secret": r"[a-zA-Z0-9]{50}",
    "twitter-access-token": r"[0-9]{18}-[a-zA-Z0-9]{31}",
    "twitter-access-secret": r"[a-zA-Z0-9]{45}",
    "twitter-bearer-token": r"A{22}[a-zA-Z0-9]{20}%2F[a-zA-Z0-9]{10}%3D[a-zA-Z0-9]{50}",
    "gcp-api-key": r"AIza[0-9A-Za-z_-]{35}",
    "stripe-access-token": r"(?:sk|rk)_(?:live|test)_[a-zA-Z0-9]{24,99}",
    "slack-app-token": r"xapp-1-A[A-Z0-9]{10}-[0-9]{13}-[a-f0-9]{64}",
    "slack-bot-token": r"xoxb-[0-9]{12}-[0-9]{13}-[a-zA-Z0-9]{24}",
    "slack-user-token": r"xoxp-[0-9]{12}-[0-9]{12}-[0-9]{13}-[a-f0-9]{32}",
    "slack-legacy-bot-token": r"xoxb-[0-9]{11}-[a-zA-Z0-9]{24}",
    "slack-legacy-token": r"xoxs-[0-9]{10}-[0-9]{11}-[0-9]{13}-[a-f0-9]{64}",
    "slack-legacy-workspace-token": r"xoxa-2-[a-zA-Z0-9]{40}",
    "slack-config-access-token": r"xoxe\.xoxp-1-[A-Z0-9]{164}",
    "slack-config-refresh-token": r"xoxe-1-[A-Z0-9]{146}",
    "mailgun-private-api-token": r"key-[a-f0-9]{32}",
    "mailgun-pub-key": r"pubkey-[a-f0-9]{32}",
    "planetscale-api-token": r"pscale_tkn_[A-Za-z0-9_]{43}",
    "planetscale-oauth-token": r"pscale_oauth_[A-Za-z0-9_]{43}",
    "planetscale-password": r"pscale_pw_[A-Za-z0-9_]{43}",
    "vault-batch-token": r"hvb\.[a-zA-Z0-9_-]{150}",
    "vault-service-token": r"hvs\.[a-zA-Z0-9_-]{92}",
    "authress-service-client-access-key": r"sc_[a-z0-9]{20}\.[a-z0-9]{5}\.acc_[a-z0-9]{24}\.[a-zA-Z0-9]{60}",
    "azure-ad-client-secret": r"[a-zA-Z0-9]{3}8Q~[a-zA-Z0-9_~.-]{34}",
    "clickhouse-cloud-api-secret-key": r"4b1d[A-Za-z0-9]{38}",
    "duffel-api-token": r"duffel_test_[a-zA-Z0-9_-]{43}",
    "jfrog-identity-token": r"cmVmdGtuOjAxOj[a-zA-Z0-9]{50}",
    "mattermost-access-token": r"[a-z0-9]{26}",
    "cisco-meraki-api-key": r"[0-9a-f]{40}",
    "cohere-api-token": r"[a-zA-Z0-9]{40}",
    "sidekiq-secret": r"[a-f0-9]{8}:[a-f0-9]{8}",
}

# gitleaks family -> trufflehog detector directory, where the names differ.
DETECTORS = {
    "adafruit-api-key": "adafruitio",
    "adobe-client-id": "adobeio",
    "airtable-personnal-access-token": "airtablepersonalaccesstoken",
    "algolia-api-key": "algoliaadminkey",
    "asana-client-secret": "asanaoauth",
    "bitbucket-client-secret": "bitbucketapppassword",
    "cloudflare-api-key": "cloudflareapitoken",
    "cloudflare-global-api-key": "cloudflareglobalapikey",
    "contentful-delivery-api-token": "contentfulpersonalaccesstoken",
    "datadog-access-token": "datadogtoken",
    "discord-api-token": "discordbottoken",
    "fastly-api-token": "fastlypersonaltoken",
    "hubspot-api-key": "hubspot_apikey",
    "linear-api-key": "linearapi",
    "new-relic-browser-api-token": "newrelicbrowserkey",
    "new-relic-insert-key": "newrelicinsightsinsertkey",
    "new-relic-user-api-key": "newrelicpersonalapikey",
    "plaid-secret-key": "plaidkey",
    "sentry-access-token": "sentrytoken",
    "sentry-org-token": "sentryorgtoken",
    "snyk-api-token": "snykkey",
    "sonar-api-token": "sonarcloud",
    "sumologic-access-token": "sumologickey",
    "zendesk-secret-key": "zendeskapi",
    "artifactory-reference-token": "artifactoryreferencetoken",
}

# Not a token format: whole documents, file names, or shapes measured by the project's own
# corpus (private keys, JWTs, curl command lines, the catch-all rule).
NOT_TOKENS = {
    # A key name (organizations/<id>/apiKeys/<id>) paired with a private key block.
    "coinbase-access-token",
    "pkcs12-file", "kubernetes-secret-yaml", "generic-api-key", "curl-auth-header",
    "curl-auth-user", "private-key", "jwt", "jwt-base64", "nuget-config-password",
    "hashicorp-tf-password", "sidekiq-sensitive-url", "freemius-secret-key",
    "microsoft-teams-webhook", "slack-webhook-url", "discord-webhook",
}

BARE = [
    "the token is {tok} for staging",
    "our {name} key is {tok}, rotate it after the audit",
    "For the {name} integration use this credential: {tok}",
]
ASSIGNED = [
    "{NAME}_TOKEN={tok}",
    '"apiKey": "{tok}"',
    "{name}_secret: '{tok}'",
]
# A token in a sentence with no word about credentials nearby: only measured for formats that
# carry their own prefix.
NO_CONTEXT = ["deployed with {tok} on staging last night"]

LOWER = "abcdefghijklmnopqrstuvwxyz"
UPPER = LOWER.upper()
DIGITS = "0123456789"
WORD = LOWER + UPPER + DIGITS + "_"
PRINTABLE = [chr(c) for c in range(33, 127)]


def category(cat):
    return {
        CATEGORY_DIGIT: list(DIGITS),
        CATEGORY_WORD: list(WORD),
        CATEGORY_SPACE: [" "],
        CATEGORY_NOT_DIGIT: [c for c in PRINTABLE if c not in DIGITS],
        CATEGORY_NOT_WORD: ["-", "."],
        CATEGORY_NOT_SPACE: [c for c in PRINTABLE if c.isalnum() or c in "-_"],
    }.get(cat, list(WORD))


def charset(items, ignore_case):
    chars, negate = set(), False
    for op, av in items:
        if op == NEGATE:
            negate = True
        elif op == LITERAL:
            chars.add(chr(av))
        elif op == RANGE:
            chars.update(chr(c) for c in range(av[0], av[1] + 1))
        elif op == CATEGORY:
            chars.update(category(av))
    if negate:
        chars = {c for c in PRINTABLE if c not in chars and (c.isalnum() or c in "-_")}
    if ignore_case:
        chars |= {c.swapcase() for c in chars if c.isalpha()}
    return sorted(chars)


def generate(parsed, ignore_case=False):
    out = []
    for op, av in parsed:
        if op == LITERAL:
            out.append(chr(av))
        elif op == NOT_LITERAL:
            out.append(RNG.choice([c for c in WORD if ord(c) != av]))
        elif op == ANY:
            out.append(RNG.choice(WORD))
        elif op == IN:
            out.append(RNG.choice(charset(av, ignore_case)))
        elif op in (MAX_REPEAT, MIN_REPEAT):
            lo, hi, sub = av
            hi = min(hi, lo + 8) if hi != sre_parse.MAXREPEAT else lo + 8
            n = RNG.randint(lo, max(lo, hi))
            for _ in range(n):
                out.append(generate(sub, ignore_case))
        elif op == SUBPATTERN:
            group, add_flags, del_flags, sub = av
            ic = (ignore_case or bool(add_flags & re.IGNORECASE)) and not (del_flags & re.IGNORECASE)
            out.append(generate(sub, ic))
        elif op == BRANCH:
            out.append(generate(RNG.choice(av[1]), ignore_case))
        elif op in (AT, GROUPREF, ASSERT, ASSERT_NOT):
            pass
        elif op == CATEGORY:
            out.append(RNG.choice(category(av)))
    return "".join(out)


def sample(regex):
    regex = regex.replace("(?-i:", "(?:")
    for posix, chars in (("[:alnum:]", "a-zA-Z0-9"), ("[:alpha:]", "a-zA-Z"), ("[:digit:]", "0-9")):
        regex = regex.replace(posix, chars)
    parsed = sre_parse.parse(regex)
    return generate(parsed, bool(parsed.state.flags & re.IGNORECASE))


def git_show(repo, path):
    return subprocess.run(["git", "-C", repo, "show", f"HEAD:{path}"], capture_output=True,
                          text=True, check=True).stdout


def detector_regex(repo, directory):
    """The secret's pattern in a trufflehog detector: the first MustCompile of a key-like
    variable, without the keyword prefix (double-quoted strings) it is concatenated with."""
    files = subprocess.run(["git", "-C", repo, "ls-tree", "-r", "--name-only", "HEAD",
                            f"pkg/detectors/{directory}/"], capture_output=True, text=True,
                           check=True).stdout.split()
    files = [f for f in files if f.endswith(".go") and not f.endswith("_test.go")]
    found = []
    for f in sorted(files):
        src = git_show(repo, f)
        for m in re.finditer(r"(\w+|\"[^\"]+\")\s*[:=]=?\s*regexp\.MustCompile\(", src):
            depth, i = 1, m.end()
            while i < len(src) and depth:
                c = src[i]
                if c == "`":
                    i = src.index("`", i + 1)
                elif c == '"':
                    while True:
                        i += 1
                        if src[i] == "\\":
                            i += 1
                        elif src[i] == '"':
                            break
                elif c == "(":
                    depth += 1
                elif c == ")":
                    depth -= 1
                i += 1
            arg = re.sub(r"detectors\.PrefixRegex\([^)]*\)", "", src[m.end():i - 1])
            literals = re.findall(r"`([^`]*)`|\"((?:[^\"\\\\]|\\\\.)*)\"", arg)
            literals = [a or b.replace("\\\\", "\\") for a, b in literals]
            if literals:
                found.append((m.group(1).lower(), "".join(literals)))
    for prefer in ("key", "token", "secret", "pat", "pass"):
        for name, rx in found:
            if prefer in name and "url" not in name and "domain" not in name:
                return rx
    for name, rx in found:
        if "url" not in name and "domain" not in name and "host" not in name:
            return rx
    return None


def display_name(family):
    return family.split("-")[0]


def main():
    repo, toml_path = sys.argv[1], sys.argv[2]
    with open(toml_path, "rb") as f:
        families = [r["id"] for r in tomllib.load(f)["rules"]]
    dirs = set(subprocess.run(["git", "-C", repo, "ls-tree", "--name-only", "HEAD",
                               "pkg/detectors/"], capture_output=True, text=True,
                              check=True).stdout.replace("pkg/detectors/", "").split())
    print("# Held-out corpus: see make_heldout.py. family\tsource\ttemplate\ttext")
    for family in families:
        if family in NOT_TOKENS:
            continue
        source, regex = None, None
        if family in FORMATS:
            source, regex = "provider-docs", FORMATS[family]
        else:
            parts = family.split("-")
            names = [DETECTORS.get(family)] + ["".join(parts[:n]) for n in range(len(parts), 0, -1)]
            for d in names:
                if d and d in dirs:
                    regex = detector_regex(repo, d)
                    if regex:
                        source = f"trufflehog:{d}"
                        break
        if not regex:
            print(f"# {family}: no format outside gitleaks, not measured")
            continue
        name = display_name(family)
        prefixed = bool(re.match(r"^(?:\\b)?\(?(?:\?:)?[A-Za-z0-9_.~-]{3,}", regex.replace("\\b", "")))
        for _ in range(3):
            tok = sample(regex).strip()
            for kind, templates in (("bare", BARE), ("assigned", ASSIGNED)):
                for t in templates:
                    text = t.format(tok=tok, name=name, NAME=name.upper())
                    print(f"{family}\t{source}\t{kind}\t{text}")
            if prefixed:
                for t in NO_CONTEXT:
                    print(f"{family}\t{source}\tno-context\t{t.format(tok=tok)}")
    # Families the defect report names, in the forms it names.
    for _ in range(3):
        pw = "".join(RNG.choice(LOWER + UPPER + DIGITS) for _ in range(20))
        for text in (f"the cache is at redis://:{pw}@cache.internal:6379/0 for staging",
                     f"REDIS_URL=redis://:{pw}@cache.internal:6379/0"):
            kind = "assigned" if text.startswith("REDIS") else "bare"
            print(f"redis-url\tprovider-docs\t{kind}\t{text}")


if __name__ == "__main__":
    main()
