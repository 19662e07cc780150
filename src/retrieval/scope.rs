//! The scope hierarchy: org > repo > service:<name> | environment:<env> | customer.
//!
//! A query for a scope also sees the scopes above it, since what holds for the whole repository
//! or organization holds for each service in it: `service:auth` returns `service:auth`, `repo`
//! and `org` entries; `repo` returns `repo` and `org`; `org` returns `org`. No scope filter
//! returns every scope.

use super::features::hash;

/// The scopes a query for `scope` returns: the scope itself first, then its parents.
pub fn visible_scopes(scope: &str) -> Vec<String> {
    match scope {
        "org" => vec!["org".into()],
        "repo" => vec!["repo".into(), "org".into()],
        other => vec![other.to_owned(), "repo".into(), "org".into()],
    }
}

/// How well an entry's scope matches the query's: 1 for the scope asked for (or when none was
/// asked for), 0.5 for a parent scope included by the hierarchy, 0 otherwise.
pub fn scope_match(entry_scope_hash: u64, wanted: Option<&str>) -> f64 {
    match wanted {
        None => 1.0,
        Some(w) if hash(w) == entry_scope_hash => 1.0,
        Some(w) => {
            if visible_scopes(w)
                .iter()
                .skip(1)
                .any(|p| hash(p) == entry_scope_hash)
            {
                0.5
            } else {
                0.0
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hierarchy() {
        assert_eq!(
            visible_scopes("service:auth"),
            ["service:auth", "repo", "org"]
        );
        assert_eq!(
            visible_scopes("environment:prod"),
            ["environment:prod", "repo", "org"]
        );
        assert_eq!(visible_scopes("customer"), ["customer", "repo", "org"]);
        assert_eq!(visible_scopes("repo"), ["repo", "org"]);
        assert_eq!(visible_scopes("org"), ["org"]);
        assert!((scope_match(hash("repo"), Some("service:auth")) - 0.5).abs() < 1e-12);
        assert!((scope_match(hash("service:auth"), Some("service:auth")) - 1.0).abs() < 1e-12);
        assert!(scope_match(hash("service:billing"), Some("service:auth")).abs() < 1e-12);
    }
}
