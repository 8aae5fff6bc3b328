//! A run's identity, as every record and evidence entry carries it: the run
//! id, the host, and the time.

use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

/// `HWMATRIX_RUN_ID`, else `<unix seconds>-<pid>` fixed for this process.
pub fn run_id() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| {
        std::env::var("HWMATRIX_RUN_ID")
            .unwrap_or_else(|_| format!("{}-{}", unix_seconds(), std::process::id()))
    })
}

/// `HWMATRIX_HOST` (for a CI runner or container whose hostname says
/// nothing), else /etc/hostname, else `HOSTNAME`.
pub fn host() -> String {
    if let Some(host) = std::env::var("HWMATRIX_HOST")
        .ok()
        .filter(|h| !h.trim().is_empty())
    {
        return host.trim().to_string();
    }
    std::fs::read_to_string("/etc/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "unknown".into())
}

fn unix_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

pub fn now_rfc3339() -> String {
    rfc3339(unix_seconds())
}

/// Formats unix seconds as `YYYY-MM-DDTHH:MM:SSZ` (Howard Hinnant's civil-from-days).
pub fn rfc3339(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_instants() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_795_314_896), "2026-11-22T02:34:56Z");
    }
}
