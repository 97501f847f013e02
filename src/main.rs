fn main() -> std::process::ExitCode {
    resilient_write::cli::main()
}
