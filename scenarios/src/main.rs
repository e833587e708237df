fn main() -> std::process::ExitCode {
    coordsim::cli::run_main(Vec::new())
}
