use clap::Parser;

fn main() -> std::process::ExitCode {
    coordsim::output::init();
    coordsim::cli::main(coordsim::cli::Cli::parse())
}
