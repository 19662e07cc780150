//! The order in which events written elsewhere are staged (`import --format events`,
//! `merge-project`): an event after its parents and after the create of each entry it is
//! about or names in `related_entries`, when the input holds them; in the input's order otherwise. A log's lines need not be
//! in that order (a union merge interleaves branches, and a supersede that creates its
//! replacement may come before an update it descends from), yet an event is accepted only when
//! what it names is already accepted.

use projections::Event;
use std::collections::HashMap;

/// `items` reordered so that each comes after the items holding its parents and its entries'
/// creates. Duplicates are kept (each after the first's dependencies); a cycle, which only a
/// forged log can claim, keeps the input's order.
pub fn parents_first<T>(items: Vec<T>, event: impl Fn(&T) -> &Event) -> Vec<T> {
    let mut by_id: HashMap<&str, usize> = HashMap::new();
    let mut creator: HashMap<&str, usize> = HashMap::new();
    for (i, item) in items.iter().enumerate() {
        let e = event(item);
        by_id.entry(e.id.as_str()).or_insert(i);
        if let Some(entry) = e.created_entry() {
            creator.entry(entry).or_insert(i);
        }
    }
    let deps: Vec<Vec<usize>> = items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let e = event(item);
            let created = e.created_entry();
            let parents = e.parents.iter().filter_map(|p| by_id.get(p.as_str()));
            let creates = e
                .entries()
                .filter(|x| Some(*x) != created)
                .filter_map(|x| creator.get(x));
            // The entries it names in `related_entries`, which must exist when it is checked.
            let related = related_of(e);
            let related = related.iter().filter_map(|x| creator.get(x.as_str()));
            parents
                .chain(creates)
                .chain(related)
                .copied()
                .filter(|&d| d != i)
                .collect()
        })
        .collect();
    let order = dependencies_first(&deps);
    let mut slots: Vec<Option<T>> = items.into_iter().map(Some).collect();
    order.into_iter().filter_map(|i| slots[i].take()).collect()
}

/// The entries `e` relates its entry to: the `related_entries` of what it creates, or of what
/// it sets.
fn related_of(e: &Event) -> Vec<String> {
    if let Some(entry) = e.created_entry()
        && let Some((fields, _)) = e.creation_of(entry)
    {
        return fields.related_entries.clone();
    }
    match &e.data {
        projections::EventData::Update { set, .. }
        | projections::EventData::Resolve { set, .. } => set
            .get("related_entries")
            .and_then(serde_json::Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    }
}

/// The indexes `0..deps.len()` ordered so that each comes after the ones `deps[i]` names
/// (depth-first, post-order; a cycle is cut where it closes). An explicit stack: a long chain
/// is no deep recursion.
pub fn dependencies_first(deps: &[Vec<usize>]) -> Vec<usize> {
    let mut order = Vec::with_capacity(deps.len());
    let mut seen = vec![false; deps.len()];
    for start in 0..deps.len() {
        if seen[start] {
            continue;
        }
        seen[start] = true;
        let mut stack = vec![(start, 0)];
        while let Some((node, next)) = stack.pop() {
            if let Some(&dep) = deps[node].get(next) {
                stack.push((node, next + 1));
                if !seen[dep] {
                    seen[dep] = true;
                    stack.push((dep, 0));
                }
            } else {
                order.push(node);
            }
        }
    }
    order
}

#[cfg(test)]
mod tests {
    use super::parents_first;
    use projections::{Event, EventData, Status};

    fn create(summary: &str) -> Event {
        let input = serde_json::json!({
            "section": "learnings", "kind": "other", "subject": "s", "scope": "repo",
            "summary": summary, "content": "c", "confidence": 0.7,
            "evidence": [{"type": "doc", "uri": "d.md", "note": "n"}],
        });
        let parsed = crate::policy::validate::entry_input_from_json(&input, "")
            .unwrap_or_else(|e| panic!("{e}"));
        let (fields, status) =
            crate::policy::validate::check_create(&parsed).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(status, Status::Active);
        Event::build(
            "",
            "a",
            "2026-11-22T10:00:00.000Z",
            Vec::new(),
            EventData::Create { fields, status },
        )
        .unwrap_or_else(|e| panic!("{e}"))
    }

    fn pin(of: &Event, parent: &Event, at: &str) -> Event {
        Event::build(
            &of.entry,
            "a",
            at,
            vec![parent.id.clone()],
            EventData::Pin { reason: None },
        )
        .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn an_event_comes_after_its_parents_and_its_entrys_create() {
        let a = create("A");
        let b = create("B");
        let a1 = pin(&a, &a, "2026-11-23T10:00:00.000Z");
        let a2 = pin(&a, &a1, "2026-11-24T10:00:00.000Z");
        let input = vec![a2.clone(), b.clone(), a1.clone(), a.clone(), a2.clone()];
        let ids: Vec<String> = parents_first(input, |e| e)
            .into_iter()
            .map(|e| e.id)
            .collect();
        assert_eq!(ids, [a.id, a1.id, a2.id.clone(), b.id, a2.id]);
    }
}
