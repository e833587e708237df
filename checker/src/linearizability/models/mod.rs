//! Sequential specifications for [`super::check`].

pub mod append_kv;
pub mod kv;
pub mod multi_register;
pub mod mutex;
pub mod register;

pub use append_kv::{AppendKvInput, AppendKvModel, AppendKvOp, AppendKvOutput};
pub use kv::{KvInput, KvModel, KvOp, KvOutput, Txn, TxnCompare};
pub use multi_register::{MicroOp, MultiRegisterInput, MultiRegisterModel, MultiRegisterOutput};
pub use mutex::{MutexInput, MutexModel, MutexOutput};
pub use register::{RegisterInput, RegisterModel, RegisterOutput};
