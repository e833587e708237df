//! Client-side recipes as sans-IO state machines: each step takes the response to the
//! previous request and says what to do next. The madsim client drives them over RPC; the
//! stateright models (model/) drive the same code with model messages.

pub mod cas_lock;
pub mod mutex;
pub mod semaphore;
pub mod zk_lock;
