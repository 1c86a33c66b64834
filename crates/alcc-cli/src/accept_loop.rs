//! The accept loop the TCP servers (`alcc serve`, `alcc serve --receive`, `alcc serve-plain`)
//! share: one thread per connection, up to `--count` connections.

use std::fmt::Display;
use std::sync::Arc;
use std::thread;

/// Accepts connections with `accept` until `count` have been accepted (without end when
/// `None`) and serves each on its own thread with `serve(connection, peer, n)`, `n` counting
/// connections from 0. An accept error is printed after `name` and the loop goes on: one bad
/// connection must not stop the server. Returns when every connection's thread has ended.
pub fn serve_each<C, P, E, A, F>(name: &str, count: Option<u64>, mut accept: A, serve: F)
where
    C: Send + 'static,
    P: Send + 'static,
    E: Display,
    A: FnMut() -> Result<(C, P), E>,
    F: Fn(C, P, u64) + Send + Sync + 'static,
{
    let serve = Arc::new(serve);
    let mut workers = Vec::new();
    let mut served = 0u64;
    while count.is_none_or(|c| served < c) {
        let (connection, peer) = match accept() {
            Ok(s) => s,
            Err(e) => {
                eprintln!("{name}: accept: {e}");
                continue;
            }
        };
        let (serve, n) = (serve.clone(), served);
        workers.push(thread::spawn(move || serve(connection, peer, n)));
        served += 1;
        workers.retain(|w| !w.is_finished());
    }
    for w in workers {
        let _ = w.join();
    }
}
