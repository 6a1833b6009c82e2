//! Documentation and editor files that must stay in step with the code.

use crate::support::root;

/// The template consumer stays short enough to read in one sitting (the
/// docs promise under 150 lines), and the packages its README tells users
/// to install are the ones the tests run it with (runtime/bootstrap.sh).
#[test]
fn the_template_consumer_is_short_and_its_requirements_are_what_the_tests_install() {
    let consumer = std::fs::read_to_string(root().join("scenarios/bring-your-own/consumer.py"))
        .expect("the template consumer");
    let lines = consumer.lines().count();
    assert!(lines < 150, "consumer.py has {lines} lines");
    let requirements =
        std::fs::read_to_string(root().join("scenarios/bring-your-own/requirements.txt"))
            .expect("requirements.txt");
    let mut pinned: Vec<&str> = requirements
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let bootstrap = std::fs::read_to_string(root().join("runtime/bootstrap.sh")).unwrap();
    let pins = |var: &str| -> Vec<String> {
        let line = bootstrap
            .lines()
            .find(|l| l.starts_with(&format!("{var}=(")))
            .unwrap_or_else(|| panic!("{var} in bootstrap.sh"));
        line.split('"')
            .skip(1)
            .step_by(2)
            .map(str::to_owned)
            .collect()
    };
    let version = bootstrap
        .lines()
        .find_map(|l| l.strip_prefix("PYICEBERG_VERSION="))
        .unwrap();
    let mut installed: Vec<String> = pins("BYO_PINS")
        .into_iter()
        .flat_map(|p| {
            if p == "${PYICEBERG_PINS[@]}" {
                pins("PYICEBERG_PINS")
            } else {
                vec![p]
            }
        })
        .map(|p| p.replace("$PYICEBERG_VERSION", version))
        .collect();
    pinned.sort_unstable();
    installed.sort();
    assert_eq!(pinned, installed);
}
