//! Secret detection for everything memlog is asked to store.
//!
//! A memory log is committed to git and read by every later agent, so one leaked credential is
//! copied to every clone. Each rule is a regular expression (the `regex` crate: linear time, no
//! backtracking, safe on megabytes of hostile input) plus, where the shape alone is not enough,
//! a validation of the match: a Luhn check for card numbers, the number ranges of US social
//! security numbers, a placeholder test (`${VAR}`, `<redacted>`, `[API_KEY]`, `****`) and an
//! entropy test for values assigned to secret-like names.
//!
//! What is deliberately *not* a rule: "any run of 20 word characters". That pattern, suggested
//! by some checklists, matches every commit SHA, permalink, UUID and long identifier; the rules
//! here look for the prefixes and contexts credentials actually have.
//!
//! A [`Finding`] holds where and what kind, never the matched text.

use regex::Regex;
use std::sync::LazyLock;

mod keywords;
mod normalize;
mod provider;
pub mod stream;
#[rustfmt::skip]
mod provider_rules;
#[cfg(test)]
mod heldout_tests;
#[cfg(test)]
mod tests;

/// One detected secret: which rule, and where. Never the value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Stable rule id, e.g. `aws-access-key-id`.
    pub rule: &'static str,
    /// What the rule detects, in words.
    pub description: &'static str,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
    /// Byte offset of the secret's first byte.
    pub start: usize,
    /// Byte offset just past the secret.
    pub end: usize,
}

/// How a match is confirmed.
#[derive(Clone, Copy)]
enum Check {
    /// The shape is specific enough.
    None,
    /// Capture group 1 must not be a placeholder.
    NotPlaceholder,
    /// Capture group 1 (the last group) must look random: not a placeholder, at least 16
    /// characters, two character classes and enough entropy.
    Random,
    /// As `Random`, with capitals, small letters and digits, as forty characters of base64
    /// have: not a hex digest (a commit, a checksum) written beside a key id.
    MixedCase,
    /// As `Random`, and the name it is assigned to is not a pagination cursor
    /// (`next_page_token`, `cursor`): those are opaque, not secret.
    Assigned,
    /// As `Random`, for a value named in a sentence: not a path, and not a key of the kinds
    /// that are not credentials (cache keys, object keys, primary keys).
    Prose,
    /// Capture group 1 is a password: not a placeholder and not an ordinary word.
    Password,
    /// As `Password`, for a value named in a sentence without a verb before it ("with
    /// password X"): a plain word there is prose ("with password authentication").
    PasswordInSentence,
    /// As `Password`, for a value given to a name that goes on after the word password
    /// (`DB_PASSWORD_PROD`): the rest of the name must not say that the value is about a
    /// password rather than one (`PASSWORD_FILE`, `PASSWORD_MIN_LENGTH`, `password_reset_url`).
    PasswordNamed,
    /// The digits pass the Luhn check and start like a card number.
    Card,
    /// A valid US social security number (area, group and serial ranges).
    Ssn,
    /// A URL parameter value that is long enough to be a signature or key.
    LongValue,
    /// A value of at least 8 characters that is not a placeholder.
    Token,
    /// An Anthropic key of a kind other than those the provider rules know exactly
    /// (`sk-ant-api03-` and `sk-ant-admin01-`, 93 characters and `AA`): look-alikes of those
    /// two with another length are published as false positives, and left to those rules.
    OtherAnthropicKind,
    /// As `Random`, for an OpenAI key: not an Anthropic key (`sk-ant-`), which its rule judges.
    NotAnthropic,
}

struct Rule {
    id: &'static str,
    description: &'static str,
    pattern: &'static str,
    /// Compiled on first use: most text holds none of a rule's keywords, and compiling every
    /// rule would cost a short-lived process more than the scan itself.
    re: std::sync::OnceLock<Regex>,
    check: Check,
    /// Its keywords, as positions in [`KEYWORDS`].
    keys: Option<Vec<usize>>,
    /// What a text must hold for the rule to be tried (see [`Rule::may_match`]).
    gate: Gate,
    /// Its rank among the findings (see [`scan_with`]).
    rank: usize,
    /// Whether the providers' allowlists apply to its findings: not for a password (judged by
    /// its words in `is_password`, or named by a URL's `user:password@`), since they pass
    /// shapes (letters alone) that are no token of theirs but can be a password.
    provider_allowlists: bool,
}

/// What a text must hold for a rule to be tried, decided once per rule rather than by its
/// id on every scan.
#[derive(Clone, Copy)]
enum Gate {
    /// One of its keywords.
    Keys,
    /// One of its keywords and a `@` (credentials in a URL).
    KeysAndAt,
    /// A run of 13 digits (card numbers).
    DigitRun,
    /// The shape of a social security number.
    SsnShape,
    /// Four colons (a `.pgpass` line).
    FourColons,
    /// Nothing: always tried.
    Always,
}

impl Rule {
    fn regex(&self) -> &Regex {
        self.re.get_or_init(|| {
            Regex::new(self.pattern).unwrap_or_else(|e| panic!("secret rule {}: {e}", self.id))
        })
    }

    /// Whether `lower` (the text in ASCII lowercase, holding the keywords `present`) could
    /// hold a match at all.
    fn may_match(&self, lower: &str, present: &Present) -> bool {
        let keys = || self.keys.as_deref().is_some_and(|k| present.any(k));
        match self.gate {
            Gate::Keys => keys(),
            // Credentials in a URL need both the scheme separator and the userinfo `@`.
            Gate::KeysAndAt => keys() && lower.contains('@'),
            Gate::DigitRun => has_digit_run(lower, 13),
            Gate::SsnShape => has_ssn_shape(lower),
            Gate::FourColons => lower.bytes().filter(|&b| b == b':').nth(3).is_some(),
            Gate::Always => true,
        }
    }
}

/// Every keyword of the rules above, found in one pass over a text (see [`keywords`]): a search
/// per keyword of every rule read each text a hundred times, a tenth of a bulk `apply`.
struct Keywords {
    /// Sorted, each once.
    words: Vec<&'static str>,
    set: keywords::KeywordSet,
}

static KEYWORDS: LazyLock<Keywords> = LazyLock::new(|| {
    let mut words: Vec<&'static str> = TEXT_RULES
        .iter()
        .chain(URI_RULES)
        .filter_map(|(id, ..)| keywords(id))
        .flatten()
        .copied()
        .collect();
    words.sort_unstable();
    words.dedup();
    let set = keywords::KeywordSet::new(words.iter().copied());
    Keywords { words, set }
});

/// Which keywords a text holds.
struct Present(Vec<bool>);

impl Present {
    fn of(lower: &str) -> Self {
        let k = &*KEYWORDS;
        let mut found = vec![false; k.set.len()];
        k.set.each_in(lower, |i| {
            if let Some(slot) = found.get_mut(i) {
                *slot = true;
            }
        });
        Self(found)
    }

    fn any(&self, keys: &[usize]) -> bool {
        keys.iter().any(|i| self.0.get(*i).copied().unwrap_or(true))
    }
}

/// Whether `text` has `n` digits in a row, allowing single spaces or dashes between them (the
/// way card numbers are printed).
fn has_digit_run(text: &str, n: usize) -> bool {
    let mut digits = 0;
    let mut after_separator = false;
    for b in text.bytes() {
        if b.is_ascii_digit() {
            digits += 1;
            after_separator = false;
            if digits >= n {
                return true;
            }
        } else if (b == b' ' || b == b'-') && digits > 0 && !after_separator {
            after_separator = true;
        } else {
            digits = 0;
            after_separator = false;
        }
    }
    false
}

/// Whether `text` has `ddd-dd-dddd` somewhere.
fn has_ssn_shape(text: &str) -> bool {
    text.as_bytes().windows(11).any(|w| {
        w.iter().enumerate().all(|(i, b)| match i {
            3 | 6 => *b == b'-',
            _ => b.is_ascii_digit(),
        })
    })
}

/// Text (lowercase) that every match of a rule contains; `None` for rules without one.
fn keywords(id: &str) -> Option<&'static [&'static str]> {
    Some(match id {
        "private-key" => &["private key"],
        "aws-access-key-id" => &[
            "akia", "asia", "abia", "acca", "agpa", "aida", "aroa", "anpa",
        ],
        "aws-secret-access-key" => &["secret"],
        "aws-secret-beside-key-id" => &[
            "akia", "asia", "abia", "acca", "agpa", "aida", "aroa", "anpa",
        ],
        "gcp-api-key" => &["aiza"],
        "azure-storage-key" => &["accountkey="],
        "digitalocean-token" => &["_v1_"],
        "github-token" => &["ghp_", "gho_", "ghu_", "ghs_", "ghr_"],
        "github-fine-grained-token" => &["github_pat_"],
        "gitlab-token" => &["glpat-", "gldt-", "glrt-", "glptt-", "glcbt-", "gloas-"],
        "bitbucket-app-password" => &["atbb"],
        "npm-token" => &["npm_"],
        "pypi-token" => &["pypi-"],
        "crates-io-token" => &["cio"],
        "docker-hub-token" => &["dckr_pat_"],
        "slack-token" => &["xox"],
        "slack-webhook" => &["hooks.slack.com"],
        "discord-webhook" => &["/api/webhooks/"],
        "telegram-bot-token" => &[":aa"],
        "stripe-key" => &["_live_", "_test_"],
        "square-token" => &["eaaa", "sq0"],
        "paypal-braintree-token" => &["access_token$"],
        "anthropic-api-key" => &["sk-ant-"],
        "openai-api-key" => &["sk-"],
        "huggingface-token" => &["hf_"],
        "groq-api-key" => &["gsk_"],
        "replicate-token" => &["r8_"],
        "sendgrid-api-key" => &["sg."],
        "twilio-api-key" => &["sk"],
        "mailgun-api-key" => &["key-"],
        "jwt" => &["eyj"],
        "credentials-in-url" | "url-userinfo-token" => &["://"],
        "authorization-header" => &["authorization"],
        "bearer-token" => &["bearer"],
        "oauth-client-secret" => &["client"],
        "password-assignment" => &[
            "passw",
            "pwd",
            "passphrase",
            "pw",
            "pass",
            "masterauth",
            "パスワード",
            "密码",
            "비밀번호",
        ],
        "password-in-prose" => &[
            "passw",
            "pwd",
            "passphrase",
            "pw",
            "kennwort",
            "mot de passe",
            "contrase",
            "senha",
        ],
        "mysql-password-option" => &["mysql", "mariadb"],
        "password-in-sentence" => &["password", "pass:"],
        "password-named" => &["password_", "passwd_", "pwd_", "mot_de_passe_"],
        "password-option" => &[
            "sshpass",
            "redis-cli",
            "storepass",
            "keypass",
            "pass:",
            "ldap",
            "sqlcmd",
            "az login",
            "htpasswd",
            "change_password",
            "curl",
            "nmcli",
            "mysqladmin",
            "chpasswd",
            "net user",
            "docker",
            "secret set",
            " -a",
            "--auth",
            "smbclient",
            "ssh-keygen",
            "snmp-server",
            "rabbitmqctl",
            "sqlplus",
            "rman",
            "expdp",
            "impdp",
            "sqlldr",
            "jdbc:oracle",
            "cqlsh",
            " -password",
            "sudo",
            "zip",
            "7z",
        ],
        "session-cookie" => &["cookie", "sid=", "session", "jsessionid"],
        "service-token" => &[
            "ntn_",
            "figd_",
            "flyv1",
            "fm2_",
            "bkua_",
            "hcaik_",
            "hcxik_",
            "glc_",
            "hvs.",
            "hvb.",
            "sl.",
            "eaa",
            "rnd_",
            "pk_",
            "asana",
            "iqojb3jpz2lux2vj",
            "fwogzxivyxdze",
            "pypi-age",
            "aaaaaaaaaaaaaaaaaaaaa",
            "dg9roj",
            "cmvmdgtuojaxoj",
            "akcp",
            "hooks.zapier.com",
        ],
        "wallet-private-key" => &["private"],
        "xml-password" => &["password>", "passwd>", "pwd>", "value"],
        "wifi-psk" => &["psk", "wpa_passphrase"],
        "netrc-password" => &["machine", "default"],
        "env-key-assignment" => &["environ", "env[", "env.", "setenv", "putenv"],
        "azure-devops-pat" => &["pat", "azure_devops", "ado_token", "accesstoken"],
        "login-password-pair" => &[
            "login",
            "log in",
            "credential",
            "creds",
            "user",
            "account",
            "identifiants",
            "zugangsdaten",
        ],
        "laravel-app-key" => &["app_key"],
        "token-option" => &["--"],
        "kubernetes-env-secret" => &["value:"],
        "sql-password" => &["password", "identified"],
        "tailscale-key" => &["tskey-"],
        "mapbox-secret-token" => &["sk.eyj"],
        "contentful-token" => &["cfpat-"],
        "django-secret-key" => &["django-insecure-"],
        "secret-assignment" => &["secret", "token", "key", "credential", "auth", "passphrase"],
        "secret-in-prose" => &[
            "secret",
            "token",
            "key",
            "credential",
            "passw",
            "passphrase",
            "pat",
        ],
        "ssh-private-key-file" => &["putty"],
        "url-token-parameter" | "signed-url-signature" => &["="],
        "sensitive-path" => &[
            ".ssh/",
            ".aws/",
            "shadow",
            "passwd",
            ".env",
            "netrc",
            "pgpass",
            "git-credentials",
            ".docker/",
            ".kube/",
            ".npmrc",
            ".pypirc",
            "id_",
            ".pem",
            ".key",
            ".p12",
            ".pfx",
            ".jks",
            "keystore",
            ".kdbx",
        ],
        _ => return None,
    })
}

/// Rules for keys written over several lines. Group 1 is the header, which is checked like any
/// other value, but the key is what follows it: the finding spans the whole match, so that
/// redacting it (`policy::validate::redact_secrets`) replaces the body and the END line too.
/// Rules that know a secret by a generic name it is given (`token = …`, `the key is …`), not by
/// a token format of its own: for them a value typed as a sequence is an example (see
/// [`is_example_value`]), as in a configuration file's sample. Not for passwords (people choose
/// `abc123456`, and it is one), nor for what stands where only a credential goes: a URL's
/// `access_token=` or user part, an `Authorization` header, a bearer token, a name only a
/// credential has (`aws_secret_access_key`, `client_secret`, `AccountKey`).
const CONTEXT_RULES: &[&str] = &["secret-assignment", "secret-in-prose"];

const BLOCK_RULES: [&str; 2] = ["private-key", "ssh-private-key-file"];

/// Rule table: (id, description, pattern, check). Order matters: when two findings overlap, the
/// earlier (more specific) rule wins.
const TEXT_RULES: &[(&str, &str, &str, Check)] = &[
    (
        "private-key",
        "private key block",
        // The header, then the rest of the block through its END line (or through the end of
        // the text when that is missing), which the finding spans too: see `BLOCK_RULES`.
        r"(-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----)[\s\S]*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|$)",
        Check::None,
    ),
    (
        "aws-access-key-id",
        "AWS access key id",
        r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b",
        Check::None,
    ),
    (
        "aws-secret-access-key",
        "AWS secret access key",
        // Also as `aws configure set aws_secret_access_key …` writes it.
        r#"(?i)aws_?secret_?(?:access_?)?key["']?(?:\s*(?:[:=]|=>)|[ \t]+)\s*["']?([A-Za-z0-9/+=]{40})\b"#,
        Check::NotPlaceholder,
    ),
    (
        // A key pair written out without names (`AKIA… / <secret>`, `AKIA… with secret …`):
        // forty random characters on the line after an access key id are its secret.
        "aws-secret-beside-key-id",
        "AWS secret access key beside its access key id",
        r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b[^\n]{0,80}?(?:^|[^A-Za-z0-9/+=])([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)",
        Check::MixedCase,
    ),
    (
        "gcp-api-key",
        "Google API key",
        r"\b(AIza[0-9A-Za-z_-]{35})(?:[^0-9A-Za-z_-]|$)",
        Check::None,
    ),
    (
        "azure-storage-key",
        "Azure storage account key",
        r"(?i)AccountKey=([A-Za-z0-9+/]{40,}={0,2})",
        Check::NotPlaceholder,
    ),
    (
        "digitalocean-token",
        "DigitalOcean token",
        r"\bdo[opr]_v1_[a-f0-9]{64}\b",
        Check::None,
    ),
    (
        "github-token",
        "GitHub token",
        r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,255}\b",
        Check::None,
    ),
    (
        "github-fine-grained-token",
        "GitHub fine-grained personal access token",
        r"\bgithub_pat_[A-Za-z0-9_]{50,255}\b",
        Check::None,
    ),
    (
        "gitlab-token",
        "GitLab token",
        r"\bgl(?:pat|dt|rt|ptt|cbt|oas)-[A-Za-z0-9_-]{20,}",
        Check::None,
    ),
    (
        "bitbucket-app-password",
        "Bitbucket app password",
        r"\bATBB[A-Za-z0-9_=.-]{28,}",
        Check::None,
    ),
    (
        "npm-token",
        "npm access token",
        r"\bnpm_[A-Za-z0-9]{36}\b",
        Check::None,
    ),
    (
        "pypi-token",
        "PyPI upload token",
        r"\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{40,}",
        Check::None,
    ),
    (
        "crates-io-token",
        "crates.io API token",
        r"\bcio[a-zA-Z0-9]{32}\b",
        Check::None,
    ),
    (
        "docker-hub-token",
        "Docker Hub personal access token",
        r"\bdckr_pat_[A-Za-z0-9_-]{27,}",
        Check::None,
    ),
    (
        "slack-token",
        "Slack token",
        r"\bxox[abposr]-(?:\d{8,14}-){1,3}[A-Za-z0-9]{8,}",
        Check::None,
    ),
    (
        "slack-webhook",
        "Slack webhook URL",
        r"hooks\.slack\.com/(?:services|workflows)/T[A-Za-z0-9_]+/[A-Za-z0-9_]+/[A-Za-z0-9_]{8,}",
        Check::None,
    ),
    (
        "discord-webhook",
        "Discord webhook URL",
        r"discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_-]{20,}",
        Check::None,
    ),
    (
        "telegram-bot-token",
        "Telegram bot token",
        // Also inside the API's URLs (`api.telegram.org/bot<token>/sendMessage`).
        r"(?:\b|/bot)(\d{8,10}:AA[A-Za-z0-9_-]{33})\b",
        Check::None,
    ),
    (
        "stripe-key",
        "Stripe secret or restricted key",
        r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}\b",
        Check::None,
    ),
    (
        "square-token",
        "Square access token",
        r"\b(?:EAAA|sq0atp-|sq0csp-)[A-Za-z0-9_-]{22,}",
        Check::None,
    ),
    (
        "paypal-braintree-token",
        "PayPal/Braintree access token",
        r"access_token\$(?:production|sandbox)\$[a-z0-9]{16}\$[a-f0-9]{32}",
        Check::None,
    ),
    (
        "anthropic-api-key",
        "Anthropic API key",
        r"\bsk-ant-[A-Za-z0-9_-]{32,}",
        Check::OtherAnthropicKind,
    ),
    (
        "openai-api-key",
        "OpenAI API key",
        r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{32,}",
        Check::NotAnthropic,
    ),
    (
        "huggingface-token",
        "Hugging Face token",
        r"\bhf_[A-Za-z0-9]{34,}\b",
        Check::None,
    ),
    (
        "groq-api-key",
        "Groq API key",
        r"\bgsk_[A-Za-z0-9]{40,}\b",
        Check::None,
    ),
    (
        "replicate-token",
        "Replicate API token",
        r"\br8_[A-Za-z0-9]{37,}\b",
        Check::None,
    ),
    (
        "sendgrid-api-key",
        "SendGrid API key",
        r"\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}\b",
        Check::None,
    ),
    (
        "twilio-api-key",
        "Twilio API key",
        r"\bSK[0-9a-fA-F]{32}\b",
        Check::None,
    ),
    (
        "mailgun-api-key",
        "Mailgun API key",
        r"\bkey-[0-9a-zA-Z]{32}\b",
        Check::None,
    ),
    (
        "jwt",
        "JSON Web Token",
        r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
        Check::None,
    ),
    (
        "credentials-in-url",
        "password in a URL or connection string",
        // The scheme may follow an escaped byte (`connect%20to%20https://user:pw@…`).
        r"(?i)(?:\b|%[0-9a-f]{2})[a-z][a-z0-9+.-]{1,20}://[^\s:/@?#]*:([^\s@/?#]+)@[^\s/@]+",
        Check::NotPlaceholder,
    ),
    (
        "authorization-header",
        "credentials in an Authorization header",
        r"(?i)\bauthorization[\x22']?\s*[:=]\s*[\x22']?(?:bearer|basic|token|digest|ssws|apikey|api-key|key)\s+([A-Za-z0-9._~+/=-]{8,})",
        Check::NotPlaceholder,
    ),
    (
        "bearer-token",
        "bearer token",
        r"(?i)\bbearer\s+([A-Za-z0-9._~+/_-]{20,}=*)",
        Check::Random,
    ),
    (
        "oauth-client-secret",
        "OAuth client secret",
        r#"(?i)\bclient[_-]?secret["']?\s*(?:[:=]|=>)\s*["']?([A-Za-z0-9._~+/-]{8,})"#,
        Check::NotPlaceholder,
    ),
    (
        "password-assignment",
        "password assigned in text or configuration",
        // The value is on the line of its name: `DB_PASSWORD=` with nothing after it is an
        // empty value, not the next line's.
        r#"(?i)(?:password|passwd|passwort|pwd|passphrase|[a-z0-9]_pass\b|requirepass|masterauth|mot_de_passe|パスワード|密码|비밀번호)s?["']?[ \t]*(?:[:=]|=>|[ \t]+(?:(?:(?:is|was|were|are|has[ \t]+been|have[ \t]+been|got)[ \t]+)?(?:set|changed|reset|updated|rotated)[ \t]+(?:from[ \t]+[^\s]+[ \t]+)?to|(?:is|are)[ \t]+now|will[ \t]+be|is|was|were|are)[ \t]+)[ \t]*["'`]?([^\s"',;`)]+)|--password[= ]["']?([^\s"']+)|\bpass[ \t]*=[ \t]*["']?([^\s"',;`)]+)|\bpw(?:[ \t]+(?:is|was)[ \t]+|:[ \t]+)["'`]?([^\s"',;`)]+)"#,
        Check::Password,
    ),
    (
        "password-named",
        "password assigned to a name that goes on after the word",
        // `DB_PASSWORD_PROD=…`, `password_staging: "…"`, `mot_de_passe_bdd = "…"`.
        r#"(?i)\b[a-z0-9_]*(?:password|passwd|pwd|mot_de_passe)_[a-z0-9_]*[a-z0-9]["']?[ \t]*(?:[:=]|=>)[ \t]*["'`]?([^\s"',;`)]+)"#,
        Check::PasswordNamed,
    ),
    (
        "password-in-prose",
        "password given in a sentence",
        // "The password for the staging DB is X", "Password for staging: X": what the password
        // is for, then the value.
        // Also in German, French, Spanish, Portuguese and Italian ("das Passwort ist X", "le mot
        // de passe est X", "la contraseña es X", "a senha é X", "la password di staging è X").
        r#"(?i)\b(?:(?:password|passwd|passphrase|pwd|pw)s?[ \t]+(?:for|of|on|in|at|di|de|del|für|do|da)[ \t]+[^\n:=]{1,40}?|(?:passwort|kennwort|mot[ \t]+de[ \t]+passe|contraseña|contrasena|senha)(?:[ \t]+[^\n:=]{1,40}?)?)[ \t]*(?:\bis(?:[ \t]+now)?[ \t]|\bwas[ \t]|\bwill[ \t]+be[ \t]|\bist[ \t]|\blautet[ \t]|\best[ \t]|\bes[ \t]|[ \t]é[ \t]|[ \t]è[ \t]|:|=)[ \t]*["'`]?([^\s"',;`)]+)"#,
        Check::Password,
    ),
    (
        "password-in-sentence",
        "password given in a sentence",
        // "We reset the redis password to X", "changed the admin password from A to X", "user
        // app_rw has password X", "log in as admin with password `X`", "user deploy, password
        // 'X'": the value must look like a password, as in any sentence.
        r#"(?i)\b(?:(?:changed|reset|set|updated|rotated)\b[^\n.]{0,40}?\bpassword\s+(?:from\s+[^\s]+\s+)?to|(?:with|has|and)\s+(?:the\s+)?password|,\s*password)[ \t]+["'`]?([^\s"',;`)]+)|\bpass:[ \t]*["'`]?([^\s"',;`)]+)"#,
        Check::PasswordInSentence,
    ),
    (
        "password-option",
        "password on a command line",
        // Tools that take a password as an option or argument: sshpass, redis-cli, keytool,
        // openssl, ldap tools, sqlcmd, az login, htpasswd, rabbitmqctl, curl's user, `gh secret
        // set --body`, httpie's `-a user:pass`, smbclient's `-U user%pass`, ssh-keygen's `-P`/`-N`,
        // an SNMP community, rabbitmqctl's `add_user NAME PASS`, Oracle's `user/pass@db`, cqlsh's
        // `-p`, a `-password` option (influx, nuget), `echo PASS | sudo -S`, `zip -P`, `7z -p`.
        r#"\bsshpass\s+-p\s*["']?([^\s"']+)|\bredis-cli\b[^\n]*?\s-a\s+["']?([^\s"']+)|\s-(?:src|dest)?(?:store|key)pass\s+["']?([^\s"']+)|\s-pass(?:in|out)\s+pass:([^\s"']+)|\bldap\w+\b[^\n]*?\s-w\s+["']?([^\s"']+)|\bsqlcmd\b[^\n]*?\s-P\s+["']?([^\s"']+)|\baz\s+login\b[^\n]*?\s(?:-p|--password)\s+["']?([^\s"']+)|\bhtpasswd\s+(?:-\w+\s+)*-\w*b\w*\s+(?:-\w+\s+)*[^\s-][^\s]*\s+[^\s]+\s+["']?([^\s"']+)|\bnmcli\b[^\n]*?\spassword\s+["']?([^\s"']+)|\bmysqladmin\b[^\n]*?\spassword\s+["']?([^\s"']+)|\becho\s+["']?[^\s:"']+:([^\s"']+?)["']?\s*\|\s*(?:sudo\s+)?chpasswd|\bnet\s+user\s+[^\s/]+\s+["']?([^\s"'/*][^\s"']*)|\bchange_password\s+[^\s]+\s+["']?([^\s"']+)|\bcurl\b[^\n]*?\s(?:-u|--user)\s+["']?[^\s:"'<]+:([^\s"']+)|\bdocker\s+login\b[^\n]*?\s(?:-p|--password)\s+["']?([^\s"']+)|\bgh\s+secret\s+set\b[^\n]*?\s(?:--body|-b)[ =]["']?([^\s"']+)|\bhttps?\s+(?:-{1,2}[\w-]+\s+)*(?:-a|--auth)[ =]["']?[^\s:"']+:([^\s"']+)|\bsmbclient\b[^\n]*?\s-U\s+["']?[^\s%"']+%([^\s"']+)|\bssh-keygen\b[^\n]*?\s-[PN]\s+["']?([^\s"']+)|\bsnmp-server\s+community\s+["']?([^\s"']+)|\brabbitmqctl\s+(?:add_user|change_password)\s+[^\s]+\s+["']?([^\s"']+)|\b(?:sqlplus|rman|expdp|impdp|sqlldr)\s+(?:-\w+\s+)*[A-Za-z0-9_$#]+/([^\s@/"']+)@|\bjdbc:oracle:thin:[A-Za-z0-9_$#]+/([^\s@/"']+)@|\bcqlsh\b[^\n]*?\s-p\s+["']?([^\s"']+)|\s-password\s+["']?([^\s"']+)|\becho\s+["']?([^\s"'|]+)["']?\s*\|\s*sudo\s+(?:-\w+\s+)*-S\b|\bzip\b[^\n]*?\s-P\s+["']?([^\s"']+)|\b7za?\s+[a-z]\b[^\n]*?\s-p([^\s"']{4,})"#,
        Check::Password,
    ),
    (
        "token-option",
        "token on a command line",
        r#"(?i)(?:^|\s)--(?:with-token|token|api-key|apikey|auth-token|access-token|account-key|client-secret)(?:\s+|=)["']?([^\s"']{16,})"#,
        Check::Random,
    ),
    (
        "kubernetes-env-secret",
        "secret in a container's environment",
        // `- name: DB_PASSWORD` then `value: "…"` on the next line.
        r#"(?i)\bname:\s*["']?[A-Za-z0-9_.-]*(?:password|passwd|secret|token|api_?key|apikey|credential)[A-Za-z0-9_.-]*["']?[ \t]*\r?\n[ \t]*value:[ \t]*["']?([^\s"']+)"#,
        Check::Password,
    ),
    (
        "sql-password",
        "password in an SQL statement",
        r#"(?i)\b(?:with\s+(?:[a-z]+\s+){0,3}?password|encrypted\s+password|identified\s+by)\s+['"]([^'"\s]+)['"]"#,
        Check::Password,
    ),
    (
        "tailscale-key",
        "Tailscale key",
        r"\btskey-(?:auth|api|client|webhook|scim)-[A-Za-z0-9]{6,}-[A-Za-z0-9]{16,}",
        Check::None,
    ),
    (
        "mapbox-secret-token",
        "Mapbox secret token",
        r"\bsk\.eyJ[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{20,}",
        Check::None,
    ),
    (
        "contentful-token",
        "Contentful personal access token",
        r"\bCFPAT-[A-Za-z0-9_-]{40,}",
        Check::None,
    ),
    (
        "mysql-password-option",
        "password on a MySQL command line",
        // `mysql -u root -pSecret123`: the password glued to `-p` (a space after `-p` makes the
        // next word the database, and the password is asked for).
        r"\b(?:mysql|mysqldump|mysqladmin|mariadb)\b[^\n]*?\s-p(?:'([^'\s]{4,})'|\x22([^\x22\s]{4,})\x22|([^\s\x22'`-][^\s\x22'`]{3,}))",
        Check::Password,
    ),
    (
        "django-secret-key",
        "Django secret key",
        r#"\bdjango-insecure-[^\s\x22'`]{20,}"#,
        Check::None,
    ),
    (
        "xml-password",
        "password in XML",
        // `<password>…</password>`, and .NET's `<add key="AdminPassword" value="…" />`.
        r#"(?i)<(?:[\w-]+:)?[\w.-]*(?:password|passwd|pwd)>[ \t]*([^<\s]+)[ \t]*</|\bkey[ \t]*=[ \t]*["'][^"'\n]*(?:password|passwd|pwd|secret|token|api_?key|apikey)[^"'\n]*["'][ \t]+value[ \t]*=[ \t]*["']([^"'\n]+)["']"#,
        Check::Password,
    ),
    (
        "pgpass-line",
        "password in a .pgpass line",
        // `host:port:database:user:password`, a line of its own.
        r"(?m)^[ \t]*(?:\*|[A-Za-z0-9.-]*[A-Za-z][A-Za-z0-9.-]*):(?:\d{1,5}|\*):[^\s:]+:[^\s:]+:([^\s:]+)[ \t]*(?:#[^\n]*)?\r?$",
        Check::Password,
    ),
    (
        "wifi-psk",
        "Wi-Fi pre-shared key",
        // wpa_supplicant's `psk="…"` (a quoted passphrase; 64 hex digits are the derived key),
        // `psk: …` in YAML, and `wpa_passphrase SSID PASSPHRASE`.
        r#"(?i)\bpsk[ \t]*[:=][ \t]*(?:"([^"\n]{8,63})"|'([^'\n]{8,63})'|([0-9a-f]{64})\b|([^\s"']{8,63}))|\bwpa_passphrase[ \t]+["']?[^\s"']+["']?[ \t]+["']?([^\s"']+)"#,
        Check::Password,
    ),
    (
        "netrc-password",
        "password in a .netrc line",
        r"(?i)\b(?:machine\s+\S+|default)\s+login\s+\S+\s+password\s+(\S+)",
        Check::NotPlaceholder,
    ),
    (
        "env-key-assignment",
        "secret set in a process's environment",
        // `os.environ['OPENAI_KEY'] = '…'`, `process.env.STRIPE_KEY = "…"`, `ENV["X_KEY"] =
        // '…'`, `os.Setenv("OPENAI_KEY", "…")`: a name ending in `KEY` is enough there.
        r#"(?:\b(?:os\.)?environ|\bENV|\bprocess\.env)(?:\[[ \t]*["'][A-Za-z0-9_]*KEY[A-Za-z0-9_]*["'][ \t]*\]|\.[A-Za-z0-9_]*KEY[A-Za-z0-9_]*)[ \t]*=[ \t]*["']([^"'\s]{16,})["']|\b(?:[Ss]etenv|putenv)\([ \t]*["'][A-Za-z0-9_]*(?:KEY|TOKEN|SECRET)[A-Za-z0-9_]*["'][ \t]*,[ \t]*["']([^"'\s]{16,})["']"#,
        Check::Random,
    ),
    (
        "azure-devops-pat",
        "Azure DevOps personal access token",
        // 52 characters of base32 in lowercase, or the 84 of the newer format with `AZDO` in
        // it, given to a name that says so.
        r#"(?i)\b(?:(?:[a-z0-9_]*_pat|pat|azure_devops_(?:token|pat|ext_pat)|ado_token|system_accesstoken)["']?[ \t]*(?:[:=]|=>)|(?:azure[ \t]+)?devops[ \t]+(?:pat|personal[ \t]+access[ \t]+token)[^\n:]{0,40}?:?)[ \t]*["']?([a-z2-7]{52}|[A-Za-z0-9]{76}AZDO[A-Za-z0-9]{4})\b"#,
        Check::NotPlaceholder,
    ),
    (
        "login-password-pair",
        "user and password written as a pair",
        // "the login is admin / X", "credentials: deploy / X": a name, a slash, the password,
        // which holds a digit or a symbol (`user ops / Ops-team` is words).
        r#"(?i)\b(?:login|log[ \t]+in|credentials?|creds|user(?:name)?|account|identifiants|zugangsdaten)\b(?:[^\n:/]{0,40}:|[ \t]+(?:is|are|was|were))?[ \t]*(?:as[ \t]+)?["'`]?[A-Za-z0-9_.@-]{2,32}["'`]?[ \t]+/[ \t]+["'`]?([^\s/"'`,;)]*[0-9!@#$%^&*+=?~_.][^\s/"'`,;)]*)"#,
        Check::PasswordInSentence,
    ),
    (
        "session-cookie",
        "session cookie",
        // `Cookie: session=…`, `Set-Cookie: JSESSIONID=…`, and a session cookie named alone
        // (`connect.sid=…`, `laravel_session=…`, `_shop_session=…`).
        r#"(?i)\b(?:set-)?cookie:[ \t]*[^\n]*?\b[A-Za-z0-9_.-]*(?:sess|sid|token|auth|jwt)[A-Za-z0-9_.-]*=([^;\s'"]{16,})|\b(?:connect\.sid|laravel_session|jsessionid|phpsessid|asp\.net_sessionid|sessionid|session_id|_[a-z0-9]+_session)=([^;\s'"&]{16,})"#,
        Check::LongValue,
    ),
    (
        "service-token",
        "access token of a service",
        // Notion `ntn_`, Figma `figd_`, Fly.io `FlyV1 fm2_`, Buildkite `bkua_`, Honeycomb
        // `hcaik_`, Grafana Cloud `glc_`, Vault `hvs.`/`hvb.`, Dropbox `sl.`, Facebook `EAA…`,
        // Render `rnd_`, ClickUp `pk_…_…`, Asana `1/…/…:…`, AWS session tokens, TestPyPI, Twitter
        // bearer tokens, Intercom, JFrog, Zapier's catch hooks.
        r"(\bntn_(?:[0-9]*[A-Za-z]){4}[A-Za-z0-9]{30,}|\bfigd_[A-Za-z0-9_-]{36,}|\bFlyV1[ \t]+fm[12]_[A-Za-z0-9+/=_,-]{20,}|\bbkua_[a-f0-9]{40}\b|\bhc[ax]ik_[A-Za-z0-9]{20,}|\bglc_[A-Za-z0-9+/=_-]{32,}|\bhv[sb]\.[A-Za-z0-9_-]{24,}|\bsl\.[A-Za-z0-9_-]{60,}|\bEAA[A-Z][A-Za-z0-9]{40,}|\brnd_[A-Za-z0-9]{32}\b|\bpk_\d{6,}_[A-Z0-9]{32}\b|\b[12]/\d{13,16}/\d{13,16}:[0-9a-f]{32}\b|\b(?:IQoJb3JpZ2luX2Vj|FwoGZXIvYXdzE)[A-Za-z0-9/+=]{100,}|\bpypi-AgE[A-Za-z0-9_-]{50,}|\bA{21}[A-Za-z0-9%]{30,}|\bdG9rOj[A-Za-z0-9+/=]{30,}|\bcmVmdGtuOjAxOj[A-Za-z0-9+/=]{40,}|\bAKCp[A-Za-z0-9]{69}\b|https://hooks\.zapier\.com/hooks/catch/\d+/[A-Za-z0-9]+)",
        Check::NotPlaceholder,
    ),
    (
        "wallet-private-key",
        "cryptocurrency wallet private key",
        r"(?i)\bprivate[ _-]?key\b[^\n]{0,30}?\b(0x[0-9a-f]{64})\b",
        Check::NotPlaceholder,
    ),
    (
        "laravel-app-key",
        "Laravel application key",
        r#"\bAPP_KEY[ \t]*=[ \t]*["']?base64:([A-Za-z0-9+/]{40,}={0,2})"#,
        Check::None,
    ),
    (
        "secret-assignment",
        "secret value assigned to a secret-like name",
        // Also a subscript (`app.config['SECRET_KEY'] = …`, `os.environ["OPENAI_KEY"] = …`)
        // and a setter (`setApiKey("…")`).
        r#"(?i)\b[A-Za-z0-9_.-]*(?:secret|token|api_?key|apikey|access_?key|private_?key|credential|auth_?key|signing_?key|passphrase)[A-Za-z0-9_.-]*["']?\]?\s*(?:[:=]|=>)\s*["']?([A-Za-z0-9+/=_.~-]{16,})|\bset_?(?:api_?key|token|secret|access_?token|auth_?token|credentials?)\s*\(\s*["']([A-Za-z0-9+/=_.~-]{16,})"#,
        Check::Assigned,
    ),
    (
        "secret-in-prose",
        "credential written in a sentence",
        r#"(?i)\b(?:tokens?|secrets?|api[ _-]?keys?|keys?|passwords?|passphrase|credentials?|pat)\b[^\n]{0,30}?(?:\bis\b|\bwas\b|\bes\b|\best\b|\bist\b|:|=)\s*[\x22'\x60(]?([A-Za-z0-9+/=_.~:%-]{16,})|\b(?:api[ _-]?key|access[ _-]?key|token|secret)[ \t]+[\x22'\x60]?([A-Za-z0-9+/=_~.-]{24,})|\b(?:keys?|secrets?|tokens?|passphrase)\s+(?:is|was)\s+[\x22'\x60]?([A-Za-z0-9+/=_.~%!#$*^-]{15,}[A-Za-z0-9])"#,
        Check::Prose,
    ),
    (
        "ssh-private-key-file",
        "SSH private key material",
        // The header, then the rest of the file through its `Private-MAC` line (or through
        // the end of the text), which the finding spans too: see `BLOCK_RULES`.
        r"(\bPuTTY-User-Key-File-\d+:)[\s\S]*?(?:Private-MAC:[^\n]*|$)",
        Check::None,
    ),
    (
        "credit-card-number",
        "credit card number",
        r"\b\d(?:[ -]?\d){12,18}\b",
        Check::Card,
    ),
    (
        "us-ssn",
        "US social security number",
        r"\b\d{3}-\d{2}-\d{4}\b",
        Check::Ssn,
    ),
];

/// Rules that apply to evidence URIs in addition to the text rules.
const URI_RULES: &[(&str, &str, &str, Check)] = &[
    (
        "url-token-parameter",
        "token, key or password in a URL parameter",
        r"(?i)[?&;](?:access_token|refresh_token|id_token|token|api_?key|apikey|key|secret|client_secret|password|passwd|pwd|auth|session|sessionid|code)=([^&#\s]+)",
        Check::Token,
    ),
    (
        "signed-url-signature",
        "signature of a signed URL",
        r"(?i)[?&;](?:x-amz-signature|x-amz-credential|x-amz-security-token|x-goog-signature|x-goog-credential|signature|sig|sv|se)=([^&#\s]+)",
        Check::LongValue,
    ),
    (
        "url-userinfo-token",
        "token in the user part of a URL",
        r"(?i)^[a-z][a-z0-9+.-]*://([^\s:/@]{20,})@",
        Check::Random,
    ),
    (
        "sensitive-path",
        "path to a credentials file",
        r"(?i)(?:^|[/\\:])(?:\.ssh/(?:id_[a-z0-9_]+|authorized_keys|identity)|\.aws/(?:credentials|config)|etc/(?:shadow|gshadow|master\.passwd)|\.env(?:\.(?:local|prod|production|staging|dev|development|test))?|\.netrc|_netrc|\.pgpass|\.git-credentials|\.docker/config\.json|\.kube/config|\.npmrc|\.pypirc|id_(?:rsa|dsa|ecdsa|ed25519)|[^/\\\s]+\.(?:pem|key|p12|pfx|jks|keystore|kdbx))(?:$|[?#])",
        Check::None,
    ),
];

fn compile(table: &'static [(&str, &str, &str, Check)]) -> Vec<Rule> {
    // Rules from `credentials-in-url` on judge by context: any other rule's finding on the
    // same characters is preferred.
    let context_from = table
        .iter()
        .position(|(id, ..)| *id == "credentials-in-url")
        .unwrap_or(table.len());
    table
        .iter()
        .enumerate()
        .map(|(index, (id, description, pattern, check))| {
            let keys: Option<Vec<usize>> = keywords(id).map(|words| {
                words
                    .iter()
                    .filter_map(|w| KEYWORDS.words.binary_search(w).ok())
                    .collect()
            });
            let gate = match (&keys, *id) {
                (Some(_), "credentials-in-url" | "url-userinfo-token") => Gate::KeysAndAt,
                (Some(_), _) => Gate::Keys,
                (None, "credit-card-number") => Gate::DigitRun,
                (None, "us-ssn") => Gate::SsnShape,
                (None, "pgpass-line") => Gate::FourColons,
                (None, _) => Gate::Always,
            };
            Rule {
                id,
                description,
                pattern,
                re: std::sync::OnceLock::new(),
                check: *check,
                keys,
                gate,
                rank: if index >= context_from {
                    CONTEXT_BASE + index
                } else {
                    index
                },
                provider_allowlists: !matches!(
                    check,
                    Check::Password | Check::PasswordInSentence | Check::PasswordNamed
                ) && *id != "credentials-in-url",
            }
        })
        .collect()
}

static TEXT: LazyLock<Vec<Rule>> = LazyLock::new(|| compile(TEXT_RULES));
static URI: LazyLock<Vec<Rule>> = LazyLock::new(|| compile(URI_RULES));

/// Every rule: (id, description): the text rules, the URI-only rules, then the provider token
/// rules.
pub fn rules() -> Vec<(&'static str, &'static str)> {
    let own = TEXT_RULES
        .iter()
        .chain(URI_RULES)
        .map(|(id, d, _, _)| (*id, *d));
    own.chain(provider::rules()).collect()
}

/// Scans free text: an entry's summary, content, subject, tags and evidence notes, or any file.
pub fn scan_text(text: &str) -> Vec<Finding> {
    finish(text, with_view(text, text_findings))
}

/// Scans an evidence URI: the text rules plus credentials in the user part, token-like query
/// parameters, signed-URL signatures and paths of credential files.
pub fn scan_uri(uri: &str) -> Vec<Finding> {
    let raw = with_view(uri, |uri| {
        let mut raw = scan_with(&URI, uri);
        raw.extend(text_findings(uri));
        raw
    });
    finish(uri, raw)
}

/// `scan` of `text`, and of its [`normalize::View`] (invisible characters removed, a token
/// broken by a line break joined, needless `%XX` escapes decoded) mapped back onto `text`: a
/// finding in the view covers the characters of `text` it came from, those removed too.
///
/// The view only adds findings where the text itself has none: a finding of the view that
/// overlaps one of the text is dropped. Joining lines may put together what is apart (a PEM
/// block's lines, a PuTTY file's header and the line after it), and what the rules find in the
/// text as it is stays exactly what they found before the view existed.
fn with_view(text: &str, scan: impl Fn(&str) -> Vec<Raw>) -> Vec<Raw> {
    let mut raw = scan(text);
    if let Some(view) = normalize::View::of(text) {
        // The text's findings by start, each with the furthest end up to it: a span overlaps
        // one of them when the furthest end of those starting before its end is past its start.
        let mut spans: Vec<(usize, usize)> = raw.iter().map(|r| (r.3, r.4)).collect();
        spans.sort_unstable();
        let mut furthest = 0;
        for span in &mut spans {
            furthest = furthest.max(span.1);
            span.1 = furthest;
        }
        let overlaps = |start: usize, end: usize| {
            let before = spans.partition_point(|s| s.0 < end);
            before > 0 && spans[before - 1].1 > start
        };
        for (rank, id, description, start, end) in scan(&view.text) {
            if let Some((start, end)) = view.original(start, end)
                && !overlaps(start, end)
            {
                raw.push((rank, id, description, start, end));
            }
        }
    }
    raw
}

/// Scans a whole document (a file, a log, a diff): the text rules everywhere, and the URI rules
/// (except credential-file paths, which prose mentions freely) on every `http(s)://` URL in it.
pub fn scan_document(text: &str) -> Vec<Finding> {
    finish(text, with_view(text, document_findings))
}

fn document_findings(text: &str) -> Vec<Raw> {
    static URL: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r#"(?i)\b[a-z][a-z0-9+.-]{1,20}://[^\s"'<>`\\]+"#)
            .unwrap_or_else(|e| panic!("url pattern: {e}"))
    });
    let mut raw = text_findings(text);
    for url in URL.find_iter(text) {
        for (rank, id, description, start, end) in scan_with(&URI, url.as_str()) {
            if id != "sensitive-path" {
                raw.push((
                    rank,
                    id,
                    description,
                    url.start() + start,
                    url.start() + end,
                ));
            }
        }
    }
    raw
}

/// (precedence, rule id, description, start, end): when two findings overlap, the lower
/// precedence wins.
type Raw = (usize, &'static str, &'static str, usize, usize);

/// Precedence of the provider rules: after this project's specific rules (up to `jwt`), before
/// its context rules (passwords in URLs, assignments to secret-like names, …), which in turn come
/// before gitleaks' catch-all `generic-api-key`.
const PROVIDER_BASE: usize = 1_000;
const CONTEXT_BASE: usize = 2_000;
const GENERIC_RANK: usize = 3_000;

fn text_findings(text: &str) -> Vec<Raw> {
    let mut raw = scan_with(&TEXT, text);
    // Provider rules line by line: many trust a bare format (40 hex digits, say) only when their
    // keyword ("sourcegraph") is near, and a keyword on one line must not turn every git commit
    // hash elsewhere in a note or a log into a credential. Multi-line secrets (private keys)
    // are this module's own rules, which see the whole text.
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        for (i, id, description, start, end) in provider::scan(line) {
            if line.get(start..end).is_some_and(|v| is_sealed(v, text))
                || is_logged_event_id(text, offset + start, offset + end)
            {
                continue;
            }
            let rank = if id == "generic-api-key" {
                GENERIC_RANK
            } else {
                PROVIDER_BASE + i
            };
            raw.push((rank, id, description, offset + start, offset + end));
        }
        offset += line.len();
    }
    raw
}

fn scan_with(rules: &'static [Rule], text: &str) -> Vec<Raw> {
    let mut out = Vec::new();
    let lower = text.to_ascii_lowercase();
    let present = Present::of(&lower);
    for rule in rules {
        let rank = rule.rank;
        if !rule.may_match(&lower, &present) {
            continue;
        }
        for caps in rule.regex().captures_iter(text) {
            let Some(whole) = caps.get(0) else { continue };
            // The secret itself is the last group that matched, else the whole match.
            let value = (1..caps.len())
                .rev()
                .find_map(|i| caps.get(i))
                .unwrap_or(whole);
            let format = !CONTEXT_RULES.contains(&rule.id);
            let example = !matches!(rule.check, Check::Card | Check::Ssn)
                && rule.id != "private-key"
                && is_example_value(value.as_str(), format);
            // `xoxp-123…-####`, `sk-abc…`, `<…>`: the value is cut short by a placeholder. Not
            // for a key block, whose value is its header: what follows it (`<br>`, `*`) is no
            // placeholder of the header. A closing tag (`…</password>`) ends a value whole.
            let rest = text[value.end()..].trim_start_matches(['-', '_']);
            let cut_short = !BLOCK_RULES.contains(&rule.id)
                && (rest.starts_with(['#', '*', '<', '\u{2026}']) || rest.starts_with(".."))
                && !rest.starts_with("</");
            let allowlisted = if rule.provider_allowlists {
                provider::is_allowlisted(value.as_str(), format)
            } else {
                provider::is_known_value(value.as_str(), format)
            };
            // memlog's own entry ids (`"entry":"m-…"` in a log line that names a file about
            // tokens) are random by construction and never a credential.
            let entry_id = projections::event::is_entry_id(value.as_str())
                || is_logged_event_id(text, value.start(), value.end());
            if !example
                && !cut_short
                && !entry_id
                && confirm(rule.check, value.as_str(), text, whole.start())
                && !allowlisted
            {
                let end = if BLOCK_RULES.contains(&rule.id) {
                    whole.end()
                } else {
                    value.end()
                };
                out.push((rank, rule.id, rule.description, value.start(), end));
            }
        }
    }
    out
}

fn finish(text: &str, mut raw: Vec<Raw>) -> Vec<Finding> {
    // Prefer the more specific rule (earlier in its table), then the longer span.
    raw.sort_by_key(|(rank, _, _, start, end)| (*rank, *start, usize::MAX - (end - start)));
    let mut kept: Vec<Raw> = Vec::new();
    for r in raw {
        if !kept.iter().any(|k| r.3 < k.4 && k.3 < r.4) {
            kept.push(r);
        }
    }
    kept.sort_by_key(|r| r.3);
    kept.into_iter()
        .map(|(_, rule, description, start, end)| {
            let (line, column) = position(text, start);
            Finding {
                rule,
                description,
                line,
                column,
                start,
                end,
            }
        })
        .collect()
}

fn position(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset];
    let line = before.bytes().filter(|b| *b == b'\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}

fn confirm(check: Check, value: &str, text: &str, match_start: usize) -> bool {
    match check {
        Check::None => true,
        Check::OtherAnthropicKind => !["sk-ant-api03-", "sk-ant-admin01-"]
            .iter()
            .any(|kind| value.starts_with(kind)),
        Check::NotAnthropic => {
            !value.starts_with("sk-ant-") && !is_placeholder(value) && looks_random(value)
        }
        Check::NotPlaceholder => !is_placeholder(value),
        Check::Random => !is_placeholder(value) && looks_random(value),
        Check::MixedCase => {
            [
                u8::is_ascii_uppercase,
                u8::is_ascii_lowercase,
                u8::is_ascii_digit,
            ]
            .iter()
            .all(|class| value.bytes().any(|b| class(&b)))
                && !is_placeholder(value)
                && looks_random(value)
        }
        Check::Assigned => {
            let name = text[match_start..]
                .split([':', '='])
                .next()
                .unwrap_or_default()
                .to_ascii_lowercase();
            // Names of references to a secret, not of one: `credentialsId`, `secret_name`,
            // `token_url`, `keyVaultName`, `secret_length`, `public_key`, `csrf_token`.
            let cursor = names_no_secret(&name);
            !cursor && !is_placeholder(value) && looks_random(value)
        }
        Check::Prose => {
            const NOT_SECRET: &[&str] = &[
                "cache",
                "object",
                "primary",
                "foreign",
                "sort",
                "partition",
                "idempotency",
                "routing",
                "row",
                "map",
                "lookup",
                "dedup",
                "index",
                "composite",
                "shard",
                "public",
                "sequence",
                "bucket",
                "public_key",
                "pubkey",
                "s3",
                "url",
                "csrf",
                "length",
                "name",
                "id",
                "fingerprint",
            ];
            let before = text[..match_start]
                .rsplit(['.', '\n', ';'])
                .next()
                .unwrap_or_default();
            let phrase = format!("{before} {}", &text[match_start..]).to_ascii_lowercase();
            let phrase = phrase.split(value).next().unwrap_or_default();
            let qualified = phrase
                .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
                .any(|w| NOT_SECRET.contains(&w));
            // A digest's fingerprint (`SHA256:qqlAJ…`), and a namespaced key (`session:3f2a…`,
            // a word and a colon with no space before the value, the word no credential's).
            let fingerprint = ["sha256:", "sha1:", "sha512:", "md5:"].iter().any(|p| {
                value
                    .get(..p.len())
                    .is_some_and(|h| h.eq_ignore_ascii_case(p))
            });
            let value_start = match_start + text[match_start..].find(value).unwrap_or(0);
            let namespaced = is_namespaced_key(&text[..value_start]);
            !qualified
                && !fingerprint
                && !namespaced
                && !is_code_name(value)
                && !is_sealed(value, text)
                && !looks_like_path(value)
                && !is_placeholder(value)
                && looks_random(value)
        }
        Check::Password => is_password(value, text, match_start, false),
        Check::PasswordInSentence => is_password(value, text, match_start, true),
        Check::PasswordNamed => {
            let name: String = text[match_start..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect::<String>()
                .to_ascii_lowercase();
            // The words after the word password (`prod` in `db_password_prod`).
            let after = ["password", "passwd", "pwd", "mot_de_passe"]
                .iter()
                .filter_map(|w| name.rfind(w).map(|i| &name[i + w.len()..]))
                .min_by_key(|rest| rest.len())
                .unwrap_or_default();
            let about = after.split('_').any(|w| PASSWORD_METADATA.contains(&w));
            !about && is_password(value, text, match_start, false)
        }
        Check::Card => {
            is_card_number(value) && !in_decimal(text, match_start, match_start + value.len())
        }
        Check::Ssn => is_ssn(value),
        Check::LongValue => value.len() >= 16 && !is_placeholder(value),
        Check::Token => value.len() >= 8 && !is_placeholder(value),
    }
}

/// Whether a name (`next_page_token`, `credentialsId`, `idempotency_key`) says that the value
/// assigned to it is opaque but not secret: pagination cursors, ids and keys that only
/// deduplicate, and references to a secret (its id, name, URL or length).
pub(crate) fn names_no_secret(name: &str) -> bool {
    let name = name
        .trim_end_matches(|c: char| !c.is_ascii_alphanumeric())
        .to_ascii_lowercase();
    // A name ending in a secret's word names a secret, whatever it starts with
    // (`NEXTAUTH_SECRET`, `CURSOR_SECRET`, `PAGE_TOKEN_SECRET`).
    let secret_word = ["secret", "password", "passwd", "passphrase"]
        .iter()
        .any(|w| name.ends_with(w));
    let cursor = !secret_word
        && ["page", "cursor", "next", "continuation"]
            .iter()
            .any(|w| name.contains(w));
    cursor
        || name.ends_with("id")
        || name.split_whitespace().any(|w| w == "id" || w == "ids")
        || name.ends_with("path")
        || name.ends_with("file")
        || [
            "idempotency",
            "dedup",
            "request",
            "trace",
            "correlation",
            "url",
            "name",
            "length",
            "public",
            "csrf",
            "vault",
            "endpoint",
        ]
        .iter()
        .any(|w| name.contains(w))
}

/// Whether the value after `before` is the id part of a namespaced key (`session:3f2a…`,
/// `user:42`): a lowercase word and a colon right before it, with no space, the word no
/// credential's name (`token:…` is one).
pub(crate) fn is_namespaced_key(before: &str) -> bool {
    let Some(head) = before.strip_suffix(':') else {
        return false;
    };
    // Counted in bytes: the word is ASCII, so where it starts is a character boundary.
    let start = head.len()
        - head
            .bytes()
            .rev()
            .take_while(u8::is_ascii_alphanumeric)
            .count();
    let word = &head[start..];
    // A plain lowercase word (`session`, `user`); not a token's first part (`AAAAkFukoZ9:…`).
    !word.is_empty()
        && word.bytes().all(|b| b.is_ascii_lowercase())
        && ![
            "key", "keys", "token", "secret", "password", "pat", "apikey",
        ]
        .contains(&word)
}

/// Template and redaction forms that stand for a secret without being one.
pub fn is_placeholder(value: &str) -> bool {
    let v = value.trim_matches(|c| matches!(c, '"' | '\'' | '`' | ',' | ';' | ')' | '('));
    if v.is_empty() {
        return true;
    }
    let lower = v.to_ascii_lowercase();
    let first = v.chars().next().unwrap_or(' ');
    if matches!(first, '$' | '<' | '[' | '{' | '%' | '*' | '#' | '@' | '&')
        || v.contains("${")
        || v.contains("{{")
        || v.contains("<")
        || v.contains("%(")
    {
        return true;
    }
    // A run of one character: xxxx, ****, 0000, ....
    let mut chars = v.chars();
    if let Some(c) = chars.next()
        && v.chars().count() >= 3
        && chars.all(|d| d.eq_ignore_ascii_case(&c))
    {
        return true;
    }
    const WORDS: &[&str] = &[
        "redacted",
        "placeholder",
        "changeme",
        "change_me",
        "your",
        "yourpassword",
        "xxx",
        "none",
        "null",
        "nil",
        "empty",
        "unset",
        "hidden",
        "masked",
        "omitted",
        "secret",
        "password",
        "required",
        "optional",
        "string",
        "str",
        "true",
        "false",
        "todo",
        "tbd",
        "example",
        "sample",
        "dummy",
        "n/a",
        "undefined",
        "process.env",
        "os.environ",
        "env",
        "getenv",
        "vault",
        "ssm",
        "keychain",
        "secretsmanager",
        "from",
        "see",
        "in",
        "the",
        "a",
        "an",
    ];
    if WORDS.contains(&lower.as_str()) {
        return true;
    }
    lower.starts_with("your_")
        || lower.starts_with("your-")
        || lower.starts_with("process.env")
        || lower.starts_with("os.environ")
        || lower.starts_with("os.getenv")
        || lower.starts_with("env.")
        || lower.starts_with("env[")
        || lower.starts_with("std::env")
        || lower.starts_with("secrets.")
        || lower.starts_with("vault:")
        || lower.starts_with("arn:aws:secretsmanager")
        || lower.contains("redacted")
}

/// Documentation values in a token's shape: `xoxb-xxxxxxxxxxxx`, `hf_xxxxxxxx`,
/// `AKIAXXXXXXXXXXXXXXXX`, `sk-...`, `AKIAIOSFODNN7EXAMPLE`, `sk_live_your_key_here`, and, for a
/// value that no token format names (`token = "0123456789abcdef"`), one typed as a sequence. A
/// generated token practically never holds a run of six equal characters, six consecutive
/// letters or digits of the alphabet, or a word like `example`.
///
/// `format`: the rule knows the value by a token format of its own (a provider's prefix, as
/// `ghp_`, `AKIA`, `sk-ant-`). Such a value typed as a sequence (`ghp_1234567890abcdef…`,
/// `AKIA1234567890ABCDEF`) is still in the token's shape, which is what a test of the scanner
/// writes and what a careless note may hold: it is refused as a token would be.
pub(crate) fn is_example_value(value: &str, format: bool) -> bool {
    // Twitter's bearer tokens start with 22 `A`s (base64 of zero bytes): not a placeholder run.
    let bytes = value.trim_start_matches('A').as_bytes();
    let mut same = 1;
    let mut ascending = 1;
    for w in bytes.windows(2) {
        same = if w[0] == w[1] { same + 1 } else { 1 };
        ascending = if w[0].is_ascii_alphanumeric() && w[1] == w[0].wrapping_add(1) {
            ascending + 1
        } else {
            1
        };
        if same >= 6 || (ascending >= 6 && !format) {
            return true;
        }
    }
    if value.contains("...") || value.contains('\u{2026}') {
        return true;
    }
    // `xoxp-1234-1234-1234-…`: the same segment three times is a template, not a token.
    let segments: Vec<&str> = value
        .split(['-', '_', '.'])
        .filter(|s| s.len() >= 3)
        .collect();
    if segments
        .iter()
        .any(|s| segments.iter().filter(|t| *t == s).count() >= 3)
    {
        return true;
    }
    let lower = value.to_ascii_lowercase();
    const MARKERS: &[&str] = &[
        "example",
        "dummy",
        "sample",
        "placeholder",
        "your_",
        "your-",
        "yourkey",
        "yourtoken",
        "insert",
        "replace",
        "changeme",
        "redacted",
        "xxxx",
        "****",
        "<",
        "${",
        "{{",
    ];
    MARKERS.iter().any(|m| lower.contains(m))
}

/// Shannon entropy in bits per character.
fn entropy(s: &str) -> f64 {
    let mut counts = [0u32; 256];
    for b in s.bytes() {
        counts[usize::from(b)] += 1;
    }
    let n = s.len() as f64;
    counts
        .iter()
        .filter(|c| **c > 0)
        .map(|c| {
            let p = f64::from(*c) / n;
            -p * p.log2()
        })
        .sum()
}

fn classes(s: &str) -> usize {
    [
        s.bytes().any(|b| b.is_ascii_lowercase()),
        s.bytes().any(|b| b.is_ascii_uppercase()),
        s.bytes().any(|b| b.is_ascii_digit()),
        s.bytes().any(|b| !b.is_ascii_alphanumeric()),
    ]
    .iter()
    .filter(|x| **x)
    .count()
}

/// A path or key name: slash-separated, with at least two segments that are plain words or
/// numbers (`reports/2026/11/…`), or ending in a file extension.
fn looks_like_path(v: &str) -> bool {
    if !v.contains('/') {
        return false;
    }
    let plain = v
        .split('/')
        .filter(|s| {
            !s.is_empty()
                && (s
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b == b'-' || b == b'_')
                    || s.bytes().all(|b| b.is_ascii_digit()))
        })
        .count();
    let extension = v
        .rsplit('/')
        .next()
        .and_then(|last| last.rsplit_once('.'))
        .is_some_and(|(_, ext)| {
            (2..=8).contains(&ext.len()) && ext.bytes().all(|b| b.is_ascii_lowercase())
        });
    plain >= 2 || extension
}

/// A value that looks machine-generated rather than a word, identifier or path.
fn looks_random(value: &str) -> bool {
    let v = value.trim_end_matches('=');
    if v.len() < 16 || is_placeholder(v) {
        return false;
    }
    // Identifiers and paths: short words joined by separators, each all letters or all digits
    // (`kubernetes-controller-manager`, `color.primary.500`).
    let digits = v.bytes().filter(u8::is_ascii_digit).count();
    let word_like = |w: &str| {
        w.len() <= 3
            || (w.len() <= 12
                && (w.bytes().all(|b| b.is_ascii_alphabetic())
                    || w.bytes().all(|b| b.is_ascii_digit())))
    };
    if v.split(['_', '-', '.', '/', ':']).all(word_like) {
        return false;
    }
    if v.contains('/') && v.split('/').count() > 2 && digits < 4 {
        return false;
    }
    classes(v) >= 2 && entropy(v) >= 3.3
}

fn is_password(value: &str, text: &str, match_start: usize, sentence: bool) -> bool {
    let v = value.trim_matches(|c| matches!(c, '"' | '\'' | '`' | '.' | ',' | ';' | ':'));
    if v.chars().count() < 4 || is_placeholder(v) {
        return false;
    }
    // `password is rotated`, `password: see the vault`: prose, not a value. A password in prose
    // form ("the password is X", "was X", "was changed to X") must at least not be a plain
    // lowercase word. Only the words
    // between the name and the value tell (not a sentence on a later line).
    let head = &text[match_start..];
    let before_value = head.find(value).map_or(head, |i| &head[..i]);
    let before_value = before_value.to_ascii_lowercase();
    let prose = sentence
        || [
            " is ", " was ", " were ", " are ", " to ", " be ", " for ", " of ", " on ",
        ]
        .iter()
        .any(|w| before_value.contains(w));
    if prose && says_how_passwords_are_kept(v) {
        return false;
    }
    let plain_word = v.bytes().all(|b| b.is_ascii_lowercase());
    if plain_word && (prose || v.len() < 6 || COMMON_WORDS.contains(&v)) {
        return false;
    }
    // A service's default, named by the variable it is given to (`POSTGRES_PASSWORD=postgres`,
    // `MYSQL_ROOT_PASSWORD=mysql` in a compose file for tests).
    // The name is what the match starts with, and the letters of the name before it.
    let prefix = text[..match_start]
        .rsplit(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    let name = format!("{prefix}{before_value}");
    if plain_word && name.contains(&v.to_ascii_lowercase()) {
        return false;
    }
    if is_sealed(v, text) {
        return false;
    }
    // Letters with capitals are words or the name of a type (`Kubernetes`, `SecretString`,
    // "the password is BCrypt hashed") unless they cannot be said: five consonants in a row
    // within a word are letters typed at random (`BiJmpflvJfup`).
    if !plain_word
        && v.bytes().all(|b| b.is_ascii_alphabetic())
        && !has_consonant_run(v, 5)
        && !has_random_case(v)
    {
        return false;
    }
    // Code, not a value: a subscript (`request.form['password']`), a YAML tag (`!vault |`), a
    // variable in snake_case (`password = new_password`, psql's `:'new_password'`), a number
    // in hexadecimal (`MATCH_PASS = 0x04`).
    let snake_case = v.contains('_')
        && v.split('_')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_lowercase()));
    let tag_name = v.trim_start_matches('!');
    let tag = v.starts_with('!')
        && v.len() - tag_name.len() <= 2
        && !tag_name.is_empty()
        && tag_name
            .bytes()
            .all(|b| b.is_ascii_alphabetic() || b == b'_');
    let hex_literal = v.len() > 2
        && (v.starts_with("0x") || v.starts_with("0X"))
        && v[2..].bytes().all(|b| b.is_ascii_hexdigit());
    if v.contains('[') || tag || snake_case || hex_literal {
        return false;
    }
    // Function calls and references, e.g. `password=get_password()`, `password: config.db` or
    // a type's path (`PASSPHRASE: crate::ObjectIdentifier`).
    let path = v.contains("::") && is_reference(v, "::");
    if v.contains('(') || (v.contains('.') && plain_word_parts(v)) || path {
        return false;
    }
    // Generic type annotations (`password: Optional[str]`, `password: Box<str>`) and file
    // paths (`--from-file=password=./pw.txt`).
    let generic_type = v.starts_with(|c: char| c.is_ascii_uppercase())
        && (v.ends_with(']') || v.ends_with('>'))
        && v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"[]<>_".contains(&b));
    if generic_type || ["./", "../", "/", "~/"].iter().any(|p| v.starts_with(p)) {
        return false;
    }
    // A file's name (`FAQ.md`) or a version (`v1.2.3`), as a sentence names them.
    !is_file_name(v) && !is_version(v)
}

/// Whether `v` is a file's name: a name of letters, digits, `_` and `-` with an extension that
/// files of notes and code have.
fn is_file_name(v: &str) -> bool {
    const EXTENSIONS: &[&str] = &[
        "md", "txt", "json", "yaml", "yml", "toml", "rs", "py", "js", "ts", "go", "sh", "pdf",
        "png", "csv", "log", "conf", "cfg", "ini", "xml", "html", "sql", "lock",
    ];
    v.rsplit_once('.').is_some_and(|(name, ext)| {
        EXTENSIONS.contains(&ext)
            && !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    })
}

/// Whether `v` is a version: `1.2`, `v1.2.3`, up to four numbers.
fn is_version(v: &str) -> bool {
    let digits = v.strip_prefix(['v', 'V']).unwrap_or(v);
    let parts: Vec<&str> = digits.split('.').collect();
    (2..=4).contains(&parts.len())
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

/// Whether the word after "the password was changed to" (or "is", "is now", ...) says how
/// passwords are kept rather than what one is. Each form is narrow, since what it lets pass is
/// not looked at again:
/// - a hashing scheme, encoding, protocol or product: its letters one of [`SCHEMES`], with at
///   most three digits (`PBKDF2`, `argon2id`, `SHA256`, `UTF8`, `TLS1.3`, `HS256`; not
///   `Vault2024`);
/// - such a name with descriptors joined by hyphens, each a number or a lowercase word of four
///   letters or more (`SHA-256`, `UTF-8-encoded`, `MD5-free`, `2FA-protected`; not
///   `Summer-2024`);
/// - a date (`2024-03-01`, a real month and day);
/// - where the secret lives: a variable's name of capitals and underscores naming a secret
///   (`DB_PASSWORD`), an attribute of an object (`settings.DB_PASSWORD`, `cfg.Password`), a
///   path of plain words (`ssm:/prod/db/password`), a snake_case name (`password_hash`), a
///   type's path (`crate::Secret`).
fn says_how_passwords_are_kept(v: &str) -> bool {
    let parts: Vec<&str> = v.split('-').collect();
    let descriptor = |p: &&str| {
        p.bytes().all(|b| b.is_ascii_digit())
            || (p.len() >= 4 && p.bytes().all(|b| b.is_ascii_lowercase()))
    };
    let scheme = match parts.as_slice() {
        [first, rest @ ..] => {
            is_scheme(first) && rest.iter().all(|p| !p.is_empty() && descriptor(p))
        }
        [] => false,
    };
    let date = {
        let b = v.as_bytes();
        let num = |r: std::ops::Range<usize>| {
            v.get(r)
                .filter(|d| d.bytes().all(|c| c.is_ascii_digit()))
                .and_then(|d| d.parse::<u32>().ok())
        };
        b.len() == 10
            && b[4] == b'-'
            && b[7] == b'-'
            && num(0..4).is_some()
            && num(5..7).is_some_and(|m| (1..=12).contains(&m))
            && num(8..10).is_some_and(|d| (1..=31).contains(&d))
    };
    let upper = v.to_ascii_uppercase();
    let variable = v.contains('_')
        && v.split('_')
            .all(|p| p.len() >= 2 && p.bytes().all(|b| b.is_ascii_uppercase()))
        && ["PASS", "PWD", "SECRET", "KEY", "TOKEN", "CRED"]
            .iter()
            .any(|w| upper.contains(w));
    let attribute = v.contains('.') && is_reference(v, ".");
    let type_path = v.contains("::") && is_reference(v, "::");
    let snake = v.contains('_')
        && v.split('_')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_lowercase()));
    scheme
        || v.eq_ignore_ascii_case("1password")
        || date
        || variable
        || attribute
        || type_path
        || snake
        || (v.contains('/') && looks_like_path(v))
}

/// Whether `v` is a reference such as `settings.DB_PASSWORD` or `crate::Secret`: identifiers
/// joined by `sep`, the first a lowercase name (a module, an object).
fn is_reference(v: &str, sep: &str) -> bool {
    let identifier = |p: &str| {
        p.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    };
    v.split(sep)
        .next()
        .is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'))
        && v.split(sep).all(identifier)
}

/// Hashing schemes, encodings, protocols and products, by their letters (lowercase, digits and
/// dots left out).
const SCHEMES: &[&str] = &[
    "pbkdf",
    "argon",
    "argonid",
    "argoni",
    "argond",
    "bcrypt",
    "scrypt",
    "yescrypt",
    "crypt",
    "sha",
    "md",
    "hs",
    "rs",
    "es",
    "ps",
    "hmac",
    "blake",
    "base",
    "hex",
    "utf",
    "ascii",
    "latin",
    "tls",
    "ssl",
    "oauth",
    "oidc",
    "saml",
    "sso",
    "fa",
    "mfa",
    "totp",
    "hotp",
    "aes",
    "aesgcm",
    "rsa",
    "ecdsa",
    "ed",
    "jwt",
    "ldap",
    "kerberos",
    "ntlm",
    "webauthn",
    "fido",
    "passkey",
    "passkeys",
    "keychain",
    "vault",
    "lastpass",
    "bitwarden",
    "keepass",
    "onepassword",
];

/// Whether `word` names one of [`SCHEMES`] with at most three digits (a version, a size).
fn is_scheme(word: &str) -> bool {
    let digits = word.bytes().filter(u8::is_ascii_digit).count();
    let letters: String = word
        .chars()
        .filter(|c| !c.is_ascii_digit() && *c != '.')
        .collect::<String>()
        .to_ascii_lowercase();
    digits <= 3
        && word.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.')
        && !letters.is_empty()
        && SCHEMES.contains(&letters.as_str())
}

/// Whether a CamelCase `name` (ASCII letters) holds `n` consonants in a row within one of its
/// words, a capital starting a word (`y` counts as a vowel; `HttpBasic` holds none: `Http`,
/// `Basic`).
/// Letters whose case changes as no word's or name's does: from small to capital three times
/// or more, with fewer than three letters a capital on average (`hSwHadMUwolt`,
/// `yXfQftlGPeKT`), where a name's capitals start its words (`SecretString`,
/// `getElementById`, `XMLHttpRequest`).
fn has_random_case(v: &str) -> bool {
    let bytes = v.as_bytes();
    let rises = bytes
        .windows(2)
        .filter(|w| w[0].is_ascii_lowercase() && w[1].is_ascii_uppercase())
        .count();
    let capitals = bytes.iter().filter(|b| b.is_ascii_uppercase()).count();
    rises >= 3 && bytes.len() < 3 * (capitals + 1)
}

/// Whether `text[start..end]` is an event id where memlog's log lines hold one: the value of
/// `"id"`, or an item of `"parents"`. An entry id is random, and a provider's keyword can be
/// in it (`m-…4xrayf…`, JFrog's `xray`): the event id after it is no JFrog token.
fn is_logged_event_id(text: &str, start: usize, end: usize) -> bool {
    let (Some(v), Some(before)) = (text.get(start..end), text.get(..start)) else {
        return false;
    };
    if !projections::event::is_event_id(v) {
        return false;
    }
    if before.ends_with("\"id\":\"") {
        return true;
    }
    let line = &before[before.rfind('\n').map_or(0, |i| i + 1)..];
    line.rfind("\"parents\":[")
        .is_some_and(|p| !line[p..].contains(']'))
}

/// Whether `v` is ciphertext that is safe to commit: a Bitnami SealedSecret's `encryptedData`.
fn is_sealed(v: &str, text: &str) -> bool {
    text.contains("encryptedData") && v.starts_with("Ag") && v.len() >= 100
}

/// Whether `v` is a name in code written in camel case (`automountServiceAccountToken`,
/// `AccessTokenProvider`): letters alone, several words each starting with a capital, none
/// with letters typed at random.
fn is_code_name(v: &str) -> bool {
    let v = v.trim_end_matches([':', '.', ',', ';']);
    let words = v
        .as_bytes()
        .windows(2)
        .filter(|w| w[0].is_ascii_lowercase() && w[1].is_ascii_uppercase())
        .count();
    v.bytes().all(|b| b.is_ascii_alphabetic())
        && words >= 2
        && !has_random_case(v)
        && !has_consonant_run(v, 5)
}

fn has_consonant_run(name: &str, n: usize) -> bool {
    let mut run = 0;
    for b in name.bytes() {
        let vowel = b"aeiouy".contains(&b.to_ascii_lowercase());
        run = match (vowel, b.is_ascii_uppercase()) {
            (true, _) => 0,
            (false, true) => 1,
            (false, false) => run + 1,
        };
        if run >= n {
            return true;
        }
    }
    false
}

/// Ordinary words that follow "password:" in prose and documentation.
/// Words in a name after "password" that make it a name of something about a password, not of
/// one (see [`Check::PasswordNamed`]).
const PASSWORD_METADATA: &[&str] = &[
    "file",
    "path",
    "url",
    "uri",
    "length",
    "len",
    "min",
    "max",
    "hash",
    "hashed",
    "policy",
    "reset",
    "expiry",
    "expires",
    "expiration",
    "id",
    "name",
    "env",
    "var",
    "field",
    "column",
    "prompt",
    "hint",
    "required",
    "regex",
    "pattern",
    "rules",
    "rotation",
    "age",
    "ttl",
    "changed",
    "updated",
    "at",
    "enabled",
    "mode",
    "type",
    "format",
    "strength",
    "store",
    "manager",
    "command",
    "cmd",
    "source",
    "ref",
    "label",
    "input",
    "confirm",
    "confirmation",
    "history",
    "attempts",
    "retries",
    "salt",
    "algorithm",
    "scheme",
    "encoder",
    "validator",
    "encryption",
    "encrypted",
    "method",
    "auth",
    "authentication",
    "digest",
    "check",
    "complexity",
    "lifetime",
    "interval",
    "days",
    "count",
    "limit",
    "timeout",
    "lockout",
    "chars",
    "characters",
    "special",
    "digits",
    "uppercase",
    "lowercase",
];

const COMMON_WORDS: &[&str] = &[
    "policy",
    "rotation",
    "rotated",
    "length",
    "manager",
    "reset",
    "expired",
    "expiry",
    "field",
    "prompt",
    "hashing",
    "hashed",
    "stored",
    "storage",
    "protected",
    "authentication",
    "default",
    "configured",
    "missing",
    "invalid",
    "incorrect",
    "changed",
    "updated",
    "provided",
    "encrypted",
];

fn plain_word_parts(v: &str) -> bool {
    v.split('.')
        .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'))
}

fn is_card_number(value: &str) -> bool {
    let digits: Vec<u32> = value.chars().filter_map(|c| c.to_digit(10)).collect();
    if !(13..=19).contains(&digits.len()) {
        return false;
    }
    // Separators, if any, must group the digits like a printed card (all spaces or all dashes).
    let seps: Vec<char> = value.chars().filter(|c| !c.is_ascii_digit()).collect();
    if seps.windows(2).any(|w| w[0] != w[1]) {
        return false;
    }
    let prefix = |n: usize| digits[..n].iter().fold(0u32, |acc, d| acc * 10 + d);
    let brand = digits[0] == 4
        || (51..=55).contains(&prefix(2))
        || (2221..=2720).contains(&prefix(4))
        || matches!(prefix(2), 34 | 37 | 36 | 38 | 65 | 35 | 62)
        || prefix(4) == 6011
        || (644..=649).contains(&prefix(3))
        || (300..=305).contains(&prefix(3));
    if !brand {
        return false;
    }
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, d)| {
            if i % 2 == 1 {
                let x = d * 2;
                if x > 9 { x - 9 } else { x }
            } else {
                *d
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

/// Whether the digits at `start..end` of `text` are part of a decimal number (`0.78439218736`,
/// `12.5`): after a point that follows a digit, or before a point and a digit. A card number is
/// never written so, and a measurement with many digits (`p95 0.7843921873645123`) is no card.
fn in_decimal(text: &str, start: usize, end: usize) -> bool {
    let b = text.as_bytes();
    let before = start >= 2 && b[start - 1] == b'.' && b[start - 2].is_ascii_digit();
    let after = b.get(end) == Some(&b'.') && b.get(end + 1).is_some_and(u8::is_ascii_digit);
    before || after
}

fn is_ssn(value: &str) -> bool {
    let parts: Vec<&str> = value.split('-').collect();
    let [area, group, serial] = parts.as_slice() else {
        return false;
    };
    let area: u32 = area.parse().unwrap_or(0);
    area != 0 && area != 666 && area < 900 && *group != "00" && *serial != "0000"
}
