//! The last stages of a job: once every partition is proved, its proofs are put in partition
//! order, verified against the resident verifying key with the statement's public inputs, and
//! serialized; only then does the job complete. A proof that does not verify is never returned.

use std::sync::Arc;
use std::time::Instant;

use blstrs::Bls12;

use super::job::{Job, JobState, Stage};
use super::metrics::Metrics;
use super::pipeline::{fail_job, log_stage};
use super::Verifier;
use crate::error::{ErrorCode, SnarkError};
use crate::groth16::verify::proofs_to_bytes;
use crate::groth16::Proof;
use crate::srs::Srs;

/// Verifies every partition proof against the verifying key with the statement's public inputs.
pub fn groth16_verifier() -> Verifier {
    Arc::new(|statement, srs, proofs| {
        for (partition, proof) in proofs.iter().enumerate() {
            let inputs = statement.public_inputs(partition)?;
            if !crate::groth16::verify(&srs.pvk, proof, &inputs)? {
                return Ok(false);
            }
        }
        Ok(true)
    })
}

/// Assembles the partition proofs in order, verifies them and completes the job.
pub(crate) fn finish(job: &Arc<Job>, srs: &Srs, verify: bool, verifier: &Verifier, metrics: &Metrics) {
    let proofs: Vec<Proof<Bls12>> = {
        let mut p = job.progress.lock().unwrap();
        p.stage = Stage::Verify;
        p.proofs.iter_mut().map(|x| x.take().expect("every partition proved")).collect()
    };
    if verify {
        log_stage(job, Stage::Verify, "", "");
        let started = Instant::now();
        let ok = match job.statement() {
            Some(statement) => verifier(statement.as_ref(), srs, &proofs),
            None => return, // ended (cancelled or failed) while its last partition was proved
        };
        let took = started.elapsed();
        metrics.observe_stage(job.kind, Stage::Verify, took);
        job.progress.lock().unwrap().timings.verify = took;
        match ok {
            Ok(true) => {}
            Ok(false) => {
                return fail_job(
                    job,
                    SnarkError::new(
                        ErrorCode::VerificationFailed,
                        "the computed proof does not verify against the verifying key; no proof is returned",
                    ),
                    metrics,
                )
            }
            Err(e) => return fail_job(job, e, metrics),
        }
    }
    let bytes = proofs_to_bytes(&proofs);
    let mut p = job.progress.lock().unwrap();
    if p.state.is_terminal() {
        return;
    }
    p.proof_bytes = Some(bytes);
    p.stage = Stage::Done;
    job.set_state(&mut p, JobState::Done);
    let t = p.timings;
    drop(p);
    metrics.count_outcome(job.kind, super::metrics::OK);
    metrics.observe_stage(job.kind, Stage::Done, t.total);
    tracing::info!(
        job_id = %job.id,
        kind = job.kind.name(),
        stage = Stage::Done.name(),
        device = "",
        "job {} {} done in {:.3} s (queue {:.3}, params {:.3}, synthesis {:.3}, prove {:.3} [ntt {:.3}, msm {:.3}], verify {:.3})",
        job.id,
        job.kind,
        t.total.as_secs_f64(),
        t.queue.as_secs_f64(),
        t.params_load.as_secs_f64(),
        t.synthesis.as_secs_f64(),
        t.prove.as_secs_f64(),
        t.prove_ntt.as_secs_f64(),
        t.prove_msm.as_secs_f64(),
        t.verify.as_secs_f64(),
    );
}