//! The command groups: one file per group of subcommands, each over the library's public
//! API and the shared plumbing (session, input, output, error).

pub mod admin;
pub mod bounds;
pub mod dedup;
pub mod dedup_in;
pub mod dedup_out;
pub mod delete;
mod hits;
pub mod import_signatures;
pub mod ingest;
pub mod query;
mod query_file;
pub mod recipes;
pub mod shell;
pub mod transfer;
