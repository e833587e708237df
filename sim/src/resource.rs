//! The protected resource: a storage node that receives writes carrying a fencing token.
//!
//! `fenced` remembers the highest token it accepted and rejects any lower one, so a stale
//! holder's late write becomes a harmless rejection; `unfenced` accepts everything, as a plain
//! database or file would (docs/cases/01).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use coordsim_checker::history::Event;
use madsim::net::Endpoint;
use serde::{Deserialize, Serialize};

use crate::recorder::Recorder;
use crate::rpc::{ResourceReply, ResourceWrite};

/// The port the resource listens on.
pub const RESOURCE_PORT: u16 = 9000;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResourceMode {
    /// Reject tokens lower than the highest accepted.
    Fenced,
    /// Accept every write.
    Unfenced,
}

/// The resource's decision on one write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    pub accepted: bool,
    /// The highest accepted token before this write (0 = none yet).
    pub highest_before: i64,
}

/// Sans-IO core of the resource.
#[derive(Clone, Debug)]
pub struct Resource {
    mode: ResourceMode,
    highest: i64,
}

impl Resource {
    pub fn new(mode: ResourceMode) -> Self {
        Resource { mode, highest: 0 }
    }

    pub fn write(&mut self, token: i64) -> Decision {
        let highest_before = self.highest;
        let accepted = match self.mode {
            ResourceMode::Fenced => token >= self.highest,
            ResourceMode::Unfenced => true,
        };
        if accepted {
            self.highest = self.highest.max(token);
        }
        Decision { accepted, highest_before }
    }
}

/// Serves writes until the simulation ends, recording each decision.
pub async fn serve_resource(addr: SocketAddr, name: String, mode: ResourceMode, recorder: Recorder) {
    let endpoint = Endpoint::bind(addr).await.expect("the resource binds its own address");
    let resource = Arc::new(Mutex::new(Resource::new(mode)));
    for _ in 0..crate::rpc::RECEIVE_LOOPS {
        let (resource, recorder, name) = (resource.clone(), recorder.clone(), name.clone());
        endpoint.add_rpc_handler(move |write: ResourceWrite| {
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
            async move {
                if decision.accepted {
                    ResourceReply::Accepted
                } else {
                    ResourceReply::Rejected { highest: decision.highest_before }
                }
            }
        });
    }
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
