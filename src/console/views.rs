//! The console's pages as askama templates (compiled and checked at build time, HTML-escaped by default), and
//! the view of a review record they show.

use super::session::Session;
use crate::review::{ReviewRecord, unix_ms};
use askama::Template;
use serde_json::Value;

/// The logged-in reviewer, as the header shows them.
pub struct User {
    pub name: String,
    pub csrf: String,
    /// The admin token opened the session: the tools page is in the menu.
    pub admin: bool,
}

impl From<&Session> for User {
    fn from(session: &Session) -> Self {
        Self { name: session.name.clone(), csrf: session.csrf.clone(), admin: session.admin }
    }
}

#[derive(Template)]
#[template(path = "console/login.html")]
pub struct LoginPage {
    pub user: Option<User>,
    pub error: Option<String>,
    /// A token is needed (else the console is open on loopback, and a name is enough).
    pub closed: bool,
    /// The login form's CSRF token, the same as the login cookie's.
    pub csrf: String,
}

#[derive(Template)]
#[template(path = "console/reviews.html")]
pub struct ReviewsPage {
    pub user: Option<User>,
    pub rows: Vec<Row>,
    /// What the reviewer just decided, as the record now says.
    pub confirmation: Option<String>,
}

/// The rows alone, which the reviews page fetches again every few seconds.
#[derive(Template)]
#[template(path = "console/rows.html")]
pub struct Rows {
    pub rows: Vec<Row>,
}

#[derive(Template)]
#[template(path = "console/message.html")]
pub struct MessagePage {
    pub user: Option<User>,
    pub title: String,
    pub message: String,
}

/// One pending call in the list.
pub struct Row {
    pub tenant: String,
    pub call_id: String,
    pub tool: String,
    pub user_id: String,
    pub session_id: String,
    pub queued: String,
    pub waited: String,
    pub arguments: String,
    pub repairs: usize,
    /// The policy rule that sent the call to review; empty when the tool requires review.
    pub rule: String,
    /// How many identical pending calls the row stands for, its own included (1 when it is alone).
    pub identical: usize,
}

impl From<&ReviewRecord> for Row {
    fn from(r: &ReviewRecord) -> Self {
        Self {
            tenant: r.key.tenant.clone(),
            call_id: r.key.call_id.clone(),
            tool: r.tool.clone(),
            user_id: r.user_id.clone(),
            session_id: r.session_id.clone(),
            queued: utc(r.created_ms),
            waited: waited(unix_ms().saturating_sub(r.created_ms)),
            arguments: shortened(&r.arguments, 120),
            repairs: r.repairs.len(),
            rule: r.rule.as_ref().map(|rule| rule.name.clone()).unwrap_or_default(),
            identical: 1,
        }
    }
}

/// JSON text indented for reading; the text itself when it is not JSON (arguments the model broke).
pub fn pretty(text: &str) -> String {
    serde_json::from_str::<Value>(text)
        .ok()
        .and_then(|v| serde_json::to_string_pretty(&v).ok())
        .unwrap_or_else(|| text.to_owned())
}

fn shortened(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// Unix milliseconds as `2026-11-26 07:01:02 UTC`.
pub(super) fn utc(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil(i64::try_from(days).unwrap_or(0));
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC", rest / 3600, rest % 3600 / 60, rest % 60)
}

/// Days since 1970-01-01 as a proleptic Gregorian date (Howard Hinnant's `civil_from_days`).
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = u32::try_from(doy - (153 * mp + 2) / 5 + 1).unwrap_or(1);
    let m = u32::try_from(if mp < 10 { mp + 3 } else { mp - 9 }).unwrap_or(1);
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

pub(super) fn waited(ms: u64) -> String {
    let secs = ms / 1000;
    match secs {
        0..60 => format!("{secs} s"),
        60..3600 => format!("{} min {} s", secs / 60, secs % 60),
        _ => format!("{} h {} min", secs / 3600, secs % 3600 / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_and_waits_read_as_people_write_them() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(1_795_000_000_000), "2026-11-18 11:06:40 UTC");
        assert_eq!(utc(951_782_400_000), "2000-02-29 00:00:00 UTC");
        assert_eq!(waited(59_999), "59 s");
        assert_eq!(waited(125_000), "2 min 5 s");
        assert_eq!(waited(7_260_000), "2 h 1 min");
        assert_eq!(shortened("abcdef", 3), "abc…");
        assert_eq!(pretty("{'broken"), "{'broken");
    }
}
