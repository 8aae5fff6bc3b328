//! Which of a check's records speaks for it, written once for both readers of records: the
//! results database (`gen report`, `gen results`) and `gen measure --records` (the evidence
//! store). A check's records are those of one model, platform, engine, check, precision and
//! component.

use hwmatrix_cell::{Basis, Outcome};

/// How a record ranks among its check's records: of two, the greater speaks for the check, and
/// of two equal, the one read (or imported) later. A record of a check that was tried outranks
/// the ledger's "not tried" of a build without the platform's feature, whatever their times:
/// another process of the same run (tests/run.sh's lanes) may have measured the check before
/// that build wrote its ledger. Then the newer wins. A string, so that SQL orders by it too
/// (the database registers it as the function `recency`); `basis` is the record's wire name.
pub fn recency(basis: &str, time: &str) -> String {
    let tried = basis != Basis::NotTried.name();
    format!("{}{time}", u8::from(tried))
}

/// The component whose record speaks for a check of a model checked as its components, given
/// each component's outcome in component-name order: the first that did not pass (a pipeline
/// fails where one of its parts fails), else the first. None when there is none.
pub fn deciding_component(outcomes: impl IntoIterator<Item = Outcome>) -> Option<usize> {
    let mut any = false;
    for (i, outcome) in outcomes.into_iter().enumerate() {
        if outcome != Outcome::Passed {
            return Some(i);
        }
        any = true;
    }
    any.then_some(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tried_check_outranks_a_newer_not_tried_one() {
        let not_tried = recency("not-tried", "2026-12-07T10:00:00Z");
        let measured = recency("measured", "2026-12-07T09:00:00Z");
        assert!(
            measured > not_tried,
            "{measured} should outrank {not_tried}"
        );
        assert!(recency("measured", "2026-12-07T10:00:00Z") > measured);
    }

    #[test]
    fn the_first_component_that_did_not_pass_decides() {
        use Outcome::*;
        assert_eq!(deciding_component([Passed, Failed, Failed]), Some(1));
        assert_eq!(deciding_component([Passed, Passed]), Some(0));
        assert_eq!(deciding_component([]), None);
    }
}
