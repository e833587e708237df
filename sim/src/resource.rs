//! The protected resource as a node of the simulation: the sans-IO core
//! (`coordsim_core::resource`) behind madsim RPC, each decision recorded.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use crate::net::Endpoint;
use coordsim_checker::history::Event;

use crate::recorder::Recorder;
use crate::rpc::{ResourceReply, ResourceWrite};

pub use coordsim_core::resource::{Decision, Resource, ResourceMode};

/// The port the resource listens on.
pub const RESOURCE_PORT: u16 = 9000;

/// Serves writes until the simulation ends, recording each decision. `cost`: the time model's
/// cost of a write, spent on the resource's one CPU in arrival order before it is decided.
pub async fn serve_resource(
    addr: SocketAddr,
    name: String,
    mode: ResourceMode,
    recorder: Recorder,
    cost: Option<coordsim_core::timing::Dist>,
) {
    let endpoint = Endpoint::bind(addr).await.expect("the resource binds its own address");
    let resource = Arc::new(Mutex::new(Resource::new(mode)));
    let cpu = Arc::new(match &cost {
        Some(_) => crate::timing::Cpu::recorded(recorder.queue_record(&name)),
        None => crate::timing::Cpu::default(),
    });
    let decide = move |write: ResourceWrite| {
        let decision = resource.lock().expect("resource lock poisoned").write(write.token);
        recorder.record(
            &name,
            Event::Resource {
                resource: name.clone(),
                client: write.client,
                token: write.token,
                value: write.value,
                accepted: decision.accepted,
                highest_before: decision.highest_before,
            },
        );
        if decision.accepted {
            ResourceReply::Accepted
        } else {
            ResourceReply::Rejected { highest: decision.highest_before }
        }
    };
    let decide = Arc::new(decide);
    enum Turn<D> {
        /// Decided as it was taken from the inbox, in arrival order (no cost).
        Decided(ResourceReply),
        /// To be decided after its turn on the CPU.
        Queued { write: ResourceWrite, decide: D, cpu: Arc<crate::timing::Cpu>, cost: coordsim_core::timing::Dist },
    }
    endpoint.add_rpc_handler(move |write: ResourceWrite| {
        let turn = match &cost {
            None => Turn::Decided(decide(write)),
            Some(cost) => Turn::Queued { write, decide: decide.clone(), cpu: cpu.clone(), cost: cost.clone() },
        };
        async move {
            match turn {
                Turn::Decided(reply) => reply,
                Turn::Queued { write, decide, cpu, cost } => {
                    cpu.spend(crate::timing::draw(&cost)).await;
                    decide(write)
                }
            }
        }
    });
    std::future::pending::<()>().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fenced_resource_rejects_a_lower_token_after_a_higher_one() {
        let mut resource = Resource::new(ResourceMode::Fenced);
        assert!(resource.write(33).accepted);
        assert!(resource.write(34).accepted);
        assert_eq!(resource.write(33), Decision { accepted: false, highest_before: 34 });
        assert!(resource.write(34).accepted, "the current holder may write again");
    }

    #[test]
    fn unfenced_resource_accepts_everything() {
        let mut resource = Resource::new(ResourceMode::Unfenced);
        assert!(resource.write(34).accepted);
        assert_eq!(resource.write(33), Decision { accepted: true, highest_before: 34 });
    }
}
