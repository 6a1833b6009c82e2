//! Reading quantities (`30s`, `30%`, `200/s`, `3`) with unit checks.

use crate::ast::Quantity;
use crate::code::Code;
use crate::diagnostic::Diagnostic;

/// `number` as an exact fraction: (digits without the point, 10^decimals).
fn exact(number: &str) -> Option<(u128, u128)> {
    let (int, frac) = number.split_once('.').unwrap_or((number, ""));
    let digits: u128 = format!("{int}{frac}").parse().ok()?;
    Some((digits, 10u128.checked_pow(u32::try_from(frac.len()).ok()?)?))
}

fn missing(q: &Quantity, what: &str, unit: &str) -> Diagnostic {
    Code::MissingUnit
        .at(q.span, format!("`{}` needs a unit: it is {what}", q.number))
        .label("no unit")
        .help(format!("add a unit: `{}{unit}`", q.number))
}

fn wrong(q: &Quantity, what: &str, units: &str) -> Diagnostic {
    Code::WrongUnit
        .at(q.span, format!("`{}` is not {what}", q.text()))
        .label(format!("expected {what}"))
        .help(format!("use one of the units {units}"))
}

/// Milliseconds from `500ms`, `30s`, `2m`, `1h`, `1.5s`.
pub(crate) fn duration_ms(q: &Quantity) -> Result<u64, Diagnostic> {
    let factor: u128 = match q.unit.as_deref() {
        None => return Err(missing(q, "a duration", "s")),
        Some("ms") => 1,
        Some("s") => 1_000,
        Some("m") => 60_000,
        Some("h") => 3_600_000,
        Some(_) => return Err(wrong(q, "a duration", "`ms`, `s`, `m`, `h`")),
    };
    whole(q, factor, || {
        Code::BadNumber
            .at(
                q.span,
                format!("`{}` is not a whole number of milliseconds", q.text()),
            )
            .label("finer than 1ms")
            .help("lossproof schedules in whole milliseconds")
    })
}

/// `q`'s number times `factor`, exactly; `fraction` when that is not a
/// whole number.
fn whole(
    q: &Quantity,
    factor: u128,
    fraction: impl FnOnce() -> Diagnostic,
) -> Result<u64, Diagnostic> {
    let (digits, scale) = exact(&q.number).ok_or_else(|| too_big(q))?;
    let scaled = digits.checked_mul(factor).ok_or_else(|| too_big(q))?;
    if scaled % scale != 0 {
        return Err(fraction());
    }
    u64::try_from(scaled / scale).map_err(|_| too_big(q))
}

/// Percent from `30%` or `2.5%`, as a number 0..=100 is NOT checked here.
pub(crate) fn percent(q: &Quantity) -> Result<f64, Diagnostic> {
    match q.unit.as_deref() {
        None => Err(missing(q, "a percentage", "%")),
        Some("%") => q.number.parse().map_err(|_| too_big(q)),
        Some(_) => Err(wrong(q, "a percentage", "`%`")),
    }
}

/// Events per second from `200/s`, `1000/m`, `3600/h`.
pub(crate) fn rate_per_s(q: &Quantity) -> Result<f64, Diagnostic> {
    let per: f64 = match q.unit.as_deref() {
        None => return Err(missing(q, "a rate", "/s")),
        Some("/s") => 1.0,
        Some("/m") => 60.0,
        Some("/h") => 3600.0,
        Some(_) => return Err(wrong(q, "a rate", "`/s`, `/m`, `/h`")),
    };
    let n: f64 = q.number.parse().map_err(|_| too_big(q))?;
    Ok(n / per)
}

/// A plain whole number: `3`.
pub(crate) fn count(q: &Quantity) -> Result<u64, Diagnostic> {
    if let Some(unit) = &q.unit {
        return Err(Code::WrongUnit
            .at(
                q.span,
                format!("`{}` is a count: it takes no unit", q.text()),
            )
            .label(format!("unexpected unit `{unit}`"))
            .help(format!("write `{}`", q.number)));
    }
    q.number.parse().map_err(|_| {
        Code::BadNumber
            .at(q.span, format!("`{}` is not a whole number", q.number))
            .label("expected a whole number")
    })
}

/// A number of rows: `50000`, `250k`, `1.5M` (`k` thousand, `M` million).
pub(crate) fn rows(q: &Quantity) -> Result<u64, Diagnostic> {
    let factor: u128 = match q.unit.as_deref() {
        None => 1,
        Some("k") => 1_000,
        Some("M") => 1_000_000,
        Some(_) => {
            return Err(Code::WrongUnit
                .at(q.span, format!("`{}` is not a number of rows", q.text()))
                .label("expected a number of rows")
                .help(
                    "write a plain number, or use `k` (thousand) or `M` (million): `250k`, `1.5M`",
                ));
        }
    };
    whole(q, factor, || {
        Code::BadNumber
            .at(
                q.span,
                format!("`{}` is not a whole number of rows", q.text()),
            )
            .label("a fraction of a row")
    })
}

fn too_big(q: &Quantity) -> Diagnostic {
    Code::BadNumber
        .at(q.span, format!("`{}` is too large", q.text()))
        .label("out of range")
}
