//! The one integration test binary: the server driven the way MCP clients drive it.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that cannot go on should fail loudly, at the line that failed"
)]
#![allow(
    clippy::too_many_lines,
    reason = "a scenario reads top to bottom, as a client drives the server; the 80-line limit \
              is for src/"
)]

mod app_view;
mod app_write;
mod approval;
mod bad_input;
mod caching;
mod command_line;
mod common;
mod completion;
mod deploy;
mod depth;
mod errors;
mod examples;
mod executor;
mod faults;
mod floor_pages;
mod floors;
mod front_end;
mod function_tools;
mod fuzz_regressions;
mod hosts;
mod http;
mod http_edges;
#[cfg(feature = "postgres")]
mod instances;
mod layers;
mod lean_answers;
mod logging;
mod markdown_tables;
mod notifications;
mod oauth;
mod operations;
mod plans;
#[path = "../../src/store/postgres/testing.rs"]
mod postgres_server;
mod principals;
mod results;
mod schemas;
mod script_tools;
mod sizes;
mod skills;
mod snapshot_hardening;
mod snapshots;
mod soak;
mod stdio;
mod store;
mod surface;
mod team_page;
mod tool_groups;
mod upstream_hardening;
mod upstreams;
mod values;
