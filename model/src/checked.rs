//! What every model of this crate adds to stateright's [`Model`]: the result each property is
//! expected to give, an optional symmetry reduction, and a description of each step in the
//! simulator's vocabulary (for counterexamples).

use std::fmt::Debug;
use std::hash::Hash;

use stateright::{Model, Property};

use crate::trace::TraceStep;

/// What a property is expected to give on a model. The kind of property follows from it:
/// `Holds` and `Violated` are `always` properties, `Reachable` and `Unreachable` are `sometimes`
/// properties.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expected {
    /// An invariant with no counterexample.
    Holds,
    /// An invariant the model is built to break: a counterexample must be found.
    Violated,
    /// An interesting state that must be reachable (so that a vacuous model is caught).
    Reachable,
    /// A state the model shows cannot be reached in this configuration (e.g. two leaders at once
    /// with two nodes, where a new leader needs the old one's vote).
    Unreachable,
}

impl Expected {
    pub fn kind(self) -> Kind {
        match self {
            Expected::Holds | Expected::Violated => Kind::Always,
            Expected::Reachable | Expected::Unreachable => Kind::Sometimes,
        }
    }

    /// Whether finding a discovery (a counterexample or an example) is what was expected.
    pub fn wants_discovery(self) -> bool {
        matches!(self, Expected::Violated | Expected::Reachable)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Always,
    Sometimes,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Always => "always",
            Kind::Sometimes => "sometimes",
        }
    }
}

/// One property of a model with its expected result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Expectation {
    pub property: &'static str,
    pub expected: Expected,
}

/// Shorthand for a model's table of expectations.
pub const fn expect(property: &'static str, expected: Expected) -> Expectation {
    Expectation { property, expected }
}

/// Builds a stateright property from a condition and the expectation that names it.
pub fn property<M: Model>(expectation: &Expectation, condition: fn(&M, &M::State) -> bool) -> Property<M> {
    match expectation.expected.kind() {
        Kind::Always => Property::always(expectation.property, condition),
        Kind::Sometimes => Property::sometimes(expectation.property, condition),
    }
}

/// A symmetry representative function (stateright takes a plain `fn`).
pub type Representative<S> = fn(&S) -> S;

/// A model the registry can check, bench, explain and explore.
pub trait CheckedModel:
    Model<
        State: Hash + Clone + Debug + PartialEq + Send + Sync + 'static,
        Action: Clone + Debug + PartialEq + Send + Sync + 'static,
    > + Clone
    + Send
    + Sync
    + 'static
{
    /// Every property of the model, in the order they are reported, with its expected result.
    fn expectations(&self) -> &[Expectation];

    /// A representative of a state's symmetry class, when clients are interchangeable. It must
    /// return a permutation of the state (never merge states that are not symmetric).
    fn symmetry(&self) -> Option<Representative<Self::State>> {
        None
    }

    /// The step from `before` by `action` to `after`, in the simulator's vocabulary.
    fn describe(&self, before: &Self::State, action: &Self::Action, after: &Self::State) -> TraceStep;
}
