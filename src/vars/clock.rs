//! Time for variables: [`Timestamp`]s in microseconds since the Unix epoch, the [`Clock`] that
//! stamps every write and visit (injectable, so tests control time), and [`wall_clock`], the one
//! reading of the system time, which the store uses too.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The last microsecond that RFC 3339 (four-digit years) can represent: 9999-12-31T23:59:59.999999Z.
const MAX_RFC3339_MICROS: u64 = 253_402_300_800_000_000 - 1;

/// Microseconds since the Unix epoch.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct Timestamp(pub u64);

impl Timestamp {
    /// Formats as RFC 3339 with microseconds, e.g. `2024-05-01T12:00:00.000000Z`.
    /// Instants past the end of year 9999 render as its last microsecond.
    pub fn to_rfc3339(self) -> String {
        let micros = self.0.min(MAX_RFC3339_MICROS);
        humantime::format_rfc3339_micros(UNIX_EPOCH + Duration::from_micros(micros)).to_string()
    }

    /// Formats as ISO 8601 in UTC to the second, e.g. `2024-05-01T12:00:00Z`: how every time a
    /// model reads in a tool result is written (never a raw count of microseconds).
    pub fn to_readable(self) -> String {
        let micros = self.0.min(MAX_RFC3339_MICROS);
        humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_micros(micros)).to_string()
    }

    /// The instant `micros` microseconds after 1970 as the stores keep it; before 1970 is 1970.
    pub fn from_micros(micros: i64) -> Self {
        Self(u64::try_from(micros).unwrap_or(0))
    }
}

/// Serializes a time the stores keep (microseconds since 1970) as [`Timestamp::to_readable`]
/// writes it: `#[serde(serialize_with = "crate::vars::readable_time")]` on the fields of tool
/// results, with `#[schemars(with = "String")]`.
pub fn readable_time<S: serde::Serializer>(micros: &i64, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&Timestamp::from_micros(*micros).to_readable())
}

/// The system time; 0 before the epoch, saturating far after it. Unlike a [`SystemClock`], two
/// readings may be equal or go back: use it where an instant is only recorded (when a
/// workspace, an approval or a snapshot was first stored), and a [`Clock`] where events must
/// stay in order.
pub fn wall_clock() -> Timestamp {
    let micros = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| {
            u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX)
        });
    Timestamp(micros)
}

/// A source of timestamps, injectable so tests can control time.
pub trait Clock: Send + Sync {
    /// The current instant.
    fn now(&self) -> Timestamp;
}

/// The wall clock made strictly increasing: each call returns the later of the system time and
/// the previous result plus one microsecond, so no two events share a timestamp.
#[derive(Debug, Default)]
pub struct SystemClock {
    last: AtomicU64,
}

impl SystemClock {
    pub fn new() -> Self {
        Self::default()
    }
}

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        let wall = wall_clock().0;
        let mut previous = self.last.load(Ordering::Relaxed);
        loop {
            let next = wall.max(previous.saturating_add(1));
            match self.last.compare_exchange_weak(
                previous,
                next,
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Timestamp(next),
                Err(actual) => previous = actual,
            }
        }
    }
}

/// A test clock: the first call returns the start value, and each call advances it by one.
#[derive(Debug)]
pub struct ManualClock {
    next: AtomicU64,
}

impl ManualClock {
    pub fn new(start: u64) -> Self {
        Self {
            next: AtomicU64::new(start),
        }
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp(self.next.fetch_add(1, Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn readable_times_are_utc_to_the_second() {
        assert_eq!(Timestamp(0).to_readable(), "1970-01-01T00:00:00Z");
        assert_eq!(
            Timestamp(1_700_000_000_923_456).to_readable(),
            "2023-11-14T22:13:20Z"
        );
        assert_eq!(
            Timestamp::from_micros(-5).to_readable(),
            "1970-01-01T00:00:00Z"
        );
        assert_eq!(Timestamp(u64::MAX).to_readable(), "9999-12-31T23:59:59Z");
    }

    #[test]
    fn timestamps_format_as_rfc3339_with_microseconds() {
        assert_eq!(Timestamp(0).to_rfc3339(), "1970-01-01T00:00:00.000000Z");
        assert_eq!(
            Timestamp(1_700_000_000_123_456).to_rfc3339(),
            "2023-11-14T22:13:20.123456Z"
        );
        assert_eq!(
            Timestamp(u64::MAX).to_rfc3339(),
            "9999-12-31T23:59:59.999999Z"
        );
    }

    #[test]
    fn the_system_clock_never_repeats_or_goes_back() {
        let clock = SystemClock::new();
        let readings: Vec<Timestamp> = (0..10_000).map(|_| clock.now()).collect();

        assert!(readings.windows(2).all(|pair| pair[0] < pair[1]));
        assert!(
            readings
                .first()
                .is_some_and(|first| first.0 > 1_600_000_000_000_000)
        );
    }

    #[test]
    fn the_manual_clock_starts_where_told_and_ticks_by_one() {
        let clock = ManualClock::new(40);

        assert_eq!(
            [clock.now(), clock.now(), clock.now()],
            [Timestamp(40), Timestamp(41), Timestamp(42)]
        );
    }
}
