//! Events written elsewhere, staged unchanged (`memlog import --format events`, `memlog
//! merge-project`): each passes the write policy and the log's own rules for its place in this
//! log before it is appended.

use super::*;

/// Events written elsewhere: `memlog import --format events` and `memlog merge-project`.
impl Batch<'_> {
    /// Stages an event written elsewhere (an import of another log's events) unchanged: its
    /// id, actor, time and parents are kept, so the import is lossless. It passes the write
    /// policy first: an event that creates an entry is checked as a create of its fields (schema,
    /// evidence, secrets, duplicates), and every other text it carries (the actor, reasons,
    /// values it sets) is scanned for credentials. An event the log or this batch already holds
    /// is not staged (`None`). `line` is the event's line where it comes from: a tombstone's is
    /// kept as it is, and the caller must have checked that the purge it names vouches for it
    /// ([`crate::log::tombstones::unvouched`]).
    ///
    /// # Errors
    /// [`Error::Invalid`] when the policy refuses it (detections are logged, never the value).
    pub fn stage_foreign(&mut self, event: Event, line: Option<String>) -> Result<Option<Written>> {
        self.stage_foreign_with(event, line, false)
    }

    /// [`Batch::stage_foreign`]; with `allow_duplicates`, a created entry that duplicates an
    /// active one (same subject, scope and summary) is accepted, for a caller that settles
    /// duplicates itself (`memlog merge-project`).
    ///
    /// # Errors
    /// As [`Batch::stage_foreign`].
    pub fn stage_foreign_with(
        &mut self,
        event: Event,
        line: Option<String>,
        allow_duplicates: bool,
    ) -> Result<Option<Written>> {
        // Accepted before by this batch (staged, or appended already): one lookup, where a
        // scan of what is staged made an import of 100,000 events quadratic (127 s).
        let accepted_already = self.foreign_events.contains_key(&event.id);
        if accepted_already || self.session.store().has_event(&event.id)? {
            return Ok(None);
        }
        self.check_foreign_links(&event)?;
        let store = self.session.store();
        let mut verdict = crate::policy::Verdict::default();
        let mut checked = Checked::Nothing;
        // What `gc` left of an event of a purged entry: its summary, content and evidence are
        // blank by design, and so are they in what descends from such an event.
        let mut blanked = line.as_deref().is_some_and(crate::log::tombstones::marked);
        // Entries this entry names in `related_entries`, as checked below: one this import
        // created before it is not in the store yet, and is no dangling reference.
        let mut related: Vec<String> = Vec::new();
        for entry in event.entries() {
            if let Some((fields, status)) = event.creation_of(entry) {
                checked = Checked::Created;
                related.extend(fields.related_entries.iter().cloned());
                // The schema checks of `memlog add` (credentials are the policy's, below).
                if let Err(invalid) = check_recorded_create(fields, status) {
                    let schema = invalid.problems.into_iter();
                    verdict
                        .problems
                        .extend(schema.filter(|p| p.constraint != "secret"));
                }
                let mut v = self.policy.check(Some(store), fields, status, None, None)?;
                if allow_duplicates {
                    v.problems.retain(|p| p.constraint != "duplicate");
                }
                verdict.merge(v);
            }
        }
        if let EventData::Update { set, .. } = &event.data
            && set.is_empty()
            && !blanked
        {
            return Err(no_op_update(&event, "sets no field"));
        }
        if let EventData::Update { set, .. } | EventData::Resolve { set, .. } = &event.data
            && !set.is_empty()
            && let Some(state) = self.state_before(&event)?
        {
            // A summary is never empty but where a purge removed it.
            blanked |= state.fields.summary.is_empty();
            // As `memlog update` refuses to write it: without a reason (a review that found
            // nothing to change), an update must change the entry.
            if let EventData::Update { reason: None, .. } = &event.data
                && !blanked
                && changes_nothing(&state, set)
            {
                return Err(no_op_update(
                    &event,
                    "sets only values the entry already has",
                ));
            }
            // The checks of `memlog update`, on the entry as the event found it.
            match check_recorded_set(set, &state.fields) {
                Ok(()) => {
                    if let Ok((fields, _)) = projections::fold::apply_set(&state, set) {
                        related.extend(fields.related_entries);
                    }
                    verdict.merge(check_update(&self.policy, Some(store), &state, set)?);
                    checked = Checked::Set;
                }
                Err(invalid) => verdict.problems.extend(invalid.problems),
            }
        }
        if blanked {
            verdict.problems.retain(|p| !is_blank_by_purge(p));
        }
        self.accept_related_in_batch(&mut verdict, &related, &event.entry);
        verdict.merge(self.policy.check_free_text("actor", &event.actor));
        if let Ok(Value::Object(body)) = event.to_value()
            && let Some(data) = body.get("data")
        {
            let mut texts = Vec::new();
            foreign_texts("data", data, checked, &mut texts);
            for (field, text) in texts {
                verdict.merge(self.policy.check_free_text(&field, &text));
            }
            // Text that hides or reorders itself, as a write refuses it: every string of the
            // event, the created fields too (the policy's checks above do not look for it).
            let mut all = vec![("actor".to_owned(), event.actor.clone())];
            foreign_texts("data", data, Checked::Nothing, &mut all);
            for (field, text) in all {
                if let Some(c) = text
                    .chars()
                    .find(|&c| crate::safe_text::is_unsafe(c) && !matches!(c, '\n' | '\t' | '\r'))
                {
                    verdict.problem(
                        &field,
                        "format",
                        format!(
                            "`{field}` contains U+{:04X}, {}: remove it",
                            u32::from(c),
                            if c.is_control() {
                                "a control character"
                            } else {
                                crate::safe_text::describe_invisible(c)
                            }
                        ),
                    );
                }
            }
        }
        let warnings = verdict.into_result().or_else(|mut invalid| {
            log_refusal(self.project, self.ctx, "import", &mut invalid)?;
            Err(Error::Invalid(invalid))
        })?;
        let id = event
            .created_entry()
            .map_or_else(|| event.entry.clone(), str::to_owned);
        // The line is copied as it came when its id hashes it: an optional key written as
        // `null` or `{}` (`"reason":null`, `"redacted":{}`) is valid and decodes as absent, so
        // the line made again from the event would lack it and fail its own id. A tombstone
        // keeps its line too (its id hashes the content a purge removed); the caller checked
        // that the purge it names vouches for it.
        let line =
            match line.filter(|l| crate::log::tombstones::marked(l) || verifies(l, &event.id)) {
                Some(l) => l,
                None => event.to_line()?,
            };
        let events = vec![(event.clone(), line)];
        let written = unstored(&events, id, None, warnings);
        self.foreign_entries
            .extend(event.created_entry().map(str::to_owned));
        if let Some(next) = successor(&event) {
            self.foreign_successors
                .entry(event.entry.clone())
                .or_default()
                .push(next.to_owned());
        }
        self.foreign_events.insert(event.id.clone(), event);
        if !self.ctx.dry_run {
            self.staged.push(Staged {
                events,
                written: written.clone(),
            });
        }
        Ok(Some(written))
    }
}

impl Batch<'_> {
    /// Drops the policy's "does not exist" problem of each of `related` (an entry's
    /// `related_entries`, as the policy numbered them) that this batch created: the policy looks
    /// entries up in the store, which holds the batch's events only once it commits, and an
    /// export lists an entry before those related to it only by chance. A reference of `entry`
    /// to itself stays refused.
    fn accept_related_in_batch(
        &self,
        verdict: &mut crate::policy::Verdict,
        related: &[String],
        entry: &str,
    ) {
        let staged: Vec<String> = related
            .iter()
            .enumerate()
            .filter(|(_, id)| id.as_str() != entry && self.foreign_entries.contains(id.as_str()))
            .map(|(i, _)| format!("related_entries[{i}]"))
            .collect();
        verdict
            .problems
            .retain(|p| !(p.constraint == "reference" && staged.contains(&p.field)));
    }

    /// The entries that take over from `entry` (by a supersede or a consolidation), in the log
    /// or accepted by this batch.
    fn successors(&self, entry: &str) -> Result<Vec<String>> {
        let mut out: Vec<String> = self
            .session
            .store()
            .entry_events(entry)?
            .iter()
            .filter(|e| e.entry == entry)
            .filter_map(successor)
            .map(str::to_owned)
            .collect();
        if let Some(more) = self.foreign_successors.get(entry) {
            out.extend(more.iter().cloned());
        }
        Ok(out)
    }

    /// The entries from `from` to `to`, each taking over from the one before (see
    /// [`Batch::successors`]), or `None` when no such chain leads from one to the other: what
    /// a supersede of `to` by `from` would close into a cycle.
    fn takeover_path(&self, from: &str, to: &str) -> Result<Option<Vec<String>>> {
        let mut seen = std::collections::HashSet::new();
        let mut todo = vec![vec![from.to_owned()]];
        while let Some(path) = todo.pop() {
            let Some(last) = path.last() else { continue };
            if last == to {
                return Ok(Some(path));
            }
            if !seen.insert(last.clone()) {
                continue;
            }
            for next in self.successors(last)? {
                let mut longer = path.clone();
                longer.push(next);
                todo.push(longer);
            }
        }
        Ok(None)
    }

    /// The state of `event`'s entry just before it: the fold of the events of the entry it
    /// descends from, in the log or accepted by this batch (what the event was written on).
    fn state_before(&self, event: &Event) -> Result<Option<EntryState>> {
        let entry = event.entry.as_str();
        let mut seen = std::collections::HashSet::new();
        let mut todo: Vec<String> = event.parents.clone();
        let mut before: Vec<Event> = Vec::new();
        while let Some(id) = todo.pop() {
            if !seen.insert(id.clone()) {
                continue;
            }
            let found = match self.foreign_events.get(&id) {
                Some(e) => Some(e.clone()),
                None => self.session.store().stored_event(&id)?,
            };
            let Some(e) = found.filter(|e| e.projects_onto(entry)) else {
                continue;
            };
            // The event that created the entry begins its history (the parents of a supersede
            // that created it are the replaced entry's).
            if e.creation_of(entry).is_none() {
                todo.extend(e.parents.iter().cloned());
            }
            before.push(e);
        }
        let refs: Vec<&Event> = before.iter().collect();
        Ok(projections::fold_entry_lean(entry, &refs).state)
    }

    /// Refuses a foreign event that `verify` would refuse for its place in this log: an orphan
    /// (about an entry that neither the log nor this batch created, or with parents neither in
    /// the log nor accepted by this batch), an event other than a create without parents, or
    /// one with a parent of another entry (docs/EVENT_FORMAT.md, section 9).
    fn check_foreign_links(&self, event: &Event) -> Result<()> {
        let store = self.session.store();
        let created = event.created_entry();
        for entry in event.entries() {
            if Some(entry) == created || self.foreign_entries.contains(entry) {
                continue;
            }
            if store.entry(entry)?.is_none() {
                return Err(Error::Rejected {
                    message: format!(
                        "event {} is about entry {entry}, which has no create event in this \
                         log or in this import: import the entry's create with it",
                        event.id
                    ),
                });
            }
        }
        // A supersede without a replacement, or a consolidation, names the entry that takes
        // over: it must be another entry, one this log or this import holds (memlog writes
        // nothing else; pointing at nothing or at itself hid the entry with no successor).
        let target = match &event.data {
            EventData::Supersede {
                by,
                replacement: None,
                ..
            } => Some(("superseded by", by)),
            EventData::Consolidate { into, .. } => Some(("consolidated into", into)),
            _ => None,
        };
        if let Some((how, target)) = target {
            let known =
                self.foreign_entries.contains(target.as_str()) || store.entry(target)?.is_some();
            if target == &event.entry || !known {
                return Err(Error::Rejected {
                    message: format!(
                        "event {} has entry {} {how} {target}, {}: import the entry that takes \
                         over with it, or leave the event out",
                        event.id,
                        event.entry,
                        if target == &event.entry {
                            "itself"
                        } else {
                            "which has no create event in this log or in this import"
                        }
                    ),
                });
            }
            // Two entries that each take over from the other leave neither standing for them:
            // both superseded, no successor. memlog never writes that (a replacement is always
            // a new entry).
            if let Some(path) = self.takeover_path(target, &event.entry)? {
                return Err(Error::Rejected {
                    message: format!(
                        "event {} has entry {} {how} {target}, which already gives way to {} \
                         ({} → {}): the entries would supersede one another in a cycle that \
                         leaves none of them active; leave one of these events out",
                        event.id,
                        event.entry,
                        event.entry,
                        event.entry,
                        path.join(" → ")
                    ),
                });
            }
        }
        // Replay orders an entry's events by their parents: one that names none could come
        // before its entry's create, which `verify` refuses, and it forks the entry anyway.
        if event.parents.is_empty() && event.creation_of(&event.entry).is_none() {
            return Err(Error::Rejected {
                message: format!(
                    "event {} ({} of entry {}) names no parent: every event but a create names \
                     its entry's heads (docs/EVENT_FORMAT.md, section 6.3), or replay may place \
                     it before the entry's create, which `verify` refuses; leave the event out \
                     and make the change with memlog, which names them",
                    event.id,
                    event.event_type().as_str(),
                    event.entry
                ),
            });
        }
        for parent in &event.parents {
            let stored;
            let found = match self.foreign_events.get(parent) {
                Some(e) => Some(e),
                None => {
                    stored = store.stored_event(parent)?;
                    stored.as_ref()
                }
            };
            let Some(found) = found else {
                return Err(Error::Rejected {
                    message: format!(
                        "event {} names parent {parent}, which is neither in this log nor \
                         accepted in this import: import the events it descends from with it",
                        event.id
                    ),
                });
            };
            if let Some(problem) = crate::log::verify::parent_problem(event, found) {
                return Err(Error::Rejected {
                    message: format!(
                        "event {}: {problem}, which `verify` refuses; import the event as the \
                         log that wrote it holds it",
                        event.id
                    ),
                });
            }
            if matches!(event.data, EventData::Update { .. }) && found.at > event.at {
                return Err(Error::Rejected {
                    message: format!(
                        "event {} (update of entry {}) is dated {}, before its parent {parent} \
                         ({}): an update comes after the version it changes, as `memlog update` \
                         writes it; leave the event out, or make the change again with \
                         `memlog update`",
                        event.id, event.entry, event.at, found.at
                    ),
                });
            }
        }
        Ok(())
    }
}

/// The entry that takes over from `event`'s entry by it: a supersede's replacement or `by`, a
/// consolidation's `into`.
fn successor(event: &Event) -> Option<&str> {
    match &event.data {
        EventData::Supersede { by, .. } | EventData::Consolidate { into: by, .. }
            if !by.is_empty() =>
        {
            Some(by)
        }
        _ => None,
    }
}

/// Whether an update that sets `set` on the entry in `state` leaves its fields and its status
/// as they are (a value of the wrong type changes nothing either: the schema checks name it).
fn changes_nothing(state: &EntryState, set: &Map<String, Value>) -> bool {
    projections::fold::apply_set_to(&state.fields, set).is_ok_and(|(fields, status)| {
        fields == state.fields && status.is_none_or(|s| s == state.status)
    })
}

/// The refusal of a foreign update event that changes nothing, which `memlog update` refuses
/// to write too; `what` says what it sets.
fn no_op_update(event: &Event, what: &str) -> Error {
    Error::Rejected {
        message: format!(
            "event {} (update of entry {}) {what}: it changes nothing, and `memlog update` \
             refuses to write such an update; leave the event out (a review that found nothing \
             to change is an update with a reason: `memlog update {} --reason TEXT`)",
            event.id, event.entry, event.entry
        ),
    }
}

/// What of a foreign event's data the write policy checked as an entry's fields, its scan for
/// credentials included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Checked {
    Nothing,
    /// The fields of the entry it creates (a create's data, a supersede's replacement).
    Created,
    /// The values its `set` gives (an update, a resolve).
    Set,
}

/// The texts of a foreign event's data, by field path, to scan for credentials, but for those
/// the policy `checked` already.
fn foreign_texts(at: &str, v: &Value, checked: Checked, out: &mut Vec<(String, String)>) {
    match v {
        Value::String(s) => out.push((at.to_owned(), s.clone())),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                foreign_texts(&format!("{at}[{i}]"), item, checked, out);
            }
        }
        Value::Object(map) => {
            for (k, item) in map {
                let skip = match checked {
                    Checked::Nothing => false,
                    Checked::Created => {
                        k == "replacement"
                            || (at == "data"
                                && projections::model::PATCHABLE_FIELDS.contains(&k.as_str()))
                    }
                    Checked::Set => at == "data" && k == "set",
                };
                if !skip {
                    foreign_texts(&format!("{at}.{k}"), item, checked, out);
                }
            }
        }
        _ => {}
    }
}

/// Whether `problem` is only that a field a purge blanks (summary, content, evidence) is
/// blank: what every event of a purged entry shows after `gc`. Any other problem with those
/// fields (a length, a credential) is content, and stays one.
fn is_blank_by_purge(problem: &crate::policy::validate::Problem) -> bool {
    matches!(problem.constraint, "required" | "evidence_strength")
        && projections::tombstone::PURGED_FIELDS.contains(&problem.field.as_str())
}
