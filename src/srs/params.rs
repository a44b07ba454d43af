//! Reads the standard `v28-<id>.params` file (bellperson's `Parameters::write` layout) into a
//! resident [`Srs`], decoding points in parallel.
//!
//! The file is streamed section by section in bounded batches, so peak memory is the decoded
//! points plus one batch rather than twice the file. Every length is checked against the bytes
//! that remain before anything is allocated: a damaged file yields an error naming the path and
//! offset, never a panic, a huge allocation, or parameters that make wrong proofs.

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::Path;
use std::time::SystemTime;

use blstrs::{Bls12, G1Affine, G2Affine};
use group::prime::PrimeCurveAffine;
use rayon::prelude::*;

use super::{CircuitId, Srs};
use crate::error::{ErrorCode, SnarkError};
use bellperson::groth16::VerifyingKey;

const G1_BYTES: usize = 96;
const G2_BYTES: usize = 192;
/// Points read and decoded per batch (96 MiB of G1).
const BATCH_POINTS: usize = 1 << 20;

/// How much to trust the points of a parameter file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PointCheck {
    /// On-curve and subgroup checks for every point (bellperson's `checked = true`); catches any
    /// corruption but takes tens of minutes for a 32 GiB PoRep file.
    Full,
    /// Every point must lie on the curve: cheap, and a corrupted coordinate is caught at load
    /// with overwhelming probability. Whatever slips through cannot produce a wrong proof,
    /// because every proof is verified before it is returned.
    #[default]
    OnCurve,
    /// Decode without the checks (for files already verified by their digest, e.g. by paramfetch).
    None,
}

/// Loads `dir/v28-<id>.params`; when `dir/v28-<id>.vk` exists it must hold the same key.
pub fn load(dir: &Path, id: &CircuitId, check: PointCheck) -> Result<Srs, SnarkError> {
    let path = dir.join(id.params_file());
    let file = File::open(&path).map_err(|e| open_error(&path, e))?;
    let size = file.metadata().map_err(|e| open_error(&path, e))?.len();
    let mut r = Reader {
        inner: BufReader::with_capacity(1 << 22, file),
        path: &path,
        offset: 0,
        size,
        check,
    };

    let vk = r.vk()?;
    let h = r.g1_section("h")?;
    let l = r.g1_section("l")?;
    let a = r.g1_section("a")?;
    let b_g1 = r.g1_section("b_g1")?;
    let b_g2 = r.g2_section("b_g2")?;
    if r.offset != size {
        return Err(r.corrupt(format!("{} bytes after the last section", size - r.offset)));
    }

    let vk_path = dir.join(id.vk_file());
    if vk_path.exists() {
        let file = File::open(&vk_path).map_err(|e| open_error(&vk_path, e))?;
        let size = file.metadata().map_err(|e| open_error(&vk_path, e))?.len();
        let mut vr = Reader {
            inner: BufReader::new(file),
            path: &vk_path,
            offset: 0,
            size,
            check: PointCheck::Full,
        };
        if vr.vk()? != vk {
            return Err(SnarkError::new(
                ErrorCode::ParamsMissing,
                format!(
                    "{} does not match the key in {}; the two files come from different parameter sets, fetch both again",
                    vk_path.display(),
                    path.display()
                ),
            ));
        }
    }

    let pvk = bellperson::groth16::prepare_verifying_key(&vk);
    Ok(Srs {
        id: id.clone(),
        path,
        vk,
        pvk,
        h,
        l,
        a,
        b_g1,
        b_g2,
        loaded_at: SystemTime::now(),
    })
}

fn open_error(path: &Path, e: io::Error) -> SnarkError {
    let message = if e.kind() == io::ErrorKind::NotFound {
        format!(
            "parameter file {} not found; for test sector sizes generate it with `snarkctl params generate --sector-size 2KiB`, for production fetch it with `curio fetch-params` or `paramfetch`",
            path.display()
        )
    } else {
        format!("cannot read parameter file {}: {e}", path.display())
    };
    SnarkError::new(ErrorCode::ParamsMissing, message)
}

struct Reader<'a> {
    inner: BufReader<File>,
    path: &'a Path,
    /// Bytes consumed so far, for error messages and bounds checks.
    offset: u64,
    size: u64,
    check: PointCheck,
}

impl Reader<'_> {
    fn corrupt(&self, what: impl std::fmt::Display) -> SnarkError {
        corrupt(self.path, self.offset, what)
    }

    fn bytes(&mut self, buf: &mut [u8]) -> Result<(), SnarkError> {
        self.inner.read_exact(buf).map_err(|e| match e.kind() {
            io::ErrorKind::UnexpectedEof => self.corrupt(format!("file ends early ({} bytes)", self.size)),
            _ => self.corrupt(e),
        })?;
        self.offset += buf.len() as u64;
        Ok(())
    }

    /// A section length, checked against what is left of the file.
    fn len(&mut self, section: &str, point_bytes: usize) -> Result<usize, SnarkError> {
        let mut b = [0u8; 4];
        self.bytes(&mut b)?;
        let len = u32::from_be_bytes(b) as u64;
        let left = self.size - self.offset;
        if len * point_bytes as u64 > left {
            return Err(corrupt(
                self.path,
                self.offset - 4,
                format!("section {section} claims {len} points but only {left} bytes follow"),
            ));
        }
        Ok(len as usize)
    }

    /// The verifying key; its few points are always fully checked, as bellperson does.
    fn vk(&mut self) -> Result<VerifyingKey<Bls12>, SnarkError> {
        let g1 = |r: &mut Self| -> Result<G1Affine, SnarkError> {
            let mut b = [0u8; G1_BYTES];
            r.bytes(&mut b)?;
            Option::from(G1Affine::from_uncompressed(&b)).ok_or_else(|| {
                corrupt(
                    r.path,
                    r.offset - G1_BYTES as u64,
                    "verifying key point is not on the curve",
                )
            })
        };
        let g2 = |r: &mut Self| -> Result<G2Affine, SnarkError> {
            let mut b = [0u8; G2_BYTES];
            r.bytes(&mut b)?;
            Option::from(G2Affine::from_uncompressed(&b)).ok_or_else(|| {
                corrupt(
                    r.path,
                    r.offset - G2_BYTES as u64,
                    "verifying key point is not on the curve",
                )
            })
        };
        let alpha_g1 = g1(self)?;
        let beta_g1 = g1(self)?;
        let beta_g2 = g2(self)?;
        let gamma_g2 = g2(self)?;
        let delta_g1 = g1(self)?;
        let delta_g2 = g2(self)?;
        let n = self.len("ic", G1_BYTES)?;
        let mut ic = Vec::with_capacity(n);
        for _ in 0..n {
            let p = g1(self)?;
            if bool::from(p.is_identity()) {
                return Err(corrupt(
                    self.path,
                    self.offset - G1_BYTES as u64,
                    "ic point at infinity",
                ));
            }
            ic.push(p);
        }
        Ok(VerifyingKey {
            alpha_g1,
            beta_g1,
            beta_g2,
            gamma_g2,
            delta_g1,
            delta_g2,
            ic,
        })
    }

    fn g1_section(&mut self, name: &str) -> Result<Vec<G1Affine>, SnarkError> {
        let check = self.check;
        self.section(name, G1_BYTES, |b| {
            let b: &[u8; G1_BYTES] = b.try_into().expect("chunks are exact");
            match check {
                PointCheck::Full => G1Affine::from_uncompressed(b).into(),
                PointCheck::OnCurve => Option::<G1Affine>::from(G1Affine::from_uncompressed_unchecked(b))
                    .filter(|p| bool::from(p.is_on_curve())),
                PointCheck::None => G1Affine::from_uncompressed_unchecked(b).into(),
            }
        })
    }

    fn g2_section(&mut self, name: &str) -> Result<Vec<G2Affine>, SnarkError> {
        let check = self.check;
        self.section(name, G2_BYTES, |b| {
            let b: &[u8; G2_BYTES] = b.try_into().expect("chunks are exact");
            match check {
                PointCheck::Full => G2Affine::from_uncompressed(b).into(),
                PointCheck::OnCurve => Option::<G2Affine>::from(G2Affine::from_uncompressed_unchecked(b))
                    .filter(|p| bool::from(p.is_on_curve())),
                PointCheck::None => G2Affine::from_uncompressed_unchecked(b).into(),
            }
        })
    }

    /// Reads one length-prefixed section of points, decoding each batch on all threads. Points at
    /// infinity are rejected as bellperson rejects them: these queries never hold one.
    fn section<P, D>(&mut self, name: &str, point_bytes: usize, decode: D) -> Result<Vec<P>, SnarkError>
    where
        P: PrimeCurveAffine + Send,
        D: Fn(&[u8]) -> Option<P> + Sync,
    {
        let len = self.len(name, point_bytes)?;
        let mut points = Vec::with_capacity(len);
        let mut buf = vec![0u8; len.min(BATCH_POINTS) * point_bytes];
        while points.len() < len {
            let batch = (len - points.len()).min(BATCH_POINTS);
            let buf = &mut buf[..batch * point_bytes];
            let start = self.offset;
            self.bytes(buf)?;
            let decoded: Result<Vec<P>, usize> = buf
                .par_chunks_exact(point_bytes)
                .enumerate()
                .map(|(i, b)| decode(b).filter(|p| !bool::from(p.is_identity())).ok_or(i))
                .collect();
            match decoded {
                Ok(batch) => points.extend(batch),
                Err(i) => {
                    return Err(corrupt(
                        self.path,
                        start + (i * point_bytes) as u64,
                        format!("point {} of section {name} is invalid", points.len() + i),
                    ));
                }
            }
        }
        Ok(points)
    }
}

fn corrupt(path: &Path, offset: u64, what: impl std::fmt::Display) -> SnarkError {
    SnarkError::new(
        ErrorCode::ParamsMissing,
        format!(
            "parameter file {} is corrupt at offset {offset}: {what}; delete it and fetch or generate it again",
            path.display()
        ),
    )
}
