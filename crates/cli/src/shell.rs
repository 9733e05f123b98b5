//! `modelbin completions` and `modelbin man`: what the shell and `man`
//! read about the command line.

use crate::failure::Failure;
use crate::stdout::with_buffered;

/// Prints the completion script for `shell`. clap_complete writes with
/// `write_all(..).expect(..)`, so the script is rendered in memory and
/// written here, where a write error can fail cleanly.
pub fn completions(shell: clap_complete::Shell, cli: &mut clap::Command) -> Result<(), Failure> {
    let mut script = Vec::new();
    clap_complete::generate(shell, cli, "modelbin", &mut script);
    with_buffered(|out| out.write_all(&script))
}

/// Prints the man pages of `cli` and its subcommands.
pub fn man(cli: &clap::Command) -> Result<(), Failure> {
    with_buffered(|out| man_pages(cli, "modelbin", out))
}

/// The man page of `command` (titled `title`) followed by those of all its
/// subcommands, depth first (one roff document after another).
fn man_pages(
    command: &clap::Command,
    title: &str,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    clap_mangen::Man::new(command.clone())
        .title(title)
        .render(out)?;
    for sub in command.get_subcommands().filter(|c| !c.is_hide_set()) {
        man_pages(sub, &format!("{title}-{}", sub.get_name()), out)?;
    }
    Ok(())
}
