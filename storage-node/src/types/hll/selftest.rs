//! PFSELFTEST: the checks Redis runs on its own HLL code, run on this one.
//!
//! 1. Register access: 1,000 rounds of random values written to every dense register
//!    must read back unchanged (neighbours sharing a byte must not disturb each other).
//! 2. Estimates: ten million distinct elements go into a dense HLL and into one that
//!    starts sparse. At 1, 10, 100, ... elements the sparse one must still be sparse
//!    while the count is below half of `hll-sparse-max-bytes`, both must give the same
//!    count, and the count must be within six standard errors of the truth (within 1 at
//!    10 elements).
//!
//! A failure is described in Redis's words (`TESTFAILED ...`).

use rand::Rng;

use super::{add, count, dense, encoding, new_sparse, Encoding, DENSE_LEN, HEADER_LEN};
use super::{REGISTERS, REGISTER_MAX};

const ACCESS_ROUNDS: usize = 1000;
const ELEMENTS: u64 = 10_000_000;

/// Runs both checks; the error is the failure's description.
pub fn run(sparse_max_bytes: usize, rng: &mut impl Rng) -> Result<(), String> {
    check_register_access(rng)?;
    check_estimates(sparse_max_bytes, rng.gen())
}

fn check_register_access(rng: &mut impl Rng) -> Result<(), String> {
    let mut registers = vec![0u8; DENSE_LEN - HEADER_LEN];
    let mut expected = vec![0u8; REGISTERS];
    for _ in 0..ACCESS_ROUNDS {
        for (index, value) in expected.iter_mut().enumerate() {
            *value = rng.gen::<u8>() & REGISTER_MAX;
            dense::put(&mut registers, index, *value);
        }
        for (index, &value) in expected.iter().enumerate() {
            let read = dense::get(&registers, index);
            if read != value {
                return Err(format!(
                    "TESTFAILED Register {index} should be {value} but is {read}"
                ));
            }
        }
    }
    Ok(())
}

fn check_estimates(sparse_max_bytes: usize, seed: u64) -> Result<(), String> {
    let mut dense_hll = new_sparse();
    super::to_dense(&mut dense_hll).map_err(|_| "TESTFAILED dense conversion".to_string())?;
    let mut hll = new_sparse();
    let relative_error = 1.04 / (REGISTERS as f64).sqrt();
    let mut checkpoint = 1u64;
    for n in 1..=ELEMENTS {
        let element = (n ^ seed).to_le_bytes();
        let corrupt = |_| "TESTFAILED corrupt HLL".to_string();
        add(&mut dense_hll, &element, sparse_max_bytes).map_err(corrupt)?;
        add(&mut hll, &element, sparse_max_bytes).map_err(corrupt)?;
        if n != checkpoint {
            continue;
        }
        if n < (sparse_max_bytes / 2) as u64 && encoding(&hll) != Ok(Encoding::Sparse) {
            return Err("TESTFAILED sparse encoding not used".into());
        }
        let dense_count = count(&dense_hll).map_err(corrupt)?;
        if count(&hll).map_err(corrupt)? != dense_count {
            return Err("TESTFAILED dense/sparse disagree".into());
        }
        let error = checkpoint.abs_diff(dense_count);
        // Collisions at 10 elements are likely enough to allow an error of 1 there.
        let allowed = if n == 10 {
            1
        } else {
            (relative_error * 6.0 * checkpoint as f64).ceil() as u64
        };
        if error > allowed {
            return Err(format!(
                "TESTFAILED Too big error. card:{checkpoint} abserr:{error}"
            ));
        }
        checkpoint *= 10;
    }
    Ok(())
}
