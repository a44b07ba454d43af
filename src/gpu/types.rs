//! Device-side element layouts and their exact conversions to and from blstrs types.
//!
//! The kernels read blstrs' own memory (Montgomery limbs, affine x‖y, all-zero infinity), so a
//! host slice of `Scalar` or `G1Affine` is uploaded as it is. Results come back in XYZZ
//! coordinates and are turned into blstrs Jacobian points here, with no inversion.

use blstrs::{Fp, Fp2, G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cudarc::driver::{DeviceRepr, ValidAsZeroBits};
use ff::Field;

/// An Fr element as the kernels see it: 8 × u32, Montgomery form (or canonical once converted).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DevFr(pub [u32; 8]);

/// A G1 affine point, blst layout (x ‖ y, 12 × u32 each).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DevG1Affine(pub [u32; 24]);

/// A G2 affine point, blst layout (x.c0 ‖ x.c1 ‖ y.c0 ‖ y.c1).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DevG2Affine(pub [u32; 48]);

/// A G1 point in XYZZ coordinates (X ‖ Y ‖ ZZ ‖ ZZZ), as the MSM kernels write it.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DevG1Xyzz(pub [u32; 48]);

/// A G2 point in XYZZ coordinates.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DevG2Xyzz(pub [u32; 96]);

// SAFETY: plain arrays of u32 with C layout; all-zero bytes are valid values.
unsafe impl DeviceRepr for DevFr {}
unsafe impl ValidAsZeroBits for DevFr {}
unsafe impl DeviceRepr for DevG1Affine {}
unsafe impl ValidAsZeroBits for DevG1Affine {}
unsafe impl DeviceRepr for DevG2Affine {}
unsafe impl ValidAsZeroBits for DevG2Affine {}
unsafe impl DeviceRepr for DevG1Xyzz {}
unsafe impl ValidAsZeroBits for DevG1Xyzz {}
unsafe impl DeviceRepr for DevG2Xyzz {}
unsafe impl ValidAsZeroBits for DevG2Xyzz {}

const _: () = assert!(std::mem::size_of::<Scalar>() == std::mem::size_of::<DevFr>());
const _: () = assert!(std::mem::size_of::<G1Affine>() == std::mem::size_of::<DevG1Affine>());
const _: () = assert!(std::mem::size_of::<G2Affine>() == std::mem::size_of::<DevG2Affine>());

/// Reinterprets host elements as their device layout (same bytes, smaller alignment).
pub trait AsDevice {
    type Dev;
    fn as_device(s: &[Self]) -> &[Self::Dev]
    where
        Self: Sized;
}

macro_rules! as_device {
    ($host:ty, $dev:ty) => {
        impl AsDevice for $host {
            type Dev = $dev;
            fn as_device(s: &[Self]) -> &[$dev] {
                // SAFETY: `$host` is repr(transparent) over a repr(C) blst struct of u64 limbs with
                // the same size as `$dev` (checked above); u32 alignment divides u64 alignment and
                // limbs are little-endian on every target CUDA supports.
                unsafe { std::slice::from_raw_parts(s.as_ptr() as *const $dev, s.len()) }
            }
        }
    };
}
as_device!(Scalar, DevFr);
as_device!(G1Affine, DevG1Affine);
as_device!(G2Affine, DevG2Affine);

impl DevFr {
    pub fn from_scalar(s: &Scalar) -> DevFr {
        Scalar::as_device(std::slice::from_ref(s))[0]
    }
    /// The element, read back as Montgomery limbs (the kernels never leave Montgomery form
    /// except in `fr_from_mont`, whose output is not read back).
    pub fn to_scalar(self) -> Scalar {
        let mut out = Scalar::from(0u64);
        // SAFETY: as in `as_device`, in the other direction; every 256-bit pattern the kernels
        // write is a reduced Montgomery value.
        unsafe { *(&mut out as *mut Scalar as *mut DevFr) = self };
        out
    }
}

fn fp(limbs: &[u32]) -> Fp {
    let mut l = [0u64; 6];
    for (i, w) in l.iter_mut().enumerate() {
        *w = limbs[2 * i] as u64 | (limbs[2 * i + 1] as u64) << 32;
    }
    Fp::from_raw_unchecked(l)
}

fn fp2(limbs: &[u32]) -> Fp2 {
    Fp2::new(fp(&limbs[..12]), fp(&limbs[12..24]))
}

/// XYZZ -> Jacobian with Z = ZZ·ZZZ: X_J = X·ZZ·ZZZ², Y_J = Y·ZZ³·ZZZ².
fn xyzz_to_jacobian<F: Field>(x: F, y: F, zz: F, zzz: F) -> (F, F, F) {
    let zzz2 = zzz.square();
    (x * zz * zzz2, y * zz.square() * zz * zzz2, zz * zzz)
}

impl DevG1Xyzz {
    pub fn to_projective(self) -> G1Projective {
        let l = &self.0;
        let zz = fp(&l[24..36]);
        if bool::from(zz.is_zero()) {
            return <G1Projective as group::Group>::identity();
        }
        let (x, y, z) = xyzz_to_jacobian(fp(&l[0..12]), fp(&l[12..24]), zz, fp(&l[36..48]));
        G1Projective::from_raw_unchecked(x, y, z)
    }
}

impl DevG2Xyzz {
    pub fn to_projective(self) -> G2Projective {
        let l = &self.0;
        let zz = fp2(&l[48..72]);
        if bool::from(zz.is_zero()) {
            return <G2Projective as group::Group>::identity();
        }
        let (x, y, z) = xyzz_to_jacobian(fp2(&l[0..24]), fp2(&l[24..48]), zz, fp2(&l[72..96]));
        G2Projective::from_raw_unchecked(x, y, z)
    }
}
