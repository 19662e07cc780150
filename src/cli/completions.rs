//! `completions`: shell completion scripts generated from the command definitions.

use super::{Cli, ExitCode, Out};
use crate::error::Result;

#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh or fish
    #[arg(value_enum)]
    pub shell: Shell,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}

pub fn run(args: CompletionsArgs, out: &mut Out) -> Result<ExitCode> {
    let mut command = Cli::command_with_name("memlog");
    let shell = match args.shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, "memlog", &mut script);
    // Through `Out`, so that a closed pipe (`memlog completions bash | head`) ends quietly.
    out.line(String::from_utf8_lossy(&script).trim_end());
    Ok(ExitCode::Ok)
}
