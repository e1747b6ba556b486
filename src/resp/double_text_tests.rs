use proptest::prelude::*;

use super::*;

/// The formatter this module replaced: Rust's exact formatting for every double. It is the
/// oracle the fast path must match byte for byte.
fn reference_g(d: f64, precision: i32) -> String {
    if d.is_infinite() {
        return if d > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if d.is_nan() {
        return "nan".into();
    }
    if d == 0.0 {
        return if d.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    let precision = precision.max(1);
    let sci = format!("{:.*e}", (precision - 1) as usize, d);
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if !(-4..precision).contains(&exponent) {
        let mantissa = trim_fraction_zeros(mantissa);
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exponent.abs())
    } else {
        let decimals = (precision - 1 - exponent).max(0) as usize;
        trim_fraction_zeros(&format!("{:.*}", decimals, d)).to_string()
    }
}

fn trim_fraction_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

fn check(d: f64) {
    assert_eq!(
        format_double(d),
        reference_g(d, 17),
        "{d:e} ({:#x})",
        d.to_bits()
    );
    assert_eq!(DoubleText::new(d).as_bytes(), reference_g(d, 17).as_bytes());
}

#[test]
fn known_texts() {
    for (d, text) in [
        (1.5, "1.5"),
        (0.1, "0.10000000000000001"),
        (3.0, "3"),
        (-42.0, "-42"),
        (1e20, "1e+20"),
        (1e16, "10000000000000000"),
        (1e17, "1e+17"),
        (1.5e-7, "1.4999999999999999e-07"),
        (0.0001, "0.0001"),
        (123456789012345678.0, "1.2345678901234568e+17"),
        // An exact tie at the 17th digit goes to the even digit, as glibc's printf does.
        (1e14 + 0.125, "100000000000000.12"),
        (1e14 + 0.375, "100000000000000.38"),
        (5e-324, "4.9406564584124654e-324"),
        (f64::MAX, "1.7976931348623157e+308"),
        (f64::INFINITY, "inf"),
        (f64::NEG_INFINITY, "-inf"),
        (f64::NAN, "nan"),
        (-0.0, "-0"),
        (0.0, "0"),
    ] {
        assert_eq!(format_double(d), text, "{d:e}");
        check(d);
    }
    assert_eq!(format_g(0.1, 14), "0.1");
    assert_eq!(format_g(2.5, 1), "2");
    assert_eq!(format_g(1e15, 14), "1e+15");
    assert_eq!(format_g(0.1, 20), "0.10000000000000000555");
}

#[test]
fn powers_of_ten_and_their_neighbours() {
    // Where the decimal exponent changes, and where rounding carries into a new digit.
    for exponent in -330..=310 {
        let Ok(d) = format!("1e{exponent}").parse::<f64>() else {
            continue;
        };
        let mut near = d;
        for _ in 0..4 {
            near = f64::from_bits(near.to_bits().saturating_sub(1));
        }
        for _ in 0..8 {
            check(near);
            check(-near);
            for precision in [1, 6, 14, 16] {
                assert_eq!(format_g(near, precision), reference_g(near, precision));
            }
            near = f64::from_bits(near.to_bits() + 1);
        }
    }
}

/// Doubles with few decimal digits (typical scores) and exact binary fractions (ties).
fn short_decimal() -> impl Strategy<Value = f64> {
    prop_oneof![
        (any::<i32>(), 0u32..12).prop_map(|(n, k)| f64::from(n) / 10f64.powi(k as i32)),
        (any::<i64>(), 0u32..70).prop_map(|(n, k)| (n >> 11) as f64 / 2f64.powi(k as i32)),
        (-1e6f64..1e6),
        (0f64..1.0),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(20_000))]

    #[test]
    fn every_bit_pattern_formats_as_before(bits in any::<u64>()) {
        check(f64::from_bits(bits));
    }

    #[test]
    fn any_double_formats_as_before(d in proptest::num::f64::ANY) {
        check(d);
    }

    #[test]
    fn short_decimals_format_as_before(d in short_decimal(), precision in 1i32..=20) {
        check(d);
        prop_assert_eq!(format_g(d, precision), reference_g(d, precision));
    }

    #[test]
    fn subnormals_format_as_before(fraction in 1u64..(1 << 52), negative in any::<bool>()) {
        let d = f64::from_bits(fraction | u64::from(negative) << 63);
        check(d);
    }

    #[test]
    fn lower_precisions_format_as_before(bits in any::<u64>(), precision in 1i32..=17) {
        let d = f64::from_bits(bits);
        prop_assert_eq!(format_g(d, precision), reference_g(d, precision));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(5_000))]

    /// The fast path is what formats the doubles scores hold (it must not quietly defer to
    /// the library for them).
    #[test]
    fn exact_arithmetic_covers_the_usual_range(
        mantissa in 1f64..10.0,
        exponent in -15i32..=37,
        precision in 1usize..=17,
    ) {
        let d = mantissa * 10f64.powi(exponent);
        prop_assert!(exact_digits(d, precision).is_some(), "{:e}", d);
    }
}
