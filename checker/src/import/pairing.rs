//! Pairs Jepsen invocations with their completions, process by process.
//!
//! Jepsen's rules: a process runs one operation at a time. Its next record after `:invoke` is the
//! completion: `:ok` (took effect, with this output), `:fail` (did not take effect: the operation
//! is dropped), or `:info` (unknown: the operation stays open to the end of the history). A process
//! that got `:info` is considered crashed; Jepsen gives its worker a fresh process number, and if a
//! history does reuse the number, the next invocation is taken as a new client all the same.
//! Operations still open when the history ends are treated like `:info`.
//!
//! Operation ids count invocations from 0 in history order, so a dropped `:fail` leaves a gap and
//! ids stay traceable to the source. Client ids count (process, incarnation) pairs in order of
//! first appearance.

use std::collections::BTreeMap;

use super::FieldError;
use crate::linearizability::{OpId, Operation, RETURN_NEVER};

pub(crate) enum Completion<O> {
    Ok(O),
    Fail,
    Info,
}

struct Open<I> {
    id: OpId,
    client: u64,
    f: String,
    input: I,
    call_ns: u64,
    line: usize,
}

pub(crate) struct Pairing<I, O> {
    open: BTreeMap<i64, Open<I>>,
    client_of_process: BTreeMap<i64, u64>,
    clients: u64,
    invocations: u64,
    done: Vec<Operation<I, O>>,
}

impl<I, O> Pairing<I, O> {
    pub(crate) fn new() -> Self {
        Pairing {
            open: BTreeMap::new(),
            client_of_process: BTreeMap::new(),
            clients: 0,
            invocations: 0,
            done: Vec::new(),
        }
    }

    /// Opens an operation; `input` is built from the client id (a mutex input names its owner).
    pub(crate) fn invoke(
        &mut self,
        line: usize,
        process: i64,
        f: &str,
        call_ns: u64,
        input: impl FnOnce(u64) -> Result<I, FieldError>,
    ) -> Result<(), FieldError> {
        if let Some(open) = self.open.get(&process) {
            return Err(FieldError::new(
                "process",
                format!("process {process} invokes while its operation from line {} is still open", open.line),
            ));
        }
        let next_client = self.clients;
        let client = *self.client_of_process.entry(process).or_insert(next_client);
        if client == next_client {
            self.clients += 1;
        }
        let input = input(client)?;
        let id = self.invocations;
        self.invocations += 1;
        let f = f.to_string();
        let open = Open { id, client, f, input, call_ns, line };
        self.open.insert(process, open);
        Ok(())
    }

    pub(crate) fn complete(
        &mut self,
        process: i64,
        f: &str,
        return_ns: u64,
        completion: Completion<O>,
    ) -> Result<(), FieldError> {
        let Some(open) = self.open.get(&process) else {
            return Err(FieldError::new(
                "process",
                format!("process {process} completes an operation it never invoked"),
            ));
        };
        if open.f != f {
            return Err(FieldError::new("f", format!("completes `{f}` but line {} invoked `{}`", open.line, open.f)));
        }
        if return_ns < open.call_ns {
            return Err(FieldError::new(
                "time",
                format!("completes at {return_ns}, before its invocation at {}", open.call_ns),
            ));
        }
        let open = self.open.remove(&process).expect("checked above");
        let (output, return_ns) = match completion {
            Completion::Ok(output) => (Some(output), return_ns),
            Completion::Fail => return Ok(()),
            Completion::Info => {
                // Crashed: the process number's next invocation is a new client.
                self.client_of_process.remove(&process);
                (None, RETURN_NEVER)
            }
        };
        self.done.push(Operation {
            id: open.id,
            client: open.client,
            input: open.input,
            output,
            call_ns: open.call_ns,
            return_ns,
        });
        Ok(())
    }

    /// The history, sorted by id; operations never completed stay open.
    pub(crate) fn finish(mut self) -> Vec<Operation<I, O>> {
        for (_, open) in std::mem::take(&mut self.open) {
            self.done.push(Operation {
                id: open.id,
                client: open.client,
                input: open.input,
                output: None,
                call_ns: open.call_ns,
                return_ns: RETURN_NEVER,
            });
        }
        self.done.sort_by_key(|op| op.id);
        self.done
    }
}
