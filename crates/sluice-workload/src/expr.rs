//! fio's arithmetic in option values: a numeric value that starts with `(` is an
//! expression with `+ - * / % ^` (power), parentheses, unary minus, whole, decimal and
//! `0x` hex numbers, each optionally followed by a unit suffix.
//!
//! As in fio, a bare number inside a *time* expression is in microseconds (fio's
//! documented rule, different from values outside parentheses) and `m` means minutes
//! there; in a *size* expression `m` means MiB. Size suffixes are powers of 1024 as
//! everywhere in sluice (fio's expression lexer alone reads `KiB` as 1000). Integer
//! operands stay exact (128-bit); a decimal operand makes the arithmetic floating point
//! and the result is truncated to a whole number, as in fio.

/// What the expression's value means (it decides the suffixes and the bare unit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExprKind {
    /// Bytes: size suffixes `k`, `m`, `g`, `t`, `p` (and `KiB`, `kb`, … forms).
    Size,
    /// Nanoseconds: time suffixes `ns`, `us`, `ms`, `s`, `m`, `h`, `d`; a bare number
    /// is microseconds.
    Time,
    /// A plain number: no suffixes.
    Plain,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Num {
    Int(i128),
    Float(f64),
}

impl Num {
    fn f(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }
}

struct P<'a> {
    s: &'a [u8],
    i: usize,
    kind: ExprKind,
    depth: u32,
}

const MAX_DEPTH: u32 = 64;
const LIMIT: i128 = 1 << 100;

/// Evaluate `text` (which starts with `(`) as a fio arithmetic expression of `kind`.
/// Returns a whole, non-negative number (bytes, nanoseconds or a plain count).
pub fn eval(text: &str, kind: ExprKind) -> Result<u64, String> {
    let mut p = P {
        s: text.as_bytes(),
        i: 0,
        kind,
        depth: 0,
    };
    let v = p
        .sum()
        .map_err(|e| format!("cannot evaluate '{text}': {e}"))?;
    p.ws();
    if p.i < p.s.len() {
        return Err(format!(
            "cannot evaluate '{text}': unexpected '{}' at character {}; write an expression such as (2*64k+4k)",
            String::from_utf8_lossy(&p.s[p.i..]).chars().next().unwrap_or('?'),
            p.i + 1
        ));
    }
    let n = match v {
        Num::Int(i) => i,
        Num::Float(f) if f.is_finite() && f.abs() < 1.8e19 => f.trunc() as i128,
        Num::Float(_) => return Err(format!("'{text}' is too large")),
    };
    if n < 0 {
        return Err(format!(
            "'{text}' is negative ({n}); the value must be positive"
        ));
    }
    // A time expression is computed in microseconds (fio's unit); sluice counts ns.
    let n = if kind == ExprKind::Time {
        match v {
            Num::Float(f) => (f * 1000.0).trunc() as i128,
            Num::Int(_) => n.saturating_mul(1000),
        }
    } else {
        n
    };
    u64::try_from(n).map_err(|_| format!("'{text}' is too large"))
}

impl P<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && (self.s[self.i] == b' ' || self.s[self.i] == b'\t') {
            self.i += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.s.get(self.i).copied()
    }

    fn sum(&mut self) -> Result<Num, String> {
        let mut a = self.product()?;
        while let Some(c @ (b'+' | b'-')) = self.peek() {
            self.i += 1;
            let b = self.product()?;
            a = arith(a, b, c)?;
        }
        Ok(a)
    }

    fn product(&mut self) -> Result<Num, String> {
        let mut a = self.power()?;
        while let Some(c @ (b'*' | b'/' | b'%')) = self.peek() {
            self.i += 1;
            let b = self.power()?;
            a = arith(a, b, c)?;
        }
        Ok(a)
    }

    /// `^` binds tighter than `*` and is right-associative.
    fn power(&mut self) -> Result<Num, String> {
        let base = self.unary()?;
        if self.peek() == Some(b'^') {
            self.i += 1;
            self.enter()?;
            let e = self.power();
            self.depth -= 1;
            return arith(base, e?, b'^');
        }
        Ok(base)
    }

    fn enter(&mut self) -> Result<(), String> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err("too deeply nested".into());
        }
        Ok(())
    }

    fn unary(&mut self) -> Result<Num, String> {
        match self.peek() {
            Some(b'-') => {
                self.i += 1;
                self.enter()?;
                let v = self.unary();
                self.depth -= 1;
                Ok(match v? {
                    Num::Int(i) => Num::Int(-i),
                    Num::Float(f) => Num::Float(-f),
                })
            }
            Some(b'+') => {
                self.i += 1;
                self.enter()?;
                let v = self.unary();
                self.depth -= 1;
                v
            }
            Some(b'(') => {
                self.i += 1;
                self.enter()?;
                let v = self.sum();
                self.depth -= 1;
                let v = v?;
                if self.peek() != Some(b')') {
                    return Err("a '(' is not closed; add ')'".into());
                }
                self.i += 1;
                self.suffixed(v)
            }
            Some(c) if c.is_ascii_digit() || c == b'.' => {
                let v = self.number()?;
                self.suffixed(v)
            }
            Some(c) => Err(format!(
                "expected a number or '(' but found '{}'",
                c as char
            )),
            None => Err("the expression ends too early".into()),
        }
    }

    fn number(&mut self) -> Result<Num, String> {
        let s = self.s;
        let start = self.i;
        if s[start..].starts_with(b"0x") || s[start..].starts_with(b"0X") {
            self.i += 2;
            let h = self.i;
            while self.i < s.len() && s[self.i].is_ascii_hexdigit() {
                self.i += 1;
            }
            let t = std::str::from_utf8(&s[h..self.i]).unwrap_or("");
            return i128::from_str_radix(t, 16)
                .ok()
                .filter(|v| *v < LIMIT)
                .map(Num::Int)
                .ok_or_else(|| "bad hex number".into());
        }
        while self.i < s.len() && s[self.i].is_ascii_digit() {
            self.i += 1;
        }
        let mut float = false;
        if self.i < s.len() && s[self.i] == b'.' {
            float = true;
            self.i += 1;
            while self.i < s.len() && s[self.i].is_ascii_digit() {
                self.i += 1;
            }
        }
        // An exponent (`1e3`) only when digits follow, so `1e` is not swallowed.
        if self.i + 1 < s.len()
            && (s[self.i] == b'e' || s[self.i] == b'E')
            && (s[self.i + 1].is_ascii_digit()
                || ((s[self.i + 1] == b'-' || s[self.i + 1] == b'+')
                    && s.get(self.i + 2).is_some_and(u8::is_ascii_digit)))
        {
            float = true;
            self.i += 2;
            while self.i < s.len() && s[self.i].is_ascii_digit() {
                self.i += 1;
            }
        }
        let t = std::str::from_utf8(&s[start..self.i]).unwrap_or("");
        if float {
            t.parse::<f64>()
                .ok()
                .filter(|f| f.is_finite())
                .map(Num::Float)
                .ok_or_else(|| format!("cannot read '{t}' as a number"))
        } else {
            t.parse::<i128>()
                .ok()
                .filter(|v| *v < LIMIT)
                .map(Num::Int)
                .ok_or_else(|| format!("'{t}' is too large"))
        }
    }

    /// A unit suffix after a number or a parenthesised group. Time expressions count
    /// microseconds (a bare number is microseconds, as in fio).
    fn suffixed(&mut self, v: Num) -> Result<Num, String> {
        let s = self.s;
        let start = self.i;
        while self.i < s.len() && s[self.i].is_ascii_alphabetic() {
            self.i += 1;
        }
        let suffix = std::str::from_utf8(&s[start..self.i])
            .unwrap_or("")
            .to_ascii_lowercase();
        if suffix.is_empty() {
            return Ok(v);
        }
        let mult: Num = match self.kind {
            ExprKind::Plain => return Err(format!("'{suffix}': this value takes no unit")),
            ExprKind::Size => Num::Int(match suffix.as_str() {
                "b" => 1,
                "k" | "kb" | "kib" => 1 << 10,
                "m" | "mb" | "mib" => 1 << 20,
                "g" | "gb" | "gib" => 1 << 30,
                "t" | "tb" | "tib" => 1 << 40,
                "p" | "pb" | "pib" => 1 << 50,
                _ => return Err(format!("'{suffix}' is not a size unit (k, m, g, t, p)")),
            }),
            ExprKind::Time => match suffix.as_str() {
                "ns" | "nsec" => Num::Float(0.001),
                "us" | "usec" => Num::Int(1),
                "ms" | "msec" => Num::Int(1_000),
                "s" | "sec" => Num::Int(1_000_000),
                "m" | "min" => Num::Int(60_000_000),
                "h" | "hour" => Num::Int(3_600_000_000),
                "d" | "day" => Num::Int(86_400_000_000),
                _ => {
                    return Err(format!(
                        "'{suffix}' is not a time unit (ns, us, ms, s, m, h, d)"
                    ))
                }
            },
        };
        arith(v, mult, b'*')
    }
}

fn arith(a: Num, b: Num, op: u8) -> Result<Num, String> {
    if let (Num::Int(x), Num::Int(y)) = (a, b) {
        let r = match op {
            b'+' => x.checked_add(y),
            b'-' => x.checked_sub(y),
            b'*' => x.checked_mul(y),
            b'/' | b'%' if y == 0 => return Err("division by zero".into()),
            b'/' => Some(x / y),
            b'%' => Some(x % y),
            b'^' => {
                if y < 0 {
                    return Ok(Num::Float((x as f64).powf(y as f64)));
                }
                u32::try_from(y).ok().and_then(|e| x.checked_pow(e))
            }
            _ => None,
        };
        return match r {
            Some(v) if v.abs() < LIMIT => Ok(Num::Int(v)),
            _ => Err("the value is too large".into()),
        };
    }
    let (x, y) = (a.f(), b.f());
    let r = match op {
        b'+' => x + y,
        b'-' => x - y,
        b'*' => x * y,
        b'/' | b'%' if y == 0.0 => return Err("division by zero".into()),
        b'/' => x / y,
        b'%' => x % y,
        b'^' => x.powf(y),
        _ => f64::NAN,
    };
    if !r.is_finite() || r.abs() >= LIMIT as f64 {
        return Err("the value is too large".into());
    }
    Ok(Num::Float(r))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        let s = ExprKind::Size;
        assert_eq!(eval("((1+2)*4k)", s), Ok(12 << 10));
        assert_eq!(eval("(1+2)*4k", s), Ok(12 << 10));
        assert_eq!(eval("(2^10)", s), Ok(1024));
        assert_eq!(eval("(2^3^2)", s), Ok(512), "right-associative power");
        assert_eq!(eval("(10 % 4 + 1g / 2)", s), Ok(2 + (1 << 29)));
        assert_eq!(eval("(1.5*1g)", s), Ok(3 << 29));
        assert_eq!(eval("(0x10 * 1k)", s), Ok(16 << 10));
        assert_eq!(eval("(-4k + 8k)", s), Ok(4096));
        assert_eq!(eval("(1+1)m", s), Ok(2 << 20));
        assert!(eval("(4k - 8k)", s).unwrap_err().contains("negative"));
        assert!(eval("(1/0)", s).unwrap_err().contains("division by zero"));
        assert!(eval("((1+2)", s).unwrap_err().contains("not closed"));
        assert!(eval("(1+)", s).is_err());
        assert!(eval("(4q)", s).unwrap_err().contains("size unit"));
        assert!(eval("(2^200)", s).unwrap_err().contains("too large"));
        assert!(eval("(1) x", s).is_err());
        let deep = format!("{}1{}", "(".repeat(200), ")".repeat(200));
        assert!(eval(&deep, s).unwrap_err().contains("nested"));
    }

    #[test]
    fn times_are_microseconds_when_bare() {
        let t = ExprKind::Time;
        assert_eq!(eval("(300/5)", t), Ok(60_000), "bare = µs, as in fio");
        assert_eq!(eval("(300/5)s", t), Ok(60_000_000_000));
        assert_eq!(eval("(1m+30s)", t), Ok(90_000_000_000), "m = minutes");
        assert_eq!(eval("(2*250ms)", t), Ok(500_000_000));
    }

    #[test]
    fn plain() {
        assert_eq!(eval("(4*8)", ExprKind::Plain), Ok(32));
        assert!(eval("(4k)", ExprKind::Plain).is_err());
    }
}
