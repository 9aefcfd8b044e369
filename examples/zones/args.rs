//! Command-line flags of `zones`, each checked against its range before anything runs.

use std::path::PathBuf;

/// The usage text.
pub(crate) const USAGE: &str = "usage: zones [flags]
  --bus inproc|nats://HOST:PORT  the bus: every zone on threads of this process on the
                            in-process bus (default), or one zone per process on a NATS
                            JetStream server (loopback only: 127.0.0.1, localhost, [::1])
  --zones N                 zones in this process on the in-process bus, 1..=64 (default 2)
  --zone Z --of N           with nats://: run zone Z of N (N in 1..=64, Z in 0..N); both needed
  --aircraft N              aircraft over all zones, 1..=10000000 (default 20000)
  --side M                  the map's side in metres, 10..=10000000 (default: 40000 at 20000
                            aircraft, growing with the square root of their number)
  --ticks N                 ticks to run, 1..=10000000 (default 600)
  --workers N               workers per zone, 1..=256 (default 1)
  --lookahead K             a handoff sent at tick T is imported at T + K, 1..=600 (default 2)
  --pace realtime|free      60 Hz on the real clock, or back to back (default free)
  --stream NAME             the JetStream stream, letters, digits, - and _ (default FREYR_ZONES)
  --fresh                   with nats://: delete the stream first (zone 0 only; start it first)
  --parts-dir DIR           with nats://: write this zone's digest part there, wait (up to 60 s)
                            for every zone's and print the merged digest
  --help                    this text
Each flag may be given once; bad input exits with status 2 before anything runs.";

/// The flags [`parse`] knows.
const KNOWN: [&str; 13] = [
    "--bus",
    "--zones",
    "--zone",
    "--of",
    "--aircraft",
    "--side",
    "--ticks",
    "--workers",
    "--lookahead",
    "--pace",
    "--stream",
    "--fresh",
    "--parts-dir",
];

/// Which bus.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum BusChoice {
    /// Zones `0..zones` on threads of this process.
    InProcess { zones: u32 },
    /// Zone `zone` of `of` on a NATS server.
    Nats { url: String, zone: u32, of: u32 },
}

/// The parsed flags.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Args {
    pub bus: BusChoice,
    pub aircraft: u64,
    pub side: f32,
    pub ticks: u64,
    pub workers: usize,
    pub lookahead: u64,
    pub realtime: bool,
    pub stream: String,
    pub fresh: bool,
    pub parts_dir: Option<PathBuf>,
}

/// Why the command line was not accepted.
#[derive(Debug, PartialEq)]
pub(crate) enum ArgsError {
    Help,
    Invalid(String),
}

fn number<T: std::str::FromStr + PartialOrd + std::fmt::Display>(
    flag: &str,
    value: &str,
    lo: T,
    hi: T,
) -> Result<T, ArgsError> {
    match value.parse::<T>() {
        Ok(v) if v >= lo && v <= hi => Ok(v),
        _ => Err(ArgsError::Invalid(format!(
            "{flag} {value}: expected {lo}..={hi}"
        ))),
    }
}

/// The map side for `aircraft` at the server example's density (12.5 per km²).
pub(crate) fn default_side(aircraft: u64) -> f32 {
    (40_000.0 * (aircraft as f64 / 20_000.0).sqrt()).max(10.0) as f32
}

pub(crate) fn parse(args: impl IntoIterator<Item = String>) -> Result<Args, ArgsError> {
    let mut it = args.into_iter();
    let (mut bus, mut zones, mut zone, mut of) = (None::<String>, None, None, None);
    let mut a = Args {
        bus: BusChoice::InProcess { zones: 2 },
        aircraft: 20_000,
        side: 0.0,
        ticks: 600,
        workers: 1,
        lookahead: 2,
        realtime: false,
        stream: "FREYR_ZONES".into(),
        fresh: false,
        parts_dir: None,
    };
    let mut side = None;
    let mut seen: Vec<String> = Vec::new();
    while let Some(flag) = it.next() {
        if flag == "--help" || flag == "-h" {
            return Err(ArgsError::Help);
        }
        if !flag.starts_with('-') {
            return Err(ArgsError::Invalid(format!(
                "unexpected argument {flag:?}: every value follows its flag (see --help)"
            )));
        }
        if !KNOWN.contains(&flag.as_str()) {
            return Err(ArgsError::Invalid(format!(
                "unknown flag {flag} (see --help)"
            )));
        }
        if seen.contains(&flag) {
            return Err(ArgsError::Invalid(format!("{flag} given twice")));
        }
        seen.push(flag.clone());
        if flag == "--fresh" {
            a.fresh = true;
            continue;
        }
        let value = it
            .next()
            .ok_or_else(|| ArgsError::Invalid(format!("{flag} needs a value")))?;
        match flag.as_str() {
            "--bus" => bus = Some(value),
            "--zones" => zones = Some(number(&flag, &value, 1u32, 64)?),
            "--zone" => zone = Some(number(&flag, &value, 0u32, 63)?),
            "--of" => of = Some(number(&flag, &value, 1u32, 64)?),
            "--aircraft" => a.aircraft = number(&flag, &value, 1u64, 10_000_000)?,
            "--side" => side = Some(number(&flag, &value, 10.0f32, 10_000_000.0)?),
            "--ticks" => a.ticks = number(&flag, &value, 1u64, 10_000_000)?,
            "--workers" => a.workers = number(&flag, &value, 1usize, 256)?,
            "--lookahead" => a.lookahead = number(&flag, &value, 1u64, 600)?,
            "--pace" => {
                a.realtime = match value.as_str() {
                    "realtime" => true,
                    "free" => false,
                    _ => {
                        return Err(ArgsError::Invalid(format!(
                            "--pace {value}: realtime or free"
                        )));
                    }
                }
            }
            "--stream" => {
                let ok = !value.is_empty()
                    && value.len() <= 64
                    && value
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
                if !ok {
                    return Err(ArgsError::Invalid(format!(
                        "--stream {value}: 1 to 64 letters, digits, - or _"
                    )));
                }
                a.stream = value;
            }
            "--parts-dir" if value.is_empty() => {
                return Err(ArgsError::Invalid(
                    "--parts-dir needs a directory (got an empty name)".into(),
                ));
            }
            "--parts-dir" => a.parts_dir = Some(PathBuf::from(value)),
            _ => unreachable!("every name in KNOWN has an arm"),
        }
    }
    a.side = side.unwrap_or_else(|| default_side(a.aircraft));
    let nats_only = |what: &str| ArgsError::Invalid(format!("{what} needs --bus nats://..."));
    a.bus = match bus.as_deref() {
        None | Some("inproc") => {
            if zone.is_some() || of.is_some() {
                return Err(nats_only("--zone/--of"));
            }
            if a.fresh || a.parts_dir.is_some() {
                return Err(nats_only("--fresh/--parts-dir"));
            }
            BusChoice::InProcess {
                zones: zones.unwrap_or(2),
            }
        }
        Some(url) if url.starts_with("nats://") => {
            let rest = &url["nats://".len()..];
            // The port follows the last ':' after the host (`[::1]` holds colons of its own).
            let (host, port) = match rest.rsplit_once(':') {
                Some((h, p)) if !p.contains(']') => (h, Some(p)),
                _ => (rest, None),
            };
            if port.is_some_and(|p| p.parse::<u16>().is_err()) {
                return Err(ArgsError::Invalid(format!(
                    "--bus {url}: the port after the host must be a number in 0..=65535"
                )));
            }
            if !["127.0.0.1", "localhost", "[::1]"].contains(&host) {
                return Err(ArgsError::Invalid(format!(
                    "--bus {url}: only loopback addresses (127.0.0.1, localhost, [::1])"
                )));
            }
            if zones.is_some() {
                return Err(ArgsError::Invalid(
                    "--zones is for the in-process bus; use --zone Z --of N".into(),
                ));
            }
            let (Some(zone), Some(of)) = (zone, of) else {
                return Err(ArgsError::Invalid(
                    "--bus nats://... needs --zone Z and --of N".into(),
                ));
            };
            if zone >= of {
                return Err(ArgsError::Invalid(format!(
                    "--zone {zone} is not one of 0..{of}"
                )));
            }
            BusChoice::Nats {
                url: url.to_owned(),
                zone,
                of,
            }
        }
        Some(other) => {
            return Err(ArgsError::Invalid(format!(
                "--bus {other}: inproc or nats://HOST:PORT"
            )));
        }
    };
    Ok(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(s: &str) -> Result<Args, ArgsError> {
        parse(s.split_whitespace().map(str::to_owned))
    }

    #[test]
    fn defaults_run_two_zones_in_process() {
        let a = parse_str("").unwrap();
        assert_eq!(a.bus, BusChoice::InProcess { zones: 2 });
        assert_eq!((a.aircraft, a.side, a.ticks), (20_000, 40_000.0, 600));
    }

    #[test]
    fn a_nats_zone_needs_its_place_and_a_loopback_server() {
        let a = parse_str("--bus nats://127.0.0.1:4222 --zone 1 --of 2").unwrap();
        assert_eq!(
            a.bus,
            BusChoice::Nats {
                url: "nats://127.0.0.1:4222".into(),
                zone: 1,
                of: 2
            }
        );
        for bad in [
            "--bus nats://127.0.0.1:4222",
            "--bus nats://127.0.0.1:4222 --zone 2 --of 2",
            "--bus nats://10.0.0.1:4222 --zone 0 --of 2",
            "--bus kafka://x --zone 0 --of 2",
            "--zone 0 --of 2",
            "--zones 0",
            "--ticks 0",
            "--pace fast",
            "--stream a.b",
            "--side",
            "--frobnicate 1",
        ] {
            assert!(
                matches!(parse_str(bad), Err(ArgsError::Invalid(_))),
                "{bad}"
            );
        }
        assert_eq!(parse_str("--help"), Err(ArgsError::Help));
    }
}
