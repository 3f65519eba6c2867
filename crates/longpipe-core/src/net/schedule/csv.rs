//! A schedule's CSV file (`[[link.schedule]] file = "x.csv"`): a header naming columns
//! among [`CSV_COLUMNS`], then one one-off change per row. `t` is seconds (a bare
//! number) or a duration with a unit; an empty cell leaves that value as it is; blank
//! lines and lines starting with `#` are skipped.
//!
//! Rows go straight into the directions' change lists: the file is counted first (no
//! more than [`MAX_CHANGES`] rows, refused before anything is allocated for them), and
//! no row is held twice.

use super::dir::{LinkShape, OnceChanges, RowChange, MAX_CHANGES};
use crate::error::{err, ScenarioError};
use crate::net::loss::LossModel;
use crate::time::SimTime;
use crate::units::{parse_duration, parse_rate};

/// The columns a schedule CSV may have; `t` first.
pub const CSV_COLUMNS: [&str; 8] = [
    "t", "rate", "rate_ba", "delay", "delay_ba", "loss", "loss_ba", "up",
];

/// A CSV cell's loss model: a probability (Bernoulli), `ber=X`, or `none`.
fn csv_loss(cell: &str) -> Result<LossModel, String> {
    if cell == "none" {
        return Ok(LossModel::None);
    }
    let (spec, what) = match cell.strip_prefix("ber=") {
        Some(b) => (b, "ber"),
        None => (cell, "p"),
    };
    let v: f64 = spec
        .parse()
        .map_err(|_| format!("expected a loss probability, ber=X or none, got {cell:?}"))?;
    if !(0.0..=1.0).contains(&v) {
        return Err(format!("{what} must be in [0, 1], got {v}"));
    }
    Ok(if what == "ber" {
        LossModel::Ber { ber: v }
    } else {
        LossModel::Bernoulli { p: v }
    })
}

/// The lines that hold a header or a row: (line number, trimmed text).
fn content(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
}

/// Adds the rows of the CSV `text` (the file `file`, at field path `p`) to both
/// directions' one-off changes; `room` is how many more changes the link may have.
/// Returns the number of rows.
pub fn read_into(
    text: &str,
    p: &str,
    file: &str,
    shape: LinkShape,
    once: &mut [OnceChanges; 2],
    room: usize,
) -> Result<usize, ScenarioError> {
    let mut lines = content(text);
    let Some((hl, header)) = lines.next() else {
        return err(
            p,
            format!("{file}: empty; expected a header such as t,rate,delay,loss"),
        );
    };
    let cols: Vec<&str> = header.split(',').map(str::trim).collect();
    for (j, c) in cols.iter().enumerate() {
        if !CSV_COLUMNS.contains(c) {
            return err(
                p,
                format!(
                    "{file} line {hl}: unknown column {c:?}; expected some of {}",
                    CSV_COLUMNS.join(", ")
                ),
            );
        }
        if cols[..j].contains(c) {
            return err(p, format!("{file} line {hl}: column {c:?} twice"));
        }
    }
    if cols.first() != Some(&"t") {
        return err(p, format!("{file} line {hl}: the first column must be t"));
    }
    let rows = content(text).count() - 1;
    if rows > MAX_CHANGES {
        return err(p, format!("{file}: more than {MAX_CHANGES} rows"));
    }
    if rows > room {
        return err(
            p,
            format!("more than {MAX_CHANGES} one-off changes on one link"),
        );
    }
    for o in once.iter_mut() {
        o.reserve(rows);
    }
    for (n, line) in lines {
        let cells = line.split(',').count();
        if cells != cols.len() {
            return err(
                p,
                format!(
                    "{file} line {n}: {cells} cells, the header has {}",
                    cols.len()
                ),
            );
        }
        let bad = |c: &str, m: String| err(p, format!("{file} line {n}: column {c}: {m}"));
        let mut t = SimTime::ZERO;
        let mut row = RowChange::default();
        for (c, cell) in cols.iter().zip(line.split(',').map(str::trim)) {
            if cell.is_empty() {
                if *c == "t" {
                    return bad(c, "the time is required".into());
                }
                continue;
            }
            let r = match *c {
                "t" => {
                    let d = match cell.parse::<f64>() {
                        Ok(s) if s.is_finite() && s >= 0.0 => parse_duration(&format!("{cell}s")),
                        Ok(_) => Err(format!("must be a non-negative time, got {cell:?}")),
                        Err(_) => parse_duration(cell),
                    };
                    d.map(|d| t = SimTime(d.0))
                }
                "rate" => parse_rate(cell).map(|r| row.rate = Some(r)),
                "rate_ba" => parse_rate(cell).map(|r| row.rate_ba = Some(r)),
                "delay" => parse_duration(cell).map(|d| row.delay = Some(d)),
                "delay_ba" => parse_duration(cell).map(|d| row.delay_ba = Some(d)),
                "loss" => csv_loss(cell).map(|l| row.loss = Some(l)),
                "loss_ba" => csv_loss(cell).map(|l| row.loss_ba = Some(l)),
                _ => match cell {
                    "true" | "1" => {
                        row.up = Some(true);
                        Ok(())
                    }
                    "false" | "0" => {
                        row.up = Some(false);
                        Ok(())
                    }
                    _ => Err(format!("expected true or false, got {cell:?}")),
                },
            };
            if let Err(m) = r {
                return bad(c, m);
            }
        }
        row.push_into(once, t, shape, p)?;
    }
    Ok(rows)
}
