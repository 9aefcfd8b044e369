//! Reading criterion's results: every `<criterion>/**/new/benchmark.json` names a measurement,
//! its `estimates.json` beside it holds the median, and its `sample.json` the samples (total
//! time and iteration count of each), from which the per-iteration spread is read.

use std::fs;
use std::io;
use std::path::Path;
use std::time::SystemTime;

/// One criterion measurement, its id split into the parts the report groups by.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Measurement {
    /// The criterion group (`core`, `query`, `registry`, `sched`).
    pub group: String,
    /// The workload, e.g. `each_1m` or `sync_point/empty_update`.
    pub row: String,
    /// Who ran it, e.g. `freyr_each`, `hecs`, `bevy_ecs_contiguous`, `plain_vec`.
    pub implementation: String,
    /// The thread count of a parallel row (`w4` or a bare `4` at the end of the id).
    pub threads: Option<usize>,
    /// The median time of one iteration, in nanoseconds.
    pub median_ns: f64,
    /// The fastest and the slowest sample, as nanoseconds per iteration (criterion's samples
    /// each time a batch of iterations), when criterion wrote them.
    pub spread: Option<(f64, f64)>,
}

/// What a measurement's implementation is, for the ratios.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Freyr (`freyr*`).
    Freyr,
    /// Another ECS of the `compare` feature (`hecs*`, `bevy_ecs*`, `legion*`).
    Peer,
    /// A reference without an ECS: plain loops, rayon, the memory floor.
    Baseline,
}

impl Measurement {
    /// Splits a criterion id `group/row.../implementation[/threads]` into its parts; `None` for
    /// an id with no row.
    pub(crate) fn from_id(full_id: &str, median_ns: f64) -> Option<Measurement> {
        let mut parts: Vec<&str> = full_id.split('/').collect();
        let threads = parts.last().and_then(|last| parse_threads(last));
        if threads.is_some() {
            parts.pop();
        }
        if parts.len() < 3 {
            return None;
        }
        let implementation = parts.pop()?.to_string();
        let group = parts.remove(0).to_string();
        Some(Measurement {
            group,
            row: parts.join("/"),
            implementation,
            threads,
            median_ns,
            spread: None,
        })
    }

    /// Freyr, a peer, or a baseline, by the implementation's name.
    pub(crate) fn kind(&self) -> Kind {
        let name = self.implementation.as_str();
        if name.starts_with("freyr") {
            Kind::Freyr
        } else if ["hecs", "bevy_ecs", "legion"]
            .iter()
            .any(|peer| name.starts_with(peer))
        {
            Kind::Peer
        } else {
            Kind::Baseline
        }
    }
}

/// `w12` or `12` as a thread count.
fn parse_threads(part: &str) -> Option<usize> {
    part.strip_prefix('w').unwrap_or(part).parse().ok()
}

/// Every measurement under `dir` (criterion's output directory), sorted by group, row, threads
/// and implementation; only those written at or after `since`, when given (so a fresh run is not
/// mixed with stale results of benchmarks that no longer exist).
pub(crate) fn collect(dir: &Path, since: Option<SystemTime>) -> io::Result<Vec<Measurement>> {
    let mut found = Vec::new();
    walk(dir, since, &mut found)?;
    found.sort_by(|a, b| {
        (&a.group, &a.row, a.threads, &a.implementation).cmp(&(
            &b.group,
            &b.row,
            b.threads,
            &b.implementation,
        ))
    });
    Ok(found)
}

fn walk(dir: &Path, since: Option<SystemTime>, found: &mut Vec<Measurement>) -> io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        if !path.is_dir() {
            continue;
        }
        if path.file_name().is_some_and(|name| name == "new") {
            if let Some(m) = read_new(&path, since)? {
                found.push(m);
            }
        } else {
            walk(&path, since, found)?;
        }
    }
    Ok(())
}

/// Reads one `new/` directory: its `benchmark.json` (the id) and `estimates.json` (the median).
fn read_new(new: &Path, since: Option<SystemTime>) -> io::Result<Option<Measurement>> {
    let (bench, estimates) = (new.join("benchmark.json"), new.join("estimates.json"));
    if !bench.is_file() || !estimates.is_file() {
        return Ok(None);
    }
    if let Some(since) = since
        && fs::metadata(&estimates)?.modified()? < since
    {
        return Ok(None);
    }
    let id = json(&bench)?;
    let full_id = id["full_id"]
        .as_str()
        .ok_or_else(|| bad(&bench, "full_id"))?;
    let median = json(&estimates)?["median"]["point_estimate"]
        .as_f64()
        .ok_or_else(|| bad(&estimates, "median.point_estimate"))?;
    let samples = new.join("sample.json");
    let spread = if samples.is_file() {
        spread(&json(&samples)?).ok_or_else(|| bad(&samples, "iters and times"))?
    } else {
        None
    };
    Ok(Measurement::from_id(full_id, median).map(|m| Measurement { spread, ..m }))
}

/// The fastest and slowest per-iteration time of criterion's `sample.json` (`iters[i]`
/// iterations took `times[i]` ns): `Some(None)` for no samples, `None` when the two lists are
/// missing, of other lengths, or hold something else than positive counts.
fn spread(sample: &serde_json::Value) -> Option<Option<(f64, f64)>> {
    let list = |field: &str| -> Option<Vec<f64>> {
        sample[field]
            .as_array()?
            .iter()
            .map(|v| v.as_f64())
            .collect()
    };
    let (iters, times) = (list("iters")?, list("times")?);
    if iters.len() != times.len() || iters.iter().any(|&n| n <= 0.0) {
        return None;
    }
    Some(
        times
            .iter()
            .zip(&iters)
            .map(|(t, n)| t / n)
            .fold(None, |acc: Option<(f64, f64)>, x| match acc {
                None => Some((x, x)),
                Some((lo, hi)) => Some((lo.min(x), hi.max(x))),
            }),
    )
}

fn json(path: &Path) -> io::Result<serde_json::Value> {
    let text = fs::read_to_string(path)?;
    serde_json::from_str(&text).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: {e}", path.display()),
        )
    })
}

fn bad(path: &Path, field: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("{}: no `{field}`", path.display()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_split_into_group_row_implementation_and_threads() {
        let m = Measurement::from_id("query/each_1m/freyr_each", 5.0).unwrap();
        assert_eq!(
            (m.group.as_str(), m.row.as_str(), m.implementation.as_str()),
            ("query", "each_1m", "freyr_each")
        );
        assert_eq!(m.threads, None);
        let m = Measurement::from_id("registry/sync_point/empty_update/legion/w16", 1.0).unwrap();
        assert_eq!(m.row, "sync_point/empty_update");
        assert_eq!(m.implementation, "legion");
        assert_eq!(m.threads, Some(16));
        // Criterion's `BenchmarkId::new(name, 2)` ends in a bare count.
        let m = Measurement::from_id("sched/chunk_tasks_1954/rayon_par_iter/2", 1.0).unwrap();
        assert_eq!(
            (m.implementation.as_str(), m.threads),
            ("rayon_par_iter", Some(2))
        );
        assert_eq!(Measurement::from_id("query/lonely", 1.0), None);
    }

    #[test]
    fn implementations_are_freyr_peers_or_baselines() {
        let kind = |imp: &str| {
            Measurement::from_id(&format!("g/r/{imp}"), 1.0)
                .unwrap()
                .kind()
        };
        assert_eq!(kind("freyr_each_async"), Kind::Freyr);
        for peer in ["hecs", "hecs_rayon", "bevy_ecs_contiguous", "legion"] {
            assert_eq!(kind(peer), Kind::Peer, "{peer}");
        }
        for base in ["plain_vec", "rayon_par_iter", "seq", "par_for"] {
            assert_eq!(kind(base), Kind::Baseline, "{base}");
        }
    }

    #[test]
    fn collect_reads_medians_and_skips_results_older_than_the_run() {
        let dir = std::env::temp_dir().join(format!("freyr-report-{}", std::process::id()));
        let new = dir.join("query/each_1m/hecs/new");
        fs::create_dir_all(&new).unwrap();
        fs::write(
            new.join("benchmark.json"),
            r#"{"group_id":"query","function_id":"each_1m/hecs","full_id":"query/each_1m/hecs"}"#,
        )
        .unwrap();
        fs::write(
            new.join("estimates.json"),
            r#"{"median":{"point_estimate":1234.5,"standard_error":1.0}}"#,
        )
        .unwrap();
        let found = collect(&dir, None).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].median_ns, 1234.5);
        assert_eq!(found[0].kind(), Kind::Peer);
        assert_eq!(found[0].spread, None, "no sample.json: no spread");
        // Samples of 1, 2 and 4 iterations: 1300, 1200 and 1250 ns per iteration.
        fs::write(
            new.join("sample.json"),
            r#"{"sampling_mode":"Linear","iters":[1.0,2.0,4.0],"times":[1300.0,2400.0,5000.0]}"#,
        )
        .unwrap();
        assert_eq!(
            collect(&dir, None).unwrap()[0].spread,
            Some((1200.0, 1300.0))
        );
        fs::write(new.join("sample.json"), r#"{"iters":[1.0],"times":[]}"#).unwrap();
        let err = collect(&dir, None).unwrap_err();
        assert!(err.to_string().contains("iters and times"), "{err}");
        fs::remove_file(new.join("sample.json")).unwrap();
        let later = SystemTime::now() + std::time::Duration::from_secs(3600);
        assert!(collect(&dir, Some(later)).unwrap().is_empty());
        fs::remove_dir_all(&dir).unwrap();
    }
}
