//! The zones on a real NATS server with JetStream: ignored in a plain `cargo test` (no setup on
//! a laptop); CI runs them with `-- --ignored` and `FREYR_NATS_URL=nats://127.0.0.1:4222`
//! after starting the server (`.ci/run`). Without the variable, or with a server that does not
//! answer, they fail loudly: they never skip.
//!
//! The processes of a run are this test binary again, started with `zone_process` as the only
//! test to run and the zone's parameters in `FREYR_ZONE_*` variables.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use common::{Layout, assert_each_key_once, run_lockstep};
use freyr_zone::{Checkpointing, FaultPoint, NatsBus, Pace, ZoneDigest};

/// The server's URL; only loopback addresses are accepted.
fn nats_url() -> String {
    let url = std::env::var("FREYR_NATS_URL").expect(
        "FREYR_NATS_URL is not set: start `nats-server -js -a 127.0.0.1 -p 4222` and set \
         FREYR_NATS_URL=nats://127.0.0.1:4222 (these tests never skip)",
    );
    let host = url
        .trim_start_matches("nats://")
        .split(':')
        .next()
        .unwrap_or("");
    assert!(
        ["127.0.0.1", "localhost", "[::1]"].contains(&host),
        "FREYR_NATS_URL must be a loopback address, not {url}"
    );
    url
}

fn connect(stream: &str) -> NatsBus {
    NatsBus::connect(&nats_url(), stream, Duration::from_secs(5))
        .unwrap_or_else(|e| panic!("the NATS server does not answer: {e}"))
}

fn layout(zones: u32) -> Layout {
    Layout {
        zones,
        aircraft: 600,
        side: 2_000.0,
        lookahead: 2,
        ticks: 240,
    }
}

/// A stream name no other test run uses.
fn stream_name(what: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("FZT_{what}_{}_{nanos}", std::process::id())
}

#[test]
#[ignore = "needs a NATS server: FREYR_NATS_URL (CI runs it)"]
fn nats_bus_keeps_order_dedup_and_replay() {
    let stream = stream_name("contract");
    let mut bus = connect(&stream);
    common::bus_contract(&mut bus);
    bus.delete_stream(&stream).unwrap();
}

/// What one zone process is told, through the environment.
struct ZoneProcess {
    zone: u32,
    zones: u32,
    stream: String,
    dir: PathBuf,
    crash: Option<String>,
}

impl ZoneProcess {
    fn spawn(&self) -> Child {
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        cmd.args([
            "--exact",
            "zone_process",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("FREYR_ZONE_ZONE", self.zone.to_string())
        .env("FREYR_ZONE_ZONES", self.zones.to_string())
        .env("FREYR_ZONE_STREAM", &self.stream)
        .env("FREYR_ZONE_DIR", &self.dir)
        .env_remove("FREYR_ZONE_CRASH");
        if let Some(crash) = &self.crash {
            cmd.env("FREYR_ZONE_CRASH", crash);
        }
        cmd.stdout(std::process::Stdio::null());
        cmd.spawn().unwrap()
    }
}

/// The child side: one zone on NATS, resumed from its checkpoint if there is one, run to the
/// layout's end on the real clock at 60 Hz, settled; its digest parts and keys written to
/// `<dir>/zone-<z>.out`. Not a test of its own: the entry point of the processes the tests
/// below start (with `FREYR_ZONE_ZONE` set); in the `--ignored` run itself it has nothing to
/// do and returns.
#[test]
#[ignore = "a zone process of the NATS tests, started by them"]
fn zone_process() {
    if std::env::var_os("FREYR_ZONE_ZONE").is_none() {
        return;
    }
    let var = |name: &str| {
        std::env::var(name).unwrap_or_else(|_| panic!("{name}: only the NATS tests start this"))
    };
    let zone: u32 = var("FREYR_ZONE_ZONE").parse().unwrap();
    let l = layout(var("FREYR_ZONE_ZONES").parse().unwrap());
    let dir = PathBuf::from(var("FREYR_ZONE_DIR"));
    let mut config = l.config(zone);
    config.pace = Pace::RealTime;
    config.neighbour_timeout = Duration::from_secs(60);
    config.checkpoint = Some(Checkpointing {
        dir: dir.clone(),
        every: 5,
    });
    let bus = connect(&var("FREYR_ZONE_STREAM"));
    let mut z = l.zone(zone, 2, bus, config);
    z.resume().unwrap();
    if let Ok(crash) = std::env::var("FREYR_ZONE_CRASH") {
        let (what, tick) = crash.split_once(':').unwrap();
        let tick: u64 = tick.parse().unwrap();
        let what = what.to_owned();
        z.set_fault_hook(move |at| {
            let hit = match at {
                FaultPoint::BetweenHandoffsAndMarkers(t) => what == "between" && t == tick,
                FaultPoint::MidCheckpoint(t) => what == "checkpoint" && t == tick,
                FaultPoint::TickEnd(_) => false,
            };
            if hit {
                std::process::abort();
            }
        });
    }
    z.run_until(l.ticks).unwrap();
    z.settle().unwrap();
    let d = z.digest();
    let mut out = format!("{} {}\n", d.entities(), d.sum());
    for k in d.sorted_keys() {
        out.push_str(&format!("{k}\n"));
    }
    std::fs::write(dir.join(format!("zone-{zone}.out")), out).unwrap();
}

/// Waits for a child, bounded: kills it and fails after `limit`.
fn wait_bounded(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            child.kill().ok();
            panic!("a zone process did not finish in {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Reads the zones' outputs into one merged digest (keys included).
fn merged_output(dir: &Path, zones: u32) -> (u64, ZoneDigest) {
    let mut parts = Vec::new();
    let mut keys = ZoneDigest::default();
    for z in 0..zones {
        let text = std::fs::read_to_string(dir.join(format!("zone-{z}.out"))).unwrap();
        let mut lines = text.lines();
        let head: Vec<u64> = lines
            .next()
            .unwrap()
            .split(' ')
            .map(|v| v.parse().unwrap())
            .collect();
        parts.push((head[0], head[1]));
        for k in lines {
            keys.add(k.parse().unwrap(), 0);
        }
    }
    (ZoneDigest::value_of_parts(&parts), keys)
}

fn temp_dir(what: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(stream_name(what));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
#[ignore = "needs a NATS server: FREYR_NATS_URL (CI runs it)"]
fn one_process_per_zone_on_nats_equals_the_in_process_run() {
    for zones in [2, 3] {
        let l = layout(zones);
        let stream = stream_name("placement");
        let dir = temp_dir("placement");
        let mut children: Vec<Child> = (0..zones)
            .map(|zone| {
                ZoneProcess {
                    zone,
                    zones,
                    stream: stream.clone(),
                    dir: dir.clone(),
                    crash: None,
                }
                .spawn()
            })
            .collect();
        for c in &mut children {
            assert!(wait_bounded(c, Duration::from_secs(120)).success());
        }
        let (value, keys) = merged_output(&dir, zones);
        assert_each_key_once(&keys, l.aircraft);
        assert_eq!(value, run_lockstep(l, 1).0.value(), "{zones} zones");
        connect(&stream).delete_stream(&stream).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
#[ignore = "needs a NATS server: FREYR_NATS_URL (CI runs it)"]
fn a_zone_killed_at_ten_random_moments_and_restarted_changes_nothing() {
    let zones = 3;
    let l = layout(zones);
    let stream = stream_name("kill");
    let dir = temp_dir("kill");
    let process = |zone: u32, crash: Option<&str>| ZoneProcess {
        zone,
        zones,
        stream: stream.clone(),
        dir: dir.clone(),
        crash: crash.map(str::to_owned),
    };
    let mut others: Vec<Child> = [0, 2].iter().map(|&z| process(z, None).spawn()).collect();
    // Two deaths at chosen moments first: between a tick's handoffs and its marker, and in
    // the middle of a checkpoint (the temporary file written, not renamed).
    for crash in ["between:23", "checkpoint:50"] {
        let mut victim = process(1, Some(crash)).spawn();
        let status = wait_bounded(&mut victim, Duration::from_secs(60));
        assert!(!status.success(), "{crash}: the zone was to die there");
    }
    // Then ten SIGKILLs at seeded random moments of the run (4 s of ticks at 60 Hz).
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    let mut landed = 0;
    for _ in 0..10 {
        seed = freyr::mix(seed);
        let mut victim = process(1, None).spawn();
        std::thread::sleep(Duration::from_millis(150 + seed % 350));
        if victim.try_wait().unwrap().is_none() {
            landed += 1;
        }
        victim.kill().unwrap(); // SIGKILL
        victim.wait().unwrap();
    }
    assert!(landed >= 8, "only {landed} kills hit a running zone");
    let mut last = process(1, None).spawn();
    assert!(wait_bounded(&mut last, Duration::from_secs(120)).success());
    for c in &mut others {
        assert!(wait_bounded(c, Duration::from_secs(120)).success());
    }
    let (value, keys) = merged_output(&dir, zones);
    assert_each_key_once(&keys, l.aircraft);
    assert_eq!(value, run_lockstep(l, 1).0.value());
    connect(&stream).delete_stream(&stream).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A NATS server of this test's own on `port`, its store in `dir`.
fn start_server(port: u16, dir: &Path) -> Child {
    let child = Command::new("nats-server")
        .args(["-js", "-a", "127.0.0.1", "-p", &port.to_string(), "-sd"])
        .arg(dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("nats-server is not on PATH (CI installs it; these tests never skip)");
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "nats-server did not start on port {port}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    child
}

#[test]
#[ignore = "needs nats-server on PATH and FREYR_NATS_URL (CI runs it)"]
fn zones_survive_a_server_restart_without_loss() {
    nats_url(); // the same rule as the other NATS tests: never a skip
    let port = 4299;
    let url = format!("nats://127.0.0.1:{port}");
    let store = temp_dir("restart");
    let mut server = start_server(port, &store);
    let l = layout(2);
    let stream = stream_name("restart");
    let results: Vec<(ZoneDigest, u64)> = std::thread::scope(|s| {
        let runs: Vec<_> = (0..2)
            .map(|z| {
                let (url, stream) = (url.clone(), stream.clone());
                s.spawn(move || {
                    let bus = NatsBus::connect(&url, &stream, Duration::from_secs(5)).unwrap();
                    let mut config = l.config(z);
                    config.pace = Pace::RealTime;
                    config.neighbour_timeout = Duration::from_secs(60);
                    config.publish_timeout = Duration::from_secs(60);
                    let mut zone = l.zone(z, 1, bus, config);
                    zone.run_until(l.ticks).unwrap();
                    zone.settle().unwrap();
                    (zone.digest(), zone.stats().bus_retries)
                })
            })
            .collect();
        // Mid-run (the run lasts 4 s), the server dies and comes back a second later.
        std::thread::sleep(Duration::from_millis(1500));
        server.kill().unwrap();
        server.wait().unwrap();
        std::thread::sleep(Duration::from_secs(1));
        server = start_server(port, &store);
        runs.into_iter().map(|r| r.join().unwrap()).collect()
    });
    server.kill().unwrap();
    server.wait().unwrap();
    let mut merged = ZoneDigest::default();
    for (d, _) in &results {
        merged.merge(d);
    }
    assert_each_key_once(&merged, l.aircraft);
    assert_eq!(merged.value(), run_lockstep(l, 1).0.value());
    assert!(
        results.iter().any(|(_, retries)| *retries > 0),
        "the restart was not noticed"
    );
    std::fs::remove_dir_all(&store).unwrap();
}
