//! An MDI model: the bucket layouts and the transition matrix, read from and written to the
//! plain CSV format of `../shared/mdi/README.md` (parsed with the `csv` crate).
//!
//! A state is a pair (delay-change bucket `d`, window-change bucket `w`), numbered
//! `d x count_w + w`. Row `s` of the matrix holds, for the previous state `s`, one block of
//! `count_w` probabilities per newly observed delay bucket `c`: the distribution of the next
//! window bucket. A block sums to 1, or to 0 where training never saw that situation.
//!
//! Unseen situations (an all-zero block) are answered from the *nearest seen state*: among the
//! rows whose block `c` is not empty, the one closest on the state grid (smallest
//! `|d - d'| + |w - w'|`, ties to the lower row number). If no row has data for `c`, the
//! nearest delay bucket `c'` that has data is used (ties to the lower bucket). The published
//! controller fell back to the previous row of the matrix instead, which is a neighbour in the
//! window direction only and, at `w = 0`, a state of another delay bucket. The choice is made
//! once, when the model is loaded, so a decision costs one block scan.

use std::io::{Read, Write};

use super::buckets::{BucketError, Buckets};

/// How far a block's sum may be from 1 before the model is refused.
pub const BLOCK_SUM_TOLERANCE: f64 = 1e-3;

/// Why a model could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// A line of the file is malformed; `line` counts from 1.
    #[error("line {line}: {what}")]
    Line {
        /// The line number, from 1.
        line: u64,
        /// What is wrong there.
        what: String,
    },
    /// A problem with the file as a whole.
    #[error("{0}")]
    Whole(String),
    /// The file could not be read.
    #[error("cannot read: {0}")]
    Io(#[from] std::io::Error),
}

/// The two bucket layouts of a model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Window-change buckets.
    pub window: Buckets,
    /// Delay-change buckets.
    pub delay: Buckets,
}

impl Layout {
    /// The layout of the published Verus and Sprout models: 25 window buckets over -60..60 and
    /// 9 delay buckets over -25..15, step 5 (225 states).
    pub fn published() -> Layout {
        Layout {
            window: Buckets::new(25, -60, 60, 5).expect("a valid constant layout"),
            delay: Buckets::new(9, -25, 15, 5).expect("a valid constant layout"),
        }
    }

    /// Number of states, `count_w x count_d`.
    pub fn states(&self) -> usize {
        self.window.count() * self.delay.count()
    }

    /// The state number of (delay bucket `d`, window bucket `w`).
    pub fn state(&self, d: usize, w: usize) -> usize {
        d * self.window.count() + w
    }

    /// The header line's eight integers.
    pub fn header(&self) -> [i64; 8] {
        let (w, d) = (self.window, self.delay);
        [
            w.count() as i64,
            i64::from(w.min()),
            i64::from(w.max()),
            i64::from(w.step()),
            d.count() as i64,
            i64::from(d.min()),
            i64::from(d.max()),
            i64::from(d.step()),
        ]
    }
}

/// A model ready to drive a controller.
#[derive(Clone, Debug, PartialEq)]
pub struct MdiModel {
    layout: Layout,
    /// The matrix, row-major, `states x states`.
    probs: Vec<f64>,
    /// For each (row, delay bucket c): the (row, c) whose block answers it.
    source: Vec<(u32, u32)>,
}

impl MdiModel {
    /// A model from its layout and matrix (row-major, `states x states`), checked: entries
    /// finite and within [0, 1], each block summing to 0 or to 1 (within
    /// [`BLOCK_SUM_TOLERANCE`]), at least one block not empty.
    pub fn new(layout: Layout, probs: Vec<f64>) -> Result<MdiModel, ModelError> {
        let n = layout.states();
        if probs.len() != n * n {
            return Err(ModelError::Whole(format!("matrix has {} entries, expected {n} x {n}", probs.len())));
        }
        let nw = layout.window.count();
        for (row, values) in probs.chunks(n).enumerate() {
            let line = row as u64 + 2;
            if let Some(v) = values.iter().find(|v| !(v.is_finite() && (0.0..=1.0).contains(*v))) {
                return Err(ModelError::Line { line, what: format!("probability {v} is not within [0, 1]") });
            }
            for (c, block) in values.chunks(nw).enumerate() {
                let sum: f64 = block.iter().sum();
                if sum != 0.0 && (sum - 1.0).abs() > BLOCK_SUM_TOLERANCE {
                    return Err(ModelError::Line {
                        line,
                        what: format!("block {c} (delay bucket {c}) sums to {sum}, not to 0 or 1"),
                    });
                }
            }
        }
        let mut model = MdiModel { layout, probs, source: Vec::new() };
        model.source = model.nearest_seen()?;
        Ok(model)
    }

    /// Reads a model in the CSV format: a header of eight integers, then the matrix.
    pub fn read(input: impl Read) -> Result<MdiModel, ModelError> {
        let mut reader = csv::ReaderBuilder::new().has_headers(false).flexible(true).from_reader(input);
        let mut records = reader.records();
        let header = match records.next() {
            None => return Err(ModelError::Whole("empty file: expected a header of eight integers".into())),
            Some(r) => r.map_err(|e| csv_error(e, 1))?,
        };
        let layout = parse_header(&header)?;
        let n = layout.states();
        let mut probs = Vec::with_capacity(n * n);
        let mut rows = 0usize;
        for (i, record) in records.enumerate() {
            let line = i as u64 + 2;
            let record = record.map_err(|e| csv_error(e, line))?;
            if record.iter().all(|f| f.trim().is_empty()) {
                continue;
            }
            if rows == n {
                return Err(ModelError::Line {
                    line,
                    what: format!("more than the {n} matrix rows the header announces"),
                });
            }
            if record.len() != n {
                return Err(ModelError::Line {
                    line,
                    what: format!("{} values, expected {n}", record.len()),
                });
            }
            for field in record.iter() {
                let v: f64 = field
                    .trim()
                    .parse()
                    .map_err(|_| ModelError::Line { line, what: format!("`{field}` is not a number") })?;
                probs.push(v);
            }
            rows += 1;
        }
        if rows != n {
            return Err(ModelError::Whole(format!("{rows} matrix rows, the header announces {n}")));
        }
        MdiModel::new(layout, probs)
    }

    /// Writes the model in the CSV format [`read`](Self::read) accepts (shortest round-trip
    /// decimal for every probability).
    pub fn write(&self, output: impl Write) -> std::io::Result<()> {
        let mut writer = csv::WriterBuilder::new().has_headers(false).flexible(true).from_writer(output);
        writer.write_record(self.layout.header().iter().map(|v| v.to_string()))?;
        for row in self.probs.chunks(self.layout.states()) {
            writer.write_record(row.iter().map(|v| format!("{v:?}")))?;
        }
        writer.flush()
    }

    /// The bucket layouts.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The matrix entry: previous state `row`, new delay bucket `c`, next window bucket `w`.
    pub fn probability(&self, row: usize, c: usize, w: usize) -> f64 {
        let nw = self.layout.window.count();
        self.probs[row * self.layout.states() + c * nw + w]
    }

    /// Whether training saw previous state `row` followed by delay bucket `c`.
    pub fn seen(&self, row: usize, c: usize) -> bool {
        self.block(row, c).iter().any(|&p| p > 0.0)
    }

    /// The (row, delay bucket) whose block answers (`row`, `c`): itself when seen, else the
    /// nearest seen one (see the module docs).
    pub fn source(&self, row: usize, c: usize) -> (usize, usize) {
        let (r, b) = self.source[row * self.layout.delay.count() + c];
        (r as usize, b as usize)
    }

    /// The next window bucket for previous state `row` and new delay bucket `c`, for a uniform
    /// number `u` in [0, 1): the first bucket whose cumulative probability exceeds `u`, summed
    /// in bucket order (the last non-zero bucket if rounding leaves `u` above the total).
    pub fn sample(&self, row: usize, c: usize, u: f64) -> usize {
        let (row, c) = self.source(row, c);
        let block = self.block(row, c);
        let mut cumulative = 0.0;
        let mut last_nonzero = 0;
        for (w, &p) in block.iter().enumerate() {
            if p > 0.0 {
                cumulative += p;
                last_nonzero = w;
                if u < cumulative {
                    return w;
                }
            }
        }
        last_nonzero
    }

    fn block(&self, row: usize, c: usize) -> &[f64] {
        let nw = self.layout.window.count();
        let start = row * self.layout.states() + c * nw;
        &self.probs[start..start + nw]
    }

    /// For every (row, c), the nearest seen (row', c'), computed once.
    fn nearest_seen(&self) -> Result<Vec<(u32, u32)>, ModelError> {
        let (nw, nd) = (self.layout.window.count(), self.layout.delay.count());
        let n = self.layout.states();
        let seen_rows: Vec<Vec<usize>> =
            (0..nd).map(|c| (0..n).filter(|&r| self.seen(r, c)).collect()).collect();
        let Some(_) = seen_rows.iter().find(|rows| !rows.is_empty()) else {
            return Err(ModelError::Whole("every block is empty: the model has no transitions".into()));
        };
        let mut source = Vec::with_capacity(n * nd);
        for row in 0..n {
            let (d, w) = (row / nw, row % nw);
            for c in 0..nd {
                // The nearest delay bucket with data: c itself, then c-1, c+1, c-2, ...
                let c_used = (0..nd)
                    .filter(|&b| !seen_rows[b].is_empty())
                    .min_by_key(|&b| (b.abs_diff(c), b))
                    .expect("at least one block has data");
                let nearest = seen_rows[c_used]
                    .iter()
                    .copied()
                    .min_by_key(|&r| ((r / nw).abs_diff(d) + (r % nw).abs_diff(w), r))
                    .expect("the chosen bucket has data");
                source.push((nearest as u32, c_used as u32));
            }
        }
        Ok(source)
    }
}

fn parse_header(header: &csv::StringRecord) -> Result<Layout, ModelError> {
    let bad = |what: String| ModelError::Line { line: 1, what };
    if header.len() != 8 {
        return Err(bad(format!(
            "header has {} values, expected eight: numW, WP_MIN, WP_MAX, WP_STEP, numD, DP_MIN, DP_MAX, DP_STEP",
            header.len()
        )));
    }
    let mut v = [0i64; 8];
    for (slot, field) in v.iter_mut().zip(header.iter()) {
        *slot = field.trim().parse().map_err(|_| bad(format!("header value `{field}` is not an integer")))?;
    }
    let layout_error = |which: &str, e: BucketError| bad(format!("{which} buckets: {e}"));
    let window = Buckets::new(v[0], v[1], v[2], v[3]).map_err(|e| layout_error("window", e))?;
    let delay = Buckets::new(v[4], v[5], v[6], v[7]).map_err(|e| layout_error("delay", e))?;
    Ok(Layout { window, delay })
}

fn csv_error(e: csv::Error, line: u64) -> ModelError {
    match e.into_kind() {
        csv::ErrorKind::Io(io) => ModelError::Io(io),
        other => ModelError::Line { line, what: format!("{other:?}") },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two window buckets (-10..0, 0..10: shrink, grow) and two delay buckets (-10..0, 0..10:
    /// delay fell, rose): four states. Row = d x 2 + w; a row has block c = 0 then c = 1.
    pub(crate) const TINY: &str = "2,-10,0,10,2,-10,0,10
0.0,1.0,0.25,0.75
0,0,1,0
0.5,0.5,0,0
0,0,0,0
";

    fn tiny() -> MdiModel {
        MdiModel::read(TINY.as_bytes()).unwrap()
    }

    #[test]
    fn reads_entries_and_samples_by_cumulative_probability() {
        let m = tiny();
        assert_eq!(m.layout().header(), [2, -10, 0, 10, 2, -10, 0, 10]);
        assert_eq!(m.probability(0, 1, 1), 0.75);
        // Row 0, delay rose (c = 1): shrink with 0.25, grow with 0.75.
        assert_eq!(m.sample(0, 1, 0.0), 0);
        assert_eq!(m.sample(0, 1, 0.2499), 0);
        assert_eq!(m.sample(0, 1, 0.25), 1);
        assert_eq!(m.sample(0, 1, 0.999), 1);
        // Row 0, c = 0: always grow.
        assert_eq!(m.sample(0, 0, 0.0), 1);
    }

    #[test]
    fn unseen_states_use_the_nearest_seen_state() {
        let m = tiny();
        // Row 1 (d 0, w 1), c = 0 is empty; seen rows for c = 0: 0 (d0 w0) and 2 (d1 w0).
        // Distances from (0, 1): row 0 -> 1, row 2 -> 2. Row 0 it is.
        assert!(!m.seen(1, 0));
        assert_eq!(m.source(1, 0), (0, 0));
        assert_eq!(m.sample(1, 0, 0.9), 1);
        // Row 3 (d1 w1), c = 0: row 0 -> 2, row 2 -> 1: row 2.
        assert_eq!(m.source(3, 0), (2, 0));
        // Row 3, c = 1: seen rows for c = 1 are 0 and 1; (d1,w1) -> row 0: 2, row 1: 1.
        assert_eq!(m.source(3, 1), (1, 1));
        // Row 2, c = 1: row 0: 1, row 1: 2 -> row 0.
        assert_eq!(m.source(2, 1), (0, 1));
        assert_eq!(m.source(0, 1), (0, 1));
    }

    #[test]
    fn a_delay_bucket_without_any_data_borrows_the_nearest_one() {
        let text = "2,-10,0,10,3,-10,10,10
0,1,0,0,0,0
0,0,0,0,0,0
0,0,0,0,0,0
0,0,0,0,0,0
0,0,0,0,0,0
0,0,0,0,0,0
";
        let m = MdiModel::read(text.as_bytes()).unwrap();
        // Only (row 0, c 0) has data: everything maps there.
        for row in 0..6 {
            for c in 0..3 {
                assert_eq!(m.source(row, c), (0, 0), "{row} {c}");
            }
        }
    }

    #[test]
    fn writes_what_it_reads() {
        let m = tiny();
        let mut out = Vec::new();
        m.write(&mut out).unwrap();
        let again = MdiModel::read(out.as_slice()).unwrap();
        assert_eq!(again, m);
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("2,-10,0,10,2,-10,0,10\n0.0,1.0,0.25,0.75\n"), "{text}");
    }

    #[test]
    fn malformed_files_name_the_line() {
        let cases: &[(&str, &str)] = &[
            ("", "empty file"),
            ("2,-10,0,10,2,-10,0\n", "line 1: header has 7 values"),
            ("2,-10,5,10,2,-10,0,10\n", "line 1: window buckets"),
            ("2,-10,0,10,2,-10,0,x\n", "line 1: header value `x`"),
            ("2,-10,0,10,2,-10,0,10\n0,1,1,0\n0,1,1\n", "line 3: 3 values, expected 4"),
            ("2,-10,0,10,2,-10,0,10\n0,1,1,0\n0,1,1,abc\n", "line 3: `abc` is not a number"),
            (
                "2,-10,0,10,2,-10,0,10\n0,1,0.5,0\n0,0,0,0\n0,0,0,0\n0,0,0,0\n",
                "line 2: block 1 (delay bucket 1) sums to 0.5",
            ),
            ("2,-10,0,10,2,-10,0,10\n0,1,-1,2\n0,0,0,0\n0,0,0,0\n0,0,0,0\n", "line 2: probability -1"),
            ("2,-10,0,10,2,-10,0,10\n0,1,1,0\n", "1 matrix rows, the header announces 4"),
            ("2,-10,0,10,2,-10,0,10\n0,0,0,0\n0,0,0,0\n0,0,0,0\n0,0,0,0\n", "no transitions"),
            (
                "2,-10,0,10,2,-10,0,10\n0,1,1,0\n0,1,1,0\n0,1,1,0\n0,1,1,0\n0,1,1,0\n",
                "line 6: more than the 4",
            ),
        ];
        for (text, expected) in cases {
            let err = MdiModel::read(text.as_bytes()).unwrap_err().to_string();
            assert!(err.contains(expected), "{text:?}: {err}");
        }
    }
}
