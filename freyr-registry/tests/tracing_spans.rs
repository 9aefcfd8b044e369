//! The `tracing` feature: one tick's spans, in order, as a subscriber sees them (the tick, each
//! phase with its systems and sync point, query calls, launches and their task batches); the
//! spans close when a callback or a system panics; and the world is the same with a subscriber
//! as without one, for 1, 2, 3, 8 and 16 workers.
//!
//! Run with `cargo test -p freyr-registry --features tracing --test tracing_spans`.

use std::panic::{self, AssertUnwindSafe};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};
use std::thread::{self, ThreadId};

use freyr_registry::{Phase, Registry, StableHash, StableHasher};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing::{Metadata, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

/// What the recording layer saw: enters and exits, in the order they happened.
#[derive(Clone, Debug, PartialEq)]
enum Step {
    Enter,
    Exit,
}

#[derive(Clone, Debug)]
struct Seen {
    step: Step,
    thread: ThreadId,
    /// The span's name and its fields as `name=value`, e.g. `launch label=Move launch=0 tasks=2`.
    span: String,
    /// The name of its parent span, if any.
    parent: Option<&'static str>,
}

/// The fields of a new span, kept in its extensions.
struct Fields(String);

struct Collect<'a>(&'a mut String);

impl Visit for Collect<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.push_str(&format!(" {}={value}", field.name()));
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.push_str(&format!(" {}={value:?}", field.name()));
    }
}

/// Records every enter and exit of a `freyr` span into [`log`].
struct Recorder;

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Recorder {
    fn enabled(&self, metadata: &Metadata<'_>, _: Context<'_, S>) -> bool {
        metadata.target() == "freyr"
    }

    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut text = attrs.metadata().name().to_owned();
        attrs.record(&mut Collect(&mut text));
        let span = ctx.span(id).expect("a new span is registered");
        span.extensions_mut().insert(Fields(text));
    }

    fn on_enter(&self, id: &Id, ctx: Context<'_, S>) {
        record(Step::Enter, id, &ctx);
    }

    fn on_exit(&self, id: &Id, ctx: Context<'_, S>) {
        record(Step::Exit, id, &ctx);
    }
}

fn record<S: Subscriber + for<'a> LookupSpan<'a>>(step: Step, id: &Id, ctx: &Context<'_, S>) {
    let span = ctx.span(id).expect("an entered span is registered");
    let text = span
        .extensions()
        .get::<Fields>()
        .map_or_else(|| span.name().to_owned(), |f| f.0.clone());
    log().push(Seen {
        step,
        thread: thread::current().id(),
        span: text,
        parent: span.parent().map(|p| p.name()),
    });
}

fn log() -> MutexGuard<'static, Vec<Seen>> {
    static LOG: Mutex<Vec<Seen>> = Mutex::new(Vec::new());
    LOG.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Installs the recorder for every thread (the pool's workers too) once, and serialises the
/// tests of this file, which share it; the log starts empty.
fn recording() -> MutexGuard<'static, ()> {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    static SERIAL: Mutex<()> = Mutex::new(());
    INSTALLED.get_or_init(|| {
        tracing::subscriber::set_global_default(tracing_subscriber::registry().with(Recorder))
            .expect("no other global subscriber in this test binary");
    });
    let serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    log().clear();
    serial
}

/// The log's steps on this thread, as `> name fields` for an enter and `< name` for an exit.
fn this_thread() -> Vec<String> {
    let me = thread::current().id();
    log()
        .iter()
        .filter(|s| s.thread == me)
        .map(|s| match s.step {
            Step::Enter => format!("> {}", s.span),
            Step::Exit => format!("< {}", s.span.split(' ').next().unwrap_or("")),
        })
        .collect()
}

#[derive(Clone, Copy)]
struct Pos(f32);
#[derive(Clone, Copy)]
struct Vel(f32);

impl StableHash for Pos {
    fn stable_hash(&self, h: &mut StableHasher) {
        self.0.stable_hash(h);
    }
}

fn mover(r: &mut Registry, dt: f32) {
    r.query::<(&mut Pos, &Vel)>()
        .with_label("Move")
        .each_async(move |_, (p, v)| p.0 += v.0 * dt);
}

fn counter(r: &mut Registry, _: f32) {
    let mut n = 0;
    r.query::<&Vel>().with_label("Count").each(|_, _| n += 1);
    assert_eq!(n, 1000);
}

/// 1000 entities (two chunks) moved by an `each_async` in Update, counted by an `each` in
/// PostUpdate.
fn world(workers: usize) -> Registry {
    let mut registry = Registry::with_workers(workers);
    registry.spawn_batch((0..1000).map(|i| (Pos(i as f32), Vel(1.0 + i as f32 / 7.0))));
    registry.add_system(Phase::Update, mover);
    registry.add_system(Phase::PostUpdate, counter);
    registry
}

#[test]
fn one_tick_s_spans_arrive_in_order() {
    let _serial = recording();
    // One worker: the calling thread runs every task, so the whole tick is on this thread.
    let mut registry = world(1);
    registry.update(0.5);
    let mover = std::any::type_name_of_val(&mover);
    let counter = std::any::type_name_of_val(&counter);
    assert_eq!(
        this_thread(),
        [
            "> tick tick=0".to_owned(),
            "> deadlines".to_owned(),
            "< deadlines".to_owned(),
            "> PreUpdate".to_owned(),
            "> sync".to_owned(),
            "< sync".to_owned(),
            "< PreUpdate".to_owned(),
            "> Update".to_owned(),
            format!("> system name={mover}"),
            "> launch label=Move launch=0 tasks=2".to_owned(),
            // With no worker beside it, the calling thread runs the tasks as it submits them.
            "> tasks label=Move launch=0 first=0 end=2".to_owned(),
            "< tasks".to_owned(),
            "< launch".to_owned(),
            "< system".to_owned(),
            "> sync".to_owned(),
            "< sync".to_owned(),
            "< Update".to_owned(),
            "> PostUpdate".to_owned(),
            format!("> system name={counter}"),
            "> each label=Count".to_owned(),
            "< each".to_owned(),
            "< system".to_owned(),
            "> sync".to_owned(),
            "< sync".to_owned(),
            "< PostUpdate".to_owned(),
            "< tick".to_owned(),
        ]
    );
    // The batch's span is the launch's child, wherever it ran.
    let tasks = log()
        .iter()
        .find(|s| s.span.starts_with("tasks"))
        .cloned()
        .expect("a tasks span");
    assert_eq!(tasks.parent, Some("launch"));
}

#[test]
fn task_batches_on_workers_cover_the_launch_and_name_it() {
    let _serial = recording();
    let mut registry = world(4);
    registry.update(0.5);
    let log = log().clone();
    let batches: Vec<&Seen> = log
        .iter()
        .filter(|s| s.step == Step::Enter && s.span.starts_with("tasks "))
        .collect();
    assert!(!batches.is_empty());
    assert!(batches.iter().all(|b| b.parent == Some("launch")));
    assert!(
        batches
            .iter()
            .all(|b| b.span.contains("label=Move launch=0"))
    );
    // The batches run tasks 0..2, each once, whichever threads ran them.
    let mut covered: Vec<usize> = batches
        .iter()
        .flat_map(|b| {
            let field = |name: &str| -> usize {
                let at = b.span.find(&format!(" {name}=")).expect("the field") + name.len() + 2;
                b.span[at..].split(' ').next().unwrap().parse().unwrap()
            };
            field("first")..field("end")
        })
        .collect();
    covered.sort_unstable();
    assert_eq!(covered, [0, 1]);
    // Every thread exits what it entered, in nesting order.
    let mut threads: Vec<ThreadId> = log.iter().map(|s| s.thread).collect();
    threads.dedup();
    for thread in threads {
        let mut open = Vec::new();
        for s in log.iter().filter(|s| s.thread == thread) {
            match s.step {
                Step::Enter => open.push(s.span.clone()),
                Step::Exit => assert_eq!(open.pop(), Some(s.span.clone())),
            }
        }
        assert!(open.is_empty(), "{open:?} never exited");
    }
}

#[test]
fn a_waiting_query_is_an_implicit_sync_span() {
    let _serial = recording();
    let mut registry = world(2);
    mover(&mut registry, 0.5);
    // Reads what the launch writes: waits for it first.
    registry.query::<&Pos>().with_label("Read").each(|_, _| ());
    assert_eq!(registry.profile().implicit_syncs, 1);
    let steps = this_thread();
    let each = steps.iter().position(|s| s == "> each label=Read").unwrap();
    assert_eq!(steps[each + 1], "> implicit_sync");
    assert_eq!(steps.last().unwrap(), "< each");
    registry.execute_tasks();
    assert_eq!(this_thread().last().unwrap(), "< sync");
}

#[test]
fn spans_close_when_a_callback_or_a_system_panics() {
    let _serial = recording();
    let mut registry = world(2);
    registry.add_system(Phase::Update, |r: &mut Registry, _: f32| {
        r.query::<&Pos>()
            .with_label("Boom")
            .each_async(|_, p| assert!(p.0 < 500.0, "callback panic"));
    });
    let caught = panic::catch_unwind(AssertUnwindSafe(|| registry.update(0.5)));
    assert!(caught.is_err());
    registry.add_system(Phase::PreUpdate, |_: &mut Registry, _: f32| {
        panic!("system panic")
    });
    let caught = panic::catch_unwind(AssertUnwindSafe(|| registry.update(0.5)));
    assert!(caught.is_err());
    let log = log().clone();
    let mut threads: Vec<ThreadId> = log.iter().map(|s| s.thread).collect();
    threads.sort_by_key(|t| format!("{t:?}"));
    threads.dedup();
    for thread in threads {
        let mut open = Vec::new();
        for s in log.iter().filter(|s| s.thread == thread) {
            match s.step {
                Step::Enter => open.push(s.span.clone()),
                Step::Exit => assert_eq!(open.pop(), Some(s.span.clone())),
            }
        }
        assert!(open.is_empty(), "{open:?} never exited");
    }
    // Both ticks ran to their end span; the registry stays usable.
    assert_eq!(this_thread().iter().filter(|s| *s == "< tick").count(), 2);
    registry.execute_tasks();
}

/// The hash of `ticks` ticks of [`world`] on `workers` workers.
fn hash_after(workers: usize, ticks: usize) -> u64 {
    let mut registry = world(workers);
    for _ in 0..ticks {
        registry.update(0.25);
    }
    registry.world_hash::<(Pos,)>()
}

#[test]
fn the_world_is_the_same_with_a_subscriber_for_every_worker_count() {
    // Without a subscriber: this thread's default dispatcher is the no-op one.
    let quiet =
        tracing::subscriber::with_default(tracing::subscriber::NoSubscriber::default(), || {
            hash_after(1, 5)
        });
    let _serial = recording();
    for workers in [1, 2, 3, 8, 16] {
        assert_eq!(hash_after(workers, 5), quiet, "{workers} workers");
    }
    assert!(log().iter().any(|s| s.span.starts_with("tasks ")));
}
