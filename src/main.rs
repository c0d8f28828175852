use std::process::ExitCode;

fn main() -> ExitCode {
    fedsched::cli::main()
}
