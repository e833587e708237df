use clap::Parser;

fn main() -> std::process::ExitCode {
    coordsim::output::init();
    match coordsim::cli::Cli::try_parse() {
        Ok(cli) => coordsim::cli::main(cli),
        // Help and version go to stdout as clap prints them; a usage error is one line (clap
        // adds a hint and a usage block) and exit code 2.
        Err(error) if error.use_stderr() => {
            let text = error.to_string();
            eprintln!("{}", text.lines().next().unwrap_or("error: bad command line"));
            std::process::ExitCode::from(2)
        }
        Err(error) => error.exit(),
    }
}
