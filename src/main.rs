fn main() -> std::process::ExitCode {
    resilient_write::cmd::main()
}
