//! A soak's final table (`coordsim real ... --runs N` or `--for DURATION`): per property, how many
//! runs failed it and how many were not as the scenario expects, in the order of the summaries.

use std::fmt::Write as _;
use std::time::Duration;

use coordsim_checker::verdict::Verdict;
use coordsim_reports::RunSummary;

/// Per property over the runs: (id, expected, failed runs, runs not as expected, runs judged).
#[derive(Debug, Default)]
pub struct Tally {
    runs: usize,
    as_expected: usize,
    rows: Vec<(String, String, usize, usize, usize)>,
}

impl Tally {
    pub fn add(&mut self, summary: &RunSummary) {
        self.runs += 1;
        self.as_expected += usize::from(summary.as_expected);
        for outcome in &summary.outcomes {
            let property = &outcome.report.property;
            let index = match self.rows.iter().position(|row| &row.0 == property) {
                Some(index) => index,
                None => {
                    self.rows.push((property.clone(), outcome.expected.clone(), 0, 0, 0));
                    self.rows.len() - 1
                }
            };
            let row = &mut self.rows[index];
            row.2 += usize::from(outcome.report.verdict == Verdict::Fail);
            row.3 += usize::from(!outcome.as_expected);
            row.4 += 1;
        }
    }

    pub fn runs(&self) -> usize {
        self.runs
    }

    /// The table, as Markdown, under a line with the runs and the wall time they took.
    pub fn table(&self, wall: Duration) -> String {
        let mut out = format!(
            "soak: {} runs in {}, {} as expected\n\n| property | expected | failed | not as expected |\n|---|---|---|---|\n",
            self.runs,
            fmt_wall(wall),
            self.as_expected
        );
        for (property, expected, failed, unexpected, judged) in &self.rows {
            let _ = writeln!(out, "| {property} | {expected} | {failed}/{judged} | {unexpected} |");
        }
        out
    }
}

/// `1 h 02 min`, `6 min 03 s`, `42 s`: wall time to the second.
pub fn fmt_wall(wall: Duration) -> String {
    let s = wall.as_secs();
    match (s / 3600, s / 60 % 60, s % 60) {
        (0, 0, s) => format!("{s} s"),
        (0, m, s) => format!("{m} min {s:02} s"),
        (h, m, _) => format!("{h} h {m:02} min"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use coordsim_checker::verdict::PropertyReport;
    use coordsim_reports::Outcome;

    fn summary(verdicts: &[(&str, Verdict, &str)]) -> RunSummary {
        let outcomes: Vec<Outcome> = verdicts
            .iter()
            .map(|(property, verdict, expected)| {
                let failed = *verdict == Verdict::Fail;
                Outcome {
                    report: PropertyReport {
                        property: property.to_string(),
                        verdict: *verdict,
                        summary: String::new(),
                        findings: Vec::new(),
                    },
                    expected: expected.to_string(),
                    as_expected: failed == (*expected == "fail") || *expected == "any",
                }
            })
            .collect();
        RunSummary {
            schema: coordsim_reports::SUMMARY_SCHEMA.to_string(),
            scenario: "s".into(),
            seed: 1,
            duration_ns: 0,
            entries: 0,
            as_expected: outcomes.iter().all(|o| o.as_expected),
            outcomes,
            replay: String::new(),
            metrics: None,
        }
    }

    #[test]
    fn the_table_counts_failures_and_surprises_per_property() {
        let mut tally = Tally::default();
        tally.add(&summary(&[("fencing", Verdict::Pass, "pass"), ("herd", Verdict::Fail, "any")]));
        tally.add(&summary(&[("fencing", Verdict::Fail, "pass"), ("herd", Verdict::Pass, "any")]));
        tally.add(&summary(&[("fencing", Verdict::Pass, "pass"), ("herd", Verdict::Fail, "any")]));
        assert_eq!(tally.runs(), 3);
        let table = tally.table(Duration::from_secs(363));
        assert_eq!(
            table,
            "soak: 3 runs in 6 min 03 s, 2 as expected\n\n\
             | property | expected | failed | not as expected |\n|---|---|---|---|\n\
             | fencing | pass | 1/3 | 1 |\n| herd | any | 2/3 | 0 |\n"
        );
    }

    #[test]
    fn wall_times_read_to_the_second() {
        assert_eq!(fmt_wall(Duration::from_millis(42_900)), "42 s");
        assert_eq!(fmt_wall(Duration::from_secs(3720)), "1 h 02 min");
    }
}
