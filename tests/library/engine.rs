//! The engine issue's scheduling properties, driven in-process with controllable fakes (a
//! statement whose synthesis sleeps, a backend whose proving sleeps): priority at stage
//! boundaries, bounded memory under a slow device, overlap under a fast one, and cancellation
//! freeing reservations.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use blstrs::{Bls12, G1Affine, G2Affine, Scalar as Fr};
use group::prime::PrimeCurveAffine;

use snarkd::engine::{Engine, EngineSettings, JobState, Sizing, SubmitOptions};
use snarkd::srs::SrsSource;
use snarkd::error::{ErrorCode, SnarkError};
use snarkd::groth16::{
    BackendError, DeviceMemory, Interlude, Precompiled, Proof, ProveTimings, ProvingBackend, ReleaseFn, UrgentFn, VerifyingKey, Witness,
};
use snarkd::proofs::{ProofKind, Statement};
use snarkd::srs::{CircuitId, Srs};
use snarkd::units::Bytes;

/// A statement whose synthesis takes `synth` and whose witness is `bytes` large; `dropped`, when
/// given, turns true once the statement is dropped.
struct FakeStatement {
    kind: ProofKind,
    partitions: usize,
    bytes: u64,
    synth: Duration,
    dropped: Option<Arc<std::sync::atomic::AtomicBool>>,
}

impl Drop for FakeStatement {
    fn drop(&mut self) {
        if let Some(flag) = &self.dropped {
            flag.store(true, Ordering::SeqCst);
        }
    }
}

impl Statement for FakeStatement {
    fn kind(&self) -> ProofKind {
        self.kind
    }
    fn circuit(&self) -> CircuitId {
        CircuitId("fake".into())
    }
    fn partitions(&self) -> usize {
        self.partitions
    }
    fn witness_bytes(&self) -> Bytes {
        Bytes(self.bytes)
    }
    fn synthesize(&self, _partition: usize) -> Result<Witness, SnarkError> {
        std::thread::sleep(self.synth);
        Ok(Witness::default())
    }
    fn public_inputs(&self, _partition: usize) -> Result<Vec<Fr>, SnarkError> {
        Ok(vec![])
    }
    fn record(&self) -> Result<Precompiled, SnarkError> {
        Err(SnarkError::new(ErrorCode::Unsupported, "a fake statement has no circuit to record"))
    }
}

/// A backend whose proving takes `prove` and that records which job kinds it proved, in order.
struct FakeBackend {
    prove: Duration,
    order: Arc<Mutex<Vec<ProofKind>>>,
    kinds: Arc<Mutex<std::collections::HashMap<usize, ProofKind>>>,
    calls: AtomicUsize,
    release_bytes: u64,
    /// For each proof, the kind tag (input length) of the witness announced as next, if any.
    announced: Arc<Mutex<Vec<Option<usize>>>>,
    /// Whether it claims to hold every circuit's bases already.
    holds: bool,
    /// Whether it claims to make a deferred witness's a and b itself.
    fills: bool,
    /// For each proof, whether its witness came with a and b left to the device.
    deferred: Arc<Mutex<Vec<bool>>>,
    /// For each request to move a circuit's bases ahead, the proofs made before it.
    warmed: Arc<Mutex<Vec<usize>>>,
    /// When set, a proof pauses after each tenth of its time for urgent partitions, which fit
    /// beside it when the flag is true; `events` then logs each proof's start and end.
    pauses: Option<bool>,
    events: Arc<Mutex<Vec<String>>>,
    /// Interludes still to fail for device memory before one proves.
    interlude_ooms: AtomicUsize,
}

impl FakeBackend {
    /// A backend that takes every witness for a PoRep's and proves it in `prove`.
    fn porep(prove: Duration, holds: bool) -> FakeBackend {
        FakeBackend {
            prove,
            order: Arc::new(Mutex::new(vec![])),
            kinds: Arc::new(Mutex::new([(1usize, ProofKind::PorepC2)].into_iter().collect())),
            calls: AtomicUsize::new(0),
            release_bytes: 0,
            announced: Arc::new(Mutex::new(vec![])),
            holds,
            fills: false,
            deferred: Arc::new(Mutex::new(vec![])),
            warmed: Arc::new(Mutex::new(vec![])),
            pauses: None,
            events: Arc::new(Mutex::new(vec![])),
            interlude_ooms: AtomicUsize::new(0),
        }
    }

    fn kind_of(&self, w: &Witness) -> ProofKind {
        self.kinds.lock().unwrap().get(&w.input.len()).copied().unwrap_or(ProofKind::PorepC2)
    }
}

/// A fake proof between two steps of another, which takes a tenth of a partition.
struct FakeInterlude<'a>(&'a FakeBackend, bool);

impl Interlude for FakeInterlude<'_> {
    fn fits(&self, _w: &Witness, _srs: &Srs) -> bool {
        self.1
    }
    fn prove(&self, w: Witness, _srs: &Srs, _release: ReleaseFn<'_>) -> Result<(Proof<Bls12>, ProveTimings), BackendError> {
        let kind = self.0.kind_of(&w);
        if self.0.interlude_ooms.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok() {
            self.0.events.lock().unwrap().push(format!("{kind:?} out of memory between"));
            let (needed, free) = (Bytes(2 << 30), Bytes(1 << 30));
            return Err(BackendError::OutOfMemory { device: "fake".into(), what: "beside a paused proof".into(), needed, free });
        }
        self.0.order.lock().unwrap().push(kind);
        self.0.events.lock().unwrap().push(format!("{kind:?} between"));
        std::thread::sleep(self.0.prove / 10);
        Ok((Proof { a: G1Affine::generator(), b: G2Affine::generator(), c: G1Affine::generator() }, ProveTimings::default()))
    }
}

impl ProvingBackend for FakeBackend {
    fn name(&self) -> String {
        "fake".into()
    }
    fn memory(&self) -> Option<DeviceMemory> {
        Some(DeviceMemory { free: Bytes(100 << 30), total: Bytes(141 << 30) })
    }
    fn holds(&self, _circuit: &CircuitId) -> bool {
        self.holds
    }
    fn fills_from_record(&self, _srs: &Srs, _record: &Arc<Precompiled>) -> bool {
        self.fills
    }
    fn warm(&self, _srs: &Srs, _record: Option<&Arc<Precompiled>>) -> Result<(), BackendError> {
        self.warmed.lock().unwrap().push(self.calls.load(Ordering::SeqCst));
        Ok(())
    }
    fn prove(&self, w: Witness, _srs: &Srs, release: ReleaseFn<'_>) -> Result<(Proof<Bls12>, ProveTimings), BackendError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.deferred.lock().unwrap().push(w.record.is_some() && w.a.is_empty() && w.b.is_empty());
        // The fake witness carries its kind in the input length (set by KindTagged below).
        let kind = self.kinds.lock().unwrap().get(&w.input.len()).copied().unwrap_or(ProofKind::PorepC2);
        self.order.lock().unwrap().push(kind);
        std::thread::sleep(self.prove);
        release(self.release_bytes);
        Ok((Proof { a: G1Affine::generator(), b: G2Affine::generator(), c: G1Affine::generator() }, ProveTimings::default()))
    }
    fn prove_then(
        &self,
        w: Witness,
        srs: &Srs,
        release: ReleaseFn<'_>,
        next: Option<&Witness>,
        urgent: UrgentFn<'_>,
    ) -> Result<(Proof<Bls12>, ProveTimings), BackendError> {
        self.announced.lock().unwrap().push(next.map(|n| n.input.len()));
        let Some(fits) = self.pauses else { return self.prove(w, srs, release) };
        let kind = self.kind_of(&w);
        self.order.lock().unwrap().push(kind);
        self.events.lock().unwrap().push(format!("{kind:?} start"));
        for _ in 0..10 {
            std::thread::sleep(self.prove / 10);
            urgent(&FakeInterlude(self, fits));
        }
        self.events.lock().unwrap().push(format!("{kind:?} end"));
        Ok((Proof { a: G1Affine::generator(), b: G2Affine::generator(), c: G1Affine::generator() }, ProveTimings::default()))
    }
}

/// Wraps a statement so its witness's input length identifies its kind to the fake backend.
struct KindTagged(FakeStatement, usize);

impl Statement for KindTagged {
    fn kind(&self) -> ProofKind {
        self.0.kind
    }
    fn circuit(&self) -> CircuitId {
        self.0.circuit()
    }
    fn partitions(&self) -> usize {
        self.0.partitions
    }
    fn witness_bytes(&self) -> Bytes {
        self.0.witness_bytes()
    }
    fn synthesize(&self, p: usize) -> Result<Witness, SnarkError> {
        let mut w = self.0.synthesize(p)?;
        w.input = vec![Fr::from(0u64); self.1];
        Ok(w)
    }
    fn public_inputs(&self, p: usize) -> Result<Vec<Fr>, SnarkError> {
        self.0.public_inputs(p)
    }
    fn record(&self) -> Result<Precompiled, SnarkError> {
        self.0.record()
    }
}

struct FakeSrs(Arc<Srs>);

impl FakeSrs {
    fn new() -> FakeSrs {
        let g1 = G1Affine::generator();
        let g2 = G2Affine::generator();
        let vk = VerifyingKey::<Bls12> {
            alpha_g1: g1,
            beta_g1: g1,
            beta_g2: g2,
            gamma_g2: g2,
            delta_g1: g1,
            delta_g2: g2,
            ic: vec![g1],
        };
        let pvk = bellperson::groth16::prepare_verifying_key(&vk);
        FakeSrs(Arc::new(Srs {
            id: CircuitId("fake".into()),
            path: "/dev/null".into(),
            vk,
            pvk,
            h: vec![],
            l: vec![],
            a: vec![],
            b_g1: vec![],
            b_g2: vec![],
            loaded_at: std::time::SystemTime::now(),
        }))
    }
}

impl SrsSource for FakeSrs {
    fn get(&self, _id: &CircuitId) -> Result<(Arc<Srs>, Duration), SnarkError> {
        Ok((self.0.clone(), Duration::ZERO))
    }
    fn resident_bytes(&self) -> u64 {
        0
    }
}

struct Rig {
    engine: Arc<Engine>,
    order: Arc<Mutex<Vec<ProofKind>>>,
    announced: Arc<Mutex<Vec<Option<usize>>>>,
}

fn rig(budget: u64, parallelism: u32, prove: Duration) -> Rig {
    let order = Arc::new(Mutex::new(vec![]));
    let kinds = Arc::new(Mutex::new(
        [(1usize, ProofKind::PorepC2), (2, ProofKind::WinningPost), (3, ProofKind::WindowPost)].into_iter().collect(),
    ));
    let announced = Arc::new(Mutex::new(vec![]));
    let backend =
        FakeBackend { order: order.clone(), kinds, announced: announced.clone(), ..FakeBackend::porep(prove, false) };
    let engine = fake_engine(budget, parallelism, vec![Arc::new(backend)]);
    Rig { engine, order, announced }
}

/// An engine with the default settings over `backends`, a fixed witness budget, the fake
/// parameters and a verifier that accepts every proof.
fn fake_engine(budget: u64, parallelism: u32, backends: Vec<Arc<dyn ProvingBackend>>) -> Arc<Engine> {
    Engine::start(
        EngineSettings::from_config(&snarkd::config::Config::default()),
        Sizing::derive(snarkd::engine::WitnessBudget::fixed(Bytes(budget), "test"), parallelism),
        backends,
        Arc::new(FakeSrs::new()),
        Arc::new(|_, _, _| Ok(true)),
    )
}

fn statement(kind: ProofKind, partitions: usize, bytes: u64, synth: Duration) -> Box<dyn Statement> {
    let tag = match kind {
        ProofKind::WinningPost => 2,
        ProofKind::WindowPost => 3,
        _ => 1,
    };
    Box::new(KindTagged(FakeStatement { kind, partitions, bytes, synth, dropped: None }, tag))
}

fn wait_done(engine: &Engine, id: &snarkd::engine::JobId, timeout: Duration) -> snarkd::engine::JobInfo {
    let deadline = Instant::now() + timeout;
    loop {
        let info = engine.job(id).unwrap();
        if info.state.is_terminal() {
            return info;
        }
        assert!(Instant::now() < deadline, "job {id} not done within {timeout:?}: {info:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn winning_post_overtakes_queued_porep_partitions() {
    let r = rig(1 << 30, 2, Duration::from_millis(150));
    let porep = r.engine.submit(statement(ProofKind::PorepC2, 6, 1024, Duration::from_millis(5)), SubmitOptions::default()).unwrap();
    // Wait until the device is busy and PoRep partitions are queued behind it.
    let deadline = Instant::now() + Duration::from_secs(5);
    while r.order.lock().unwrap().is_empty() {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(2));
    }
    std::thread::sleep(Duration::from_millis(30));
    let submitted = Instant::now();
    let winning = r.engine.submit(statement(ProofKind::WinningPost, 1, 1024, Duration::from_millis(5)), SubmitOptions::default()).unwrap();
    let w = wait_done(&r.engine, &winning.job_id, Duration::from_secs(10));
    let latency = submitted.elapsed();
    let p = wait_done(&r.engine, &porep.job_id, Duration::from_secs(10));
    assert_eq!((w.state, p.state), (JobState::Done, JobState::Done));
    let order = r.order.lock().unwrap().clone();
    assert_eq!(order[0], ProofKind::PorepC2);
    assert_eq!(order[1], ProofKind::WinningPost, "WinningPoSt must start before every queued PoRep partition: {order:?}");
    // One in-flight PoRep partition (150 ms) plus its own proof (150 ms), with slack for a loaded CI machine.
    assert!(latency < Duration::from_millis(900), "WinningPoSt latency {latency:?}");
    // The priority lane takes no lookahead slot, so its proof must not give one back: the count
    // returns to zero and later normal jobs still get slots.
    assert_eq!(r.engine.status().lookahead.used, 0);
    let next = r.engine.submit(statement(ProofKind::PorepC2, 2, 1024, Duration::from_millis(5)), SubmitOptions::default()).unwrap();
    assert_eq!(wait_done(&r.engine, &next.job_id, Duration::from_secs(10)).state, JobState::Done);
    assert_eq!(r.engine.status().lookahead.used, 0);
    r.engine.shutdown();
}

/// A PoRep of three 600 ms partitions on a device that pauses a proof after each tenth of it
/// (when `fits`), and a WinningPoSt submitted once the first partition is on the device: the
/// events in order, the WinningPoSt's latency and the PoRep's device time.
/// `pause_for_critical` is set to its first value before the PoRep and to its second (as a
/// reload would) just before the WinningPoSt.
fn winning_during_a_pausable_partition(fits: bool, ooms: usize, pause_for_critical: [bool; 2]) -> (Vec<String>, Duration, Duration) {
    let prove = Duration::from_millis(600);
    let kinds = Arc::new(Mutex::new([(1usize, ProofKind::PorepC2), (2, ProofKind::WinningPost)].into_iter().collect()));
    let backend = FakeBackend { kinds, pauses: Some(fits), interlude_ooms: AtomicUsize::new(ooms), ..FakeBackend::porep(prove, true) };
    let events = backend.events.clone();
    let engine = fake_engine(1 << 30, 2, vec![Arc::new(backend)]);
    let mut config = snarkd::config::Config::default();
    config.proving.pause_for_critical = pause_for_critical[0];
    engine.apply_settings(EngineSettings::from_config(&config), None);
    let porep = engine.submit(statement(ProofKind::PorepC2, 3, 1024, Duration::from_millis(5)), SubmitOptions::default()).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while events.lock().unwrap().is_empty() {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(2));
    }
    std::thread::sleep(Duration::from_millis(100));
    config.proving.pause_for_critical = pause_for_critical[1];
    engine.apply_settings(EngineSettings::from_config(&config), None);
    let submitted = Instant::now();
    let winning = engine.submit(statement(ProofKind::WinningPost, 1, 1024, Duration::from_millis(5)), SubmitOptions::default()).unwrap();
    let w = wait_done(&engine, &winning.job_id, Duration::from_secs(10));
    let latency = submitted.elapsed();
    let p = wait_done(&engine, &porep.job_id, Duration::from_secs(10));
    assert_eq!((w.state, p.state), (JobState::Done, JobState::Done));
    engine.shutdown();
    let events = events.lock().unwrap().clone();
    (events, latency, p.timings.prove)
}

#[test]
fn a_winning_post_is_proved_between_two_steps_of_a_porep_partition() {
    let (events, latency, porep_device) = winning_during_a_pausable_partition(true, 0, [true, true]);
    assert_eq!(events[..3], ["PorepC2 start", "WinningPost between", "PorepC2 end"], "{events:?}");
    // a tenth of a partition to the next pause, its own tenth, and its synthesis: well inside
    // the 500 ms the partition had left (slack for a loaded CI machine)
    assert!(latency < Duration::from_millis(450), "WinningPoSt latency {latency:?}");
    // the pause is the WinningPoSt's device time, not the PoRep's: three partitions of 600 ms
    assert!(porep_device < Duration::from_millis(1800 + 50), "PoRep device time {porep_device:?}");
}

#[test]
fn running_out_of_memory_beside_a_paused_partition_retries_without_counting_against_the_device() {
    // twice: an out-of-memory counted against the device would exclude it the second time, and
    // with no other device the WinningPoSt would fail
    let (events, _, _) = winning_during_a_pausable_partition(true, 2, [true, true]);
    let winning: Vec<_> = events.iter().filter(|e| e.starts_with("WinningPost")).collect();
    assert_eq!(winning[..2], ["WinningPost out of memory between", "WinningPost out of memory between"], "{events:?}");
    assert!(winning[2] == "WinningPost between" || winning[2] == "WinningPost start", "{events:?}");
}

#[test]
fn a_winning_post_that_does_not_fit_beside_the_paused_partition_waits_for_it() {
    let (events, latency, _) = winning_during_a_pausable_partition(false, 0, [true, true]);
    assert_eq!(events[..3], ["PorepC2 start", "PorepC2 end", "WinningPost start"], "{events:?}");
    assert!(latency > Duration::from_millis(400), "WinningPoSt latency {latency:?}");
}

/// Off from the start, or turned off (as by a reload) while the partition is on the device.
#[test]
fn with_pause_for_critical_off_a_winning_post_waits_for_the_partition_even_when_it_fits() {
    for pause_for_critical in [[false, false], [true, false]] {
        let (events, latency, _) = winning_during_a_pausable_partition(true, 0, pause_for_critical);
        assert_eq!(events[..3], ["PorepC2 start", "PorepC2 end", "WinningPost start"], "{pause_for_critical:?}: {events:?}");
        assert!(latency > Duration::from_millis(400), "{pause_for_critical:?}: WinningPoSt latency {latency:?}");
    }
}

#[test]
fn a_reload_that_turns_the_pause_on_applies_to_the_partition_on_the_device() {
    let (events, latency, _) = winning_during_a_pausable_partition(true, 0, [false, true]);
    assert_eq!(events[..3], ["PorepC2 start", "WinningPost between", "PorepC2 end"], "{events:?}");
    assert!(latency < Duration::from_millis(450), "WinningPoSt latency {latency:?}");
}

#[test]
fn the_device_is_told_the_next_partition_while_it_proves_one() {
    let r = rig(1 << 30, 2, Duration::from_millis(60));
    let porep = r.engine.submit(statement(ProofKind::PorepC2, 6, 1024, Duration::from_millis(5)), SubmitOptions::default()).unwrap();
    assert_eq!(wait_done(&r.engine, &porep.job_id, Duration::from_secs(10)).state, JobState::Done);
    let announced = r.announced.lock().unwrap().clone();
    assert_eq!(announced.len(), 6);
    // synthesis (5 ms) outruns proving (60 ms): from the first proof on, the next partition is
    // waiting and is announced; the last has none after it
    assert!(announced[..5].iter().filter(|n| n.is_some()).count() >= 4, "{announced:?}");
    assert_eq!(announced[5], None);
    r.engine.shutdown();
}

#[test]
fn witnesses_stay_within_lookahead_and_budget_under_a_slow_device() {
    let budget = 10 * 1024;
    let r = rig(budget, 2, Duration::from_millis(40));
    let lookahead_limit = r.engine.status().lookahead.limit;
    let mut ids = vec![];
    for _ in 0..3 {
        ids.push(r.engine.submit(statement(ProofKind::PorepC2, 8, 2048, Duration::from_millis(4)), SubmitOptions::default()).unwrap().job_id);
    }
    let mut max_used = 0;
    let mut max_reserved = 0;
    while ids.iter().any(|id| !r.engine.job(id).unwrap().state.is_terminal()) {
        let s = r.engine.status();
        assert!(s.lookahead.used <= s.lookahead.limit, "lookahead {} > {}", s.lookahead.used, s.lookahead.limit);
        assert!(s.budget.reserved <= s.budget.limit, "reserved {} > limit {}", s.budget.reserved, s.budget.limit);
        max_used = max_used.max(s.lookahead.used);
        max_reserved = max_reserved.max(s.budget.reserved.get());
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(max_used >= 2, "synthesis ran ahead of the device (max lookahead used {max_used})");
    assert!(r.engine.status().lookahead.peak <= lookahead_limit);
    assert!(max_reserved <= budget);
    assert_eq!(r.engine.status().budget.reserved, Bytes(0));
    r.engine.shutdown();
}

#[test]
fn synthesis_overlaps_proving() {
    let n = 16;
    let step = Duration::from_millis(60);
    let r = rig(1 << 30, 1, step);
    let started = Instant::now();
    let id = r.engine.submit(statement(ProofKind::PorepC2, n, 1024, step), SubmitOptions::default()).unwrap().job_id;
    let info = wait_done(&r.engine, &id, Duration::from_secs(30));
    let elapsed = started.elapsed();
    assert_eq!(info.state, JobState::Done);
    let bound = step.mul_f64(n as f64 * 1.15);
    assert!(elapsed <= bound, "{n} items took {elapsed:?}; overlapped bound {bound:?}, serialized would be {:?}", step * 2 * n as u32);
    r.engine.shutdown();
}

#[test]
fn cancel_frees_reservations_of_queued_and_running_jobs() {
    let r = rig(1 << 20, 1, Duration::from_millis(300));
    let running = r.engine.submit(statement(ProofKind::PorepC2, 4, 4096, Duration::from_millis(5)), SubmitOptions::default()).unwrap();
    let queued = r.engine.submit(statement(ProofKind::SnapDeals, 2, 4096, Duration::from_millis(5)), SubmitOptions::default()).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    assert!(r.engine.status().budget.reserved.get() > 0);
    let q = r.engine.cancel(&queued.job_id).unwrap();
    // the state the cancel met (what Curio's CancelProof reports as was_running)
    let (c, found) = r.engine.cancel_from(&running.job_id).unwrap();
    assert_eq!((q.state, c.state, found), (JobState::Cancelled, JobState::Cancelled, JobState::Running));
    let deadline = Instant::now() + Duration::from_secs(5);
    while r.engine.status().budget.reserved.get() != 0 {
        assert!(Instant::now() < deadline, "reservations not freed: {:?}", r.engine.status().budget);
        std::thread::sleep(Duration::from_millis(5));
    }
    let e = snarkd_await_err(&r.engine, &running.job_id);
    assert_eq!(e.code, ErrorCode::Cancelled);
    // a finished job is left as it was
    let done = r.engine.submit(statement(ProofKind::WinningPost, 1, 4096, Duration::from_millis(5)), SubmitOptions::default()).unwrap();
    assert_eq!(wait_done(&r.engine, &done.job_id, Duration::from_secs(10)).state, JobState::Done);
    let (after, found) = r.engine.cancel_from(&done.job_id).unwrap();
    assert_eq!((after.state, found), (JobState::Done, JobState::Done));
    r.engine.shutdown();
}

fn snarkd_await_err(engine: &Engine, id: &snarkd::engine::JobId) -> SnarkError {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    match rt.block_on(engine.await_job(id, Some(Duration::from_secs(1)))) {
        Err(e) => e,
        Ok(_) => panic!("cancelled job must return its error"),
    }
}

#[test]
fn queue_limits_and_idempotent_request_ids() {
    let r = rig(1 << 30, 1, Duration::from_millis(200));
    let opts = |rid: &str| SubmitOptions { request_id: Some(rid.into()), priority: None };
    let a = r.engine.submit(statement(ProofKind::WinningPost, 1, 1, Duration::ZERO), opts("w-1")).unwrap();
    let again = r.engine.submit(statement(ProofKind::WinningPost, 1, 1, Duration::ZERO), opts("w-1")).unwrap();
    assert_eq!(a.job_id, again.job_id, "a resubmission returns the existing job");
    for i in 2..=4 {
        r.engine.submit(statement(ProofKind::WinningPost, 1, 1, Duration::ZERO), opts(&format!("w-{i}"))).unwrap();
    }
    // Default winning_post limit is 4.
    let e = r.engine.submit(statement(ProofKind::WinningPost, 1, 1, Duration::ZERO), opts("w-5")).unwrap_err();
    assert_eq!(e.code, ErrorCode::QueueFull);
    // Other kinds are unaffected.
    r.engine.submit(statement(ProofKind::PorepC2, 1, 1, Duration::ZERO), SubmitOptions::default()).unwrap();
    r.engine.shutdown();
}

#[test]
fn an_item_bigger_than_the_budget_fails_naming_both_figures() {
    let r = rig(1 << 20, 1, Duration::ZERO);
    let e = r.engine.submit(statement(ProofKind::PorepC2, 1, 8 << 20, Duration::ZERO), SubmitOptions::default()).unwrap_err();
    assert!(e.message.contains("8.0 MiB") && e.message.contains("1.0 MiB"), "{}", e.message);
    r.engine.shutdown();
}

#[test]
fn metrics_parse_as_prometheus_text() {
    let r = rig(1 << 30, 1, Duration::from_millis(1));
    let id = r.engine.submit(statement(ProofKind::WindowPost, 1, 1, Duration::ZERO), SubmitOptions::default()).unwrap().job_id;
    wait_done(&r.engine, &id, Duration::from_secs(5));
    let text = r.engine.metrics();
    let lines = text.lines().map(|l| Ok::<_, std::io::Error>(l.to_string()));
    let scrape = prometheus_parse::Scrape::parse(lines).expect("valid Prometheus text");
    assert!(scrape.samples.iter().any(|s| s.metric == "snarkd_jobs_total"
        && s.labels.get("kind") == Some("window_post")
        && s.labels.get("outcome") == Some("ok")));
    assert!(scrape.samples.iter().any(|s| s.metric == "snarkd_budget_limit_bytes"));
    assert!(scrape.samples.iter().any(|s| s.metric.starts_with("snarkd_stage_seconds")));
    r.engine.shutdown();
}

#[test]
fn reservations_grow_to_the_measured_witness_when_the_estimate_falls_short() {
    let r = rig(42_000, 1, Duration::from_millis(1));
    // Estimated at 16 bytes, but each witness carries 1000 inputs: 32,000 bytes.
    let short = || Box::new(KindTagged(FakeStatement { kind: ProofKind::PorepC2, partitions: 1, bytes: 16, synth: Duration::ZERO, dropped: None }, 1000));
    let first = r.engine.submit(short(), SubmitOptions::default()).unwrap();
    assert_eq!(wait_done(&r.engine, &first.job_id, Duration::from_secs(10)).state, JobState::Done);
    let s = r.engine.status();
    assert_eq!(s.estimates.len(), 1, "{:?}", s.estimates);
    assert_eq!(s.estimates[0].measured_peak.get(), 32_000);
    assert_eq!(s.estimates[0].reserve.get(), 36_000);
    assert_eq!(s.budget.reserved.get(), 0);
    // The next job of that circuit reserves 36,000 bytes: it fits in 42,000 (less the headroom) but not in 30,000.
    let second = r.engine.submit(short(), SubmitOptions::default()).unwrap();
    assert_eq!(wait_done(&r.engine, &second.job_id, Duration::from_secs(10)).state, JobState::Done);
    r.engine.apply_settings(EngineSettings::from_config(&snarkd::config::Config::default()), Some(snarkd::engine::WitnessBudget::fixed(Bytes(30_000), "test")));
    let e = r.engine.submit(short(), SubmitOptions::default()).unwrap_err();
    assert_eq!(e.code, ErrorCode::BadInput, "{e}");
    assert!(e.message.contains("36000") || e.message.contains("35.2 KiB"), "names the refined figure: {e}");
    r.engine.shutdown();
}

#[test]
fn status_lists_each_device_with_its_memory_and_current_job() {
    let r = rig(1 << 30, 1, Duration::from_millis(400));
    let job = r.engine.submit(statement(ProofKind::PorepC2, 1, 16, Duration::ZERO), SubmitOptions::default()).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let device = loop {
        let d = r.engine.status().devices.remove(0);
        if d.current_job.is_some() || Instant::now() > deadline {
            break d;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    assert_eq!(device.current_job.as_deref(), Some(job.job_id.to_string().as_str()), "{device:?}");
    assert_eq!(device.memory, Some(DeviceMemory { free: Bytes(100 << 30), total: Bytes(141 << 30) }));
    let json = serde_json::to_value(&device).unwrap();
    assert_eq!(json["memory"]["total"], 141u64 << 30, "{json}");
    r.engine.shutdown();
}

/// Parameters that "load" on their first use: resident bytes appear only then.
struct LoadingSrs {
    inner: FakeSrs,
    loaded: std::sync::atomic::AtomicBool,
    bytes: u64,
}

impl SrsSource for LoadingSrs {
    fn get(&self, id: &CircuitId) -> Result<(Arc<Srs>, Duration), SnarkError> {
        let first = !self.loaded.swap(true, Ordering::SeqCst);
        let (srs, _) = self.inner.get(id)?;
        Ok((srs, if first { Duration::from_millis(1) } else { Duration::ZERO }))
    }
    fn resident_bytes(&self) -> u64 {
        if self.loaded.load(Ordering::SeqCst) { self.bytes } else { 0 }
    }
}

#[test]
fn parameters_loaded_on_first_use_come_out_of_a_budget_derived_from_memory() {
    let backend = FakeBackend::porep(Duration::from_millis(1), false);
    let memory = snarkd::systemd::cgroup::MemoryLimit { bytes: Bytes(10 << 20), source: "test cgroup".into() };
    let budget = snarkd::engine::budget::witness_budget(None, &memory, Bytes(1 << 20));
    let config = snarkd::config::Config::default();
    let srs = Arc::new(LoadingSrs { inner: FakeSrs::new(), loaded: false.into(), bytes: 4 << 20 });
    let engine = Engine::start(
        EngineSettings::from_config(&config),
        Sizing::derive(budget, 1),
        vec![Arc::new(backend)],
        srs,
        Arc::new(|_, _, _| Ok(true)),
    );
    assert_eq!(engine.status().budget.limit, Bytes(9 << 20), "nothing resident yet: memory minus reserve");
    let job = engine.submit(statement(ProofKind::PorepC2, 1, 1 << 20, Duration::ZERO), SubmitOptions::default()).unwrap();
    assert_eq!(wait_done(&engine, &job.job_id, Duration::from_secs(10)).state, JobState::Done);
    assert_eq!(engine.status().budget.limit, Bytes(5 << 20), "the 4 MiB loaded for the job come out of the budget");
    engine.shutdown();
}

#[test]
fn a_retained_job_keeps_its_result_but_not_its_inputs() {
    let r = rig(1 << 20, 1, Duration::from_millis(1));
    let fake = |synth_ms, dropped| FakeStatement {
        kind: ProofKind::PorepC2,
        partitions: 2,
        bytes: 4096,
        synth: Duration::from_millis(synth_ms),
        dropped: Some(dropped),
    };
    let flag = || Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (done_flag, cancelled_flag) = (flag(), flag());
    let done = r.engine.submit(Box::new(fake(5, done_flag.clone())), SubmitOptions::default()).unwrap();
    assert_eq!(wait_done(&r.engine, &done.job_id, Duration::from_secs(10)).state, JobState::Done);
    let cancelled = r.engine.submit(Box::new(fake(200, cancelled_flag.clone())), SubmitOptions::default()).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    r.engine.cancel(&cancelled.job_id).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !(done_flag.load(Ordering::SeqCst) && cancelled_flag.load(Ordering::SeqCst)) {
        assert!(Instant::now() < deadline, "inputs still held: done {done_flag:?}, cancelled {cancelled_flag:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(r.engine.job(&done.job_id).unwrap().state, JobState::Done, "the job itself is retained");
    assert!(r.engine.job(&done.job_id).unwrap().partitions == 2);
    r.engine.shutdown();
}

/// Two idle devices, one holding the circuit's bases: one-partition jobs proved one after another
/// all go to it; a burst queues it deeper than an upload costs, and the other device takes some.
#[test]
fn placement_prefers_the_device_that_holds_the_circuit() {
    let backend = |holds| Arc::new(FakeBackend::porep(Duration::from_millis(150), holds));
    let (cold, warm) = (backend(false), backend(true));
    let engine = fake_engine(1 << 30, 4, vec![cold.clone(), warm.clone()]);
    for _ in 0..3 {
        let job = engine.submit(statement(ProofKind::PorepC2, 1, 16, Duration::ZERO), SubmitOptions::default()).unwrap();
        assert_eq!(wait_done(&engine, &job.job_id, Duration::from_secs(10)).state, JobState::Done);
    }
    assert_eq!((cold.calls.load(Ordering::SeqCst), warm.calls.load(Ordering::SeqCst)), (0, 3));
    let job = engine.submit(statement(ProofKind::PorepC2, 12, 16, Duration::ZERO), SubmitOptions::default()).unwrap();
    assert_eq!(wait_done(&engine, &job.job_id, Duration::from_secs(10)).state, JobState::Done);
    assert!(cold.calls.load(Ordering::SeqCst) > 0, "a queue deeper than an upload's cost spills over");
    assert!(warm.calls.load(Ordering::SeqCst) > cold.calls.load(Ordering::SeqCst));
    engine.shutdown();
}

/// A device without the circuit's bases is asked to move them while the first witness is
/// synthesized, before its first proof; one that holds them is not asked.
#[test]
fn a_device_moves_the_bases_while_the_first_witness_is_synthesized() {
    let backend = |holds| Arc::new(FakeBackend::porep(Duration::from_millis(20), holds));
    for holds in [false, true] {
        let device = backend(holds);
        let engine = fake_engine(1 << 30, 2, vec![device.clone()]);
        let job = engine.submit(statement(ProofKind::PorepC2, 2, 16, Duration::from_millis(300)), SubmitOptions::default()).unwrap();
        assert_eq!(wait_done(&engine, &job.job_id, Duration::from_secs(10)).state, JobState::Done);
        let warmed = device.warmed.lock().unwrap().clone();
        if holds {
            assert!(warmed.is_empty(), "a device that holds the bases was asked to move them: {warmed:?}");
        } else {
            assert_eq!(warmed.first(), Some(&0), "the bases were not moved before the first proof: {warmed:?}");
        }
        engine.shutdown();
    }
}

/// x_{i+1} = x_i · x_i, a real circuit small enough to record and synthesize in a test.
struct Squares(u64);

impl bellperson::Circuit<Fr> for Squares {
    fn synthesize<CS: bellperson::ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), bellperson::SynthesisError> {
        let mut v = Fr::from(self.0);
        let mut x = cs.alloc(|| "x", || Ok(v))?;
        for _ in 0..100 {
            let next = v * v;
            let y = cs.alloc(|| "y", || Ok(next))?;
            cs.enforce(|| "square", |lc| lc + x, |lc| lc + x, |lc| lc + y);
            (x, v) = (y, next);
        }
        Ok(())
    }
}

/// A statement over [`Squares`], so that the engine records it and synthesizes under the record.
struct Recordable;

impl Statement for Recordable {
    fn kind(&self) -> ProofKind {
        ProofKind::PorepC2
    }
    fn circuit(&self) -> CircuitId {
        CircuitId("fake".into())
    }
    fn partitions(&self) -> usize {
        3
    }
    fn witness_bytes(&self) -> Bytes {
        Bytes(64 << 10)
    }
    fn synthesize(&self, p: usize) -> Result<Witness, SnarkError> {
        snarkd::groth16::synthesize(Squares(p as u64 + 2)).map_err(|e| SnarkError::internal(e.to_string()))
    }
    fn public_inputs(&self, _partition: usize) -> Result<Vec<Fr>, SnarkError> {
        Ok(vec![])
    }
    fn record(&self) -> Result<Precompiled, SnarkError> {
        Precompiled::record(Squares(0)).map_err(|e| SnarkError::internal(e.to_string()))
    }
}

#[test]
fn a_device_that_makes_a_and_b_from_the_record_gets_witnesses_without_them() {
    for fills in [false, true] {
        let backend = Arc::new(FakeBackend { fills, ..FakeBackend::porep(Duration::ZERO, false) });
        let engine = fake_engine(1 << 30, 2, vec![backend.clone()]);
        let record = engine.precompile(Arc::new(Recordable)).expect("recorded");
        assert_eq!(record.constraints(), 100);
        let job = engine.submit(Box::new(Recordable), SubmitOptions::default()).unwrap();
        assert_eq!(wait_done(&engine, &job.job_id, Duration::from_secs(10)).state, JobState::Done);
        assert_eq!(*backend.deferred.lock().unwrap(), vec![fills; 3], "deferred only to a device that fills");
        assert_eq!(engine.status().budget.reserved.get(), 0, "every reservation returned");
        engine.shutdown();
    }
}
