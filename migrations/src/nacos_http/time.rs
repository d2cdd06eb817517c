//! The times Nacos-compatible servers answer: epoch milliseconds (a number or digits) or
//! an ISO-8601 date-time (`2024-05-06T11:08:12.000+00:00`, as Jackson writes a
//! `Timestamp`; also `Z`, `+0800`, or no offset: UTC).

use serde_json::Value;

/// Milliseconds since the Unix epoch.
pub fn millis(v: &Value) -> Result<i64, String> {
    match v {
        Value::Number(n) => n.as_i64().ok_or_else(|| format!("not a time: {n}")),
        Value::String(s) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => {
            s.parse().map_err(|_| format!("not a time: {s:?}"))
        }
        Value::String(s) => iso(s).ok_or_else(|| format!("not a time: {s:?}")),
        other => Err(format!("not a time: {other}")),
    }
}

fn num(s: &str) -> Option<i64> {
    (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

/// `YYYY-MM-DD[T ]HH:MM:SS[.fff][Z|±HH:MM|±HHMM]`.
fn iso(s: &str) -> Option<i64> {
    let date = s.get(..10)?;
    let sep = s.get(10..11)?;
    if sep != "T" && sep != " " {
        return None;
    }
    let (y, m, d) = (
        num(date.get(..4)?)?,
        num(date.get(5..7)?)?,
        num(date.get(8..10)?)?,
    );
    if date.get(4..5)? != "-" || date.get(7..8)? != "-" || !(1..=12).contains(&m) {
        return None;
    }
    let rest = s.get(11..)?;
    let (hh, mm, ss) = (
        num(rest.get(..2)?)?,
        num(rest.get(3..5)?)?,
        num(rest.get(6..8)?)?,
    );
    let mut rest = rest.get(8..)?;
    let mut ms = 0;
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        let f = frac.get(..digits)?;
        let padded = format!("{:0<3}", f.get(..digits.min(3))?);
        ms = num(&padded)?;
        rest = frac.get(digits..)?;
    }
    let offset_min = match rest {
        "" | "Z" => 0,
        _ => {
            let sign = match rest.get(..1)? {
                "+" => 1,
                "-" => -1,
                _ => return None,
            };
            let t = rest.get(1..)?.replace(':', "");
            if t.len() != 4 {
                return None;
            }
            sign * (num(t.get(..2)?)? * 60 + num(t.get(2..)?)?)
        }
    };
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + hh * 3600 + mm * 60 + ss - offset_min * 60;
    Some(secs * 1000 + ms)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_numbers_and_iso_times() {
        assert_eq!(millis(&json!(1714993692000i64)), Ok(1714993692000));
        assert_eq!(millis(&json!("1714993692000")), Ok(1714993692000));
        let utc = Ok(1_714_993_692_000);
        assert_eq!(millis(&json!("2024-05-06T11:08:12.000+00:00")), utc);
        assert_eq!(millis(&json!("2024-05-06T11:08:12Z")), utc);
        assert_eq!(millis(&json!("2024-05-06 11:08:12")), utc);
        assert_eq!(millis(&json!("2024-05-06T19:08:12.000+0800")), utc);
        assert_eq!(
            millis(&json!("2024-05-06T11:08:12.5Z")),
            Ok(1_714_993_692_500)
        );
        assert!(millis(&json!("yesterday")).is_err());
        assert!(millis(&json!("2024-13-06T11:08:12Z")).is_err());
        assert!(millis(&json!(null)).is_err());
    }
}
