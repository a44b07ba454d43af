//! The memory budget for witnesses: every work item reserves its estimated bytes before synthesis
//! starts and releases them in parts as the proving stage frees each buffer, so no witness ever
//! exists outside the budget (the rule cuzk broke when it OOMed at 668 GiB). Ordinary work leaves
//! [`URGENT_HEADROOM`] free, so a WinningPoSt never waits for a PoRep partition to give bytes back.

use std::sync::{Arc, Condvar, Mutex};

use serde::Serialize;

use crate::error::{ErrorCode, SnarkError};
use crate::systemd::cgroup::MemoryLimit;
use crate::units::Bytes;

/// What ordinary reservations leave free for urgent ones (a WinningPoSt witness is ~50 MB at
/// 32 GiB): 1 GiB, or an eighth of a smaller budget.
pub const URGENT_HEADROOM: u64 = 1 << 30;

/// The witness budget and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WitnessBudget {
    pub bytes: Bytes,
    pub source: String,
    /// Resident parameters come out of `bytes` as they are loaded, preloaded or evicted (the
    /// budget was derived from a memory limit); false for an explicit `memory.limit`, which is
    /// the witnesses' alone.
    pub follows_params: bool,
}

impl WitnessBudget {
    /// A fixed budget for witnesses alone.
    pub fn fixed(bytes: Bytes, source: impl Into<String>) -> WitnessBudget {
        WitnessBudget { bytes, source: source.into(), follows_params: false }
    }
}

/// An explicit `memory.limit`, else the detected limit minus `memory.reserve`, from which the
/// engine takes out the resident parameters as they change.
pub fn witness_budget(explicit: Option<Bytes>, memory: &MemoryLimit, reserve: Bytes) -> WitnessBudget {
    match explicit {
        Some(limit) => WitnessBudget::fixed(limit, "memory.limit"),
        None => WitnessBudget {
            bytes: memory.bytes.saturating_sub(reserve),
            source: format!("{} ({}) - memory.reserve {} - resident params", memory.source, memory.bytes, reserve),
            follows_params: true,
        },
    }
}

#[derive(Debug)]
struct State {
    /// The budget before resident parameters come out of it.
    limit: u64,
    /// Resident parameter bytes, taken out of `limit` when `follows_params`.
    params: u64,
    follows_params: bool,
    reserved: u64,
    /// Bytes measured in use by live witnesses (reported, not enforced).
    in_use: u64,
    closed: bool,
}

impl State {
    fn effective(&self) -> u64 {
        if self.follows_params {
            self.limit.saturating_sub(self.params)
        } else {
            self.limit
        }
    }

    /// What a reservation may bring the total to: all of it for urgent work, less the headroom
    /// for the rest.
    fn ceiling(&self, urgent: bool) -> u64 {
        let all = self.effective();
        if urgent {
            all
        } else {
            all - URGENT_HEADROOM.min(all / 8)
        }
    }
}

/// A byte budget shared by the synthesis workers.
#[derive(Debug, Clone)]
pub struct Budget {
    inner: Arc<(Mutex<State>, Condvar)>,
}

/// Budget figures for `Snark.Status`.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct BudgetStatus {
    pub limit: Bytes,
    pub reserved: Bytes,
    pub in_use: Bytes,
}

impl Budget {
    pub fn new(budget: &WitnessBudget) -> Budget {
        let state = State {
            limit: budget.bytes.get(),
            params: 0,
            follows_params: budget.follows_params,
            reserved: 0,
            in_use: 0,
            closed: false,
        };
        Budget { inner: Arc::new((Mutex::new(state), Condvar::new())) }
    }

    /// What witnesses may reserve now (resident parameters taken out when the budget follows them).
    pub fn limit(&self) -> Bytes {
        Bytes(self.inner.0.lock().unwrap().effective())
    }

    /// Changes the budget (a reload); waiters re-check at once.
    pub fn set_limit(&self, budget: &WitnessBudget) {
        let mut s = self.inner.0.lock().unwrap();
        s.limit = budget.bytes.get();
        s.follows_params = budget.follows_params;
        drop(s);
        self.inner.1.notify_all();
    }

    /// Records the parameter bytes resident now; waiters re-check at once (an eviction frees room).
    pub fn set_params(&self, bytes: u64) {
        self.inner.0.lock().unwrap().params = bytes;
        self.inner.1.notify_all();
    }

    pub fn status(&self) -> BudgetStatus {
        let s = self.inner.0.lock().unwrap();
        BudgetStatus { limit: Bytes(s.effective()), reserved: Bytes(s.reserved), in_use: Bytes(s.in_use) }
    }

    /// Fails at once when `bytes` can never fit, naming both figures.
    pub fn check_fits(&self, bytes: Bytes, urgent: bool) -> Result<(), SnarkError> {
        let (all, ceiling) = {
            let s = self.inner.0.lock().unwrap();
            (Bytes(s.effective()), Bytes(s.ceiling(urgent)))
        };
        if bytes > ceiling {
            let kept = if urgent { String::new() } else { format!(" ({} of it kept for WinningPoSt)", Bytes(all.get() - ceiling.get())) };
            return Err(SnarkError::new(
                ErrorCode::BadInput,
                format!(
                    "one partition needs an estimated {bytes} of witness memory but the whole budget is {all}{kept}; \
                     raise memory.limit or the service's MemoryMax"
                ),
            ));
        }
        Ok(())
    }

    /// Blocks until `bytes` fit (ordinary work: with [`URGENT_HEADROOM`] left free), or fails
    /// when the budget closes or `cancelled()` turns true.
    pub fn reserve(&self, bytes: Bytes, cancelled: &dyn Fn() -> bool) -> Result<Reservation, SnarkError> {
        self.reserve_as(bytes, false, cancelled)
    }

    /// [`Budget::reserve`] for urgent work (WinningPoSt), which may use the headroom too.
    pub fn reserve_urgent(&self, bytes: Bytes, cancelled: &dyn Fn() -> bool) -> Result<Reservation, SnarkError> {
        self.reserve_as(bytes, true, cancelled)
    }

    fn reserve_as(&self, bytes: Bytes, urgent: bool, cancelled: &dyn Fn() -> bool) -> Result<Reservation, SnarkError> {
        self.check_fits(bytes, urgent)?;
        let (lock, cv) = &*self.inner;
        let mut s = lock.lock().unwrap();
        loop {
            if s.closed {
                return Err(SnarkError::new(ErrorCode::Draining, "the daemon is shutting down"));
            }
            if cancelled() {
                return Err(SnarkError::new(ErrorCode::Cancelled, "job cancelled"));
            }
            if s.reserved + bytes.get() <= s.ceiling(urgent) {
                s.reserved += bytes.get();
                return Ok(Reservation { budget: self.clone(), held: bytes.get(), in_use: 0 });
            }
            s = cv.wait_timeout(s, std::time::Duration::from_millis(100)).unwrap().0;
        }
    }

    /// Wakes every waiter and makes further reservations fail.
    pub fn close(&self) {
        self.inner.0.lock().unwrap().closed = true;
        self.inner.1.notify_all();
    }

    fn give_back(&self, reserved: u64, in_use: u64) {
        let mut s = self.inner.0.lock().unwrap();
        s.reserved -= reserved;
        s.in_use -= in_use;
        drop(s);
        self.inner.1.notify_all();
    }
}

/// Bytes held for one work item; whatever is left is returned on drop.
#[derive(Debug)]
pub struct Reservation {
    budget: Budget,
    held: u64,
    in_use: u64,
}

impl Reservation {
    pub fn held(&self) -> Bytes {
        Bytes(self.held)
    }

    /// Records the measured size of the witness now alive.
    pub fn set_in_use(&mut self, bytes: Bytes) {
        let mut s = self.budget.inner.0.lock().unwrap();
        s.in_use = s.in_use - self.in_use + bytes.get();
        self.in_use = bytes.get();
    }

    /// Returns `bytes` (capped at what is held) once their buffer has been freed.
    pub fn release(&mut self, bytes: u64) {
        let r = bytes.min(self.held);
        let u = bytes.min(self.in_use);
        self.held -= r;
        self.in_use -= u;
        self.budget.give_back(r, u);
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if self.held > 0 || self.in_use > 0 {
            self.budget.give_back(self.held, self.in_use);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserve_release_and_drop_return_bytes() {
        let b = Budget::new(&WitnessBudget::fixed(Bytes(100), "test"));
        let mut r = b.reserve(Bytes(60), &|| false).unwrap();
        assert_eq!(b.status().reserved, Bytes(60));
        r.release(20);
        assert_eq!(b.status().reserved, Bytes(40));
        drop(r);
        assert_eq!(b.status().reserved, Bytes(0));
    }

    #[test]
    fn too_big_fails_naming_both_figures() {
        let b = Budget::new(&WitnessBudget::fixed(Bytes(1024), "test"));
        let e = b.reserve_urgent(Bytes(4096), &|| false).unwrap_err();
        assert!(e.message.contains("4.0 KiB") && e.message.contains("1.0 KiB"), "{}", e.message);
    }

    #[test]
    fn waits_until_bytes_fit() {
        let b = Budget::new(&WitnessBudget::fixed(Bytes(100), "test"));
        let r = b.reserve(Bytes(80), &|| false).unwrap();
        let b2 = b.clone();
        let t = std::thread::spawn(move || b2.reserve(Bytes(50), &|| false).map(|r| r.held()));
        std::thread::sleep(std::time::Duration::from_millis(150));
        assert_eq!(b.status().reserved, Bytes(80), "second reservation must wait");
        drop(r);
        assert_eq!(t.join().unwrap().unwrap(), Bytes(50));
    }

    #[test]
    fn resident_parameters_come_out_of_a_derived_budget_only() {
        let derived = Budget::new(&WitnessBudget { bytes: Bytes(100), source: "test".into(), follows_params: true });
        derived.set_params(70);
        assert_eq!(derived.limit(), Bytes(30));
        let r = derived.reserve_urgent(Bytes(30), &|| false).unwrap();
        let d2 = derived.clone();
        let waiter = std::thread::spawn(move || d2.reserve_urgent(Bytes(20), &|| false).map(|r| r.held()));
        std::thread::sleep(std::time::Duration::from_millis(150));
        assert_eq!(derived.status().reserved, Bytes(30), "no room until parameters are evicted");
        derived.set_params(40);
        assert_eq!(waiter.join().unwrap().unwrap(), Bytes(20));
        drop(r);
        let fixed = Budget::new(&WitnessBudget::fixed(Bytes(100), "memory.limit"));
        fixed.set_params(70);
        assert_eq!(fixed.limit(), Bytes(100));
    }

    #[test]
    fn ordinary_work_leaves_the_headroom_to_urgent_work() {
        let b = Budget::new(&WitnessBudget::fixed(Bytes(800), "test"));
        // a full budget for ordinary work: 800 - 800/8
        let _porep = b.reserve(Bytes(700), &|| false).unwrap();
        let b2 = b.clone();
        let ordinary = std::thread::spawn(move || b2.reserve(Bytes(50), &|| false).map(|r| r.held()));
        let winning = b.reserve_urgent(Bytes(90), &|| false).unwrap();
        assert_eq!(winning.held(), Bytes(90), "urgent work does not wait");
        std::thread::sleep(std::time::Duration::from_millis(150));
        assert!(!ordinary.is_finished(), "ordinary work waits");
        drop(_porep);
        assert_eq!(ordinary.join().unwrap().unwrap(), Bytes(50));
        assert_eq!(b.check_fits(Bytes(750), false).unwrap_err().code, ErrorCode::BadInput);
        assert!(b.check_fits(Bytes(750), true).is_ok());
    }

    #[test]
    fn cancelled_waiter_gives_up() {
        let b = Budget::new(&WitnessBudget::fixed(Bytes(10), "test"));
        let _r = b.reserve_urgent(Bytes(10), &|| false).unwrap();
        let e = b.reserve(Bytes(5), &|| true).unwrap_err();
        assert_eq!(e.code, ErrorCode::Cancelled);
    }
}
