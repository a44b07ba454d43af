//! The CPU gate: one permit per CPU, handed to the waiting fork item with the most urgent key.
//!
//! Several partitions synthesize at once so that the CPUs stay busy while one partition's last
//! forks finish (a 32 GiB PoRep partition has 18 challenges for 16 cores). Left to the kernel,
//! they share the CPUs evenly, so all of them finish late together: with seven at once, the first
//! 32 GiB PoRep witness reached the GPU after ten seconds, and the GPU waited that long at the
//! start of every run. Each synthesis worker therefore runs its forks on a rayon pool of its own,
//! and every fork item takes a permit here before it runs ([`crate::groth16::admitted`]). A
//! released permit goes straight to the most urgent waiter (priority, then the job's submission,
//! then the partition), so the partition the device needs next gets every CPU it can use, and the
//! later ones get only what it leaves idle. Items of one partition are equal: they run in the
//! order their threads ask.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::Thread;
use std::time::Duration;

/// How often a waiter asks its stop token while it waits for a permit.
const STOP_POLL: Duration = Duration::from_millis(100);

/// An ordered semaphore: `permits` holders at once; a free permit goes to the waiter whose key
/// sorts first (ties in arrival order).
pub(crate) struct OrderedGate<K: Ord> {
    state: Mutex<GateState<K>>,
}

struct GateState<K> {
    free: usize,
    /// Waiters by (key, arrival).
    waiting: BTreeMap<(K, u64), Arc<Waiter>>,
    arrivals: u64,
}

struct Waiter {
    granted: AtomicBool,
    thread: Thread,
}

/// One held permit; dropping it hands the permit on.
pub(crate) struct Permit<K: Ord + Send + 'static>(Arc<OrderedGate<K>>);

impl<K: Ord + Send + 'static> Drop for Permit<K> {
    fn drop(&mut self) {
        self.0.release();
    }
}

impl<K: Ord + Send + 'static> OrderedGate<K> {
    pub fn new(permits: usize) -> Arc<OrderedGate<K>> {
        Arc::new(OrderedGate {
            state: Mutex::new(GateState { free: permits.max(1), waiting: BTreeMap::new(), arrivals: 0 }),
        })
    }

    /// Waits for a permit as `key`; `None` once `stop` answers true while it waits (asked every
    /// 100 ms), with nothing held.
    pub fn acquire(self: &Arc<Self>, key: K, stop: &dyn Fn() -> bool) -> Option<Permit<K>> {
        let mut s = self.state.lock().unwrap();
        // a release hands its permit to a waiter when there is one, so free permits mean no waiters
        if s.free > 0 {
            debug_assert!(s.waiting.is_empty());
            s.free -= 1;
            return Some(Permit(self.clone()));
        }
        let arrival = s.arrivals;
        s.arrivals += 1;
        let me = Arc::new(Waiter { granted: AtomicBool::new(false), thread: std::thread::current() });
        let place = (key, arrival);
        s.waiting.insert(place, me.clone());
        drop(s);
        loop {
            std::thread::park_timeout(STOP_POLL);
            if me.granted.load(Ordering::Acquire) {
                return Some(Permit(self.clone()));
            }
            if stop() {
                let mut s = self.state.lock().unwrap();
                if me.granted.load(Ordering::Acquire) {
                    // granted between the check and the lock: hand it on
                    drop(s);
                    drop(Permit(self.clone()));
                } else {
                    s.waiting.retain(|_, w| !Arc::ptr_eq(w, &me));
                }
                return None;
            }
        }
    }

    fn release(&self) {
        let mut s = self.state.lock().unwrap();
        match s.waiting.pop_first() {
            Some((_, next)) => {
                next.granted.store(true, Ordering::Release);
                next.thread.unpark();
            }
            None => s.free += 1,
        }
    }

    /// Permits free now.
    #[cfg(test)]
    fn free(&self) -> usize {
        self.state.lock().unwrap().free
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// Waiters that arrive while the only permit is held get it most urgent first, whatever their
    /// arrival order; equal keys in arrival order.
    #[test]
    fn a_freed_permit_goes_to_the_most_urgent_waiter() {
        let gate = OrderedGate::<u32>::new(1);
        let held = gate.acquire(0, &|| false).unwrap();
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut threads = vec![];
        for (i, key) in [5u32, 2, 9, 2, 1].into_iter().enumerate() {
            let (g, order) = (gate.clone(), order.clone());
            threads.push(std::thread::spawn(move || {
                let _p = g.acquire(key, &|| false).unwrap();
                order.lock().unwrap().push((key, i));
            }));
            // each waiter queued before the next arrives
            while gate.state.lock().unwrap().waiting.len() <= i {
                std::thread::yield_now();
            }
        }
        drop(held);
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(*order.lock().unwrap(), vec![(1, 4), (2, 1), (2, 3), (5, 0), (9, 2)]);
        assert_eq!(gate.free(), 1);
    }

    /// A waiter whose stop token fires leaves the queue with nothing held, and the others go on.
    #[test]
    fn a_stopped_waiter_leaves_with_nothing_held() {
        let gate = OrderedGate::<u32>::new(1);
        let held = gate.acquire(0, &|| false).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let waiter = {
            let (gate, stop) = (gate.clone(), stop.clone());
            std::thread::spawn(move || gate.acquire(1, &|| stop.load(Ordering::Relaxed)).is_none())
        };
        while gate.state.lock().unwrap().waiting.is_empty() {
            std::thread::yield_now();
        }
        stop.store(true, Ordering::Relaxed);
        assert!(waiter.join().unwrap(), "the stopped waiter got a permit");
        assert!(gate.state.lock().unwrap().waiting.is_empty());
        drop(held);
        assert_eq!(gate.free(), 1);
        assert!(gate.acquire(2, &|| false).is_some());
    }

    /// Many threads through a gate of three: never more than three inside, and every permit back.
    #[test]
    fn no_more_than_the_permits_run_at_once() {
        let gate = OrderedGate::<usize>::new(3);
        let (inside, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let threads: Vec<_> = (0..12)
            .map(|i| {
                let (gate, inside, most) = (gate.clone(), inside.clone(), most.clone());
                std::thread::spawn(move || {
                    for _ in 0..50 {
                        let _p = gate.acquire(i % 4, &|| false).unwrap();
                        let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        std::thread::yield_now();
                        inside.fetch_sub(1, Ordering::SeqCst);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert!(most.load(Ordering::SeqCst) <= 3, "{} inside at once", most.load(Ordering::SeqCst));
        assert_eq!(gate.free(), 3);
    }
}
