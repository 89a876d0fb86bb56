//! Aligned text tables for the terminal: one table type for every table sluice prints.

use std::io::{self, Write};

/// A table of text cells, aligned in columns under a header and a rule; `None` rows
/// are rules between groups of rows. Every table sluice prints is one of these.
///
/// ```
/// let mut t = sluice_metrics::Table::new(&[("policy", false), ("IOPS", true)], false);
/// t.row(vec!["rcp".into(), "12.3k".into()]);
/// let mut out = Vec::new();
/// t.write(&mut out).unwrap();
/// assert_eq!(String::from_utf8(out).unwrap(), "policy   IOPS\n-------------\nrcp     12.3k\n");
/// ```
#[derive(Debug)]
pub struct Table {
    /// Whether rules between row groups are drawn (only useful with several runs).
    groups: bool,
    header: Vec<&'static str>,
    /// Whether each column is right-aligned (numbers) or left-aligned (names).
    right: Vec<bool>,
    rows: Vec<Option<Vec<String>>>,
}

impl Table {
    /// A table of `cols`: each a header and whether the column is right-aligned
    /// (numbers) rather than left-aligned (names). With `groups`, [`Table::rule`]
    /// draws rules between groups of rows.
    pub fn new(cols: &[(&'static str, bool)], groups: bool) -> Table {
        Table {
            groups,
            header: cols.iter().map(|c| c.0).collect(),
            right: cols.iter().map(|c| c.1).collect(),
            rows: Vec::new(),
        }
    }

    /// A row: one cell per column.
    ///
    /// # Panics
    /// In debug builds, if the number of cells is not the number of columns.
    pub fn row(&mut self, cells: Vec<String>) {
        debug_assert_eq!(cells.len(), self.header.len());
        self.rows.push(Some(cells));
    }

    /// A rule before the next row (when the table has groups and a row came last).
    pub fn rule(&mut self) {
        if self.groups && matches!(self.rows.last(), Some(Some(_))) {
            self.rows.push(None);
        }
    }

    /// Write the header, a rule and the rows; trailing spaces are trimmed. The rule
    /// ends where the header does (a left-aligned last column may run past it).
    pub fn write(&self, out: &mut dyn Write) -> io::Result<()> {
        let width = |s: &str| s.chars().count();
        let mut w: Vec<usize> = self.header.iter().map(|h| width(h)).collect();
        for r in self.rows.iter().flatten() {
            for (i, c) in r.iter().enumerate() {
                w[i] = w[i].max(width(c));
            }
        }
        let line = |out: &mut dyn Write, cells: &mut dyn Iterator<Item = &str>| {
            let mut s = String::new();
            for (i, c) in cells.enumerate() {
                if i > 0 {
                    s.push_str("  ");
                }
                let pad = " ".repeat(w[i] - width(c));
                if self.right[i] {
                    s.push_str(&pad);
                    s.push_str(c);
                } else {
                    s.push_str(c);
                    s.push_str(&pad);
                }
            }
            writeln!(out, "{}", s.trim_end())
        };
        line(out, &mut self.header.iter().copied())?;
        // The rule spans the columns up to the last header: a long free-text last
        // column (a goal's measured detail) does not stretch it across the screen.
        let last = w.len().saturating_sub(1);
        let total: usize = w[..last].iter().sum::<usize>()
            + 2 * last
            + if self.right.get(last) == Some(&true) {
                w[last]
            } else {
                self.header.get(last).map_or(0, |h| width(h))
            };
        let rule = "-".repeat(total);
        writeln!(out, "{rule}")?;
        for r in &self.rows {
            match r {
                Some(cells) => line(out, &mut cells.iter().map(String::as_str))?,
                None => writeln!(out, "{rule}")?,
            }
        }
        Ok(())
    }
}
