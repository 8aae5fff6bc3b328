//! A pool of long-lived Python exporter processes (generator/importer/exporter/worker.py),
//! one per core: importing torch and transformers costs seconds, so each
//! process serves many jobs. A job that hangs past the timeout, or a process
//! that dies (a segfault in a native kernel), costs that job only: the
//! process is replaced and the job's error says what happened.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hwmatrix_cell::Stage;
use hwmatrix_specs::spec::evidence::PipelineFailure;
use serde_json::Value;

/// The worker script, next to the exporter it drives.
pub fn worker_script() -> PathBuf {
    exporter_dir().join("worker.py")
}

pub struct Pool {
    pub python: PathBuf,
    pub workers: usize,
    /// Per job; past it the process is killed and replaced.
    pub timeout: Duration,
    /// Each process's stderr (tracebacks, library warnings) goes to `<log_dir>/worker-<n>.log`.
    pub log_dir: PathBuf,
}

/// What one job gave: its answer's `result`, or why it gave none.
pub type Outcome = Result<Value, JobError>;

/// Why a job gave no result. Who failed follows from the variant, never from
/// the message's words: a timeout is our pool's limit, an error the job's own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JobError {
    /// The job's own error, as the worker reported it, with the stage it
    /// stopped at where the worker says (a generation job: torch.onnx's
    /// exporters, or our exporter's own limit before them).
    Failed { error: String, stage: Option<Stage> },
    /// The job ran past the pool's limit; its process was killed.
    TimedOut(Duration),
    /// The process died during the job (a segfault in a native kernel), or
    /// could not be talked to.
    Died(String),
}

impl std::fmt::Display for JobError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JobError::Failed { error, .. } => f.write_str(error),
            JobError::TimedOut(limit) => write!(f, "timed out after {} s", limit.as_secs()),
            JobError::Died(why) => f.write_str(why),
        }
    }
}

struct Worker {
    child: Child,
    stdin: ChildStdin,
    answers: Receiver<String>,
}

impl Worker {
    fn start(python: &Path, log: &Path) -> Result<Worker, String> {
        let stderr = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .map_err(|e| format!("{}: {e}", log.display()))?;
        let mut child = Command::new(python)
            .arg(worker_script())
            .arg("--serve")
            // The worker dies with gen (PR_SET_PDEATHSIG); this lets it notice a gen already gone.
            .env("HWMATRIX_PARENT_PID", std::process::id().to_string())
            // One string hash in every worker: a model that iterates a set of
            // names (neomme's rotary embeddings per layer type) otherwise
            // builds its graph in another order each export, and a fixture's
            // bytes are what its evidence is of (content.json).
            .env("PYTHONHASHSEED", "0")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", python.display()))?;
        let stdin = child.stdin.take().expect("piped");
        let stdout = child.stdout.take().expect("piped");
        let (send, answers) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(Worker {
            child,
            stdin,
            answers,
        })
    }

    fn ask(&mut self, id: usize, job: &Value, timeout: Duration) -> Result<Outcome, JobError> {
        let mut job = job.clone();
        job["id"] = id.into();
        writeln!(self.stdin, "{job}")
            .map_err(|e| JobError::Died(format!("the worker process is gone ({e})")))?;
        self.stdin
            .flush()
            .map_err(|e| JobError::Died(format!("the worker process is gone ({e})")))?;
        match self.answers.recv_timeout(timeout) {
            Ok(line) => {
                let answer: Value = serde_json::from_str(&line).map_err(|e| {
                    JobError::Died(format!("unreadable answer from the worker ({e}): {line}"))
                })?;
                Ok(if answer["ok"].as_bool() == Some(true) {
                    Ok(answer["result"].clone())
                } else {
                    Err(JobError::Failed {
                        error: answer["error"]
                            .as_str()
                            .unwrap_or("the worker gave no error message")
                            .to_string(),
                        stage: answer["stage"].as_str().and_then(|s| s.parse().ok()),
                    })
                })
            }
            Err(RecvTimeoutError::Timeout) => Err(JobError::TimedOut(timeout)),
            Err(RecvTimeoutError::Disconnected) => {
                let status = self
                    .child
                    .wait()
                    .map(|s| s.to_string())
                    .unwrap_or_else(|e| e.to_string());
                Err(JobError::Died(format!("the Python worker died ({status})")))
            }
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Pool {
    /// Runs every job (label, JSON job) and returns the outcomes in job order.
    /// `progress` is told of each finished job.
    pub fn run(
        &self,
        jobs: Vec<(String, Value)>,
        progress: &mut Progress,
    ) -> Result<Vec<(String, Outcome)>, String> {
        std::fs::create_dir_all(&self.log_dir)
            .map_err(|e| format!("cannot create {}: {e}", self.log_dir.display()))?;
        let total = jobs.len();
        let queue: Arc<Mutex<VecDeque<(usize, String, Value)>>> = Arc::new(Mutex::new(
            jobs.into_iter()
                .enumerate()
                .map(|(i, (label, job))| (i, label, job))
                .collect(),
        ));
        let (send, done) = mpsc::channel::<(usize, String, Outcome, Duration)>();
        let mut threads = Vec::new();
        for n in 0..self.workers.max(1).min(total.max(1)) {
            let queue = Arc::clone(&queue);
            let send = send.clone();
            let python = self.python.clone();
            let log = self.log_dir.join(format!("worker-{n}.log"));
            let timeout = self.timeout;
            threads.push(std::thread::spawn(move || -> Result<(), String> {
                let mut worker: Option<Worker> = None;
                loop {
                    let Some((id, label, job)) = queue.lock().expect("queue").pop_front() else {
                        return Ok(());
                    };
                    if worker.is_none() {
                        worker = Some(Worker::start(&python, &log)?);
                    }
                    let started = Instant::now();
                    let outcome = match worker.as_mut().expect("started").ask(id, &job, timeout) {
                        Ok(outcome) => outcome,
                        Err(broken) => {
                            worker = None; // killed on drop; the next job gets a fresh process
                            Err(broken)
                        }
                    };
                    if send.send((id, label, outcome, started.elapsed())).is_err() {
                        return Ok(());
                    }
                }
            }));
        }
        drop(send);
        let mut outcomes: Vec<Option<(String, Outcome)>> = (0..total).map(|_| None).collect();
        for (id, label, outcome, took) in done {
            progress.finished(&label, &outcome, took);
            outcomes[id] = Some((label, outcome));
        }
        for thread in threads {
            thread
                .join()
                .map_err(|_| "a worker thread panicked".to_string())??;
        }
        progress.end();
        Ok(outcomes
            .into_iter()
            .map(|o| o.expect("every job answers"))
            .collect())
    }
}

/// Progress on stderr: a bar redrawn in place on a terminal, else one line
/// per failure and one every 10% (CI logs stay short).
pub struct Progress<'a> {
    what: &'static str,
    total: usize,
    done: usize,
    failed: usize,
    started: Instant,
    tty: bool,
    out: &'a mut dyn Write,
}

impl<'a> Progress<'a> {
    pub fn new(what: &'static str, total: usize, out: &'a mut dyn Write, tty: bool) -> Self {
        Progress {
            what,
            total,
            done: 0,
            failed: 0,
            started: Instant::now(),
            tty,
            out,
        }
    }

    pub fn stderr_is_terminal() -> bool {
        std::io::stderr().is_terminal()
    }

    pub(crate) fn finished(&mut self, label: &str, outcome: &Outcome, took: Duration) {
        self.done += 1;
        if let Err(error) = outcome {
            self.failed += 1;
            let error = error.to_string();
            let first = error.lines().next().unwrap_or("");
            let short: String = first.chars().take(160).collect();
            let _ = writeln!(
                self.out,
                "{}{label}: failed ({:.1} s): {short}",
                if self.tty { "\r\x1b[2K" } else { "" },
                took.as_secs_f64()
            );
        }
        let elapsed = self.started.elapsed().as_secs_f64();
        let eta = elapsed / self.done as f64 * (self.total - self.done) as f64;
        let line = format!(
            "{} {}/{} ({} failed), {:.0} s, about {:.0} s left, last: {label}",
            self.what, self.done, self.total, self.failed, elapsed, eta
        );
        if self.tty {
            let width = 24;
            let filled = width * self.done / self.total.max(1);
            let _ = write!(
                self.out,
                "\r\x1b[2K[{}{}] {line}",
                "#".repeat(filled),
                ".".repeat(width - filled)
            );
        } else if self.done == self.total
            || (self.done * 10 / self.total.max(1)) != ((self.done - 1) * 10 / self.total.max(1))
        {
            let _ = writeln!(self.out, "{line}");
        }
        let _ = self.out.flush();
    }

    pub(crate) fn end(&mut self) {
        if self.tty {
            let _ = writeln!(self.out);
        }
    }
}

/// The Python exporter and its requirements, beside the importer that drives it.
pub fn exporter_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/exporter"))
}

impl JobError {
    /// This failed job as the fixture pipeline's failure at `stage` (or the
    /// stage the worker named): a job past the pool's limit is our time
    /// limit, not the model's.
    pub fn failure_at(&self, stage: Stage) -> PipelineFailure {
        PipelineFailure {
            stage: match self {
                JobError::Failed {
                    stage: Some(named), ..
                } => *named,
                _ => stage,
            },
            timed_out: matches!(self, JobError::TimedOut(_)),
            harness_limit: false,
            missing_libraries: Vec::new(),
            error: self.to_string(),
        }
    }
}
