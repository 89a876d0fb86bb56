//! The sweep's lists on the command line: comma lists (`\,` inside an item), seeds and
//! their compact form, and shell words for the commands a sweep writes.

use crate::cli::CliError;

use super::MAX_CELLS;

/// Split a comma list; `\,` is a comma inside an item. Empty items are refused.
pub(crate) fn split_list(flag: &str, text: &str) -> Result<Vec<String>, CliError> {
    let mut items = vec![String::new()];
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&',') => {
                chars.next();
                items.last_mut().expect("one item").push(',');
            }
            ',' => items.push(String::new()),
            c => items.last_mut().expect("one item").push(c),
        }
    }
    let items: Vec<String> = items.into_iter().map(|s| s.trim().to_string()).collect();
    if items.iter().any(String::is_empty) {
        return Err(CliError::Usage(format!(
            "{flag} '{text}': an empty entry (an empty list, two commas, or a comma at an \
             end); give values separated by single commas"
        )));
    }
    Ok(items)
}

/// Refuse a value given twice on one axis (it would only repeat cells).
pub(crate) fn no_duplicates<T: PartialEq + std::fmt::Display>(
    flag: &str,
    v: &[T],
) -> Result<(), CliError> {
    for (i, x) in v.iter().enumerate() {
        if v[..i].contains(x) {
            return Err(CliError::Usage(format!(
                "{flag}: '{x}' is given twice; give each value once"
            )));
        }
    }
    Ok(())
}

/// Read seeds: `N` or `A..B` (inclusive), comma-separated.
pub(crate) fn parse_seeds(values: &[String]) -> Result<Vec<u64>, CliError> {
    let mut seeds = Vec::new();
    for v in values {
        for item in split_list("--seed", v)? {
            let num = |s: &str| {
                s.trim().parse::<u64>().map_err(|_| {
                    CliError::Usage(format!(
                        "--seed '{item}': not a seed; give whole numbers (1,2,3) or an \
                         inclusive range (1..10)"
                    ))
                })
            };
            match item.split_once("..") {
                Some((a, b)) => {
                    let (a, b) = (num(a)?, num(b)?);
                    if a > b || b - a >= MAX_CELLS as u64 {
                        return Err(CliError::Usage(format!(
                            "--seed '{item}': the range must go up, with at most {MAX_CELLS} seeds"
                        )));
                    }
                    seeds.extend(a..=b);
                }
                None => seeds.push(num(&item)?),
            }
        }
    }
    if seeds.is_empty() {
        seeds.push(1);
    }
    no_duplicates("--seed", &seeds)?;
    Ok(seeds)
}

/// Seeds written back compactly: runs of consecutive seeds as `A..B`.
pub(crate) fn seeds_text(seeds: &[u64]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < seeds.len() {
        let mut j = i;
        while j + 1 < seeds.len() && seeds[j + 1] == seeds[j] + 1 {
            j += 1;
        }
        parts.push(match j - i {
            0 => seeds[i].to_string(),
            1 => format!("{},{}", seeds[i], seeds[j]),
            _ => format!("{}..{}", seeds[i], seeds[j]),
        });
        i = j + 1;
    }
    parts.join(",")
}

/// `s` as one shell word: as it is when it holds only characters no shell treats
/// specially, otherwise in single quotes.
pub fn shell_word(s: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-./:=,@%+".contains(c);
    if !s.is_empty() && s.chars().all(plain) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}
