//! The command-line reference of the guide (`docs/guide/reference/cli.md`), generated from the
//! clap definitions themselves: every command's `--help`, so the page cannot drift from the
//! binary. `tests/it/reference.rs` regenerates it and compares; `FEDSCHED_BLESS=1` rewrites it.

use clap::CommandFactory;

use super::Cli;

/// The page: an index of the commands, then each command's long help as `fedsched help …`
/// prints it (environment values hidden, so the page is the same on every machine).
pub fn markdown() -> String {
    let mut root = Cli::command().bin_name("fedsched").disable_colored_help(true);
    root.build();
    let mut commands = Vec::new();
    collect(&root, "fedsched", &mut commands);
    let mut out = String::from(
        "# Command-line reference\n\n\
         <!-- Generated from the clap definitions (src/cli/reference.rs); do not edit by hand.\n     \
         tests/it/reference.rs fails when it is out of date: FEDSCHED_BLESS=1 cargo test --test it \
         reference rewrites it. -->\n\n\
         Every command's `--help`, as this version of fedsched prints it. What the commands do, \
         with examples: [Commands](../commands.md).\n\n",
    );
    for (path, _) in &commands {
        out.push_str(&format!("- [`{path}`](#{})\n", anchor(path)));
    }
    for (path, help) in &commands {
        out.push_str(&format!("\n## {path}\n\n```text\n{}\n```\n", help.trim_end()));
    }
    out
}

/// Every command under `cmd` (itself first), depth first in definition order, with its help.
fn collect(cmd: &clap::Command, path: &str, out: &mut Vec<(String, String)>) {
    let mut cmd = cmd.clone().mut_args(|a| a.hide_env_values(true));
    let help = cmd.render_long_help().to_string();
    out.push((path.to_string(), help.lines().map(str::trim_end).collect::<Vec<_>>().join("\n")));
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set() && s.get_name() != "help") {
        collect(sub, &format!("{path} {}", sub.get_name()), out);
    }
}

/// The anchor a code host and mdBook give the heading `## path`.
fn anchor(path: &str) -> String {
    path.chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c.to_ascii_lowercase()),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_visible_command_has_its_section_and_no_environment_value_shows() {
        let page = markdown();
        for sub in Cli::command().get_subcommands().filter(|s| !s.is_hide_set()) {
            let heading = format!("\n## fedsched {}\n", sub.get_name());
            assert!(page.contains(&heading), "no section for {}", sub.get_name());
        }
        // The config flag reads FEDSCHED_CONFIG; its value on this machine must not show.
        assert!(page.contains("[env: FEDSCHED_CONFIG]"), "{page}");
        assert_eq!(anchor("fedsched plan"), "fedsched-plan");
    }
}
