//! User functions' JavaScript, in QuickJS (rquickjs) on a thread of its own: QuickJS runtimes
//! cannot move between threads, and one thread keeps the runtime and compiled regexes warm.
//!
//! Every function call (and every compile check) gets a fresh context — its own globals and
//! built-ins, the prelude evaluated anew — that is dropped when the call ends, so no function
//! can see or change what another one (of any character, in any chat) sees: a replaced
//! `JSON.stringify`, a polluted `Object.prototype` or a global lives and dies with its call.
//! Patterns run in one long-lived context that never evaluates user code (a pattern is only
//! given to `RegExp`). Each call runs under a time limit (an interrupt handler polled by the
//! interpreter, which also stops a runaway regex) and the runtime under a memory limit; no I/O
//! is reachable (no `std`/`os` modules are loaded). After a call that hit a limit, the runtime
//! is dropped and made again (about 60 µs), since QuickJS's collector is left unreliable after
//! an out-of-memory. Values cross as JSON text. Patterns run in QuickJS's own `RegExp`, so a
//! user's lookarounds, `\d` and `.` behave exactly as in the browser the pattern was written
//! for.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rquickjs::{Context, Function, Object, Runtime};

const PRELUDE: &str = include_str!("prelude.js");

/// Bounds on one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub time: Duration,
    pub memory_bytes: usize,
    /// Characters of a function's error kept (head and tail): what it threw is its own text,
    /// and each failed call of a chat carries one into the answer.
    pub error_characters: usize,
    /// How long all the calls of one text (a message) may run together: a reply with many
    /// slow calls stops here, not after each call's own limit times their number.
    pub text_time: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            time: Duration::from_millis(250),
            memory_bytes: 64 << 20,
            error_characters: 10_000,
            text_time: Duration::from_secs(2),
        }
    }
}

/// One user function call.
#[derive(Debug, Clone)]
pub struct Invocation {
    pub source: Arc<str>,
    pub snapshot: String,
    pub arguments: String,
    pub context: String,
    /// Seeds `Math.random`.
    pub seed: i32,
    /// What `Date.now()` answers, in milliseconds.
    pub now_millis: f64,
}

/// A regex match: byte offset and length in the searched text, and the capture groups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Match {
    pub position: usize,
    pub length: usize,
    pub groups: Vec<Option<String>>,
}

/// When a run must stop besides its own time limit: the end of its text's budget, and a flag
/// its caller sets when the call is cancelled (polled by the interpreter).
#[derive(Clone)]
struct Halt {
    until: Instant,
    stopped: Arc<AtomicBool>,
}

/// The error of a run stopped because its call was cancelled.
const CANCELLED: &str = "not finished: the call was cancelled";

/// How often a caller waiting for a run checks whether its call was cancelled.
const CANCEL_POLL: Duration = Duration::from_millis(20);

enum Job {
    Run(Invocation, Halt, mpsc::Sender<Result<String, String>>),
    Check(String, mpsc::Sender<Result<(), String>>),
    Match {
        source: Arc<str>,
        flags: String,
        text: Arc<str>,
        reply: mpsc::Sender<Result<Vec<Match>, String>>,
    },
}

/// The JavaScript engine: a handle to its thread, started on first use.
pub struct Engine {
    limits: Limits,
    sender: Mutex<Option<mpsc::Sender<Job>>>,
}

impl Engine {
    pub fn new(limits: Limits) -> Self {
        Self {
            limits,
            sender: Mutex::new(None),
        }
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Runs a function body with `snapshot`, `args`, `context` and `_`; returns the new
    /// snapshot's JSON. The run stops at its own time limit, at `until` (the end of its text's
    /// budget), and as soon as `cancelled` says so (polled while it runs).
    pub fn run(
        &self,
        invocation: &Invocation,
        until: Instant,
        cancelled: &dyn Fn() -> bool,
    ) -> Result<String, String> {
        let halt = Halt {
            until,
            stopped: Arc::new(AtomicBool::new(false)),
        };
        let watch = (cancelled, &*halt.stopped);
        self.ask_watching(
            |reply| Job::Run(invocation.clone(), halt.clone(), reply),
            Some(watch),
        )
    }

    /// Whether a function body compiles.
    pub fn check(&self, source: &str) -> Result<(), String> {
        self.ask(|reply| Job::Check(source.to_owned(), reply))
    }

    /// Every match of a JavaScript regex (`g` is implied) in `text`.
    pub fn find(
        &self,
        source: &Arc<str>,
        flags: &str,
        text: &Arc<str>,
    ) -> Result<Vec<Match>, String> {
        let mut flags: String = flags
            .chars()
            .filter(|flag| *flag != 'g' && *flag != 'y')
            .collect();
        flags.push('g');
        self.ask(|reply| Job::Match {
            source: Arc::clone(source),
            flags: flags.clone(),
            text: Arc::clone(text),
            reply,
        })
    }

    /// Sends a job and waits for its answer; a thread that died (it never should) is started
    /// again once.
    fn ask<T>(&self, job: impl Fn(mpsc::Sender<Result<T, String>>) -> Job) -> Result<T, String> {
        self.ask_watching(job, None)
    }

    /// [`Engine::ask`], raising `flag` as soon as `cancelled` says so while the answer is
    /// awaited.
    fn ask_watching<T>(
        &self,
        job: impl Fn(mpsc::Sender<Result<T, String>>) -> Job,
        watch: Option<(&dyn Fn() -> bool, &AtomicBool)>,
    ) -> Result<T, String> {
        for _ in 0..2 {
            let (reply, answer) = mpsc::channel();
            let sent = {
                let mut sender = self.sender.lock().unwrap_or_else(PoisonError::into_inner);
                if sender.is_none() {
                    *sender = Some(start(self.limits)?);
                }
                let sent = sender
                    .as_ref()
                    .is_some_and(|sender| sender.send(job(reply)).is_ok());
                if !sent {
                    *sender = None;
                }
                sent
            };
            if sent && let Some(result) = wait(&answer, watch) {
                return result;
            }
            *self.sender.lock().unwrap_or_else(PoisonError::into_inner) = None;
        }
        Err("the JavaScript engine stopped unexpectedly; see the server log".to_owned())
    }
}

/// The answer, raising the flag when the call is cancelled meanwhile; `None` when the engine's
/// thread stopped.
fn wait<T>(
    answer: &mpsc::Receiver<T>,
    watch: Option<(&dyn Fn() -> bool, &AtomicBool)>,
) -> Option<T> {
    let Some((cancelled, flag)) = watch else {
        return answer.recv().ok();
    };
    loop {
        match answer.recv_timeout(CANCEL_POLL) {
            Ok(result) => return Some(result),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if cancelled() {
                    flag.store(true, Ordering::Relaxed);
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => return None,
        }
    }
}

fn start(limits: Limits) -> Result<mpsc::Sender<Job>, String> {
    let (sender, receiver) = mpsc::channel::<Job>();
    std::thread::Builder::new()
        .name("snapshot-js".to_owned())
        .spawn(move || serve(&receiver, limits))
        .map_err(|error| format!("cannot start the JavaScript engine's thread: {error}"))?;
    Ok(sender)
}

fn serve(receiver: &mpsc::Receiver<Job>, limits: Limits) {
    let mut worker: Option<Worker> = None;
    for job in receiver {
        let ready = match worker.take() {
            Some(ready) => Ok(ready),
            None => Worker::new(limits),
        };
        let current = match ready {
            Ok(current) => current,
            Err(message) => {
                let message = format!("cannot start the JavaScript engine: {message}");
                match job {
                    Job::Run(_, _, reply) => drop(reply.send(Err(message))),
                    Job::Check(_, reply) => drop(reply.send(Err(message))),
                    Job::Match { reply, .. } => drop(reply.send(Err(message))),
                }
                continue;
            }
        };
        let healthy = match job {
            Job::Run(invocation, halt, reply) => {
                let (result, healthy) = current.run(&invocation, &halt);
                reply.send(result).ok();
                healthy
            }
            Job::Check(source, reply) => {
                let (result, healthy) = current.isolated("check", |function| {
                    function.call::<_, String>((source.as_str(),))
                });
                reply.send(result.map(drop)).ok();
                healthy
            }
            Job::Match {
                source,
                flags,
                text,
                reply,
            } => {
                let (result, healthy) = current.call(&current.patterns, "match", |function| {
                    function.call((&*source, flags.as_str(), &*text))
                });
                reply
                    .send(result.and_then(|json: String| matches_from(&json, &text)))
                    .ok();
                healthy
            }
        };
        if healthy {
            worker = Some(current);
        }
    }
}

/// A runtime, with the long-lived context that runs patterns. The context is declared first
/// so it is dropped first.
struct Worker {
    patterns: Context,
    runtime: Runtime,
    deadline: Rc<Cell<Option<Instant>>>,
    /// The running call's cancellation flag, when it has one.
    stopped: Rc<RefCell<Option<Arc<AtomicBool>>>>,
    /// A deadline earlier than the call's own limit (its text's budget), when there is one.
    until: Cell<Option<Instant>>,
    limits: Limits,
}

impl Worker {
    fn new(limits: Limits) -> Result<Self, String> {
        let runtime = Runtime::new().map_err(|error| error.to_string())?;
        runtime.set_memory_limit(limits.memory_bytes);
        runtime.set_max_stack_size(1 << 20);
        let deadline: Rc<Cell<Option<Instant>>> = Rc::default();
        let stopped: Rc<RefCell<Option<Arc<AtomicBool>>>> = Rc::default();
        let watched = Rc::clone(&deadline);
        let flagged = Rc::clone(&stopped);
        runtime.set_interrupt_handler(Some(Box::new(move || {
            watched
                .get()
                .is_some_and(|deadline| Instant::now() >= deadline)
                || flagged
                    .borrow()
                    .as_ref()
                    .is_some_and(|flag| flag.load(Ordering::Relaxed))
        })));
        let patterns = context(&runtime)?;
        Ok(Self {
            patterns,
            runtime,
            deadline,
            stopped,
            until: Cell::new(None),
            limits,
        })
    }

    /// One function call, stopped by its own limit, its text's budget or its cancellation.
    fn run(&self, invocation: &Invocation, halt: &Halt) -> (Result<String, String>, bool) {
        if halt.stopped.load(Ordering::Relaxed) {
            return (Err(CANCELLED.to_owned()), true);
        }
        if Instant::now() >= halt.until {
            return (Err(self.over_budget()), true);
        }
        *self.stopped.borrow_mut() = Some(Arc::clone(&halt.stopped));
        let result = self.calling(Some(halt.until), || self.run_isolated(invocation));
        *self.stopped.borrow_mut() = None;
        match result {
            // Interrupted part way: the runtime is made anew, as after the time limit.
            (Err(_), _) if halt.stopped.load(Ordering::Relaxed) => {
                (Err(CANCELLED.to_owned()), false)
            }
            (Err(_), healthy) if Instant::now() >= halt.until => (Err(self.over_budget()), healthy),
            answered => answered,
        }
    }

    fn over_budget(&self) -> String {
        format!(
            "not finished: the calls of this text ran past their budget of {} ms together",
            self.limits.text_time.as_millis()
        )
    }

    /// Runs `call` with `until` as an earlier deadline than the call's own, when given.
    fn calling<T>(&self, until: Option<Instant>, call: impl FnOnce() -> T) -> T {
        let previous = self.until.replace(until);
        let result = call();
        self.until.set(previous);
        result
    }

    fn run_isolated(&self, invocation: &Invocation) -> (Result<String, String>, bool) {
        self.isolated("run", |function| {
            function.call((
                &*invocation.source,
                invocation.snapshot.as_str(),
                invocation.arguments.as_str(),
                invocation.context.as_str(),
                invocation.seed,
                invocation.now_millis,
            ))
        })
    }

    /// Calls one of the dispatcher's functions in a context of its own, made for this call
    /// and dropped after it.
    fn isolated<T>(
        &self,
        name: &str,
        invoke: impl for<'js> FnOnce(Function<'js>) -> rquickjs::Result<T>,
    ) -> (Result<T, String>, bool) {
        match context(&self.runtime) {
            Ok(fresh) => self.call(&fresh, name, invoke),
            // Making a context fails only when the runtime is out of memory.
            Err(message) => (Err(message), false),
        }
    }

    /// Calls one of the dispatcher's functions under the time limit. The flag says whether
    /// the runtime may be used again.
    fn call<T>(
        &self,
        context: &Context,
        name: &str,
        invoke: impl for<'js> FnOnce(Function<'js>) -> rquickjs::Result<T>,
    ) -> (Result<T, String>, bool) {
        let own = Instant::now() + self.limits.time;
        self.deadline
            .set(Some(self.until.get().map_or(own, |until| until.min(own))));
        let result = context.with(|ctx| {
            let dispatcher: Object = ctx
                .globals()
                .get("__synapse")
                .map_err(|error| describe(&ctx, &error))?;
            let function: Function = dispatcher
                .get(name)
                .map_err(|error| describe(&ctx, &error))?;
            invoke(function).map_err(|error| describe(&ctx, &error))
        });
        let timed_out = self
            .deadline
            .get()
            .is_some_and(|deadline| Instant::now() >= deadline);
        self.deadline.set(None);
        match result {
            Ok(value) => (Ok(value), true),
            Err(message) if timed_out && message.contains("interrupted") => (
                Err(format!(
                    "stopped after {} ms (the time limit of one call); look for a loop that never ends or a regex that backtracks without bound",
                    self.limits.time.as_millis()
                )),
                false,
            ),
            Err(message)
                if message.contains("out of memory")
                    || message.contains("allocation")
                    || message == "null" =>
            {
                (
                    Err(format!(
                        "ran out of memory (the limit is {} MiB); look for data that grows without bound",
                        self.limits.memory_bytes >> 20
                    )),
                    false,
                )
            }
            Err(message) if message.contains("stack") => (
                Err(crate::text::bounded(message, self.limits.error_characters)),
                false,
            ),
            Err(message) => (
                Err(crate::text::bounded(message, self.limits.error_characters)),
                true,
            ),
        }
    }
}

/// A new context of `runtime` with the prelude evaluated. It has the standard built-ins a
/// function may use, but neither `performance` (a real clock) nor `WeakRef` and
/// `FinalizationRegistry` (they observe the collector): the same call always gives the same
/// result.
fn context(runtime: &Runtime) -> Result<Context, String> {
    use rquickjs::context::intrinsic;
    let context = Context::builder()
        .with::<intrinsic::Date>()
        .with::<intrinsic::Eval>()
        .with::<intrinsic::RegExpCompiler>()
        .with::<intrinsic::RegExp>()
        .with::<intrinsic::Json>()
        .with::<intrinsic::Proxy>()
        .with::<intrinsic::MapSet>()
        .with::<intrinsic::TypedArrays>()
        .with::<intrinsic::Promise>()
        .build(runtime)
        .map_err(|error| error.to_string())?;
    context
        .with(|ctx| {
            ctx.eval::<(), _>(PRELUDE)
                .map_err(|error| describe(&ctx, &error))
        })
        .map_err(|error| format!("the prelude failed: {error}"))?;
    Ok(context)
}

/// The thrown value as `Name: message`.
fn describe(ctx: &rquickjs::Ctx<'_>, error: &rquickjs::Error) -> String {
    if !error.is_exception() {
        return error.to_string();
    }
    let thrown = ctx.catch();
    if let Some(exception) = thrown.as_exception() {
        let name: Option<String> = exception.get("name").ok();
        let message = exception.message().unwrap_or_default();
        return match name {
            Some(name) if !name.is_empty() => format!("{name}: {message}"),
            _ => message,
        };
    }
    if thrown.is_null() || thrown.is_undefined() {
        return "null".to_owned();
    }
    thrown
        .as_string()
        .and_then(|text| text.to_string().ok())
        .map_or_else(
            || format!("threw a {}", thrown.type_name()),
            |text| format!("threw {text:?}"),
        )
}

/// Turns the dispatcher's `[[index, length, groups]]` (UTF-16 units) into byte offsets.
fn matches_from(json: &str, text: &str) -> Result<Vec<Match>, String> {
    let raw: Vec<(usize, usize, Vec<Option<String>>)> = serde_json::from_str(json)
        .map_err(|error| format!("the regex engine answered badly: {error}"))?;
    let mut units = 0;
    let mut bytes = text.char_indices().peekable();
    let mut byte_at = |target: usize| {
        while units < target {
            let Some((_, character)) = bytes.next() else {
                break;
            };
            units += character.len_utf16();
        }
        bytes.peek().map_or(text.len(), |(offset, _)| *offset)
    };
    Ok(raw
        .into_iter()
        .map(|(index, length, groups)| {
            let start = byte_at(index);
            let end = byte_at(index + length);
            Match {
                position: start,
                length: end - start,
                groups,
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn invocation(source: &str, snapshot: &str, arguments: &str) -> Invocation {
        Invocation {
            source: Arc::from(source),
            snapshot: snapshot.to_owned(),
            arguments: arguments.to_owned(),
            context: "{}".to_owned(),
            seed: 7,
            now_millis: 1000.0,
        }
    }

    impl Engine {
        /// A run with no text budget and no cancellation.
        fn run_now(&self, invocation: &Invocation) -> Result<String, String> {
            self.run(invocation, Instant::now() + Duration::from_mins(1), &|| {
                false
            })
        }
    }

    #[test]
    fn runs_a_function_with_lodash_and_returns_json() {
        let engine = Engine::new(Limits::default());
        let source = "const [path, value] = args; _.set(snapshot, path, value); return snapshot;";
        let result = engine
            .run_now(&invocation(source, r#"{"a":1}"#, r#"["b.c[0]", "x"]"#))
            .unwrap();
        assert_eq!(result, r#"{"a":1,"b":{"c":["x"]}}"#);
        let implicit = engine
            .run_now(&invocation(
                "snapshot.now = Date.now(); snapshot.r = Math.random() < 1;",
                "{}",
                "[]",
            ))
            .unwrap();
        assert_eq!(implicit, r#"{"now":1000,"r":true}"#);
    }

    #[test]
    fn loops_and_allocation_bombs_are_stopped_and_the_engine_recovers() {
        let engine = Engine::new(Limits {
            time: Duration::from_millis(100),
            memory_bytes: 16 << 20,
            ..Limits::default()
        });
        let error = engine
            .run_now(&invocation("while (true) {}", "{}", "[]"))
            .unwrap_err();
        assert!(error.contains("stopped after 100 ms"), "{error}");
        let error = engine
            .run_now(&invocation(
                "const a = []; while (true) a.push(new Array(1e5).fill(1));",
                "{}",
                "[]",
            ))
            .unwrap_err();
        assert!(
            error.contains("memory") || error.contains("stopped"),
            "{error}"
        );
        let error = engine
            .run_now(&invocation("throw new RangeError('bad gold')", "{}", "[]"))
            .unwrap_err();
        assert_eq!(error, "RangeError: bad gold");
        let error = engine
            .run_now(&invocation("return 5", "{}", "[]"))
            .unwrap_err();
        assert!(error.contains("must return the snapshot object"), "{error}");
        assert_eq!(
            engine
                .run_now(&invocation("snapshot.ok = true", "{}", "[]"))
                .unwrap(),
            r#"{"ok":true}"#
        );
    }

    #[test]
    fn patterns_use_javascript_semantics_and_byte_offsets() {
        let engine = Engine::new(Limits::default());
        let text: Arc<str> = Arc::from("金币 @.GIVE(\"剑\", 2); @.GIVE(\"盾\", 1);");
        let found = engine
            .find(
                &Arc::from(r#"@\.GIVE\("([^"]+)",\s*(?<n>\d+)\)(?=;)"#),
                "",
                &text,
            )
            .unwrap();
        assert_eq!(found.len(), 2);
        assert_eq!(
            &text[found[0].position..found[0].position + found[0].length],
            "@.GIVE(\"剑\", 2)"
        );
        assert_eq!(
            found[1].groups,
            vec![Some("盾".to_owned()), Some("1".to_owned())]
        );
        assert!(
            engine
                .find(&Arc::from("(unclosed"), "", &text)
                .unwrap_err()
                .contains("SyntaxError")
        );
        let slow = engine
            .find(
                &Arc::from("^(a+)+$"),
                "",
                &Arc::from(format!("{}!", "a".repeat(40)).as_str()),
            )
            .unwrap_err();
        assert!(slow.contains("stopped after"), "{slow}");
        assert!(engine.check("return snapshot;").is_ok());
        assert!(
            engine
                .check("return (;")
                .unwrap_err()
                .contains("SyntaxError")
        );
    }
}
