//! Union, intersection and difference of sorted sets (plain sets count as members with
//! score 1).
//!
//! - `ZUNION numkeys key [key ...] [WEIGHTS w ...] [AGGREGATE SUM|MIN|MAX] [WITHSCORES]`,
//!   `ZINTER ...` (same options), `ZDIFF numkeys key [key ...] [WITHSCORES]` → the result
//!   in ascending order, shaped as ZRANGE replies.
//! - `ZUNIONSTORE / ZINTERSTORE destination numkeys key ... [WEIGHTS] [AGGREGATE]`,
//!   `ZDIFFSTORE destination numkeys key ...` → the size of the result stored at
//!   `destination` (an empty result deletes it).
//! - `ZINTERCARD numkeys key [key ...] [LIMIT limit]` → the size of the intersection.
//!
//! Errors as Redis: a non-integer numkeys is `ERR value is not an integer or out of range`,
//! below 1 `ERR at least 1 input key is needed for '<command>' command`, more than the
//! arguments `ERR syntax error`; `ERR weight value is not a float`; WRONGTYPE for keys that
//! are neither sets nor sorted sets, checked before the options. Weighted scores that are
//! NaN (inf × 0) count as 0, and so do sums that are NaN (inf + -inf).

use bytes::Bytes;

use super::bounds::score_arg;
use super::{db_and_out, limits, reply_elements, store_result};
use crate::cmd::args::{int, is};
use crate::cmd::errors::{CmdError, SYNTAX, WRONGTYPE};
use crate::cmd::{CmdResult, Ctx};
use crate::keyspace::Db;
use crate::types::zset::ScoreTree;
use crate::types::{SetValue, Value, ZSetValue};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Union,
    Inter,
    Diff,
}

#[derive(Clone, Copy)]
enum Aggregate {
    Sum,
    Min,
    Max,
}

impl Aggregate {
    fn apply(self, target: f64, value: f64) -> f64 {
        match self {
            Aggregate::Sum => {
                let sum = target + value;
                if sum.is_nan() {
                    0.0
                } else {
                    sum
                }
            }
            Aggregate::Min => target.min(value),
            Aggregate::Max => target.max(value),
        }
    }
}

/// An input moved out of the database while the result is computed, then put back.
enum Source {
    Missing,
    Set(SetValue),
    ZSet(ZSetValue),
}

impl Source {
    fn len(&self) -> usize {
        match self {
            Source::Missing => 0,
            Source::Set(s) => s.len(),
            Source::ZSet(z) => z.len(),
        }
    }

    fn score(&self, member: &[u8]) -> Option<f64> {
        match self {
            Source::Missing => None,
            Source::Set(s) => s.contains(member).then_some(1.0),
            Source::ZSet(z) => z.score(member),
        }
    }

    fn for_each(&self, mut f: impl FnMut(&[u8], f64)) {
        match self {
            Source::Missing => {}
            Source::Set(s) => s.for_each(|m| f(m, 1.0)),
            Source::ZSet(z) => z.tree.iter().for_each(|(m, s)| f(m, s)),
        }
    }
}

struct Input {
    key: Bytes,
    source: Source,
    weight: f64,
}

/// Checks every input's type, then moves the inputs out of the database (so several can
/// be read at once without copying them). A key named twice is copied for its repeats.
fn take_sources(db: &mut Db, keys: &[Bytes], write: bool) -> Result<Vec<Input>, CmdError> {
    for key in keys {
        let value = if write {
            db.get_mut(key).map(|e| &e.value)
        } else {
            db.get(key).map(|e| &e.value)
        };
        if !matches!(value, None | Some(Value::Set(_)) | Some(Value::ZSet(_))) {
            return Err(WRONGTYPE.into());
        }
    }
    let mut inputs: Vec<Input> = Vec::with_capacity(keys.len());
    for key in keys {
        let source = match inputs.iter().find(|i| i.key == key) {
            // A repeated key: copy the first one's value (rare, and simplest to get right).
            Some(first) => match &first.source {
                Source::Set(s) => Source::Set(s.clone()),
                Source::ZSet(z) => Source::ZSet(z.clone()),
                Source::Missing => Source::Missing,
            },
            None => match db.get_mut(key).map(|e| &mut e.value) {
                Some(Value::Set(s)) => Source::Set(std::mem::take(s.as_mut())),
                Some(Value::ZSet(z)) => Source::ZSet(std::mem::take(z.as_mut())),
                _ => Source::Missing,
            },
        };
        inputs.push(Input {
            key: key.clone(),
            source,
            weight: 1.0,
        });
    }
    Ok(inputs)
}

fn put_back(db: &mut Db, inputs: Vec<Input>) {
    let mut seen: Vec<Bytes> = Vec::new();
    for input in inputs {
        if seen.contains(&input.key) {
            continue;
        }
        seen.push(input.key.clone());
        match (db.get_mut(&input.key).map(|e| &mut e.value), input.source) {
            (Some(Value::Set(slot)), Source::Set(s)) => **slot = s,
            (Some(Value::ZSet(slot)), Source::ZSet(z)) => **slot = z,
            _ => {}
        }
    }
}

fn weighted(weight: f64, score: f64) -> f64 {
    let value = weight * score;
    if value.is_nan() {
        0.0
    } else {
        value
    }
}

/// Computes the result. Inputs are visited smallest first as Redis does, which fixes the
/// order floating-point sums are made in.
fn compute(inputs: &mut [Input], op: Op, aggregate: Aggregate, limit: usize) -> ScoreTree {
    let mut result = ScoreTree::new();
    match op {
        Op::Inter => {
            inputs.sort_by_key(|i| i.source.len());
            let Some((first, rest)) = inputs.split_first() else {
                return result;
            };
            first.source.for_each(|member, score| {
                if result.len() >= limit {
                    return;
                }
                let mut total = weighted(first.weight, score);
                for other in rest {
                    match other.source.score(member) {
                        Some(s) => total = aggregate.apply(total, weighted(other.weight, s)),
                        None => return,
                    }
                }
                result.insert_new(member, total);
            });
        }
        Op::Union => {
            inputs.sort_by_key(|i| i.source.len());
            for input in inputs.iter() {
                input.source.for_each(|member, score| {
                    let value = weighted(input.weight, score);
                    let total = match result.score(member) {
                        Some(current) => aggregate.apply(current, value),
                        None => value,
                    };
                    result.set_score(member, total);
                });
            }
        }
        Op::Diff => {
            let Some((first, rest)) = inputs.split_first() else {
                return result;
            };
            first.source.for_each(|member, score| {
                if rest
                    .iter()
                    .all(|other| other.source.score(member).is_none())
                {
                    result.insert_new(member, score);
                }
            });
        }
    }
    result
}

struct Options {
    aggregate: Aggregate,
    with_scores: bool,
    limit: usize,
}

/// Parses numkeys, looks the inputs up and reads the options, in Redis's order.
fn prepare(
    ctx: &mut Ctx<'_>,
    args: &[Bytes],
    numkeys_at: usize,
    op: Op,
    store: bool,
    card_only: bool,
) -> Result<(Vec<Input>, Options), CmdError> {
    let count = int(&args[numkeys_at])?;
    if count < 1 {
        let name = String::from_utf8_lossy(&args[0]).to_lowercase();
        return Err(format!("ERR at least 1 input key is needed for '{name}' command").into());
    }
    if count > (args.len() - numkeys_at - 1) as i64 {
        return Err(SYNTAX.into());
    }
    let count = count as usize;
    let keys = &args[numkeys_at + 1..numkeys_at + 1 + count];
    let mut inputs = take_sources(ctx.db(), keys, store)?;
    let mut options = Options {
        aggregate: Aggregate::Sum,
        with_scores: false,
        limit: usize::MAX,
    };
    let parsed = parse_options(
        &args[numkeys_at + 1 + count..],
        &mut inputs,
        &mut options,
        op,
        store,
        card_only,
    );
    if let Err(e) = parsed {
        put_back(ctx.db(), inputs);
        return Err(e);
    }
    Ok((inputs, options))
}

fn parse_options(
    rest: &[Bytes],
    inputs: &mut [Input],
    options: &mut Options,
    op: Op,
    store: bool,
    card_only: bool,
) -> Result<(), CmdError> {
    let mut j = 0;
    while j < rest.len() {
        let remaining = rest.len() - j;
        let arg = &rest[j];
        if op != Op::Diff && !card_only && remaining > inputs.len() && is(arg, "weights") {
            for (i, input) in inputs.iter_mut().enumerate() {
                input.weight = score_arg(&rest[j + 1 + i])
                    .map_err(|_| CmdError::from("ERR weight value is not a float"))?;
            }
            j += 1 + inputs.len();
        } else if op != Op::Diff && !card_only && remaining >= 2 && is(arg, "aggregate") {
            let which = &rest[j + 1];
            options.aggregate = if is(which, "sum") {
                Aggregate::Sum
            } else if is(which, "min") {
                Aggregate::Min
            } else if is(which, "max") {
                Aggregate::Max
            } else {
                return Err(SYNTAX.into());
            };
            j += 2;
        } else if !store && !card_only && is(arg, "withscores") {
            options.with_scores = true;
            j += 1;
        } else if card_only && remaining >= 2 && is(arg, "limit") {
            const NEGATIVE: &str = "ERR LIMIT can't be negative";
            let n = int(&rest[j + 1]).map_err(|_| CmdError::from(NEGATIVE))?;
            if n < 0 {
                return Err(NEGATIVE.into());
            }
            options.limit = if n == 0 { usize::MAX } else { n as usize };
            j += 2;
        } else {
            return Err(SYNTAX.into());
        }
    }
    Ok(())
}

fn run(ctx: &mut Ctx<'_>, args: &[Bytes], op: Op, destination: Option<&Bytes>) -> CmdResult {
    let numkeys_at = if destination.is_some() { 2 } else { 1 };
    let (mut inputs, options) = prepare(ctx, args, numkeys_at, op, destination.is_some(), false)?;
    let tree = compute(&mut inputs, op, options.aggregate, usize::MAX);
    put_back(ctx.db(), inputs);
    match destination {
        Some(destination) => {
            let limits = limits(ctx);
            let event = match op {
                Op::Union => "zunionstore",
                Op::Inter => "zinterstore",
                Op::Diff => "zdiffstore",
            };
            store_result(ctx, destination, ZSetValue::from_tree(tree, limits), event);
        }
        None => {
            let (_, out) = db_and_out(ctx);
            reply_elements(out, ExactIter(tree.iter(), tree.len()), options.with_scores);
        }
    }
    Ok(())
}

/// An iterator with a known length (the tree's walk does not track one).
struct ExactIter<I>(I, usize);

impl<I: Iterator> Iterator for ExactIter<I> {
    type Item = I::Item;
    fn next(&mut self) -> Option<I::Item> {
        let item = self.0.next()?;
        self.1 -= 1;
        Some(item)
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.1, Some(self.1))
    }
}

impl<I: Iterator> ExactSizeIterator for ExactIter<I> {}

pub fn zunion(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    run(ctx, args, Op::Union, None)
}

pub fn zinter(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    run(ctx, args, Op::Inter, None)
}

pub fn zdiff(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    run(ctx, args, Op::Diff, None)
}

pub fn zunionstore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    run(ctx, args, Op::Union, Some(&args[1]))
}

pub fn zinterstore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    run(ctx, args, Op::Inter, Some(&args[1]))
}

pub fn zdiffstore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    run(ctx, args, Op::Diff, Some(&args[1]))
}

pub fn zintercard(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let (mut inputs, options) = prepare(ctx, args, 1, Op::Inter, false, true)?;
    let tree = compute(&mut inputs, Op::Inter, Aggregate::Sum, options.limit);
    put_back(ctx.db(), inputs);
    ctx.out.integer(tree.len() as i64);
    Ok(())
}
