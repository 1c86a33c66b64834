//! Mahimahi packet-delivery traces and link logs, synthetic trace generators, and the
//! per-packet metrics every alcc measurement is computed with.
#![warn(missing_docs)]
