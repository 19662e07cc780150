//! Form checks for evidence URIs on memlog's write path.
//!
//! Every kind except `assumption` is trimmed, then must be non-empty, at most
//! [`MAX_URI_CHARS`] characters, and free of whitespace and control characters.
//! Then, per kind:
//!
//! * `code`: a git permalink on https (GitHub `/blob/`, `/tree/`, `/commit/<sha>`;
//!   GitLab `/-/blob/`, `/-/tree/`, `/-/commit/<sha>`; Bitbucket `/src/<ref>/`,
//!   `/commits/<sha>`; self-hosted forges with `/blob/`, `/tree/`, `/src/commit/<sha>`
//!   or `/commit/<sha>`) or a workspace path.
//! * `artifact`, `log`, `screenshot`: an `http(s)://host...` URL or a workspace path.
//! * `doc`: a URL, a workspace path, or a short reference: `RFC 7231`, `RFC7231`,
//!   `rfc-7231`, `ADR-0007`, `ADR 7`, `adr:7` (one optional space, `-` or `:`
//!   between the prefix and 1-5 digits).
//! * `ticket`: an https issue / pull-request URL: GitHub `issues|pull/<n>`, GitLab
//!   (any host) `-/issues|merge_requests/<n>`, Gitea/Bitbucket `issues|pulls|pull-requests/<n>`,
//!   Jira (any host) `.../browse/KEY-<n>`, Linear `linear.app/<team>/issue/KEY-<n>[/slug]`,
//!   Azure DevOps `.../_workitems/edit/<n>`; or anything matching one of the project's
//!   `write.ticket_patterns`. Extra patterns are anchored here: each must match the
//!   *whole* trimmed URI (the common checks above still run first). They may match
//!   non-URLs, so a project can opt in to bare keys (`ABC-123`) or `owner/repo#123`
//!   shorthand; neither is accepted by default.
//! * `assumption`: anything, including empty.
//!
//! A workspace path is relative with `/` separators only (no backslashes), may
//! start with `./`, and may end with a `#fragment` (`#L10`, `#L10-L20`, a heading
//! slug) or a `:line[:col]` anchor. Absolute paths (`/..`, `~`, `$VAR`, `C:\..`,
//! `file:`), `..` segments that climb above the workspace root, and percent-encoded
//! dot segments or separators (`%2e%2e`, `%2f`, `%5c`) are refused; `a/../b` is
//! fine, a path that names the workspace root (`.`) is not. Forge and
//! tracker recognition requires `https`; plain `http` is a valid URL for the
//! kinds that accept any URL. Messages never quote the URI, at most its scheme or host.

use regex::Regex;
use std::sync::LazyLock;

/// Longest accepted URI, in characters, after trimming.
pub const MAX_URI_CHARS: usize = 2048;

/// Stable rule ids carried by [`UriProblem::rule`].
pub mod rule {
    pub const EMPTY: &str = "uri-empty";
    pub const WHITESPACE: &str = "uri-whitespace";
    pub const CONTROL_CHAR: &str = "uri-control-char";
    pub const TOO_LONG: &str = "uri-too-long";
    pub const ABSOLUTE_PATH: &str = "uri-absolute-path";
    pub const PATH_TRAVERSAL: &str = "uri-path-traversal";
    pub const BACKSLASH: &str = "uri-backslash";
    pub const BAD_PATH: &str = "uri-bad-path";
    pub const BAD_URL: &str = "uri-bad-url";
    pub const BAD_SCHEME: &str = "uri-bad-scheme";
    pub const NOT_PERMALINK: &str = "uri-not-permalink";
    pub const NOT_TICKET: &str = "uri-not-ticket";
    pub const NOT_URL_OR_PATH: &str = "uri-not-url-or-path";
}

/// Evidence types (mirror of the real enum; the integrator maps it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UriKind {
    Code,
    Artifact,
    Log,
    Screenshot,
    Assumption,
    Ticket,
    Doc,
}

impl UriKind {
    fn name(self) -> &'static str {
        match self {
            UriKind::Code => "code",
            UriKind::Artifact => "artifact",
            UriKind::Log => "log",
            UriKind::Screenshot => "screenshot",
            UriKind::Assumption => "assumption",
            UriKind::Ticket => "ticket",
            UriKind::Doc => "doc",
        }
    }

    fn expected(self) -> &'static str {
        match self {
            UriKind::Code => {
                "a git permalink (e.g. https://github.com/acme/app/blob/3f2c1e9/src/auth/session.rs#L10-L20; \
                 GitLab /-/blob/, Bitbucket /src/ and self-hosted /blob/ or /commit/<sha> URLs work too) \
                 or a workspace-relative path (e.g. src/auth/session.rs#L10)"
            }
            UriKind::Artifact => {
                "an http(s) URL (e.g. https://ci.example.com/builds/812/artifacts/report.html) \
                 or a workspace-relative path (e.g. target/reports/coverage.html)"
            }
            UriKind::Log => {
                "an http(s) URL (e.g. https://ci.example.com/jobs/4411/log) \
                 or a workspace-relative path (e.g. logs/test-run.txt:120)"
            }
            UriKind::Screenshot => {
                "an http(s) URL (e.g. https://ci.example.com/builds/812/screens/login.png) \
                 or a workspace-relative path (e.g. docs/img/login-error.png)"
            }
            UriKind::Doc => {
                "an http(s) URL (e.g. https://wiki.example.com/Design/Storage), a workspace-relative \
                 path (e.g. docs/adr/0007-use-fjall.md) or a short reference like RFC 7231 or ADR-0007"
            }
            UriKind::Ticket => {
                "an https issue or pull-request URL on GitHub, GitLab, Jira or Linear \
                 (e.g. https://github.com/acme/app/issues/123 or https://acme.atlassian.net/browse/ENG-42) \
                 or a URL matching the project's write.ticket_patterns"
            }
            UriKind::Assumption => "free text",
        }
    }
}

/// What a URI is, for display/ranking later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UriShape {
    GitPermalink,
    WebUrl,
    FilePath,
    TicketUrl,
    Other,
}

/// Why an evidence URI was refused: a stable rule id (see [`rule`]) and a message
/// saying what form is expected, with an example. The message never contains the
/// whole URI (at most its scheme or host).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UriProblem {
    pub rule: &'static str,
    pub message: String,
}

/// Extra ticket URL patterns configured per project (`write.ticket_patterns`).
/// Each is anchored to match the whole trimmed URI.
#[derive(Debug, Clone, Default)]
pub struct TicketPatterns {
    patterns: Vec<Regex>,
}

impl TicketPatterns {
    /// Compiles the patterns once. The error names the pattern's index and the regex error.
    pub fn new(sources: &[String]) -> Result<Self, String> {
        let mut patterns = Vec::with_capacity(sources.len());
        for (i, src) in sources.iter().enumerate() {
            let bad = |e: regex::Error| format!("write.ticket_patterns[{i}]: invalid regex: {e}");
            if src.trim().is_empty() {
                return Err(format!("write.ticket_patterns[{i}]: pattern is empty"));
            }
            Regex::new(src).map_err(bad)?;
            // If the raw pattern compiles but the wrapped one does not, an `(?x)`
            // comment swallowed the closing `)$`: a newline ends the comment.
            let anchored = Regex::new(&format!("^(?:{src})$"))
                .or_else(|_| Regex::new(&format!("^(?:{src}\n)$")))
                .map_err(bad)?;
            patterns.push(anchored);
        }
        Ok(Self { patterns })
    }

    /// No extra patterns.
    pub fn empty() -> Self {
        Self::default()
    }

    fn matches(&self, uri: &str) -> bool {
        self.patterns.iter().any(|re| re.is_match(uri))
    }
}

fn re(src: &str) -> Regex {
    Regex::new(src).expect("static regex")
}

static SCHEME: LazyLock<Regex> = LazyLock::new(|| re(r"^([A-Za-z][A-Za-z0-9+.-]*):"));
static LINE_ANCHOR: LazyLock<Regex> = LazyLock::new(|| re(r":[0-9]+(?::[0-9]+)?$"));
static ONLY_LINE_ANCHOR: LazyLock<Regex> = LazyLock::new(|| re(r"^:[0-9]+(?::[0-9]+)?$"));
static FRAGMENT: LazyLock<Regex> = LazyLock::new(|| re(r"^[A-Za-z0-9._~-]+$"));
static DOC_SHORT_REF: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)^(?:rfc|adr)(?:[ :-])?[0-9]{1,5}$"));
static GITHUB_PERMALINK: LazyLock<Regex> = LazyLock::new(|| {
    re(r"^/[^/]+/[^/]+/(?:blob/[^/]+/[^/].*|tree/[^/]+(?:/.*)?|commit/[0-9a-fA-F]{7,64}/?)$")
});
static BITBUCKET_PERMALINK: LazyLock<Regex> =
    LazyLock::new(|| re(r"^/[^/]+/[^/]+/(?:src/[^/]+(?:/.*)?|commits/[0-9a-fA-F]{7,64}/?)$"));
static FORGE_PERMALINK: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^(?:/[^/]+){2,}/(?:-/)?(?:blob/[^/]+/[^/].*|tree/[^/]+(?:/.*)?|commit/[0-9a-fA-F]{7,64}/?|src/commit/[0-9a-fA-F]{7,64}(?:/.*)?)$",
    )
});
static GITHUB_TICKET: LazyLock<Regex> =
    LazyLock::new(|| re(r"^/[^/]+/[^/]+/(?:issues|pull)/[0-9]+(?:/.*)?$"));
static LINEAR_TICKET: LazyLock<Regex> =
    LazyLock::new(|| re(r"^/[^/]+/issue/[A-Za-z][A-Za-z0-9]*-[0-9]+(?:/[^/]*)?$"));
static OTHER_TICKET: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^(?:(?:/[^/]+){2,}/(?:-/)?(?:issues|pull|pulls|merge_requests|pull-requests)/[0-9]+(?:/.*)?|(?:/[^/]+)*/browse/[A-Za-z][A-Za-z0-9_]*-[0-9]+/?|(?:/[^/]+)+/_workitems/edit/[0-9]+/?)$",
    )
});

/// A kind-independent defect, turned into a [`UriProblem`] once the kind is known.
struct Defect {
    rule: &'static str,
    what: String,
}

fn defect(rule: &'static str, what: impl Into<String>) -> Defect {
    Defect {
        rule,
        what: what.into(),
    }
}

impl Defect {
    fn for_kind(self, kind: UriKind) -> UriProblem {
        UriProblem {
            rule: self.rule,
            message: format!(
                "{}; {} evidence must be {}",
                self.what,
                kind.name(),
                kind.expected()
            ),
        }
    }
}

/// Quotes a scheme or host for a message, cut short so it can never be the whole URI.
fn quote(part: &str) -> String {
    let mut q: String = part.chars().take(24).collect();
    if part.chars().count() > 24 {
        q.push('…');
    }
    format!("\"{q}\"")
}

fn absolute(what: &str) -> Defect {
    defect(
        rule::ABSOLUTE_PATH,
        format!(
            "{what}: evidence must be reproducible by any clone, so use a workspace-relative path or a permalink/URL"
        ),
    )
}

struct WebUrl<'a> {
    https: bool,
    host: String,
    path: &'a str,
}

enum Target<'a> {
    Url(WebUrl<'a>),
    Path,
}

fn basic_checks(t: &str) -> Result<(), Defect> {
    if t.is_empty() {
        return Err(defect(rule::EMPTY, "the URI is empty"));
    }
    let n = t.chars().count();
    if n > MAX_URI_CHARS {
        return Err(defect(
            rule::TOO_LONG,
            format!("the URI is {n} characters long, at most {MAX_URI_CHARS} are allowed"),
        ));
    }
    if t.chars().any(char::is_whitespace) {
        return Err(defect(
            rule::WHITESPACE,
            "the URI contains whitespace (percent-encode spaces as %20)",
        ));
    }
    if t.chars().any(char::is_control) {
        return Err(defect(
            rule::CONTROL_CHAR,
            "the URI contains control characters",
        ));
    }
    Ok(())
}

fn parse_target(t: &str) -> Result<Target<'_>, Defect> {
    let Some(scheme) = SCHEME.captures(t).and_then(|c| c.get(1)) else {
        return check_path(t).map(|()| Target::Path);
    };
    let scheme = scheme.as_str();
    let rest = &t[scheme.len() + 1..];
    let lower = scheme.to_ascii_lowercase();
    if lower == "http" || lower == "https" {
        parse_url(lower == "https", rest).map(Target::Url)
    } else if lower == "file" {
        Err(absolute("a file: URL points at one machine's disk"))
    } else if ONLY_LINE_ANCHOR.is_match(&t[scheme.len()..]) {
        check_path(t).map(|()| Target::Path)
    } else if scheme.len() == 1 {
        Err(absolute("absolute Windows paths (C:\\...) are not allowed"))
    } else {
        Err(defect(
            rule::BAD_SCHEME,
            format!(
                "the scheme {} is not allowed, only http:// and https:// URLs or workspace paths",
                quote(scheme)
            ),
        ))
    }
}

fn parse_url(https: bool, rest: &str) -> Result<WebUrl<'_>, Defect> {
    let Some(after) = rest.strip_prefix("//") else {
        return Err(defect(
            rule::BAD_URL,
            "the URL lacks \"//\" and a host after its scheme",
        ));
    };
    let end = after.find(['/', '?', '#']).unwrap_or(after.len());
    let (authority, tail) = after.split_at(end);
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, hp)| hp);
    let no_host = || defect(rule::BAD_URL, "the URL has no valid host");
    let (host, port) = if let Some(v6) = host_port.strip_prefix('[') {
        let (inner, after) = v6.split_once(']').ok_or_else(no_host)?;
        if inner.is_empty()
            || !inner
                .chars()
                .all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.')
        {
            return Err(no_host());
        }
        match after {
            "" => (inner, None),
            _ => (inner, Some(after.strip_prefix(':').ok_or_else(no_host)?)),
        }
    } else {
        let (h, p) = host_port
            .split_once(':')
            .map_or((host_port, None), |(h, p)| (h, Some(p)));
        if !valid_host(h) {
            return Err(no_host());
        }
        (h, p)
    };
    if let Some(p) = port
        && (p.is_empty() || p.len() > 5 || !p.bytes().all(|b| b.is_ascii_digit()))
    {
        return Err(defect(rule::BAD_URL, "the URL's port is not a number"));
    }
    let path_end = tail.find(['?', '#']).unwrap_or(tail.len());
    Ok(WebUrl {
        https,
        host: host.to_ascii_lowercase(),
        path: &tail[..path_end],
    })
}

fn valid_host(h: &str) -> bool {
    let h = h.strip_suffix('.').unwrap_or(h);
    !h.is_empty()
        && h.split('.').all(|label| {
            !label.is_empty()
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .chars()
                    .all(|c| c.is_alphanumeric() || c == '-' || c == '_')
        })
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |x: u8| (x as char).to_digit(16);
        if b[i] == b'%'
            && i + 2 < b.len()
            && let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2]))
        {
            out.push((h * 16 + l) as u8);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn check_path(t: &str) -> Result<(), Defect> {
    if t.starts_with("//") {
        return Err(defect(
            rule::NOT_URL_OR_PATH,
            "a protocol-relative \"//host/...\" reference is neither a URL nor a workspace path; start it with https:",
        ));
    }
    if t.starts_with(['/', '\\']) {
        return Err(absolute("absolute paths are not allowed"));
    }
    if t.starts_with(['~', '$']) {
        return Err(absolute(
            "home-directory and environment-variable paths are not allowed",
        ));
    }
    let body = if let Some((body, frag)) = t.split_once('#') {
        if !FRAGMENT.is_match(frag) {
            return Err(defect(
                rule::BAD_PATH,
                "a path may only end with a simple anchor such as #L10, #L10-L20 or #heading-slug",
            ));
        }
        body
    } else {
        LINE_ANCHOR.find(t).map_or(t, |m| &t[..m.start()])
    };
    if body.contains('\\') {
        return Err(defect(
            rule::BACKSLASH,
            "paths must use forward slashes (/) only, not backslashes",
        ));
    }
    if body.contains(':') {
        return Err(defect(
            rule::BAD_PATH,
            "a ':' is only allowed in a trailing line anchor such as :42 or :42:7",
        ));
    }
    let mut depth: i64 = 0;
    for seg in body.split('/') {
        let decoded = percent_decode(seg);
        if decoded != seg && (decoded == "." || decoded == ".." || decoded.contains(['/', '\\'])) {
            return Err(defect(
                rule::PATH_TRAVERSAL,
                "percent-encoded dot segments or separators (%2e, %2f, %5c) are not allowed in paths",
            ));
        }
        if decoded.chars().any(char::is_control) {
            return Err(defect(
                rule::CONTROL_CHAR,
                "the path contains encoded control characters",
            ));
        }
        match seg {
            "" | "." => {}
            ".." => {
                depth -= 1;
                if depth < 0 {
                    return Err(defect(
                        rule::PATH_TRAVERSAL,
                        "the path climbs out of the workspace with '..' (path traversal)",
                    ));
                }
            }
            _ => depth += 1,
        }
    }
    if depth == 0 {
        return Err(defect(
            rule::BAD_PATH,
            "the path names the workspace root, not a file or folder",
        ));
    }
    Ok(())
}

fn is_permalink(u: &WebUrl<'_>) -> bool {
    u.https
        && match u.host.as_str() {
            "github.com" | "www.github.com" => GITHUB_PERMALINK.is_match(u.path),
            "bitbucket.org" => BITBUCKET_PERMALINK.is_match(u.path),
            _ => FORGE_PERMALINK.is_match(u.path),
        }
}

fn is_builtin_ticket(u: &WebUrl<'_>) -> bool {
    u.https
        && match u.host.as_str() {
            "github.com" | "www.github.com" => GITHUB_TICKET.is_match(u.path),
            "linear.app" => LINEAR_TICKET.is_match(u.path),
            _ => OTHER_TICKET.is_match(u.path),
        }
}

/// Checks that `uri` has the right form for evidence of type `kind`.
/// See the module documentation for the accepted forms.
pub fn check_evidence_uri(
    kind: UriKind,
    uri: &str,
    extra_tickets: &TicketPatterns,
) -> Result<(), UriProblem> {
    if kind == UriKind::Assumption {
        return Ok(());
    }
    let t = uri.trim();
    if kind == UriKind::Doc && DOC_SHORT_REF.is_match(t) {
        return Ok(());
    }
    basic_checks(t).map_err(|d| d.for_kind(kind))?;
    if kind == UriKind::Ticket {
        if extra_tickets.matches(t) {
            return Ok(());
        }
        return match parse_target(t) {
            Ok(Target::Url(u)) if is_builtin_ticket(&u) => Ok(()),
            Err(d) if d.rule == rule::BAD_SCHEME || d.rule == rule::BAD_URL => {
                Err(d.for_kind(kind))
            }
            Ok(Target::Url(u)) if !u.https => Err(defect(
                rule::NOT_TICKET,
                "plain-http URLs are not recognised as tickets, use https",
            )
            .for_kind(kind)),
            Ok(Target::Url(u)) => Err(defect(
                rule::NOT_TICKET,
                format!(
                    "this URL on host {} is not a known issue or pull-request URL",
                    quote(&u.host)
                ),
            )
            .for_kind(kind)),
            _ => Err(defect(rule::NOT_TICKET, "this is not a ticket URL").for_kind(kind)),
        };
    }
    match parse_target(t).map_err(|d| d.for_kind(kind))? {
        Target::Url(u) if kind == UriKind::Code && !is_permalink(&u) => Err(defect(
            rule::NOT_PERMALINK,
            format!(
                "this URL on host {} is not a git permalink{}",
                quote(&u.host),
                if u.https {
                    ""
                } else {
                    " (permalinks must use https)"
                }
            ),
        )
        .for_kind(kind)),
        _ => Ok(()),
    }
}

/// What a URI is, for display/ranking later. Never fails: anything that would
/// not pass the common checks is [`UriShape::Other`].
pub fn classify(uri: &str) -> UriShape {
    let t = uri.trim();
    if basic_checks(t).is_err() {
        return UriShape::Other;
    }
    match parse_target(t) {
        Ok(Target::Url(u)) if is_permalink(&u) => UriShape::GitPermalink,
        Ok(Target::Url(u)) if is_builtin_ticket(&u) => UriShape::TicketUrl,
        Ok(Target::Url(_)) => UriShape::WebUrl,
        Ok(Target::Path) => UriShape::FilePath,
        Err(_) => UriShape::Other,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use UriKind::*;
    use proptest::prelude::*;

    const ALL: [UriKind; 7] = [Code, Artifact, Log, Screenshot, Assumption, Ticket, Doc];

    fn extras() -> TicketPatterns {
        TicketPatterns::new(&[r"^https://tracker\.example\.com/t/\d+$".to_string()]).unwrap()
    }

    fn rule_of(kind: UriKind, uri: &str) -> Option<&'static str> {
        check_evidence_uri(kind, uri, &extras())
            .err()
            .map(|p| p.rule)
    }

    /// Refusals shared by every kind but assumption (some contain whitespace).
    const COMMON_BAD: &[(&str, &str)] = &[
        ("", rule::EMPTY),
        ("   \t", rule::EMPTY),
        ("src/main rs", rule::WHITESPACE),
        ("src/a\u{7}b.rs", rule::CONTROL_CHAR),
        ("javascript:alert(document.cookie)", rule::BAD_SCHEME),
        ("data:text/html;base64,PHNjcmlwdD4=", rule::BAD_SCHEME),
        ("https:///no-host/here", rule::BAD_URL),
    ];

    /// Per kind, lines of `ok:` or `<rule id>:` followed by whitespace-separated URIs.
    const TABLES: &[(UriKind, &str)] = &[
        (
            Code,
            r"ok: src/auth/session.rs src/auth/session.rs#L10 src/auth/session.rs#L10-L20
            ok: ./scripts/x.sh src/main.rs:42 src/main.rs:42:7 Makefile:12 a/../src/lib.rs
            ok: https://github.com/acme/app/blob/3f2c1e9/src/lib.rs#L10-L20
            ok: https://github.com/acme/app/tree/main/src https://github.com/acme/app/commit/3f2c1e9ab
            ok: HTTPS://GitHub.com/acme/app/blob/v1.0/README.md
            ok: https://gitlab.com/grp/sub/repo/-/blob/main/src/x.rs#L3
            ok: https://gitlab.example.org/g/r/-/commit/0123456789abcdef
            ok: https://bitbucket.org/ws/repo/src/abc123/src/x.rs
            ok: https://git.corp.example/team/repo/src/commit/0123abcd/src/x.rs
            ok: https://forge.example.net:8443/a/b/commit/deadbeef
            uri-not-permalink: https://example.com/page http://github.com/acme/app/blob/main/x.rs
            uri-not-permalink: https://github.com/acme/app https://github.com/acme/app/pull/45/files
            uri-not-permalink: https://github.com/acme/app/blob/main https://forge.example.net/a/b/commit/xyz
            uri-absolute-path: /etc/passwd C:\Users\me\x.rs ~/src/x.rs file:///home/me/x.rs
            uri-path-traversal: ../x a/../../x ./a/./../../b src/%2e%2e/x
            uri-backslash: src\main.rs
            uri-bad-path: git@github.com:acme/app.git .
            uri-not-url-or-path: //cdn.example.com/x.js",
        ),
        (
            Artifact,
            r"ok: https://ci.example.com/builds/1/a.zip http://10.0.0.5:8080/artifacts/x.tar.gz
            ok: target/release/memlog ./out/report.html dist/app.wasm#sha256 https://[::1]:9000/a
            ok: https://user@host.example/a https://s3.amazonaws.com/b/k?versionId=3
            uri-absolute-path: /tmp/out.zip
            uri-path-traversal: ../build/x.zip
            uri-bad-scheme: ftp://files.example.com/x s3://bucket/key/object.bin
            uri-bad-url: https:// https://host.example:abc/x https://[::1/x
            uri-backslash: out\x.zip",
        ),
        (
            Log,
            r"ok: https://ci.example.com/jobs/4411/log logs/test-run.txt:120 logs/run.log#L5-L9
            ok: target/nextest/ci/junit.xml https://github.com/acme/app/actions/runs/123/job/456
            ok: http://localhost:3000/logs/1 ./build.log logs/%E2%9C%93.log
            uri-absolute-path: ~/logs/x.log $HOME/x.log C:/logs/x.log
            uri-path-traversal: logs/../../x.log logs/%2E%2E/%2e%2e/x
            uri-bad-scheme: vbscript:msgbox
            uri-bad-url: https://-bad-.example/log
            uri-bad-path: logs/a.log#L1:2
            uri-control-char: logs/a%00b.log",
        ),
        (
            Screenshot,
            r"ok: docs/img/login.png https://ci.example.com/s/1.png shots/a.jpeg ./screens/x.webp
            ok: https://imgur.com/a/xyz screens/%E2%9C%93.png assets/login@2x.png
            ok: https://cdn.example.com/a.png?w=100#frag
            uri-bad-scheme: data:image/png;base64,iVBORw0KGgo= blob:https://app.example.com/1234
            uri-absolute-path: /home/me/shot.png \\server\share\a.png file://C:/a.png
            uri-backslash: shots\a.png
            uri-path-traversal: ../a.png shots/%2f../a.png",
        ),
        (
            Doc,
            r"ok: docs/adr/0007-use-fjall.md https://wiki.example.com/Design/Storage rfc7231
            ok: RFC-9110 ADR-0007 adr:7 README.md#installation
            ok: https://datatracker.ietf.org/doc/html/rfc9110#section-15
            uri-bad-scheme: rfc:abc mailto:a@b.example s3://bucket/doc.pdf
            uri-absolute-path: /docs/x.md
            uri-path-traversal: ../docs/x.md
            uri-backslash: docs\x.md
            uri-bad-path: docs/x.md#sec:1
            uri-bad-url: https:// https://wiki.example.com:123456/x",
        ),
        (
            Ticket,
            r"ok: https://github.com/acme/app/issues/123 https://github.com/acme/app/pull/45
            ok: https://github.com/acme/app/issues/123#issuecomment-1
            ok: https://github.com/acme/app/pull/45/files https://gitlab.com/g/sub/r/-/issues/7
            ok: https://git.corp.example/g/r/-/merge_requests/9
            ok: https://acme.atlassian.net/browse/ABC-123 https://jira.corp.example/jira/browse/OPS-7
            ok: https://linear.app/acme/issue/ENG-123
            ok: https://linear.app/acme/issue/ENG-123/fix-login-redirect
            ok: https://gitea.example.org/o/r/pulls/3
            ok: https://dev.azure.com/org/proj/_workitems/edit/42 https://tracker.example.com/t/77
            uri-not-ticket: https://github.com/acme/app https://github.com/acme/app/issues
            uri-not-ticket: https://github.com/acme/app/issues/abc http://github.com/acme/app/issues/1
            uri-not-ticket: acme/app#123 ABC-123 https://linear.app/acme/project/x-1
            uri-not-ticket: https://tracker.example.com/t/77/extra https://example.com/browse/lowercase
            uri-not-ticket: docs/notes/ticket.md /etc/issue",
        ),
    ];

    fn table(kind: UriKind) {
        let (_, text) = TABLES.iter().find(|t| t.0 == kind).unwrap();
        let (mut ok, mut bad) = (0, 0);
        for line in text.lines() {
            let (label, uris) = line.trim().split_once(": ").unwrap();
            for uri in uris.split_whitespace() {
                let got = check_evidence_uri(kind, uri, &extras());
                if label == "ok" {
                    assert_eq!(got, Ok(()), "{kind:?} should accept {uri:?}");
                    ok += 1;
                    continue;
                }
                let p = got.unwrap_err();
                assert_eq!(p.rule, label, "{kind:?} refusal of {uri:?}");
                assert!(p.message.contains("e.g."), "{p:?}");
                assert!(!echoes(kind, &p, uri), "{kind:?} message echoes {uri:?}");
                bad += 1;
            }
        }
        assert!(ok >= 8 && bad >= 8, "{kind:?} table too small");
        for (uri, want) in COMMON_BAD {
            let p = check_evidence_uri(kind, uri, &extras()).unwrap_err();
            assert_eq!(p.rule, *want, "{kind:?} refusal of {uri:?}");
        }
    }

    /// True if the message quotes a URI longer than 20 chars (outside the fixed example text).
    fn echoes(kind: UriKind, p: &UriProblem, t: &str) -> bool {
        t.chars().count() > 20 && p.message.replace(kind.expected(), "").contains(t)
    }

    #[test]
    fn code_table() {
        table(Code);
    }
    #[test]
    fn artifact_table() {
        table(Artifact);
    }
    #[test]
    fn log_table() {
        table(Log);
    }
    #[test]
    fn screenshot_table() {
        table(Screenshot);
    }
    #[test]
    fn doc_table() {
        table(Doc);
        for (uri, r) in [("RFC 7231", None), ("RFC 7231 s6", Some(rule::WHITESPACE))] {
            assert_eq!(rule_of(Doc, uri), r, "{uri}");
        }
        assert_eq!(rule_of(Doc, "ADR  7"), Some(rule::WHITESPACE));
    }
    #[test]
    fn ticket_table() {
        table(Ticket);
        let none = TicketPatterns::empty();
        let r = check_evidence_uri(Ticket, "https://tracker.example.com/t/77", &none);
        assert_eq!(r.map_err(|p| p.rule), Err(rule::NOT_TICKET));
    }

    #[test]
    fn long_and_assumption() {
        let long = format!("src/{}", "a".repeat(MAX_URI_CHARS));
        assert_eq!(rule_of(Log, &long), Some(rule::TOO_LONG));
        assert_eq!(rule_of(Log, &long[..MAX_URI_CHARS]), None);
        for uri in [
            "",
            "  ",
            "../../etc/passwd",
            "javascript:x",
            "it works\n",
            &long,
        ] {
            assert_eq!(rule_of(Assumption, uri), None);
        }
    }

    #[test]
    fn traversal_cases() {
        let uris = [
            "../x",
            "a/../../x",
            "./a/./../../b",
            "src/%2e%2e/x",
            "a/.%2E/b",
            "x/..%2f..%2fy",
        ];
        for uri in uris {
            for kind in [Code, Artifact, Log, Screenshot, Doc] {
                assert_eq!(
                    rule_of(kind, uri),
                    Some(rule::PATH_TRAVERSAL),
                    "{kind:?} {uri}"
                );
            }
        }
        assert_eq!(rule_of(Code, "a/b/../../c"), None);
    }

    #[test]
    fn messages_never_quote_secrets() {
        let secrets = [
            "https://user:hunter2hunter2@example.com/page?token=abcdef",
            "ftp://user:hunter2hunter2@files.example.com/x",
            "https://example.com/a b?token=hunter2hunter2",
        ];
        for kind in ALL {
            for uri in secrets {
                if let Err(p) = check_evidence_uri(kind, uri, &extras()) {
                    assert!(
                        !p.message.contains("hunter2") && !echoes(kind, &p, uri),
                        "{p:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn ticket_patterns_compile_and_anchor() {
        let e = TicketPatterns::new(&["ok".into(), "(unclosed".into()])
            .err()
            .unwrap();
        assert!(e.contains("[1]") && e.contains("regex"), "{e}");
        assert!(
            TicketPatterns::new(&["  ".into()])
                .err()
                .unwrap()
                .contains("[0]")
        );
        assert!(TicketPatterns::new(&["a)|(b".into()]).is_err());
        let p = TicketPatterns::new(&[
            r"tracker\.example\.com/t/\d+".into(),
            "a|ab".into(),
            "(?x) PROJ-[0-9]+ # bare keys, opt-in".into(),
        ])
        .unwrap();
        let ok = |u: &str| check_evidence_uri(Ticket, u, &p).is_ok();
        assert!(ok("tracker.example.com/t/5") && ok("ab") && ok("PROJ-12"));
        assert!(!ok("https://tracker.example.com/t/5") && !ok("xab") && !ok("PROJ-12x"));
    }

    #[test]
    fn classify_shapes() {
        use UriShape::*;
        let cases = [
            (
                "https://github.com/acme/app/blob/main/src/lib.rs#L3",
                GitPermalink,
            ),
            ("https://gitlab.com/g/r/-/commit/0123abcd", GitPermalink),
            ("https://github.com/acme/app/issues/9", TicketUrl),
            ("https://acme.atlassian.net/browse/ENG-42", TicketUrl),
            ("https://example.com/page", WebUrl),
            ("http://github.com/acme/app/blob/main/x", WebUrl),
            ("src/lib.rs:10", FilePath),
            ("../x", Other),
            ("javascript:alert(1)", Other),
            ("RFC 7231", Other),
            ("", Other),
        ];
        for (uri, shape) in cases {
            assert_eq!(classify(uri), shape, "{uri}");
        }
    }

    fn uri_like() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            prop::sample::select(vec![
                "https://",
                "http://",
                "github.com/",
                "[::1]",
                ":",
                "@",
                "/",
                "..",
                "%2e",
                "%",
                "#L1",
                "/blob/",
                "/-/issues/",
                "\\",
                "~",
                "file:",
                "RFC ",
            ])
            .prop_map(String::from),
            "[a-zA-Z0-9.é€-]{0,8}",
        ];
        proptest::collection::vec(piece, 0..40).prop_map(|v| v.concat())
    }

    fn check_all(s: &str) {
        let p = extras();
        for kind in ALL {
            if let Err(e) = check_evidence_uri(kind, s, &p) {
                assert!(
                    !e.message.is_empty() && !echoes(kind, &e, s.trim()),
                    "{e:?}"
                );
            }
        }
        let _ = classify(s);
    }

    proptest! {
        #[test]
        fn arbitrary_strings_never_panic(s in proptest::collection::vec(any::<char>(), 0..4096)) {
            check_all(&s.into_iter().collect::<String>());
        }

        #[test]
        fn uri_like_strings_never_panic(s in uri_like()) {
            check_all(&s);
        }
    }
}
