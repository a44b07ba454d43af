//! Priorities and the queue discipline shared by the synthesis queue and every device queue:
//! a higher priority goes ahead of every queued lower one, FIFO within a priority, so a job's
//! partitions stay in order. Pure data structure: no threads, no GPU.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::proofs::ProofKind;

/// Scheduling class of a job. Ordered so that `Critical` sorts first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Priority {
    /// WinningPoSt: must finish inside its epoch.
    Critical,
    /// WindowPoSt: must meet its deadline.
    High,
    /// PoRep C2 and SnapDeals.
    Normal,
    /// Background work a client marks as such.
    Low,
}

impl Priority {
    pub const ALL: [Priority; 4] = [Priority::Critical, Priority::High, Priority::Normal, Priority::Low];

    pub fn default_for(kind: ProofKind) -> Priority {
        match kind {
            ProofKind::WinningPost => Priority::Critical,
            ProofKind::WindowPost => Priority::High,
            ProofKind::PorepC2 | ProofKind::SnapDeals => Priority::Normal,
        }
    }

    pub const fn name(self) -> &'static str {
        match self {
            Priority::Critical => "critical",
            Priority::High => "high",
            Priority::Normal => "normal",
            Priority::Low => "low",
        }
    }

    /// The priority a request gets: it may lower its own priority; raising it above the kind's
    /// default needs the config-level grant.
    pub fn effective(kind: ProofKind, requested: Option<Priority>, allow_raise: bool) -> Priority {
        let default = Priority::default_for(kind);
        match requested {
            Some(p) if p >= default || allow_raise => p,
            _ => default,
        }
    }
}

/// Where an item stood in a [`PriorityQueue`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place((Priority, u64));

/// A priority queue, FIFO within each priority.
#[derive(Debug)]
pub struct PriorityQueue<T> {
    items: BTreeMap<(Priority, u64), T>,
    next_seq: u64,
}

impl<T> Default for PriorityQueue<T> {
    fn default() -> Self {
        PriorityQueue { items: BTreeMap::new(), next_seq: 0 }
    }
}

impl<T> PriorityQueue<T> {
    pub fn push(&mut self, priority: Priority, item: T) {
        self.items.insert((priority, self.next_seq), item);
        self.next_seq += 1;
    }

    /// Removes the first item of the highest priority present.
    pub fn pop(&mut self) -> Option<(Priority, T)> {
        self.items.pop_first().map(|((p, _), t)| (p, t))
    }

    /// Removes the first item whose priority passes `accept`.
    pub fn pop_where(&mut self, accept: impl Fn(Priority) -> bool) -> Option<(Priority, T)> {
        let key = *self.items.keys().find(|(p, _)| accept(*p))?;
        self.items.remove(&key).map(|t| (key.0, t))
    }

    /// [`PriorityQueue::pop`], with the item's place for [`PriorityQueue::put_back`].
    pub fn pop_placed(&mut self) -> Option<(Place, T)> {
        self.items.pop_first().map(|(k, t)| (Place(k), t))
    }

    /// Puts an item from [`PriorityQueue::pop_placed`] back where it stood: ahead of everything
    /// of its priority queued after it.
    pub fn put_back(&mut self, place: Place, item: T) {
        self.items.insert(place.0, item);
    }

    /// Whether the first item would have been taken before the one that stood at `place`.
    pub fn first_before(&self, place: Place) -> bool {
        self.items.keys().next().is_some_and(|k| *k < place.0)
    }

    /// Drops every item for which `keep` is false, returning them.
    pub fn extract(&mut self, keep: impl Fn(&T) -> bool) -> Vec<T> {
        let drop: Vec<_> = self.items.iter().filter(|(_, t)| !keep(t)).map(|(k, _)| *k).collect();
        drop.into_iter().filter_map(|k| self.items.remove(&k)).collect()
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (Priority, &T)> {
        self.items.iter().map(|((p, _), t)| (*p, t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn higher_priority_first_fifo_within() {
        let mut q = PriorityQueue::default();
        q.push(Priority::Normal, "porep-0");
        q.push(Priority::Normal, "porep-1");
        q.push(Priority::Critical, "winning");
        q.push(Priority::Low, "low");
        q.push(Priority::High, "window");
        q.push(Priority::Normal, "porep-2");
        let order: Vec<_> = std::iter::from_fn(|| q.pop().map(|(_, t)| t)).collect();
        assert_eq!(order, ["winning", "window", "porep-0", "porep-1", "porep-2", "low"]);
    }

    #[test]
    fn requests_may_lower_but_not_raise_without_grant() {
        use ProofKind::*;
        assert_eq!(Priority::effective(PorepC2, Some(Priority::Low), false), Priority::Low);
        assert_eq!(Priority::effective(PorepC2, Some(Priority::Critical), false), Priority::Normal);
        assert_eq!(Priority::effective(PorepC2, Some(Priority::Critical), true), Priority::Critical);
        assert_eq!(Priority::effective(WinningPost, None, false), Priority::Critical);
    }

    #[test]
    fn pop_where_skips_rejected_priorities() {
        let mut q = PriorityQueue::default();
        q.push(Priority::Normal, 1);
        q.push(Priority::High, 2);
        assert_eq!(q.pop_where(|p| p == Priority::Normal), Some((Priority::Normal, 1)));
        assert_eq!(q.pop_where(|p| p == Priority::Normal), None);
        assert_eq!(q.len(), 1);
    }
}
