//! etcd issue 11496: a consumer that re-creates its watch with start revision 0 ("from now")
//! after its stream ended misses every change made in between, and never learns of it. etcd's
//! documented contract is the other way round: resume from the revision after the last one
//! received, and when that was compacted, read the range again and watch from after the read
//! (what Kubernetes' reflector does).

use std::time::Duration;

use crate::etcd_client::{Client, Error, GetOptions, WatchOptions};
use crate::time;

pub const PREFIX: &str = "/cfg/";

/// Writes a key under [`PREFIX`] every 100 ms and compacts to 5 revisions back every tenth write.
pub async fn writer(endpoints: Vec<String>) {
    let Ok(mut client) = Client::connect(&endpoints, None).await else { return };
    for i in 0u64.. {
        if let Ok(put) = client.put(format!("{PREFIX}k{}", i % 7), format!("v{i}"), None).await
            && i % 10 == 9
        {
            let revision = put.header().map_or(0, |h| h.revision());
            let _ = client.compact(revision - 5, None).await;
        }
        time::sleep(Duration::from_millis(100)).await;
    }
}

/// Follows every change under [`PREFIX`], stream after stream. `fixed`: after a stream ends,
/// reads the prefix and watches from after that read; otherwise watches again from now.
pub async fn consumer(endpoints: Vec<String>, fixed: bool) {
    if let Ok(client) = Client::connect(&endpoints, None).await {
        let _ = consume(client, fixed).await;
    }
}

async fn consume(mut client: Client, fixed: bool) -> Result<(), Error> {
    let mut from = 0; // the first stream: from now
    loop {
        let options = WatchOptions::new().with_prefix().with_start_revision(from);
        let mut stream = client.watch(PREFIX, Some(options)).await?;
        while let Some(answer) = stream.message().await? {
            if answer.canceled() {
                break;
            }
            for event in answer.events() {
                from = event.kv().map_or(from, |kv| kv.mod_revision() + 1);
            }
        }
        from = if fixed {
            let state = client.get(PREFIX, Some(GetOptions::new().with_prefix())).await?;
            state.header().map_or(0, |h| h.revision() + 1)
        } else {
            0
        };
    }
}
