//! Sequential specifications for [`super::check`].

pub mod kv;
pub mod mutex;
pub mod register;

pub use kv::{KvInput, KvModel, KvOp, KvOutput, Txn, TxnCompare};
pub use mutex::{MutexInput, MutexModel, MutexOutput};
pub use register::{RegisterInput, RegisterModel, RegisterOutput};
