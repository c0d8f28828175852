//! Git mode: the output directory is a git work tree, and every publish that changed bytes
//! becomes one commit (then, optionally, a push). Shells out to `git`, as Argo CD's commit
//! server does: `GIT_TERMINAL_PROMPT=0`, `-c safe.directory=<out>` (the daemon user may not own
//! the tree), explicit author and committer, no hooks, no signing.
//!
//! What is committed is decided by git itself (`git add -A` then `git diff --cached`), not by
//! the publish report, so changes left uncommitted by a crash are committed by the next pass;
//! nothing staged means no commit. fedsched's own transient files (`.fedsched/lock`, `.fedsched/owner`, the
//! journal and staging area) are never added. A failed push leaves a marker in `.git/` and is
//! retried by the next pass even when it has nothing new to commit.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::Duration;

/// Longest commit subject.
pub const MAX_SUBJECT: usize = 72;

/// Marker (inside `.git/`) of a commit that still has to be pushed.
const PUSH_PENDING: &str = "fedsched-push-pending";

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
        let shown = args.join(" ");
        let mut cmd = self.command(args);
        if input.is_some() {
            cmd.stdin(Stdio::piped());
        }
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| GitError::Spawn { args: shown.clone(), source })?;
        if let (Some(text), Some(mut stdin)) = (input, child.stdin.take()) {
            stdin.write_all(text.as_bytes()).map_err(|source| GitError::Spawn { args: shown.clone(), source })?;
        }
        let out = child.wait_with_output().map_err(|source| GitError::Spawn { args: shown, source })?;
        Ok((
            out.status,
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        ))
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
/// `trigger` (render, policy-change, timer, …) goes into the message body.
pub fn commit_and_push(out: &Path, opts: &GitOptions, trigger: &str) -> Result<GitOutcome, GitError> {
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
        git.run(&["commit", "-q", "--no-verify", "-F", "-"], Some(&format!("{subject}\n\n{body}")))?;
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
        push(&git, remote, &opts.branch)?;
        let _ = std::fs::remove_file(&marker);
        outcome.pushed = true;
    }
    Ok(outcome)
}

/// `[ha]` takeover in git mode: makes `out` the remote branch as the last leader pushed it
/// (`git fetch`, `git reset --hard`, `git clean` of files no commit has, a pending push
/// forgotten), so that the new leader adopts and commits on top of the old leader's history
/// and pushes fast-forward. What this instance may have committed or written while it led
/// before is discarded: a later leader published since. Returns whether the tree was synced
/// (false: no remote or no push configured, or the branch does not exist on the remote yet).
pub fn sync_from_remote(out: &Path, opts: &GitOptions) -> Result<bool, GitError> {
    let Some(remote) = opts.remote.as_deref().filter(|_| opts.push) else { return Ok(false) };
    std::fs::create_dir_all(out)
        .map_err(|source| GitError::Spawn { args: format!("(mkdir {})", out.display()), source })?;
    let dir = out.canonicalize().unwrap_or_else(|_| out.to_path_buf());
    let git = Git { dir: &dir, opts };
    ensure_repository(&git)?;
    let refspec = format!("refs/heads/{}", opts.branch);
    let (status, _, stderr) = git.try_run(&["fetch", "-q", "--no-tags", remote, &refspec], None)?;
    if !status.success() {
        if stderr.contains("couldn't find remote ref") {
            return Ok(false);
        }
        return Err(GitError::Failed { args: format!("fetch {remote} {refspec}"), status: status.to_string(), stderr });
    }
    git.run(&["reset", "-q", "--hard", "FETCH_HEAD"], None)?;
    git.run(&["clean", "-fdq", "-e", ".fedsched/lock", "-e", ".fedsched/owner"], None)?;
    let _ = std::fs::remove_file(git_dir(&git)?.join(PUSH_PENDING));
    tracing::info!(remote, branch = %opts.branch, "takeover: the output is the remote branch as the last leader pushed it");
    Ok(true)
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

fn push(git: &Git<'_>, remote: &str, branch: &str) -> Result<(), GitError> {
    let refspec = format!("HEAD:refs/heads/{branch}");
    let attempts = git.opts.push_attempts.max(1);
    let mut delay = git.opts.retry_delay;
    let mut last = None;
    for attempt in 1..=attempts {
        match git.run(&["push", "--no-verify", "--porcelain", remote, &refspec], None) {
            Ok(_) => {
                tracing::info!(remote, branch, attempt, "pushed the output");
                return Ok(());
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
pub fn message(changes: &[Change], trigger: &str) -> (String, String) {
    let mut by_cluster: BTreeMap<&str, Vec<&Change>> = BTreeMap::new();
    let mut other = Vec::new();
    for c in changes {
        match c.path.split_once('/') {
            Some((cluster, _)) if !cluster.starts_with('.') => by_cluster.entry(cluster).or_default().push(c),
            _ => other.push(c),
        }
    }
    let count = |s: char| {
        by_cluster.values().flatten().filter(|c| c.status == s && !c.path.ends_with("/kustomization.yaml")).count()
    };
    let (added, modified, deleted) = (count('A'), count('M'), count('D'));
    let mut parts = Vec::new();
    for (n, word) in [(added, "added"), (modified, "changed"), (deleted, "removed")] {
        if n > 0 {
            parts.push(format!("{n} {word}"));
        }
    }
    let summary = if parts.is_empty() {
        if by_cluster.is_empty() { "placement summary".to_owned() } else { "kustomizations".to_owned() }
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
        let (subject, body) = message(&changes, "policy-change");
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
        let (subject, _) = message(&many, "timer");
        assert_eq!(subject, "fedsched: 20 clusters: 20 changed objects");
        let (subject, body) = message(&[ch('M', ".fedsched/placements/8c.json")], "timer");
        assert_eq!(subject, "fedsched: summary: placement summary");
        assert_eq!(body, "Trigger: timer\n\nupdated the placement summary (1 shard of .fedsched/placements/)\n");
    }

    #[test]
    fn name_status_parsing() {
        assert_eq!(parse_name_status("A\ta/b.yaml\nD\tc.yaml\n\n"), vec![ch('A', "a/b.yaml"), ch('D', "c.yaml")]);
    }
}
