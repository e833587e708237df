//! A counterexample (or example) as a numbered timeline: one step per model action, told in the
//! simulator's vocabulary (`lock`, `unlock`, `write token 3 → accepted`, `lease_expiry`, `pause`,
//! `belief start`/`belief end`), so it reads like a history of the simulator.

use std::fmt::Write as _;

/// One step of a trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceStep {
    /// Who acts: `c1`, `s1`, `resource`.
    pub actor: String,
    /// What happened and what it returned.
    pub text: String,
    /// Something lasting this step starts (`pause c1`, `belief c2`), closed by a later step.
    pub opens: Option<String>,
    /// The lasting things this step ends.
    pub closes: Vec<String>,
}

impl TraceStep {
    pub fn new(actor: impl Into<String>, text: impl Into<String>) -> Self {
        TraceStep { actor: actor.into(), text: text.into(), opens: None, closes: Vec::new() }
    }

    pub fn opening(mut self, what: impl Into<String>) -> Self {
        self.opens = Some(what.into());
        self
    }

    pub fn closing(mut self, what: impl Into<String>) -> Self {
        self.closes.push(what.into());
        self
    }
}

/// For each step that opens something: the number (from 1) of the step that closes it.
pub fn until(steps: &[TraceStep]) -> Vec<Option<usize>> {
    steps
        .iter()
        .enumerate()
        .map(|(index, step)| {
            let opened = step.opens.as_ref()?;
            steps[index + 1..].iter().position(|later| later.closes.contains(opened)).map(|offset| index + offset + 2)
        })
        .collect()
}

/// The numbered timeline, one line per step: `  3. c2  lock: ... `.
pub fn render(steps: &[TraceStep]) -> String {
    let width = steps.iter().map(|s| s.actor.len()).max().unwrap_or(0);
    let mut out = String::new();
    for (index, step) in steps.iter().enumerate() {
        let _ = writeln!(out, "  {:>3}. {:<width$}  {}", index + 1, step.actor, step.text);
    }
    out
}

/// Client names as the simulator spells them: c1, c2, ...
pub fn client_name(index: usize) -> String {
    format!("c{}", index + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pause_lasts_until_the_resume_that_closes_it() {
        let steps = vec![
            TraceStep::new("c1", "pause").opening("pause c1"),
            TraceStep::new("s1", "tick"),
            TraceStep::new("c1", "resume").closing("pause c1"),
            TraceStep::new("c2", "pause").opening("pause c2"),
        ];
        assert_eq!(until(&steps), vec![Some(3), None, None, None]);
        assert_eq!(render(&steps[..2]), "    1. c1  pause\n    2. s1  tick\n");
    }
}
