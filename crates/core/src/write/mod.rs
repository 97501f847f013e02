//! L1 write semantics: what a write means before the pipeline makes it durable. Everything
//! here sits below the [`crate::store::Store`]; the writes agents ask for by name, which act
//! on the store, are [`crate::files`].
//!
//! - [`content`]: content as a request carries it (UTF-8 or base64) and its decoding against
//!   the size cap.
//! - [`intent`]: the one home of write preconditions (mode, existing file, expected hash,
//!   size limit). Every writing tool, compose, restore and transaction staging decides here.
//! - [`idempotency`]: idempotency keys, found again in the journal, so a retried call is
//!   answered from its first result instead of applied twice.
//! - [`pipeline`]: the durable protocol every byte written goes through.
//! - [`results`]: the log of first results no journal row holds, and its compaction.
pub mod content;
pub mod idempotency;
pub mod intent;
pub mod pipeline;
pub mod results;
