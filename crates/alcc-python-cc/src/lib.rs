//! Congestion controllers written in Python, run wherever a Rust [`alcc_cc::Controller`] runs.
//!
//! One adapter, two hosts: the `alcc` Python package (crates/alcc-py, an extension module that
//! Python loads) and the `alcc` command (crates/alcc-cli with its `python` feature, which embeds
//! CPython to run `--cc py:module:Class`). Walk: [`controller`] is the adapter
//! ([`PyController`](controller::PyController): a Python `alcc.Controller` instance behind the
//! Rust trait, its events as `alcc.Ack`/`Sent`/`Loss`, its `alcc.Decision`), [`threaded`] runs
//! one on a thread of its own, [`batch`] delivers its ACKs in batches, [`embed`] starts an interpreter in a Rust program and loads a
//! controller class from a `py:module:Class` spec, and [`finalizing`] keeps every thread out of
//! Python once the interpreter has begun to exit.

#![deny(unsafe_code)]

pub mod batch;
pub mod controller;
pub mod embed;
pub mod finalizing;
pub mod threaded;
