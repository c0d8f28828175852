//! Git mode: the output directory is a git work tree, and every publish that changed bytes
//! becomes one commit (then, optionally, a push). Shells out to `git`, as Argo CD's commit
//! server does: `GIT_TERMINAL_PROMPT=0`, `-c safe.directory=<out>` (the daemon user may not own
//! the tree), explicit author and committer, no hooks, no signing.
//!
//! What is committed is decided by git itself (`git add -A` then `git diff --cached`), not by
//! the publish report, so changes left uncommitted by a crash are committed by the next pass;
//! nothing staged means no commit. fedsched's own transient files (`.fedsched/lock`, `.fedsched/owner`, the
//! journal and staging area) are never added. A failed push leaves a marker in `.git/` and is
//! retried by the next pass even when it has nothing new to commit. A fetch or a push is killed
//! (with every process it started) after `push_timeout`.
//!
//! `[ha]` ([`Fence`]): the commit and every push attempt ask the lease's fence immediately before
//! they start, and are killed at the renew deadline it answers — by coreutils' `timeout` around
//! git's process group, so even while fedsched itself is stopped or dead —, so a push that began
//! inside the lease either ends inside it or not at all, as far as this host can tell: a network
//! remote may still apply a push whose client was killed.
//! What closes that gap is a fencing token on the remote, [`LEADER_REF`]: a new leader's takeover
//! ([`sync_from_remote`]) fetches the branch and the token, then moves the token to a commit of
//! its own, conditionally on the value it fetched (`--force-with-lease`); every push of a leader
//! moves the branch and the token together (`--atomic`), conditionally on the token being the one
//! it last set. Once the new leader's claim landed, no push of an earlier leader can land: the
//! remote compares the token under its ref lock. A push that landed before the claim is in what
//! the new leader fetched (a claim that raced it fails, and the takeover fetches again). A push
//! the remote rejects because it moved (`[rejected]`: not a fast-forward, or the token is not
//! ours) is [`GitError::Rejected`]: never retried; the daemon fetches, adopts and decides again.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Longest commit subject.
pub const MAX_SUBJECT: usize = 72;

/// Marker (inside `.git/`) of a commit that still has to be pushed.
const PUSH_PENDING: &str = "fedsched-push-pending";

/// The fencing token on the remote (`[ha]`): the commit the current leader set last.
pub const LEADER_REF: &str = "refs/fedsched/leader";

/// File (inside `.git/`) with the value this instance expects [`LEADER_REF`] to have.
const LEADER_TOKEN: &str = "fedsched-leader-token";

/// `[ha]`: asked immediately before each write that publishes: `Ok(deadline)` — this instance
/// leads and the write must be over by `deadline` (it is killed then) — or why not.
pub type Fence<'a> = &'a (dyn Fn() -> Result<Instant, String> + Sync);

/// How to commit and push.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitOptions {
    /// Author and committer name.
    pub author_name: String,
    /// Author and committer e-mail.
    pub author_email: String,
    /// Remote name or URL to push to; `None` = commit only.
    pub remote: Option<String>,
    /// Branch: created by `git init` for a new tree, and the branch pushed to on the remote.
    pub branch: String,
    /// Whether to push after committing (only with a remote).
    pub push: bool,
    /// Push attempts before giving up (at least 1).
    pub push_attempts: u32,
    /// Pause before the first retry; doubled for each further retry.
    pub retry_delay: Duration,
    /// A fetch or a push still running after this is killed.
    pub push_timeout: Duration,
}

impl Default for GitOptions {
    fn default() -> Self {
        GitOptions {
            author_name: "fedsched".into(),
            author_email: "fedsched@localhost".into(),
            remote: None,
            branch: "main".into(),
            push: true,
            push_attempts: 3,
            retry_delay: Duration::from_secs(1),
            push_timeout: Duration::from_secs(60),
        }
    }
}

/// Why a git step failed.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    /// `git` could not be started.
    #[error("cannot run git {args}: {source}")]
    Spawn {
        /// The arguments.
        args: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// `git` was killed at its deadline.
    #[error("git {args} did not finish within {} ms and was killed{why}", .after.as_millis())]
    TimedOut {
        /// The arguments.
        args: String,
        /// How long it ran.
        after: Duration,
        /// What the deadline was (`push_timeout`, or the lease's renew deadline).
        why: &'static str,
    },
    /// `[ha]`: the fence refused the write; nothing was written or pushed.
    #[error("{0}")]
    Fenced(String),
    /// The remote refused the push because it moved: the branch is not an ancestor of ours, or
    /// (`[ha]`) the leader's token is not the one this instance set. Someone else published;
    /// retrying cannot help.
    #[error("the remote rejected the push: it moved since this instance last synced ({detail})")]
    Rejected {
        /// git's report of the refused refs.
        detail: String,
    },
    /// `git` exited with an error.
    #[error("git {args} failed ({status}): {stderr}")]
    Failed {
        /// The arguments.
        args: String,
        /// Exit status.
        status: String,
        /// What git printed on stderr (trimmed).
        stderr: String,
    },
}

/// What git mode did in one pass.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GitOutcome {
    /// The new commit, if one was made.
    pub commit: Option<String>,
    /// Its subject.
    pub subject: Option<String>,
    /// Whether a push succeeded in this pass.
    pub pushed: bool,
}

struct Git<'a> {
    dir: &'a Path,
    opts: &'a GitOptions,
}

/// Whether coreutils' `timeout` can be run (checked once).
fn timeout_tool() -> bool {
    static FOUND: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *FOUND.get_or_init(|| {
        let found = Command::new("timeout")
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !found {
            tracing::warn!("git mode: no `timeout` command; a push is killed at its deadline only while fedsched runs");
        }
        found
    })
}

impl Git<'_> {
    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new("git");
        c.arg("-C")
            .arg(self.dir)
            .arg("-c")
            .arg(format!("safe.directory={}", self.dir.display()))
            .args(["-c", "commit.gpgsign=false", "-c", "core.hooksPath=/dev/null"])
            .args(args)
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_AUTHOR_NAME", &self.opts.author_name)
            .env("GIT_AUTHOR_EMAIL", &self.opts.author_email)
            .env("GIT_COMMITTER_NAME", &self.opts.author_name)
            .env("GIT_COMMITTER_EMAIL", &self.opts.author_email)
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .env_remove("GIT_INDEX_FILE")
            .stdin(Stdio::null());
        c
    }

    /// Runs git; returns (exit status, stdout, stderr).
    fn try_run(&self, args: &[&str], input: Option<&str>) -> Result<(ExitStatus, String, String), GitError> {
        self.try_run_until(args, input, None)
    }

    /// [`Git::try_run`], killed with every process it started (its own process group) at
    /// `deadline` (`(instant, why)`).
    fn try_run_until(
        &self,
        args: &[&str],
        input: Option<&str>,
        deadline: Option<(Instant, &'static str)>,
    ) -> Result<(ExitStatus, String, String), GitError> {
        use std::os::unix::process::CommandExt;
        let shown = args.join(" ");
        let started = Instant::now();
        if let Some((at, why)) = deadline
            && started >= at
        {
            return Err(GitError::TimedOut { args: shown, after: Duration::ZERO, why });
        }
        let mut cmd = match deadline {
            // Bounded by coreutils' `timeout` as well: it kills git's process group at the
            // deadline even while this process is stopped (SIGSTOP, a stall) or dead.
            Some((at, _)) if timeout_tool() => {
                let left = at.saturating_duration_since(Instant::now());
                let mut c = Command::new("timeout");
                c.args(["--signal=KILL", &format!("{}.{:03}", left.as_secs(), left.subsec_millis())]);
                let git = self.command(args);
                c.arg(git.get_program()).args(git.get_args());
                for (k, v) in git.get_envs() {
                    match v {
                        Some(v) => c.env(k, v),
                        None => c.env_remove(k),
                    };
                }
                c.stdin(Stdio::null());
                c
            }
            _ => self.command(args),
        };
        if input.is_some() {
            cmd.stdin(Stdio::piped());
        }
        let mut child = cmd
            .process_group(0)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| GitError::Spawn { args: shown.clone(), source })?;
        if let (Some(text), Some(mut stdin)) = (input, child.stdin.take()) {
            stdin.write_all(text.as_bytes()).map_err(|source| GitError::Spawn { args: shown.clone(), source })?;
        }
        let drain = |r: Option<Box<dyn std::io::Read + Send>>| {
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                if let Some(mut r) = r {
                    let _ = r.read_to_end(&mut buf);
                }
                buf
            })
        };
        let out = drain(child.stdout.take().map(|r| Box::new(r) as Box<dyn std::io::Read + Send>));
        let err = drain(child.stderr.take().map(|r| Box::new(r) as Box<dyn std::io::Read + Send>));
        let status = loop {
            if let Some(status) = child.try_wait().map_err(|source| GitError::Spawn { args: shown.clone(), source })? {
                break status;
            }
            if let Some((at, why)) = deadline
                && Instant::now() >= at
            {
                let _ = rustix::process::kill_process_group(
                    rustix::process::Pid::from_child(&child),
                    rustix::process::Signal::KILL,
                );
                let _ = child.kill();
                let _ = child.wait();
                let _ = (out.join(), err.join());
                return Err(GitError::TimedOut { args: shown, after: started.elapsed(), why });
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        // Killed by `timeout` at the deadline (it signals its whole group, itself included).
        let killed = std::os::unix::process::ExitStatusExt::signal(&status) == Some(9) || status.code() == Some(137);
        if let Some((at, why)) = deadline
            && killed
            && Instant::now() >= at
        {
            let _ = (out.join(), err.join());
            return Err(GitError::TimedOut { args: shown, after: started.elapsed(), why });
        }
        let stdout = out.join().unwrap_or_default();
        let stderr = err.join().unwrap_or_default();
        Ok((status, String::from_utf8_lossy(&stdout).into_owned(), String::from_utf8_lossy(&stderr).trim().to_owned()))
    }

    fn run(&self, args: &[&str], input: Option<&str>) -> Result<String, GitError> {
        let (status, stdout, stderr) = self.try_run(args, input)?;
        if status.success() {
            Ok(stdout)
        } else {
            Err(GitError::Failed { args: args.join(" "), status: status.to_string(), stderr })
        }
    }
}

/// Commits whatever the last publish changed in `out` (creating the repository with
/// `git init -b <branch>` if `out` is not the top of a work tree) and pushes if configured.
/// `trigger` goes into the message body. With `fence`
/// (`[ha]`), the commit and each push attempt are fenced, and pushes carry the leader's token
/// (see the module's documentation).
pub fn commit_and_push(
    out: &Path,
    opts: &GitOptions,
    trigger: super::Trigger,
    fence: Option<Fence<'_>>,
) -> Result<GitOutcome, GitError> {
    let dir = out.canonicalize().unwrap_or_else(|_| out.to_path_buf());
    let git = Git { dir: &dir, opts };
    // Also lists the lock and owner claim in `info/exclude` (naming them in a pathspec too makes
    // `git add` fail on ignored paths).
    ensure_repository(&git)?;
    git.run(&["add", "-A", "--", ".", ":(exclude).fedsched/journal.json", ":(exclude).fedsched/staging"], None)?;
    let staged = git.run(&["diff", "--cached", "--name-status", "--no-renames"], None)?;
    let changes = parse_name_status(&staged);
    let mut outcome = GitOutcome::default();
    let marker = git_dir(&git)?.join(PUSH_PENDING);
    if !changes.is_empty() {
        let (subject, body) = message(&changes, trigger);
        let deadline = fenced(fence, "the commit")?.map(|d| (d, LEASE_DEADLINE));
        let args = ["commit", "-q", "--no-verify", "-F", "-"];
        let text = format!("{subject}\n\n{body}");
        let (status, _, stderr) = git.try_run_until(&args, Some(&text), deadline)?;
        if !status.success() {
            return Err(GitError::Failed { args: args.join(" "), status: status.to_string(), stderr });
        }
        let sha = git.run(&["rev-parse", "HEAD"], None)?.trim().to_owned();
        tracing::info!(commit = %sha, subject = %subject, "committed the output");
        outcome.commit = Some(sha);
        outcome.subject = Some(subject);
        if opts.push && opts.remote.is_some() {
            // Best effort: if the marker cannot be written, the push below still runs.
            let _ = std::fs::write(&marker, b"");
        }
    }
    if let Some(remote) = opts.remote.as_deref().filter(|_| opts.push)
        && marker.exists()
    {
        push(&git, remote, &opts.branch, fence)?;
        let _ = std::fs::remove_file(&marker);
        outcome.pushed = true;
    }
    Ok(outcome)
}

/// Why a write was killed at the fence's deadline.
const LEASE_DEADLINE: &str = " at the lease's renew deadline";

/// The fence's answer before `what`: `Ok(None)` without a fence, `Ok(Some(deadline))` when it
/// holds.
fn fenced(fence: Option<Fence<'_>>, what: &str) -> Result<Option<Instant>, GitError> {
    match fence {
        None => Ok(None),
        Some(f) => f().map(Some).map_err(|reason| GitError::Fenced(format!("{reason} (before {what})"))),
    }
}

/// `[ha]` takeover in git mode: makes `out` the remote branch as the last leader pushed it
/// (`git fetch` of the leader's token, then of the branch; `git reset --hard`, `git clean` of
/// files no commit has, a pending push forgotten), then claims the remote for this leader: moves
/// [`LEADER_REF`] to a new commit naming `identity`, on condition that it still is what was
/// fetched, fenced like a push. From then on no push of an earlier leader can land, and this
/// instance commits on top of the history it fetched. What it may have committed or written
/// while it led before is discarded: a later leader published since. Returns whether the tree
/// was synced (false: no remote or no push configured — nothing to claim —, or the branch does
/// not exist on the remote yet: the tree is left as it is, and the claim made). A claim the
/// remote rejects (another push landed since the fetch) is [`GitError::Rejected`]: the takeover
/// is tried again.
pub fn sync_from_remote(out: &Path, opts: &GitOptions, fence: Fence<'_>, identity: &str) -> Result<bool, GitError> {
    let Some(remote) = opts.remote.as_deref().filter(|_| opts.push) else { return Ok(false) };
    std::fs::create_dir_all(out)
        .map_err(|source| GitError::Spawn { args: format!("(mkdir {})", out.display()), source })?;
    let dir = out.canonicalize().unwrap_or_else(|_| out.to_path_buf());
    let git = Git { dir: &dir, opts };
    ensure_repository(&git)?;
    let timeout = Some((Instant::now() + opts.push_timeout, PUSH_TIMEOUT));
    // The token first: a push landing between the two fetches moves it, and the claim fails.
    let token_spec = format!("+{LEADER_REF}:refs/fedsched/fetched-leader");
    let (status, _, stderr) = git.try_run_until(&["fetch", "-q", "--no-tags", remote, &token_spec], None, timeout)?;
    let token = if status.success() {
        Some(git.run(&["rev-parse", "--verify", "refs/fedsched/fetched-leader"], None)?.trim().to_owned())
    } else if stderr.contains("couldn't find remote ref") {
        None
    } else {
        return Err(GitError::Failed {
            args: format!("fetch {remote} {LEADER_REF}"),
            status: status.to_string(),
            stderr,
        });
    };
    let refspec = format!("refs/heads/{}", opts.branch);
    let (status, _, stderr) = git.try_run_until(&["fetch", "-q", "--no-tags", remote, &refspec], None, timeout)?;
    let synced = if status.success() {
        git.run(&["reset", "-q", "--hard", "FETCH_HEAD"], None)?;
        git.run(&["clean", "-fdq", "-e", ".fedsched/lock", "-e", ".fedsched/owner"], None)?;
        tracing::info!(remote, branch = %opts.branch, "takeover: the output is the remote branch as the last leader pushed it");
        true
    } else if stderr.contains("couldn't find remote ref") {
        false
    } else {
        return Err(GitError::Failed { args: format!("fetch {remote} {refspec}"), status: status.to_string(), stderr });
    };
    let _ = std::fs::remove_file(git_dir(&git)?.join(PUSH_PENDING));
    claim(&git, remote, token.as_deref(), fence, identity)?;
    Ok(synced)
}

/// Moves [`LEADER_REF`] on `remote` from `expected` (`None`: absent) to a new commit naming
/// `identity`, and remembers it as this instance's token.
fn claim(
    git: &Git<'_>,
    remote: &str,
    expected: Option<&str>,
    fence: Fence<'_>,
    identity: &str,
) -> Result<(), GitError> {
    let tree = git.run(&["mktree"], Some(""))?.trim().to_owned();
    let message =
        format!("fedsched: {identity} leads from here\n\nNo push of an earlier leader lands after this claim.\n");
    let token = git.run(&["commit-tree", &tree, "-F", "-"], Some(&message))?.trim().to_owned();
    let lease = format!("--force-with-lease={LEADER_REF}:{}", expected.unwrap_or(""));
    let refspec = format!("{token}:{LEADER_REF}");
    let args = ["push", "--no-verify", "--porcelain", &lease, remote, &refspec];
    let deadline = bounded(git, fenced(Some(fence), "the claim of the remote")?);
    let (status, stdout, stderr) = git.try_run_until(&args, None, Some(deadline))?;
    if !status.success() {
        return Err(push_error(&args, &status, &stdout, stderr));
    }
    std::fs::write(git_dir(git)?.join(LEADER_TOKEN), &token)
        .map_err(|source| GitError::Spawn { args: format!("(write .git/{LEADER_TOKEN})"), source })?;
    tracing::info!(remote, token = %token, "takeover: claimed the remote ({LEADER_REF}); no earlier leader's push lands from here");
    Ok(())
}

/// Why a fetch or a push was killed at `push_timeout`.
const PUSH_TIMEOUT: &str = " (push_timeout)";

/// The deadline of a fetch or push: `push_timeout` from now, or the fence's deadline if sooner.
fn bounded(git: &Git<'_>, fence: Option<Instant>) -> (Instant, &'static str) {
    let own = Instant::now() + git.opts.push_timeout;
    match fence {
        Some(d) if d < own => (d, LEASE_DEADLINE),
        _ => (own, PUSH_TIMEOUT),
    }
}

/// The error of a failed push: [`GitError::Rejected`] when git's porcelain report has a ref
/// `[rejected]` (the remote moved: not a fast-forward, or a stale lease), else `Failed`.
fn push_error(args: &[&str], status: &ExitStatus, stdout: &str, stderr: String) -> GitError {
    let rejected: Vec<&str> =
        stdout.lines().filter(|l| l.starts_with('!') && l.contains("[rejected]")).map(str::trim).collect();
    if rejected.is_empty() {
        GitError::Failed { args: args.join(" "), status: status.to_string(), stderr }
    } else {
        GitError::Rejected { detail: rejected.join("; ") }
    }
}

fn ensure_repository(git: &Git<'_>) -> Result<(), GitError> {
    let (status, top, _) = git.try_run(&["rev-parse", "--show-toplevel"], None)?;
    let top = PathBuf::from(top.trim());
    let is_top = status.success() && top.canonicalize().map(|t| t == git.dir).unwrap_or(false);
    if !is_top {
        // Not a work tree, or the output lives inside another repository: never commit there.
        git.run(&["init", "-q", "-b", &git.opts.branch], None)?;
        tracing::info!(dir = %git.dir.display(), branch = %git.opts.branch, "initialised a git repository in the output directory");
    }
    exclude_local_files(git)
}

/// fedsched's own files in the output that are never content: the publish lock and the owner
/// claim (`flock`ed, present while a publish or a daemon runs). Never committed, never cleaned.
const LOCAL_FILES: [&str; 2] = [".fedsched/lock", ".fedsched/owner"];

/// Lists [`LOCAL_FILES`] in the repository's `info/exclude` (local to this clone, not a
/// committed `.gitignore`: the published tree stays exactly what fedsched rendered), so that
/// `git status` in the output shows nothing of them.
fn exclude_local_files(git: &Git<'_>) -> Result<(), GitError> {
    let path = git_dir(git)?.join("info").join("exclude");
    let io = |source| GitError::Spawn { args: format!("(write {})", path.display()), source };
    let existing = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(io(e)),
    };
    let missing: Vec<String> =
        LOCAL_FILES.iter().map(|f| format!("/{f}")).filter(|l| !existing.lines().any(|e| e.trim() == l)).collect();
    if missing.is_empty() {
        return Ok(());
    }
    let mut text = existing;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str("# fedsched's lock and owner claim (never content)\n");
    for l in missing {
        text.push_str(&l);
        text.push('\n');
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    std::fs::write(&path, text).map_err(io)
}

fn git_dir(git: &Git<'_>) -> Result<PathBuf, GitError> {
    let d = PathBuf::from(git.run(&["rev-parse", "--absolute-git-dir"], None)?.trim());
    Ok(d)
}

/// Pushes HEAD to `branch`, retrying transient failures (`push_attempts`, `retry_delay`
/// doubling), each attempt fenced and bounded. With a fence, the leader's token moves with the
/// branch, atomically. A rejection is not retried.
fn push(git: &Git<'_>, remote: &str, branch: &str, fence: Option<Fence<'_>>) -> Result<(), GitError> {
    let refspec = format!("HEAD:refs/heads/{branch}");
    let token_path = git_dir(git)?.join(LEADER_TOKEN);
    let attempts = git.opts.push_attempts.max(1);
    let mut delay = git.opts.retry_delay;
    let mut last = None;
    for attempt in 1..=attempts {
        let fence_deadline = fenced(fence, "the push")?;
        let token = match fence {
            Some(_) => Some(
                std::fs::read_to_string(&token_path)
                    .map(|t| t.trim().to_owned())
                    .map_err(|_| GitError::Fenced("this instance has not claimed the remote (no takeover)".into()))?,
            ),
            None => None,
        };
        let lease = token.as_ref().map(|t| format!("--force-with-lease={LEADER_REF}:{t}"));
        let token_refspec = format!("HEAD:{LEADER_REF}");
        let mut args = vec!["push", "--no-verify", "--porcelain"];
        if let Some(lease) = &lease {
            args.extend(["--atomic", lease.as_str()]);
        }
        args.extend([remote, refspec.as_str()]);
        if lease.is_some() {
            args.push(&token_refspec);
        }
        let result = match git.try_run_until(&args, None, Some(bounded(git, fence_deadline))) {
            Ok((status, _, _)) if status.success() => Ok(()),
            Ok((status, stdout, stderr)) => Err(push_error(&args, &status, &stdout, stderr)),
            Err(e) => Err(e),
        };
        match result {
            Ok(()) => {
                if token.is_some() {
                    let head = git.run(&["rev-parse", "HEAD"], None)?;
                    let _ = std::fs::write(&token_path, head.trim());
                }
                tracing::info!(remote, branch, attempt, "pushed the output");
                return Ok(());
            }
            Err(e @ GitError::Rejected { .. }) => {
                tracing::warn!(remote, branch, attempt, error = %e, "push rejected: the remote moved");
                return Err(e);
            }
            Err(e) => {
                tracing::warn!(remote, branch, attempt, error = %e, "push failed");
                last = Some(e);
                if attempt < attempts {
                    std::thread::sleep(delay);
                    delay = delay.saturating_mul(2);
                }
            }
        }
    }
    Err(last.unwrap_or(GitError::Failed { args: "push".into(), status: "no attempt".into(), stderr: String::new() }))
}

/// One staged change: status letter (A, M, D, …) and path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// `A`dded, `M`odified, `D`eleted (git's letters).
    pub status: char,
    /// Path relative to the output root.
    pub path: String,
}

fn parse_name_status(text: &str) -> Vec<Change> {
    text.lines()
        .filter_map(|l| {
            let (status, path) = l.split_once('\t')?;
            Some(Change { status: status.chars().next()?, path: path.to_owned() })
        })
        .collect()
}

/// The commit message for `changes`: subject `fedsched: <clusters>: <summary>` of at most
/// [`MAX_SUBJECT`] characters, and a body listing the trigger and, per cluster, every object
/// file added, changed or removed.
pub fn message(changes: &[Change], trigger: super::Trigger) -> (String, String) {
    let mut by_cluster: BTreeMap<&str, Vec<&Change>> = BTreeMap::new();
    let mut other = Vec::new();
    for c in changes {
        match c.path.split_once('/') {
            // A layout's root files (outside every cluster directory) are no cluster's.
            Some((cluster, _))
                if !cluster.starts_with('.') && crate::render::layout::root_file_cluster(&c.path).is_none() =>
            {
                by_cluster.entry(cluster).or_default().push(c)
            }
            _ => other.push(c),
        }
    }
    // A cluster directory's index files are not objects ([`crate::render::layout`]).
    let index_of =
        |c: &Change| c.path.split_once('/').is_some_and(|(_, rest)| crate::render::layout::is_index_path(rest));
    let count = |s: char| by_cluster.values().flatten().filter(|c| c.status == s && !index_of(c)).count();
    let (added, modified, deleted) = (count('A'), count('M'), count('D'));
    let mut parts = Vec::new();
    for (n, word) in [(added, "added"), (modified, "changed"), (deleted, "removed")] {
        if n > 0 {
            parts.push(format!("{n} {word}"));
        }
    }
    let summary = if parts.is_empty() {
        match by_cluster.is_empty() {
            true if other.iter().any(|c| crate::render::layout::root_file_cluster(&c.path).is_some()) => {
                "cluster entry points".to_owned()
            }
            true => "placement summary".to_owned(),
            false => crate::render::layout::Layout::index_noun().to_owned(),
        }
    } else {
        format!("{} object{}", parts.join(", "), if added + modified + deleted == 1 { "" } else { "s" })
    };
    let clusters: Vec<&str> = by_cluster.keys().copied().collect();
    let names = match clusters.len() {
        0 => "summary".to_owned(),
        _ => clusters.join(", "),
    };
    let mut subject = format!("fedsched: {names}: {summary}");
    if subject.chars().count() > MAX_SUBJECT {
        subject = format!("fedsched: {} clusters: {summary}", clusters.len());
    }
    if subject.chars().count() > MAX_SUBJECT {
        subject = subject.chars().take(MAX_SUBJECT).collect();
    }
    let mut body = format!("Trigger: {trigger}\n");
    for (cluster, list) in &by_cluster {
        body.push_str(&format!("\n{cluster}:\n"));
        for c in list {
            let rel = c.path.split_once('/').map(|(_, r)| r).unwrap_or(&c.path);
            let verb = match c.status {
                'A' => "added",
                'D' => "removed",
                _ => "changed",
            };
            body.push_str(&format!("  {verb} {rel}\n"));
        }
    }
    // The summary's shards as one line (a first publish writes all 256 of them).
    let shards = other.iter().filter(|c| super::is_shard_path(&c.path)).count();
    if shards > 0 {
        let s = if shards == 1 { "" } else { "s" };
        body.push_str(&format!("\nupdated the placement summary ({shards} shard{s} of .fedsched/placements/)\n"));
    }
    for c in other.iter().filter(|c| !super::is_shard_path(&c.path)) {
        body.push_str(&format!("\n{} {}\n", if c.status == 'D' { "removed" } else { "updated" }, c.path));
    }
    (subject, body)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ch(status: char, path: &str) -> Change {
        Change { status, path: path.into() }
    }

    #[test]
    fn subject_lists_clusters_and_counts_and_stays_short() {
        let changes = vec![
            ch('A', "member1/default/apps_deployment_web.yaml"),
            ch('M', "member1/kustomization.yaml"),
            ch('M', "member2/default/apps_deployment_web.yaml"),
            ch('D', "member2/default/core_configmap_old.yaml"),
            ch('M', ".fedsched/placements/0a.json"),
            ch('A', ".fedsched/placements/3f.json"),
            ch('D', ".fedsched/placements.json"),
        ];
        let (subject, body) = message(&changes, crate::publish::Trigger::PolicyChange);
        assert_eq!(subject, "fedsched: member1, member2: 1 added, 1 changed, 1 removed objects");
        assert!(subject.len() <= MAX_SUBJECT);
        assert_eq!(
            body,
            "Trigger: policy-change\n\nmember1:\n  added default/apps_deployment_web.yaml\n  changed kustomization.yaml\n\n\
             member2:\n  changed default/apps_deployment_web.yaml\n  removed default/core_configmap_old.yaml\n\n\
             updated the placement summary (2 shards of .fedsched/placements/)\n\n\
             removed .fedsched/placements.json\n"
        );
        let many: Vec<Change> =
            (0..20).map(|i| ch('M', &format!("cluster-number-{i}/default/apps_deployment_web.yaml"))).collect();
        let (subject, _) = message(&many, crate::publish::Trigger::Timer);
        assert_eq!(subject, "fedsched: 20 clusters: 20 changed objects");
        let (subject, body) = message(&[ch('M', ".fedsched/placements/8c.json")], crate::publish::Trigger::Timer);
        assert_eq!(subject, "fedsched: summary: placement summary");
        let (subject, _) = message(&[ch('M', "member1/kustomization.yaml")], crate::publish::Trigger::Timer);
        assert_eq!(subject, "fedsched: member1: kustomizations");
        assert_eq!(body, "Trigger: timer\n\nupdated the placement summary (1 shard of .fedsched/placements/)\n");
    }

    #[test]
    fn name_status_parsing() {
        assert_eq!(parse_name_status("A\ta/b.yaml\nD\tc.yaml\n\n"), vec![ch('A', "a/b.yaml"), ch('D', "c.yaml")]);
    }
}

#[cfg(test)]
mod fencing {
    use super::*;
    use std::process::Command;

    fn git(dir: &Path, args: &[&str]) -> String {
        let o = Command::new("git").arg("-C").arg(dir).args(args).output().expect("git");
        assert!(o.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).trim().to_owned()
    }

    struct World {
        _tmp: tempfile::TempDir,
        remote: PathBuf,
        root: PathBuf,
    }

    impl World {
        fn new() -> World {
            let tmp = tempfile::tempdir().expect("tmp");
            let remote = tmp.path().join("remote.git");
            let o =
                Command::new("git").args(["init", "-q", "--bare", "-b", "main"]).arg(&remote).output().expect("git");
            assert!(o.status.success());
            let root = tmp.path().to_path_buf();
            World { _tmp: tmp, remote, root }
        }
        fn opts(&self) -> GitOptions {
            GitOptions {
                remote: Some(self.remote.display().to_string()),
                push_attempts: 2,
                retry_delay: Duration::from_millis(10),
                ..Default::default()
            }
        }
        /// The remote branch's commit ("" while it does not exist).
        fn head(&self) -> String {
            let o = Command::new("git")
                .arg("-C")
                .arg(&self.remote)
                .args(["rev-parse", "-q", "--verify", "main"])
                .output()
                .expect("git");
            String::from_utf8_lossy(&o.stdout).trim().to_owned()
        }
        fn out(&self, name: &str) -> PathBuf {
            self.root.join(name)
        }
    }

    fn leading() -> Result<Instant, String> {
        Ok(Instant::now() + Duration::from_secs(60))
    }

    fn write(out: &Path, file: &str, text: &str) {
        std::fs::create_dir_all(out.join("member")).expect("mkdir");
        std::fs::write(out.join("member").join(file), text).expect("write");
    }

    #[test]
    fn a_former_leaders_push_never_lands_after_the_new_leaders_claim() {
        let w = World::new();
        let (a, b) = (w.out("a"), w.out("b"));
        let opts = w.opts();
        assert!(!sync_from_remote(&a, &opts, &leading, "a").expect("a's takeover"), "no branch yet");
        write(&a, "one.yaml", "1");
        let pushed = commit_and_push(&a, &opts, crate::publish::Trigger::Timer, Some(&leading)).expect("a's push");
        assert!(pushed.pushed);
        let first = w.head();
        // b takes over; it has published nothing yet, so a's next push would be a fast-forward.
        assert!(sync_from_remote(&b, &opts, &leading, "b").expect("b's takeover"));
        assert_eq!(git(&b, &["rev-parse", "HEAD"]), first, "b continues a's history");
        write(&a, "two.yaml", "2");
        let stale = commit_and_push(&a, &opts, crate::publish::Trigger::Timer, Some(&leading));
        assert!(matches!(stale, Err(GitError::Rejected { .. })), "{stale:?}");
        assert_eq!(w.head(), first, "the former leader's fast-forward landed");
        // b publishes on top of what it adopted.
        write(&b, "three.yaml", "3");
        commit_and_push(&b, &opts, crate::publish::Trigger::Timer, Some(&leading)).expect("b's push");
        assert_eq!(git(&w.remote, &["rev-parse", "main~1"]), first);
        assert_eq!(git(&w.remote, &["rev-parse", LEADER_REF]), w.head(), "the token moves with the branch");
        // a, rejected, syncs (it would only if it led again): it adopts b's history.
        assert!(sync_from_remote(&a, &opts, &leading, "a").expect("a again"));
        assert_eq!(git(&a, &["rev-parse", "HEAD"]), w.head());
        assert!(!a.join("member/two.yaml").exists(), "a's rejected change was discarded");
    }

    #[test]
    fn a_push_landing_during_a_takeover_fails_the_claim_and_the_next_sync_adopts_it() {
        let w = World::new();
        let (a, b) = (w.out("a"), w.out("b"));
        let opts = w.opts();
        sync_from_remote(&a, &opts, &leading, "a").expect("a's takeover");
        write(&a, "one.yaml", "1");
        commit_and_push(&a, &opts, crate::publish::Trigger::Timer, Some(&leading)).expect("a's push");
        write(&a, "two.yaml", "2");
        // a's second push lands after b fetched, just before b's claim (the fence b asks
        // immediately before the claim is where it lands).
        let late = || {
            commit_and_push(&a, &opts, crate::publish::Trigger::Timer, Some(&leading)).expect("a's late push");
            leading()
        };
        let raced = sync_from_remote(&b, &opts, &late, "b");
        assert!(matches!(raced, Err(GitError::Rejected { .. })), "{raced:?}");
        let landed = w.head();
        assert!(sync_from_remote(&b, &opts, &leading, "b").expect("b again"));
        assert_eq!(git(&b, &["rev-parse", "HEAD"]), landed, "b adopted the push that landed");
        assert!(b.join("member/two.yaml").exists());
        write(&a, "three.yaml", "3");
        assert!(matches!(
            commit_and_push(&a, &opts, crate::publish::Trigger::Timer, Some(&leading)),
            Err(GitError::Rejected { .. })
        ));
        assert_eq!(w.head(), landed);
    }

    #[test]
    fn every_write_asks_the_fence_and_a_push_is_killed_at_its_deadline() {
        let w = World::new();
        let a = w.out("a");
        let opts = w.opts();
        sync_from_remote(&a, &opts, &leading, "a").expect("takeover");
        // Not leading: no commit, no push.
        write(&a, "one.yaml", "1");
        let lost = || Err::<Instant, _>("not the leader".to_string());
        let refused = commit_and_push(&a, &opts, crate::publish::Trigger::Timer, Some(&lost));
        assert!(matches!(&refused, Err(GitError::Fenced(r)) if r.contains("before the commit")), "{refused:?}");
        assert_eq!(git(&a, &["rev-list", "--all", "--count"]), "0", "a commit was made");
        // A commit made, then the lease lost before the push: nothing pushed, the push pending.
        let calls = std::sync::atomic::AtomicUsize::new(0);
        let once = || match calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) {
            0 => leading(),
            _ => Err("not the leader".to_string()),
        };
        let refused = commit_and_push(&a, &opts, crate::publish::Trigger::Timer, Some(&once));
        assert!(matches!(&refused, Err(GitError::Fenced(r)) if r.contains("before the push")), "{refused:?}");
        assert!(w.head().is_empty(), "pushed without the lease");
        // A remote that takes longer than the lease has left: the push is killed at the deadline.
        let slow = w.root.join("slow-receive-pack");
        std::fs::write(&slow, "#!/bin/sh\nsleep 30\nexec git-receive-pack \"$@\"\n").expect("script");
        let o = Command::new("chmod").arg("+x").arg(&slow).output().expect("chmod");
        assert!(o.status.success());
        git(&a, &["config", "remote.origin.url", &w.remote.display().to_string()]);
        git(&a, &["config", "remote.origin.receivepack", &slow.display().to_string()]);
        let slow_opts = GitOptions { remote: Some("origin".into()), push_attempts: 1, ..w.opts() };
        let soon = || Ok(Instant::now() + Duration::from_millis(300));
        let killed = commit_and_push(&a, &slow_opts, crate::publish::Trigger::Timer, Some(&soon));
        assert!(matches!(&killed, Err(GitError::TimedOut { why, .. }) if why.contains("renew deadline")), "{killed:?}");
        assert!(w.head().is_empty(), "the killed push landed");
    }
}
