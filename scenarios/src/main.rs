use clap::Parser;

fn main() -> std::process::ExitCode {
    coordsim::cli::main(coordsim::cli::Cli::parse())
}
