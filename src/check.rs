//! `lossproof check FILE…`

use std::path::PathBuf;

use crate::scenario;

pub fn run(files: &[PathBuf]) -> Result<bool, String> {
    let mut failed = 0;
    for file in files {
        let analysis = scenario::analyze(file)?;
        scenario::print_diagnostics(&analysis);
        let errors = analysis.diagnostics.iter().filter(|d| d.is_error()).count();
        if errors == 0 {
            println!("ok  {}", file.display());
        } else {
            failed += 1;
            println!(
                "{errors} error{}  {}",
                if errors == 1 { "" } else { "s" },
                file.display()
            );
        }
    }
    if files.len() > 1 {
        println!("checked {} files: {} with errors", files.len(), failed);
    }
    Ok(failed == 0)
}
