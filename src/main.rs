//! `flakegate`: thin over the library. Prints the whole error chain and exits
//! 2 on unusable input; otherwise the exit status is the verdict's.

use clap::Parser;

fn main() {
    let cli = flakegate::cli::Cli::parse();
    match flakegate::cli::run(cli) {
        Ok(code) => std::process::exit(code),
        Err(err) => {
            eprintln!("flakegate: error: {err}");
            for cause in err.chain().skip(1) {
                eprintln!("  caused by: {cause}");
            }
            std::process::exit(2);
        }
    }
}
