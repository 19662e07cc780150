//! Deterministic order of one entry's events: topological by `parents`, ties by `(at, id)`.

use crate::event::Event;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

/// Orders the events of one entry. Duplicates (same id) are dropped; parents that are not in the
/// set are ignored, so the order is defined for any subset. Events caught in a cycle (impossible
/// without breaking the hash, but a forged log can claim one) come last, by `(at, id)`.
pub fn order_events<'a>(events: &[&'a Event]) -> Vec<&'a Event> {
    let mut by_id: BTreeMap<&str, &Event> = BTreeMap::new();
    for e in events {
        by_id.entry(e.id.as_str()).or_insert(*e);
    }
    let mut indegree: BTreeMap<&str, usize> = BTreeMap::new();
    let mut children: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (id, e) in &by_id {
        let present: Vec<&str> = e
            .parents
            .iter()
            .map(String::as_str)
            .filter(|p| by_id.contains_key(p))
            .collect();
        indegree.insert(id, present.len());
        for p in present {
            children.entry(p).or_default().push(id);
        }
    }
    let mut ready: BinaryHeap<Reverse<(&str, &str)>> = by_id
        .iter()
        .filter(|(id, _)| indegree.get(*id) == Some(&0))
        .map(|(id, e)| Reverse((e.at.as_str(), *id)))
        .collect();
    let mut out = Vec::with_capacity(by_id.len());
    while let Some(Reverse((_, id))) = ready.pop() {
        let Some(e) = by_id.get(id) else { continue };
        out.push(*e);
        for child in children.get(id).into_iter().flatten() {
            if let Some(d) = indegree.get_mut(child) {
                *d -= 1;
                if *d == 0
                    && let Some(c) = by_id.get(child)
                {
                    ready.push(Reverse((c.at.as_str(), child)));
                }
            }
        }
    }
    if out.len() < by_id.len() {
        let mut stuck: Vec<&Event> = by_id
            .values()
            .copied()
            .filter(|e| !out.iter().any(|o| o.id == e.id))
            .collect();
        stuck.sort_by(|a, b| (a.at.as_str(), a.id.as_str()).cmp(&(b.at.as_str(), b.id.as_str())));
        out.extend(stuck);
    }
    out
}

/// Head events: those no other event of the set names as a parent. Sorted.
pub fn heads(events: &[Event]) -> Vec<String> {
    let named: std::collections::BTreeSet<&str> = events
        .iter()
        .flat_map(|e| e.parents.iter().map(String::as_str))
        .collect();
    let mut heads: Vec<String> = events
        .iter()
        .filter(|e| !named.contains(e.id.as_str()))
        .map(|e| e.id.clone())
        .collect();
    heads.sort();
    heads.dedup();
    heads
}
